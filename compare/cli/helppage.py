"""The ``--help`` page of every vcompare command: options in titled panels, examples verbatim.

typer 0.28 draws ``rich_help_panel`` groups only in its rich markup modes, and those modes also
(a) read ``[...]`` in a help text as markup (``[remote]`` and the ``[default]`` hints vanish),
(b) split an option's spellings over four fixed columns that cut long ones short
(``--right,--golden_dump_…``), (c) re-wrap the examples at the terminal's width and (d) draw
every usage error in a box. Its plain mode (``rich_markup_mode=None``) ignores the panels and
wraps everything, examples included, at 78 columns whatever the terminal.

So the commands keep the plain mode (usage errors stay one grep-able ``Error:`` line) and take
:class:`PanelHelp` as their class: it renders the help page itself -- the usage line(s), the
description, one panel per ``rich_help_panel`` (in the order the options are declared; an
option's spellings, value and help as click gives them, nothing cut), the extra panels of
:attr:`PanelHelp.panels`, and the epilog (the examples) line by line as written, at any width.
rich is imported here only, when a help page is asked for: never on a run or on ``--version``.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import typer
from typer.core import TyperArgument, TyperCommand, TyperOption

if TYPE_CHECKING:
    from typer._click.formatting import HelpFormatter

#: The panel of a parameter declared without ``rich_help_panel`` (and of ``-h`` / ``--help``).
OPTIONS_PANEL = "Options"
#: The panel of the positional arguments declared without ``rich_help_panel``.
ARGUMENTS_PANEL = "Arguments"
#: The widest the spellings column gets; a longer spelling list wraps at its commas.
NAMES_MAX_WIDTH = 36


@dataclass(frozen=True)
class HelpRow:
    """One line of a help panel: a name (an option's spellings, a subcommand) and what it does."""

    name: str
    text: str


@dataclass(frozen=True)
class HelpPanel:
    """A titled panel of rows that are not the command's own parameters (the subcommands)."""

    title: str
    rows: tuple[HelpRow, ...]


class PanelHelp(TyperCommand):
    """A typer command whose ``--help`` page is drawn by :func:`render_help` (module doc).

    Subclasses add :attr:`usage_lines` (more ``Usage:`` lines under the command's own) and
    :attr:`panels` (drawn after the parameters' panels, before the examples).
    """

    usage_lines: tuple[str, ...] = ()
    panels: tuple[HelpPanel, ...] = ()

    def format_help(self, ctx: typer.Context, formatter: HelpFormatter) -> None:
        """The whole page into ``formatter`` (click prints it: ``--help`` on stdout, a bare command
        with ``no_args_is_help`` on stderr)."""
        formatter.write(render_help(self, ctx))

    def parameter_panels(self, ctx: typer.Context) -> tuple[HelpPanel, ...]:
        """The parameters' panels, in the order of each panel's first parameter; hidden ones left out.

        A parameter's panel is its ``rich_help_panel``, else Arguments / Options; ``-h`` /
        ``--help`` (typer adds it last, with no panel) joins the panel of the parameter before it.
        """
        panels: dict[str, list[HelpRow]] = {}
        title = OPTIONS_PANEL
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                title = param.rich_help_panel or ARGUMENTS_PANEL
            elif not set(param.opts) & set(ctx.help_option_names):
                title = (param.rich_help_panel if isinstance(param, TyperOption) else None) or OPTIONS_PANEL
            names, text = record
            panels.setdefault(title, []).append(HelpRow(names, text))
        return tuple(HelpPanel(title, tuple(rows)) for title, rows in panels.items())


def _can_write(stream: TextIO, text: str) -> bool:
    """Whether ``stream``'s encoding holds ``text`` (the panels' box lines; else ASCII boxes)."""
    try:
        text.encode(stream.encoding or "utf-8")
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def render_help(command: PanelHelp, ctx: typer.Context) -> str:
    """The help page of ``command`` as text, as wide as the terminal (``COLUMNS`` first), with
    ANSI styles that click's ``echo`` strips when the output is not a terminal (none with
    ``NO_COLOR``)."""
    from rich import box, console, panel, table, text  # here: rich (~15 ms of imports) only for a help page

    width = max(40, shutil.get_terminal_size().columns)
    unicode = all(_can_write(stream, "╭─╮│╰╯") for stream in (sys.stdout, sys.stderr))
    boxes = box.ROUNDED if unicode else box.ASCII
    out = io.StringIO()
    page = console.Console(file=out, width=width, force_terminal="NO_COLOR" not in os.environ,
                           color_system="standard", highlight=False, emoji=False, markup=False)
    usage = f"Usage: {ctx.command_path} {' '.join(command.collect_usage_pieces(ctx))}"
    page.print(text.Text(usage, style="bold"), soft_wrap=True)
    for line in command.usage_lines:
        page.print(text.Text(f"{' ' * len('Usage: ')}{line}", style="bold"), soft_wrap=True)
    for paragraph in (command.help or "").strip().split("\n\n"):
        page.print()
        page.print(text.Text(" ".join(paragraph.split())))
    page.print()
    panels = command.parameter_panels(ctx) + command.panels
    names_width = min(NAMES_MAX_WIDTH, width * 2 // 5, max(len(row.name) for group in panels for row in group.rows))
    for group in panels:
        rows = table.Table(show_header=False, box=None, expand=True, padding=(0, 1), pad_edge=False)
        rows.add_column(style="bold cyan", width=names_width, overflow="fold")
        rows.add_column(ratio=1, overflow="fold")
        for row in group.rows:
            rows.add_row(row.name, row.text)
        page.print(panel.Panel(rows, box=boxes, title=group.title, title_align="left", border_style="dim"))
    if command.epilog:
        page.print()
        for line in command.epilog.strip("\n").splitlines():
            page.print(text.Text(line), soft_wrap=True)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())

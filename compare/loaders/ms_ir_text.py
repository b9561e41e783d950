"""The text of a MindSpore ``.ir`` graph file, read line by line into params and subgraph bodies.

MindSpore writes the file for people to read; there is no library for it. :func:`scan_ir`
reads what :mod:`compare.loaders.ms_ir` makes a graph of.

**Grammar handled** (one line at a time; anything else is skipped)::

    # IR entry: @kernel_graph0                           (tolerated, not required)
    %para{N}_{name}: <{abstract}> ... [IsWeight: true|false]                  the params section
    subgraph @{graph}({header params}) {                 opens a body (several: all, file order)
      %{N}({label}) = {callee}({arguments}) {attributes...}                   a node
          : ({input abstracts}) -> ({output abstracts})   (ignored)
          # Fullname with scope: ({scope}/{Type}-op{K})    the kernel's full name, today's form;
          : full_name_with_scope: ({scope}/{Type}-op{K})   the same, r1.3 (seed 001's sample);
          : ({scope}/{Type}-op{K})                         the same, r1.1 / r1.2 (seeds 000, 002)
          # Corresponding forward node candidate:        (ignored; the lines below it count,
          # Corresponding code candidate:                 likewise)
          # In file {file}:{line}[~{line}][, {col}~{col}]/{code}/
      Return(%{N})                                       (not a node)
    }                                                    closes the body

The first full-name line of a node, in any of the three forms, names it. A plain ``: (...)`` line
is a name only when what the parentheses hold is one word without ``<>()[]{},`` (an abstract line
always has a ``<`` or a ``->``): ``: (<Tensor[Float32]...>)`` and ``: ()`` are not names.

Edge-case policy: unknown line shapes are skipped; a node line whose argument list does not
close on its line takes up to 64 continuation lines (a multi-line ``Tensor`` value); lines are
read at most 4 MiB each (the rest of a longer line is dropped); a subgraph left open (at the end
of the file, or by the next ``subgraph`` line) is kept (:attr:`Subgraph.closed` False). Scans
are linear: no regular expression here can backtrack over a long line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..diverge.records import NodeRole, SourceLine

_LIBRARY_FOLDERS = frozenset({"site-packages", "dist-packages"})
_MAX_LINE = 4 << 20
_MAX_CONTINUATION = 64
_NODE_RE = re.compile(r"%(\d{1,9})(?:\(([^()\n]{0,4096})\))? ?= ?([@%]?[A-Za-z_][\w.:]{0,255})\(")
_PARAM_RE = re.compile(r"%para(\d{1,9})_([^:\s,()]{1,4096}):")
PARAM_REF_RE = re.compile(r"%para\d{1,9}_(\S{1,4096})")
_SUBGRAPH_RE = re.compile(r"subgraph @([^\s(]{1,4096})\(")
_TRACE_RE = re.compile(r":(\d{1,9})(?:~\d{1,9})?(?:, ?\d{1,9}~\d{1,9})?/")
_OLD_TRACE_RE = re.compile(r"\((\d{1,9})\)/")
_SCAN_RE = re.compile(r'[()\[\]{}",\\]')
_FULLNAME = "# Fullname with scope:"
_OLD_FULLNAME = "full_name_with_scope:"
_NAME_RE = re.compile(r"[^\s<>()\[\]{},]+")
#: The three forms of a full-name line, for messages.
FULLNAME_FORMS = "'# Fullname with scope: (...)', ': full_name_with_scope: (...)' or ': (...)'"
_IN_FILE = "# In file "


@dataclass(frozen=True)
class Param:
    """A ``%para{N}_{name}`` of the params section or of a subgraph header."""

    name: str
    role: NodeRole


@dataclass
class NodeText:
    """A node line and the comment lines under it, as read."""

    number: int
    label: str
    callee: str
    args: list[str]
    line: int
    fullname: str | None = None
    traces: list[SourceLine] = field(default_factory=list)


@dataclass
class Subgraph:
    """One ``subgraph @name(...) { ... }`` body."""

    name: str
    line: int
    params: dict[str, Param] = field(default_factory=dict)
    nodes: list[NodeText] = field(default_factory=list)
    closed: bool = False


@dataclass
class _ArgScan:
    """A scan over a call's argument list, fed one line at a time (a literal may span lines).

    Top-level commas separate the arguments; ``( [ {`` nest; ``"..."`` strings (with ``\\``
    escapes) are opaque; the ``)`` at depth 0 closes the list (``closed``). Each character is
    looked at once, whatever the number of lines.
    """

    args: list[str] = field(default_factory=list)
    part: list[str] = field(default_factory=list)
    depth: int = 0
    quoted: bool = False
    closed: bool = False
    size: int = 0

    def feed(self, text: str, start: int = 0) -> None:
        """Scan ``text[start:]`` (until the list closes)."""
        self.size += len(text) - start
        begin = start
        skip_to = start
        for match in _SCAN_RE.finditer(text, start):
            at = match.start()
            if at < skip_to:
                continue
            char = match.group()
            if self.quoted:
                if char == "\\":
                    skip_to = at + 2
                elif char == '"':
                    self.quoted = False
            elif char == '"':
                self.quoted = True
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                if self.depth > 0:
                    self.depth -= 1
                elif char == ")":
                    self._end_argument(text[begin:at])
                    self.closed = True
                    return
            elif char == "," and self.depth == 0:
                self._end_argument(text[begin:at])
                begin = at + 1
        self.part.append(text[begin:] + "\n")

    def arguments(self) -> list[str]:
        """The arguments (an unclosed list: what was read, the last argument as far as it went)."""
        args = list(self.args)
        if not self.closed and self.part:
            args.append("".join(self.part).strip())
        return [a for a in args if a]

    def _end_argument(self, tail: str) -> None:
        self.part.append(tail)
        self.args.append("".join(self.part).strip())
        self.part = []


@dataclass
class _Pending:
    """A node line whose argument list has not closed yet (continued on the next lines)."""

    node: NodeText
    scan: _ArgScan
    lines: int = 1

    @property
    def full(self) -> bool:
        """:data:`_MAX_CONTINUATION` lines or :data:`_MAX_LINE` characters read: no more lines."""
        return self.lines >= _MAX_CONTINUATION or self.scan.size > _MAX_LINE

    def settle(self) -> None:
        """Give the node the arguments read so far."""
        self.node.args = self.scan.arguments()


@dataclass
class IrText:
    """Everything read from the file."""

    params: dict[str, Param] = field(default_factory=dict)
    subgraphs: list[Subgraph] = field(default_factory=list)
    lines: int = 0


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line, at most :data:`_MAX_LINE` characters each (the rest of
    a longer line is dropped); undecodable bytes are replaced. OSError propagates."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        number = 0
        while True:
            text = handle.readline(_MAX_LINE)
            if not text:
                return
            number += 1
            rest = text
            while rest and not rest.endswith("\n"):
                rest = handle.readline(_MAX_LINE)
            yield number, text.rstrip("\r\n")


def scan_ir(path: Path) -> IrText:
    """Read the file into params and subgraphs (see the module doc for the grammar)."""
    ir = IrText()
    body: Subgraph | None = None
    current: NodeText | None = None
    pending: _Pending | None = None
    for number, raw in _read_lines(path):
        ir.lines = number
        text = raw.strip()
        if pending is not None:
            if not (_is_structural(text) or pending.full):
                pending = _continue(pending, raw)
                continue
            pending.settle()
            pending = None
        if body is None:
            body = _outside_body(ir, text, number)
            current = None
            continue
        if text == "}":
            body.closed = True
            body, current = None, None
            continue
        if text.startswith("subgraph @"):  # the body before was not closed: a new one opens
            body, current = _outside_body(ir, text, number) or body, None
            continue
        if text.startswith("%"):
            current, pending = _node_line(text, number)
            if current is not None:
                body.nodes.append(current)
            continue
        if current is not None and text.startswith("#"):
            _comment_line(current, text)
        elif current is not None and text.startswith(":"):
            _name_once(current, _colon_full_name(text))
        elif not text.startswith(":"):
            current = None  # Return(...) or an unknown line: what follows is not a node's
    if pending is not None:
        pending.settle()
    return ir


def _is_structural(text: str) -> bool:
    """A line that cannot continue an unclosed argument list."""
    return text.startswith(("%", ":", "#", "}", "subgraph ")) or text == ""


def _outside_body(ir: IrText, text: str, number: int) -> Subgraph | None:
    """A line outside any subgraph body: a param, a subgraph header (returned), or skipped."""
    if text.startswith("%para"):
        param = _param_line(text)
        if param is not None:
            ir.params.setdefault(param[0], param[1])
        return None
    if text.startswith("subgraph @") and text.endswith("{"):
        match = _SUBGRAPH_RE.match(text)
        if match is None:
            return None
        subgraph = Subgraph(match.group(1), number)
        for token in _split_args(text, match.end()):
            ref = PARAM_REF_RE.fullmatch(token.split(":", 1)[0].strip())
            if ref is not None:
                subgraph.params[ref.group(1)] = Param(ref.group(1), NodeRole.DATA)
        ir.subgraphs.append(subgraph)
        return subgraph
    return None


def _param_line(text: str) -> tuple[str, Param] | None:
    """``%para{N}_{name}: <...>`` -> ``(name, param)``; its role is PARAMETER when the abstract says
    ``is_parameter`` or the line ``IsWeight: true``."""
    match = _PARAM_RE.match(text)
    if match is None:
        return None
    name = match.group(2)
    rest = text[match.end():]
    weight = "is_parameter" in rest or "IsWeight: true" in rest
    return name, Param(name, NodeRole.PARAMETER if weight else NodeRole.DATA)


def _node_line(text: str, number: int) -> tuple[NodeText | None, _Pending | None]:
    """A ``%N(label) = callee(args) ...`` line -> the node (None when the line is not one) and, when
    its argument list does not close on the line, the pending continuation."""
    match = _NODE_RE.match(text)
    if match is None:
        return None, None
    scan = _ArgScan()
    scan.feed(text, match.end())
    node = NodeText(int(match.group(1)), match.group(2) or "", match.group(3), scan.arguments(), number)
    return node, (None if scan.closed else _Pending(node, scan))


def _continue(pending: _Pending, raw: str) -> _Pending | None:
    """Feed a continuation line to an unclosed argument list; None once it has closed."""
    pending.scan.feed(raw)
    pending.lines += 1
    if pending.scan.closed:
        pending.settle()
        return None
    return pending


def _split_args(text: str, start: int) -> list[str]:
    """The arguments of a call whose list starts at ``text[start]`` (see :class:`_ArgScan`)."""
    scan = _ArgScan()
    scan.feed(text, start)
    return scan.arguments()


def _comment_line(node: NodeText, text: str) -> None:
    """``# Fullname with scope: (...)`` and ``# In file ...`` lines of a node; others ignored."""
    if text.startswith(_FULLNAME):
        _name_once(node, _comment_full_name(text))
    elif text.startswith(_IN_FILE):
        trace = parse_trace(text[len(_IN_FILE):])
        if trace is not None:
            node.traces.append(trace)


def _name_once(node: NodeText, name: str | None) -> None:
    """Give the node ``name`` unless it has one already (its first full-name line counts)."""
    if name and node.fullname is None:
        node.fullname = name


def _comment_full_name(text: str) -> str | None:
    """The name of a ``# Fullname with scope: (...)`` line (today's form: whatever the parentheses
    hold, or the rest of the line without them); None for an empty one."""
    scope = text[len(_FULLNAME):].strip()
    if scope.startswith("(") and scope.endswith(")"):
        scope = scope[1:-1].strip()
    return scope or None


def _colon_full_name(text: str) -> str | None:
    """The name of an older full-name line -- ``: full_name_with_scope: ({name})`` (r1.3) or
    ``: ({name})`` (r1.1 / r1.2) -- else None (an abstract line such as ``: (<Tensor...>) -> (...)``).
    ``{name}`` must be one word without ``<>()[]{},``."""
    rest = text[1:].strip() if text.startswith(":") else ""
    if rest.startswith(_OLD_FULLNAME):
        rest = rest[len(_OLD_FULLNAME):].strip()
    if len(rest) < 3 or rest[0] != "(" or rest[-1] != ")":
        return None
    name = rest[1:-1].strip()
    return name if _NAME_RE.fullmatch(name) else None


def _full_name_of_line(text: str) -> str | None:
    """The kernel name a (stripped) line gives in any of the three forms, else None."""
    if text.startswith(_FULLNAME):
        return _comment_full_name(text)
    if text.startswith(":"):
        return _colon_full_name(text)
    return None


def graph_gives_names(path: Path) -> bool:
    """Whether the file has a full-name line in any of the three forms (read until the first:
    cheap on a real graph, whose first kernel names itself within a few lines of the params).
    OSError propagates."""
    return any(_full_name_of_line(text.strip()) for _, text in _read_lines(path))


def parse_trace(text: str) -> SourceLine | None:
    """``{file}:{line}[~{line}][, {col}~{col}]/{code}/`` (or ``{file}({line})/{code}/``) -> a
    :class:`SourceLine`; None when neither form is there."""
    match = _TRACE_RE.search(text) or _OLD_TRACE_RE.search(text)
    if match is None or match.start() == 0:
        return None
    code = text[match.end():]
    if code.endswith("/"):
        code = code[:-1]
    return SourceLine(text[:match.start()].strip(), int(match.group(1)), code.strip())


def user_line(traces: Iterable[SourceLine]) -> SourceLine | None:
    """The last trace whose file is not inside a ``site-packages`` / ``dist-packages`` folder; the
    last trace when all are; None when there is none."""
    last: SourceLine | None = None
    user: SourceLine | None = None
    for trace in traces:
        last = trace
        folders = set(re.split(r"[\\/]", trace.file))
        if not folders & _LIBRARY_FOLDERS:
            user = trace
    return user if user is not None else last


__all__ = ["FULLNAME_FORMS", "PARAM_REF_RE", "IrText", "NodeText", "Param", "Subgraph", "graph_gives_names",
           "parse_trace", "scan_ir", "user_line"]

"""msprobe dump folders: finding the ``dump.json`` folders of a path and choosing among them.

Layout: ``{dump_path}/step{N}/rank{R}/`` (``rank`` alone when the process had no rank,
``proc{pid}`` for processes without one) holding ``dump.json``. :func:`claim` finds the folders
(the path itself, the folder of a given ``dump.json``, or up to :data:`MAX_DEPTH` levels below)
by the name and first bytes of their ``dump.json``; a folder's coordinates (``rank``, ``proc``,
``iteration`` = the step) come from its name and its parent's (:func:`folder_coords`). One
folder is chosen by :func:`select_folder` (``--rank`` / ``--iteration``), several compared each
in turn by :func:`select_parts`. Reading a folder is :mod:`compare.loaders.msprobe`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from convert.entries import os_problem

from ..errors import OptionError
from ..records import DumpLayout
from .selection import Candidate, Selection, filter_by

DUMP_JSON = "dump.json"
DATA_DIR = "dump_tensor_data"
#: Levels searched below a given path for ``dump.json`` (dump root -> step -> rank).
MAX_DEPTH = 2

_STEP_RE = re.compile(r"step(\d+)")
_RANK_RE = re.compile(r"rank(\d*)")
_PROC_RE = re.compile(r"proc(\d+)")


#: Keys of msprobe's ``dump.json`` top level, one of which its first :data:`_SNIFF_BYTES` bytes hold
#: (msprobe writes ``task``, ``level``, ``framework``, ``dump_data_dir``, ``data`` first): a
#: ``dump.json`` of another tool (a MindSpore dump configuration) is not claimed.
_SNIFF_KEYS = (b'"data"', b'"framework"', b'"dump_data_dir"')
_SNIFF_BYTES = 4096


def _is_dump_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an msprobe ``dump.json`` (by its name and first bytes)."""
    try:
        with open(folder / DUMP_JSON, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return False
    return head.lstrip()[:1] == b"{" and any(key in head for key in _SNIFF_KEYS)


def folder_coords(folder: Path) -> dict[str, object]:
    """``rank`` (``rank{R}``; ``rank`` alone: none), ``proc``, ``iteration`` (``step{N}``) of a dump folder."""
    parts = Path(os.path.abspath(folder)).parts
    coords: dict[str, object] = {}
    rank = _RANK_RE.fullmatch(parts[-1])
    proc = _PROC_RE.fullmatch(parts[-1])
    if rank is not None and rank.group(1):
        coords["rank"] = int(rank.group(1))
    elif proc is not None:
        coords["proc"] = int(proc.group(1))
    if len(parts) >= 2:
        step = _STEP_RE.fullmatch(parts[-2])
        if step is not None:
            coords["iteration"] = int(step.group(1))
    return coords


def _subfolders(folder: Path, problems: list[tuple[Path, str]] | None) -> list[Path]:
    """The folders in ``folder`` (hidden ones and ``dump_tensor_data`` left out), by name; only
    the entries' types are looked at (a flat folder of many dump files costs one listing)."""
    out: list[Path] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.startswith(".") or entry.name == DATA_DIR:
                    continue
                try:
                    if entry.is_dir():
                        out.append(Path(entry.path))
                except OSError:
                    continue  # a link loop or an unreadable link: not an msprobe folder
    except OSError as exc:
        if problems is not None:
            problems.append((folder, os_problem(exc, folder)))
    return sorted(out)


def claim(path: str | os.PathLike, problems: list[tuple[Path, str]] | None = None) -> list[Candidate] | None:
    """The ``dump.json`` folders of ``path`` (itself, its folder when it is the ``dump.json`` file,
    or up to :data:`MAX_DEPTH` levels below),
    each a :class:`Candidate` of layout ``msprobe``; None when there is none (not an msprobe dump).

    Folders that cannot be listed go to ``problems`` when given.
    """
    root = Path(path)
    try:
        if root.name == DUMP_JSON and root.is_file() and _is_dump_folder(root.parent):
            return [Candidate(path=root.parent, layout=DumpLayout.MSPROBE, coords=folder_coords(root.parent),
                              kind="msprobe")]
        if not root.is_dir():
            return None
    except OSError:
        return None
    if _is_dump_folder(root):
        return [Candidate(path=root, layout=DumpLayout.MSPROBE, coords=folder_coords(root), kind="msprobe")]
    found: list[Candidate] = []
    level = [root]
    for _ in range(MAX_DEPTH):
        below: list[Path] = []
        for folder in level:
            for sub in _subfolders(folder, problems):
                if _is_dump_folder(sub):
                    found.append(Candidate(path=sub, layout=DumpLayout.MSPROBE, coords=folder_coords(sub), kind="msprobe"))
                else:
                    below.append(sub)
        level = below
    return found or None


def sniff(folder: Path) -> bool:
    """Whether ``folder`` is (or holds, :data:`MAX_DEPTH` levels down) an msprobe dump folder."""
    return claim(folder) is not None


def explain(folder: Path) -> str:
    """Why ``folder`` is not an msprobe dump: no ``dump.json``, or one that is not msprobe's."""
    if (folder / DUMP_JSON).is_file():
        return (f"its {DUMP_JSON} is not an msprobe dump: no \"data\" / \"framework\" / \"dump_data_dir\" key in its "
                f"first {_SNIFF_BYTES} bytes (an empty or foreign {DUMP_JSON})")
    return f"no {DUMP_JSON} in it or in its step*/rank* folders (msprobe dump)"


def _no_graph_levels(selection: Selection, notes: list[str]) -> None:
    """Note that the graph-level options do not apply (an msprobe tree has steps and ranks only)."""
    if selection.graph is not None or selection.model_name is not None or selection.ge_graph is not None:
        notes.append("--graph / --model-name / --ge-graph ignored: an msprobe dump has no such levels")


def select_folder(path: str | os.PathLike, candidates: list[Candidate],
                  selection: Selection) -> tuple[Candidate, list[str]]:
    """The dump folder ``--rank`` / ``--iteration`` (the ``step{N}`` folder) choose, with notes.

    Defaults: the smallest rank, the largest step (a note says so when there were several).
    Raises :class:`OptionError` when a spec selects nothing, or several folders remain that the
    folder names do not tell apart (``proc{pid}`` folders).
    """
    rank_spec, iter_spec, _ = selection.specs()
    notes: list[str] = []
    where = str(path)
    _no_graph_levels(selection, notes)
    chosen = filter_by(list(candidates), "rank", rank_spec, option="--rank", where=where, default="min", notes=notes)
    chosen = filter_by(chosen, "iteration", iter_spec, option="--iteration", where=where, default="max",
                       notes=notes)
    if len(chosen) > 1:
        ranked = [c for c in chosen if c.get("rank") is not None]
        if len(ranked) == 1:
            others = ", ".join(str(c.path) for c in chosen if c is not ranked[0])
            notes.append(f"{where}: using {ranked[0].path}; not compared (no rank number): {others}")
            chosen = ranked
        else:
            raise OptionError(f"{where} holds {len(chosen)} msprobe dump folders the options do not tell apart: "
                              + ", ".join(str(c.path) for c in chosen[:10]) + " -- give one of them")
    return chosen[0], notes


def select_parts(path: str | os.PathLike, candidates: list[Candidate], selection: Selection,
                 notes: list[str]) -> list[Candidate]:
    """Every dump folder ``--rank`` / ``--iteration`` select, for compare-each-in-turn: one part per
    (rank, step), ordered by rank then step. Notes go to ``notes``.

    Defaults as :func:`select_folder`: without ``--rank``, the smallest rank; without
    ``--iteration``, the largest step. Folders without a rank number (``proc{pid}``, written by
    single-process runs, and a bare ``rank``) are not ranks -- a pid differs from run to run:

    * a tree with ``rank{R}`` folders leaves them out, with a note naming them;
    * a tree with none has one part per step, without a rank (its Rank column is empty), paired
      with the other side's folder of the same step;
    * several of them in one step cannot be told apart: that step is not compared, with a note
      naming them (give one folder directly).

    Raises :class:`OptionError` when a spec selects nothing (the message lists what there is).
    """
    rank_spec, iter_spec, _ = selection.specs()
    where = str(path)
    _no_graph_levels(selection, notes)
    ranked = [c for c in candidates if c.get("rank") is not None]
    chosen = list(candidates)
    if ranked and len(ranked) < len(chosen):
        notes.append(f"{where}: not compared (no rank number, not a rank of this run): "
                     + ", ".join(str(c.path) for c in chosen if c.get("rank") is None))
        chosen = ranked
    chosen = filter_by(chosen, "rank", rank_spec, option="--rank", where=where, default="min", notes=notes,
                       keep_all=True)
    chosen = filter_by(chosen, "iteration", iter_spec, option="--iteration", where=where, default="max",
                       notes=notes, keep_all=True)
    groups: dict[tuple[object, object], list[Candidate]] = {}
    for c in chosen:
        groups.setdefault((c.get("rank"), c.get("iteration")), []).append(c)
    out: list[Candidate] = []
    for (_, step), group in groups.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        notes.append(f"{where}: step {step} holds {len(group)} dump folders without a rank number, which the options "
                     "do not tell apart: not compared (" + ", ".join(str(c.path) for c in group[:10])
                     + ") -- give one of them directly")
    if not out:
        raise OptionError(f"{where}: no msprobe dump folder left to compare each in turn (see the notes: "
                          + "; ".join(notes[-3:]) + ")")
    out.sort(key=lambda c: (_number(c.get("rank")), _number(c.get("iteration")), str(c.path)))
    return out


def _number(value: object) -> int:
    return value if isinstance(value, int) else -1


__all__ = ["DATA_DIR", "DUMP_JSON", "MAX_DEPTH", "claim", "explain", "folder_coords", "select_folder", "select_parts",
           "sniff"]

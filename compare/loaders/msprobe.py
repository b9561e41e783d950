"""msprobe dumps (Ascend mstt's accuracy tool, PyTorch and MindSpore): ``dump.json`` -> :class:`Run`.

Layout: ``{dump_path}/step{N}/rank{R}/`` (``rank`` alone when the process had no rank,
``proc{pid}`` for processes without one; one folder is read by :func:`select_folder`, several
compared each in turn by :func:`select_parts`) holding ``dump.json`` (plus ``stack.json``,
``construct.json``, ``dump_error_info.log``, not read) and, for ``task: tensor``, the folder
``dump_tensor_data/`` with one file per tensor: ``.pt`` (PyTorch, read by
:mod:`convert.codecs.torch_pt`, without torch) or ``.npy`` (MindSpore, :mod:`convert.codecs.npy`).

``dump.json`` is ``{"task": "tensor"|"statistics"|..., "level": "L0"|"L1"|"mix", "framework":
"pytorch"|"mindspore", "dump_data_dir": path, "data": {data name: entry}}``. An entry is one
call (data names: :mod:`convert.names.msprobe`) and becomes one :class:`OpDump` keyed by its
data name; its sections:

* forward: ``input_args`` (list), ``input_kwargs`` (object), ``parameters`` (object, module
  weights) -> the inputs, in this order; ``output`` (list) -> the outputs;
* backward: ``input`` (the gradients of the forward outputs) -> inputs, ``output`` (those of the
  forward inputs) -> outputs; ``grad_input`` / ``grad_output`` likewise;
* ``parameters_grad`` entries: ``{name: [tensor]}`` -> outputs, in key order.

Each section is walked depth first (lists in order, objects in key order; nested lists and
tuples of tensors occur). A *leaf* is an object with a ``type`` or ``dtype`` key, or ``null``;
every leaf takes the next index of its kind (inputs numbered across ``input_args``, then
``input_kwargs``, then ``parameters``), tensors or not, so a non-tensor argument (an ``int``,
a ``slice``, ``null``) keeps the places of the tensors after it the same on both sides. A
tensor leaf (``type`` ``torch.Tensor`` / ``mindspore.Tensor`` / ``...Parameter``, or a ``dtype`` and a ``shape``)
becomes a :class:`TensorRef`: dtype from :func:`~convert.names.msprobe.msprobe_dtype`, shape as
recorded, format ``ND``, the recorded ``Max`` / ``Min`` / ``Mean`` / ``Norm`` as statistics
``max`` / ``min`` / ``avg`` / ``l2norm`` and the ``md5`` field (a CRC-32 or XOR checksum, not an
MD5) as ``checksum``; ``data_name`` names its file in ``dump_tensor_data`` (read only when the
pair is compared). A tensor without ``data_name`` (``task: statistics``) has statistics only:
the run is then ``stats_only`` and compared by statistics (:mod:`compare.stats`).

Data types: MindSpore saves bfloat16 tensors as float32 ``.npy``; the DataType column shows the
recorded type, the values are compared as saved.

Edge-case policy (nothing crashes, nothing is dropped silently):

* ``dump.json`` that is not JSON or not an object with a ``data`` object: :class:`DumpFormatError`
  naming the file (and the byte offset of a syntax error); so is one holding an integer of more
  than Python's int-string conversion limit (:func:`sys.get_int_max_str_digits`, 4300 digits by
  default; the error gives its line and column), and one nested deeper than Python's recursion
  limit (1000 levels by default; a ``dump.json`` of msprobe nests fewer than 10);
* an integer statistic (``Max`` ...) beyond the float range: read as +-inf (a float conversion
  overflows so);
* an entry that is not an object, or a section of the wrong type: the op is kept with
  ``error`` set (its row says why); an unknown section is named in ``run.notes``;
* a ``data_name`` that is not a plain file name (``/``, ``\\``, ``..``, NUL, absolute): the
  tensor is kept, its reader refuses with "refused: not a file name inside dump_tensor_data";
* a ``data_name`` whose file is missing, or whose suffix is neither ``.pt`` nor ``.npy``: the
  tensor's reader says so (the row carries it), a note counts them;
* files of ``dump_tensor_data`` no entry names: ``run.skipped`` with the reason.

Links (trust policy): a file of ``dump_tensor_data`` is read only when its real path (every
symbolic link resolved) lies inside the dump tree -- the dump folder holding ``dump.json``, or
the path the run was opened from (the root given on the command line). A link that leaves the
tree (``x.pt -> /home/user/secret.pt``, or ``dump_tensor_data`` itself a link elsewhere) is never
opened: the tensor's row says "refused: a symbolic link to ... outside the dump tree ...", the
file is in ``run.skipped`` with that reason and a note counts them. Links inside the tree are
followed. The check is made when the folder is listed and again (one ``lstat``) just before
the file is read.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import reprlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from convert.entries import list_entries, os_problem
from convert.names.msprobe import msprobe_dtype, parse_msprobe_name
from convert.codecs.npy import load_npy, read_npy_header
from convert.codecs.torch_pt import load_pt, read_pt_header

from ..errors import CompareError, DumpFormatError, OptionError
from ..records import DumpLayout, OpDump, Run, RunKind, TensorKind, TensorRef
from .selection import Candidate, Selection, filter_by

DUMP_JSON = "dump.json"
DATA_DIR = "dump_tensor_data"
#: ``dump.json`` files larger than this are refused (a network of 10^5 calls is ~100 MB).
MAX_JSON_BYTES = 2 << 30
#: Levels searched below a given path for ``dump.json`` (dump root -> step -> rank).
MAX_DEPTH = 2

_STEP_RE = re.compile(r"step(\d+)")
_RANK_RE = re.compile(r"rank(\d*)")
_PROC_RE = re.compile(r"proc(\d+)")

#: Sections of a forward/backward entry -> the kind of their tensors (in this order).
_SECTIONS: tuple[tuple[str, TensorKind], ...] = (
    ("input_args", TensorKind.INPUT),
    ("input_kwargs", TensorKind.INPUT),
    ("input", TensorKind.INPUT),
    ("grad_input", TensorKind.INPUT),
    ("parameters", TensorKind.INPUT),
    ("output", TensorKind.OUTPUT),
    ("grad_output", TensorKind.OUTPUT),
)
#: Recorded statistic -> vcompare's statistic name (:data:`compare.loaders.stats_csv.STAT_COLUMNS`).
_STATS = {"Max": "max", "Min": "min", "Mean": "avg", "Norm": "l2norm", "md5": "checksum"}
_FORMAT = "ND"


# --------------------------------------------------------------------------------------------
# Finding dump.json folders
# --------------------------------------------------------------------------------------------


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


def _coords(folder: Path) -> dict[str, object]:
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
            return [Candidate(path=root.parent, layout=DumpLayout.MSPROBE, coords=_coords(root.parent),
                              kind="msprobe")]
        if not root.is_dir():
            return None
    except OSError:
        return None
    if _is_dump_folder(root):
        return [Candidate(path=root, layout=DumpLayout.MSPROBE, coords=_coords(root), kind="msprobe")]
    found: list[Candidate] = []
    level = [root]
    for _ in range(MAX_DEPTH):
        below: list[Path] = []
        for folder in level:
            for sub in _subfolders(folder, problems):
                if _is_dump_folder(sub):
                    found.append(Candidate(path=sub, layout=DumpLayout.MSPROBE, coords=_coords(sub), kind="msprobe"))
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


# --------------------------------------------------------------------------------------------
# Reading dump.json
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DumpJson:
    """The top level of a ``dump.json``: its path, the fields that describe it, and ``data``."""

    path: Path
    task: str
    level: str
    framework: str
    data: dict


def read_dump_json(path: Path) -> DumpJson:
    """Parse a ``dump.json``; :class:`DumpFormatError` (file, character offset) when it is not one."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise DumpFormatError(path, f"{size} bytes: larger than the {MAX_JSON_BYTES} bytes a dump.json is "
                                        "read up to")
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DumpFormatError(path, f"not UTF-8 text: {exc.reason}", offset=exc.start) from None
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpFormatError(path, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                              offset=len(text[:exc.pos].encode("utf-8"))) from None
    except RecursionError:
        raise DumpFormatError(path, f"JSON nested too deeply (more levels than Python's recursion limit, "
                                    f"{sys.getrecursionlimit()})") from None
    except ValueError as exc:  # an integer beyond Python's int-string conversion limit
        raise DumpFormatError(path, _long_integer(text, exc), offset=_long_integer_offset(text)) from None
    if not isinstance(top, dict):
        raise DumpFormatError(path, f"the top level is a JSON {type(top).__name__}, not an object")
    data = top.get("data")
    if not isinstance(data, dict):
        raise DumpFormatError(path, "no \"data\" object: not an msprobe dump.json")

    def field_text(key: str) -> str:
        value = top.get(key)
        return value if isinstance(value, str) else ""

    return DumpJson(path=path, task=field_text("task"), level=field_text("level"), framework=field_text("framework"),
                    data=data)


def _long_integer_match(text: str) -> re.Match[str] | None:
    limit = sys.get_int_max_str_digits()
    if limit <= 0:
        return None
    return re.search(r"(?<![\w.\"])-?\d{%d,}(?![\d.eE])" % (limit + 1), text)


def _long_integer_offset(text: str) -> int | None:
    found = _long_integer_match(text)
    return None if found is None else len(text[:found.start()].encode("utf-8"))


def _long_integer(text: str, exc: ValueError) -> str:
    """Why ``json.loads`` raised a plain ValueError: an integer longer than Python reads (where)."""
    found = _long_integer_match(text)
    limit = sys.get_int_max_str_digits()
    if found is None:
        return f"not usable JSON: {str(exc)[:200]}"
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    digits = len(found.group().lstrip("-"))
    return (f"not usable JSON: an integer of {digits} digits (line {line}, column {column}), more than the {limit} "
            "digits Python reads into an integer (no msprobe field holds one)")


# --------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------

#: Messages show JSON values through this: a few levels, a few items, long values cut (a crafted
#: value nested 900 deep or 4000 digits long never reaches ``repr``).
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlong, _SHOW.maxstring, _SHOW.maxother = 3, 6, 4, 24, 40, 40


def _is_leaf(item: object) -> bool:
    return item is None or (isinstance(item, dict) and ("type" in item or "dtype" in item))


def _leaves(section: object, depth: int = 0) -> Iterator[object]:
    """The leaves of a section, depth first (lists in order, objects in key order)."""
    if depth > 64:
        raise ValueError("nested more than 64 levels")
    if _is_leaf(section):
        yield section
    elif isinstance(section, list):
        for item in section:
            yield from _leaves(item, depth + 1)
    elif isinstance(section, dict):
        for item in section.values():
            yield from _leaves(item, depth + 1)
    else:
        yield section  # a bare value (not written by msprobe): a leaf that is no tensor


def _is_tensor(item: object) -> bool:
    """A tensor item: ``type`` ending in ``Tensor`` or ``Parameter``, or a ``dtype`` and a ``shape``
    (non-tensor items -- ``int``, ``slice``, ``torch.Size``, ``torch.dtype`` -- carry a ``value``)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith(("Tensor", "Parameter")):
        return True
    return "dtype" in item and "shape" in item


def _safe_name(name: str) -> bool:
    """A plain file name: no separator, not ``.``/``..``, no NUL, not absolute."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0") and not os.path.isabs(name)


def _refuse(path: Path, why: str) -> np.ndarray:
    raise DumpFormatError(path, why)


def _inside(real: str, trees: tuple[str, ...]) -> bool:
    """Whether the real path ``real`` lies in (or is) one of the real folders ``trees``."""
    return any(real == tree or real.startswith(tree.rstrip(os.sep) + os.sep) for tree in trees)


def _link_outside(path: Path, trees: tuple[str, ...]) -> str | None:
    """Why the data file ``path`` must not be read: its real path leaves the dump tree; None when
    it stays inside."""
    real = os.path.realpath(path)
    if _inside(real, trees):
        return None
    return (f"refused: a symbolic link to {real}, outside the dump tree ({' or '.join(trees)}): never read")


def _guard(path: Path, trees: tuple[str, ...]) -> None:
    """Just before reading: a file that became a link out of the tree since the listing is refused."""
    try:
        is_link = os.path.islink(path)
    except OSError:
        return  # the reader's own open says why
    if is_link:
        why = _link_outside(path, trees)
        if why is not None:
            raise DumpFormatError(path, why)


def _read_npy(path: Path, trees: tuple[str, ...] = ()) -> np.ndarray:
    if trees:
        _guard(path, trees)
    return load_npy(path, read_npy_header(path))


def _read_pt(path: Path, trees: tuple[str, ...] = ()) -> np.ndarray:
    if trees:
        _guard(path, trees)
    return load_pt(path, read_pt_header(path))


def _stats(item: dict) -> dict:
    out: dict[str, float | str | None] = {}
    for key, name in _STATS.items():
        value = item.get(key)
        if isinstance(value, (int, float)):  # bool included (an int)
            try:
                out[name] = float(value)
            except OverflowError:  # an integer beyond the float range: +-inf, as a float conversion overflows
                out[name] = math.inf if value > 0 else -math.inf
        elif isinstance(value, str) and name == "checksum":
            out[name] = value
        elif value is None and key in item:  # msprobe's null (no mean / norm of an integer tensor)
            out[name] = None
    return out


@dataclass
class _Files:
    """The files of ``dump_tensor_data`` (by name) and which of them entries named."""

    folder: Path
    names: set[str]
    used: set[str]
    #: The real folders a file may lie in (links resolved): the dump folder, the opened root.
    trees: tuple[str, ...] = ()
    #: Files that are links out of the tree -> why they are refused (never read).
    outside: dict[str, str] = field(default_factory=dict)
    missing: int = 0
    refused: int = 0
    linked_out: int = 0


@functools.lru_cache(maxsize=256)
def _itemsize(dtype: str) -> int:
    """Bytes per element of a data-type name (0 for a name numpy does not know); remembered: a
    dump has a few types and 200,000 tensors."""
    try:
        return np.dtype(dtype).itemsize
    except (TypeError, ValueError):  # not a numpy name; a name that is not even text numpy reads (UnicodeError)
        return 0


def _tensor(op: str, kind: TensorKind, index: int, item: dict, files: _Files,
            json_path: Path) -> tuple[TensorRef, str | None]:
    """The TensorRef of a tensor leaf, and what is wrong with its item (a malformed shape: the
    reader then refuses with that reason), None when nothing is."""
    dtype_text = item.get("dtype")
    dtype = msprobe_dtype(dtype_text) if isinstance(dtype_text, str) else "unknown"
    shape_value = item.get("shape")
    if not isinstance(shape_value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                    for d in shape_value):
        why = f"{op} {kind.value} {index}: shape {_SHOW.repr(shape_value)} is not a list of non-negative integers"
        return TensorRef(op_name=op, kind=kind, index=index, dtype=dtype, format=_FORMAT, shape=(), path=json_path,
                         reader=functools.partial(_refuse, json_path, why)), why
    shape = tuple(shape_value)
    stats = _stats(item)
    source = f"{DUMP_JSON} {op} {kind.value} {index}"
    data_name = item.get("data_name")
    nbytes = math.prod(shape) * _itemsize(dtype)
    if not isinstance(data_name, str) or data_name in ("", "-1"):
        # statistics only; recorded statistics (possibly none: the row then says so) instead of data
        return TensorRef(op, kind, index, dtype, _FORMAT, shape, json_path, nbytes=nbytes, stats=stats,
                         stats_source=source), None
    base = dict(op_name=op, kind=kind, index=index, dtype=dtype, format=_FORMAT, shape=shape, nbytes=nbytes,
                stats=stats or None, stats_source=source)
    if not _safe_name(data_name):
        files.refused += 1
        why = f"data_name {_SHOW.repr(data_name)} of {op} refused: not a file name inside {DATA_DIR}"
        return TensorRef(**base, path=json_path, reader=functools.partial(_refuse, json_path, why)), None
    path = files.folder / data_name
    files.used.add(data_name)
    if data_name not in files.names:
        files.missing += 1
        reader = functools.partial(_refuse, path, f"missing: {DUMP_JSON} names it for {op} {kind.value} {index}")
    elif data_name in files.outside:
        files.linked_out += 1
        reader = functools.partial(_refuse, path, files.outside[data_name])
    elif data_name.endswith(".npy"):
        reader = functools.partial(_read_npy, path, files.trees)
    elif data_name.endswith(".pt"):
        reader = functools.partial(_read_pt, path, files.trees)
    else:
        reader = functools.partial(_refuse, path, "neither .pt nor .npy: not a tensor file vcompare reads")
    return TensorRef(**base, path=path, reader=reader), None


def _entry_op(name: str, entry: object, position: int, files: _Files, json_path: Path,
              unknown: set[str]) -> tuple[OpDump, list[str]]:
    """One ``data`` entry as an OpDump (module doc), and the problems of its items when the op
    keeps some tensors (else they are its ``error``); ``unknown`` collects sections not read."""
    parsed = parse_msprobe_name(name)
    op_type = parsed.op_type if parsed is not None else None
    if not isinstance(entry, dict):
        return OpDump(name=name, op_type=op_type, path=json_path, files=(json_path,), timestamp=position,
                      error=f"{json_path}: entry {name!r} is a JSON {type(entry).__name__}, not an object"), []
    sections: list[tuple[str, TensorKind, object]]
    if parsed is not None and parsed.direction == "parameters_grad":
        sections = [(key, TensorKind.OUTPUT, value) for key, value in entry.items()]
    else:
        sections = [(key, kind, entry[key]) for key, kind in _SECTIONS if key in entry]
        unknown.update(key for key in entry if key not in dict(_SECTIONS))
    refs: dict[TensorKind, list[TensorRef]] = {TensorKind.INPUT: [], TensorKind.OUTPUT: []}
    counters = {TensorKind.INPUT: 0, TensorKind.OUTPUT: 0}
    problems: list[str] = []
    for key, kind, section in sections:
        if not isinstance(section, (list, dict)) and section is not None:
            problems.append(f"section {key!r} is a JSON {type(section).__name__}, not a list or object")
            continue
        try:
            leaves = list(_leaves(section))
        except ValueError as exc:
            problems.append(f"section {key!r}: {exc}")
            continue
        for leaf in leaves:
            index = counters[kind]
            counters[kind] += 1
            if _is_tensor(leaf):
                ref, problem = _tensor(name, kind, index, leaf, files, json_path)  # type: ignore[arg-type]
                refs[kind].append(ref)
                if problem is not None:
                    problems.append(problem)
    error = None
    if problems and not (refs[TensorKind.INPUT] or refs[TensorKind.OUTPUT]):
        error = f"{json_path}: entry {name!r}: " + "; ".join(problems)
    data_files = tuple(dict.fromkeys(r.path for k in refs for r in refs[k] if r.path != json_path))
    return OpDump(name=name, op_type=op_type, path=json_path, files=(json_path, *data_files),
                  inputs=tuple(refs[TensorKind.INPUT]), outputs=tuple(refs[TensorKind.OUTPUT]), error=error,
                  timestamp=position), (problems if error is None else [])


def _trees(folder: Path, root: Path | None) -> tuple[str, ...]:
    """The real folders data files may lie in (module doc): the dump folder, and the root the run
    was opened from when it is a folder."""
    trees = [os.path.realpath(folder)]
    if root is not None and os.path.isdir(root):
        real = os.path.realpath(root)
        if real not in trees:
            trees.append(real)
    return tuple(trees)


def _links_out(data_dir: Path, files: tuple[os.DirEntry, ...], trees: tuple[str, ...]) -> dict[str, str]:
    """The files of ``data_dir`` whose real path leaves the dump tree, with why. Only links (and
    all files when ``data_dir`` itself resolves outside) cost a ``realpath``."""
    if not _inside(os.path.realpath(data_dir), trees):
        return {e.name: why for e in files if (why := _link_outside(Path(e.path), trees)) is not None}
    out: dict[str, str] = {}
    for entry in files:
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = True
        if is_link:
            why = _link_outside(Path(entry.path), trees)
            if why is not None:
                out[entry.name] = why
    return out


def scan_msprobe(folder: Path, *, root: Path | None = None, coords: dict | None = None) -> Run:
    """Read one msprobe dump folder (``dump.json`` + ``dump_tensor_data``) as a Run (module doc).

    Raises :class:`DumpFormatError` when ``dump.json`` is not an msprobe one; everything else is
    kept as rows with their reasons.
    """
    folder = Path(folder)
    json_path = folder / DUMP_JSON
    dump = read_dump_json(json_path)
    run = Run(root=Path(root) if root is not None else folder, path=folder, kind=RunKind.NUMPY,
              family=DumpLayout.MSPROBE, coords=dict(coords if coords is not None else _coords(folder)))
    data_dir = folder / DATA_DIR
    names: set[str] = set()
    trees = _trees(folder, root)
    outside: dict[str, str] = {}
    if data_dir.is_dir():
        try:
            entries = list_entries(data_dir)
        except OSError as exc:
            raise CompareError(f"cannot list {data_dir}: {os_problem(exc, data_dir)}") from exc
        names = {e.name for e in entries.files}
        run.skipped.extend(entries.problems)
        outside = _links_out(data_dir, entries.files, trees)
    files = _Files(folder=data_dir, names=names, used=set(), trees=trees, outside=outside)
    unknown: set[str] = set()
    partial: list[str] = []
    for position, (name, entry) in enumerate(dump.data.items()):
        op, problems = _entry_op(str(name), entry, position, files, json_path, unknown)
        run.ops[op.name] = op
        run.order[op.name] = position
        partial.extend(problems)
    tensors = sum(len(op.inputs) + len(op.outputs) for op in run.ops.values())
    without_data = sum(1 for op in run.ops.values() for ref in (*op.inputs, *op.outputs)
                       if ref.reader is None)
    run.notes.append(f"msprobe dump {folder} ({dump.framework or 'framework not given'}, task "
                     f"{dump.task or '?'}, level {dump.level or '?'}): {len(run.ops)} call(s), {tensors} tensor(s)")
    if without_data:
        run.stats_only = True
        run.notes.append(f"{without_data} tensor(s) have statistics only (no data_name): this side is compared by "
                         "the statistics dump.json records")
    if files.missing:
        run.notes.append(f"{files.missing} tensor file(s) named by {DUMP_JSON} are missing from {data_dir} "
                         "(their rows say which)")
    if files.refused:
        run.notes.append(f"{files.refused} data_name(s) refused: not plain file names inside {DATA_DIR} "
                         "(their rows say which)")
    if unknown:
        run.notes.append(f"{DUMP_JSON} sections not read (not tensors of a call): {', '.join(sorted(unknown))}")
    if partial:
        shown = "; ".join(partial[:5]) + (f"; and {len(partial) - 5} more" if len(partial) > 5 else "")
        run.notes.append(f"{len(partial)} item(s) of {DUMP_JSON} are not usable tensors: {shown}")
    if outside:
        run.notes.append(f"{len(outside)} file(s) of {data_dir} are symbolic links out of the dump tree: never read "
                         f"({files.linked_out} of them named by {DUMP_JSON}; their rows and the skipped list say "
                         "which)")
        run.skipped.extend((data_dir / name, why) for name, why in sorted(outside.items()))
    for name in sorted(names - files.used - outside.keys()):
        run.skipped.append((data_dir / name, f"not named by any data_name of {DUMP_JSON}"))
    if not run.ops:
        run.notes.append(f"{json_path}: the data object is empty (nothing was dumped)")
    return run


def load_msprobe(path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Run:
    """The run of the dump folder the selection picks among ``candidates`` (:func:`claim`)."""
    chosen, notes = select_folder(path, candidates, selection)
    run = scan_msprobe(chosen.path, root=Path(path), coords=dict(chosen.coords))
    run.notes[1:1] = notes
    return run


__all__ = ["DATA_DIR", "DUMP_JSON", "DumpJson", "claim", "explain", "load_msprobe", "read_dump_json",
           "scan_msprobe", "select_folder", "select_parts", "sniff"]

"""Pairing across dump families: by full scope name, or through a user mapping file.

**By name** (:func:`pair_families` without a mapping; MindSpore vs MindSpore, e.g. a GPU run
against an Ascend run). Op names are matched

1. exactly;
2. by :func:`name_key` -- ``--`` read as ``/``, then ``/ . \\`` and spaces turned into ``_`` (so
   the scope name of a ``.npy``/``.bin`` dump meets the ``_`` spelling of an Ascend-format dump
   of the same kernel);
3. by that key without the trailing kernel id ``-op{N}`` (backends number kernels differently),
   only where the stripped key is unique on both sides; a note counts these.

**By mapping file** (``--mapping map.csv|yaml``; MindSpore vs Ascend / TF / Caffe goldens, or
any two runs whose names differ). Each entry maps a left name to a right name::

    # left,right   (a header row "left,right" and # comments are allowed)
    Default/network-conv1/Conv2D-op104,conv1
    Default/network-fc/MatMul-op12:0,fc1:output:0
    Default/network-split-op7:output:1,slice5:1

A name may end in ``:{index}`` (an output) or ``:{input|output}:{index}``; without an index the
whole operator is mapped and its tensors are paired by kind and index. Left names are looked up
exactly or by :func:`name_key`; right names the same way (golden folders hold ``_``-spelled
names). YAML (when PyYAML is installed): a mapping ``{left: right}`` or a list of
``{left: ..., right: ...}`` items.

Both ways: inputs are compared only when both operators have input tensors (golden folders hold
outputs only). Layouts: a device-layout tensor (``NC1HWC0``, ``FRACTAL_Z`` ...) against a plain
one is converted to the plain layout (the right side is converted when the left is plain, as the
golden side normally is the framework layout); two device layouts are compared as stored.
Nothing is dropped: every tensor or operator without a counterpart is a row with ``*`` on the
missing side; overflow records (``Opdebug``) are rows that are not compared.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import OptionError, PairingError
from ..records import OpDump, Pair, Pairing, PairStatus, Run, TensorKind, TensorRef
from .match import one_sided_pair, op_tensor_rows, overflow_rows

MODE_FAMILY = "by-name (scope)"
MODE_MAPPING = "mapping"
NO_COUNTERPART = "*"

_KINDS = (TensorKind.INPUT, TensorKind.OUTPUT)
_OP_ID_RE = re.compile(r"-op\d+$")
_PLAIN = frozenset({"NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "ND", "NC", "CN"})
_HEADER_CELLS = frozenset({"left", "right", "left_op", "right_op", "left name", "right name", "source", "target",
                           "mindspore", "golden", "npu", "ground truth", "groundtruth"})


def name_key(name: str) -> str:
    """The normalised form of an op name (see the module doc, rule 2)."""
    key = name.replace("--", "/")
    for char in "/.\\ ":
        key = key.replace(char, "_")
    return key


def _stripped(key: str) -> str:
    return _OP_ID_RE.sub("", key)


# --------------------------------------------------------------------------------------------
# Mapping files
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorSel:
    """``name[:index]`` / ``name:{input|output}:index``; ``kind``/``index`` None = whole op."""

    name: str
    kind: TensorKind | None = None
    index: int | None = None

    @classmethod
    def parse(cls, text: str) -> "TensorSel":
        parts = text.strip().split(":")
        if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].lower() in ("input", "output"):
            return cls(":".join(parts[:-2]), TensorKind(parts[-2].lower()), int(parts[-1]))
        if len(parts) >= 2 and parts[-1].isdigit():
            return cls(":".join(parts[:-1]), TensorKind.OUTPUT, int(parts[-1]))
        return cls(text.strip())

    def text(self) -> str:
        if self.index is None:
            return self.name
        return f"{self.name}:{(self.kind or TensorKind.OUTPUT).value}:{self.index}"


@dataclass(frozen=True)
class MapEntry:
    """One mapping entry and where it came from (``file:line``)."""

    left: TensorSel
    right: TensorSel
    source: str


def load_mapping(path: str | Path) -> list[MapEntry]:
    """Read a ``.csv`` / ``.txt`` or ``.yaml`` / ``.yml`` mapping file (see the module doc).

    Raises :class:`OptionError` naming the file (and line) for an unreadable file, a row
    without two names, or YAML when PyYAML is not installed.
    """
    path = Path(path)
    if not path.is_file():
        raise OptionError(f"--mapping {path}: no such file")
    if path.suffix.lower() in (".yaml", ".yml"):
        return _load_yaml(path)
    entries: list[MapEntry] = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise OptionError(f"--mapping {path}: cannot be read ({exc})") from None
    for number, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if not cells or not any(cells) or cells[0].startswith("#"):
            continue
        if not entries and {c.lower() for c in cells if c} <= _HEADER_CELLS:
            continue
        names = [c for c in cells if c]
        if len(names) != 2:
            raise OptionError(f"--mapping {path} line {number}: expected two names (left,right), got {len(names)}: "
                              f"{','.join(row)!r}")
        entries.append(MapEntry(TensorSel.parse(names[0]), TensorSel.parse(names[1]), f"{path.name}:{number}"))
    if not entries:
        raise OptionError(f"--mapping {path}: no mapping rows (expected lines 'left_name,right_name')")
    return entries


def _load_yaml(path: Path) -> list[MapEntry]:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise OptionError(f"--mapping {path}: YAML mapping files need PyYAML, which is not installed; "
                          "write the mapping as CSV (left,right per line) instead") from None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise OptionError(f"--mapping {path}: cannot be read as YAML ({exc})") from None
    pairs: list[tuple[object, object]] = []
    if isinstance(data, dict):
        pairs = list(data.items())
    elif isinstance(data, list):
        for number, item in enumerate(data, start=1):
            if isinstance(item, dict) and "left" in item and "right" in item:
                pairs.append((item["left"], item["right"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((item[0], item[1]))
            else:
                raise OptionError(f"--mapping {path} item {number}: expected {{left: ..., right: ...}} or "
                                  f"[left, right], got {item!r}")
    else:
        raise OptionError(f"--mapping {path}: expected a mapping {{left: right}} or a list of "
                          "{left: ..., right: ...} items")
    entries = []
    for number, (left, right) in enumerate(pairs, start=1):
        if not isinstance(left, (str, int)) or not isinstance(right, (str, int)):
            raise OptionError(f"--mapping {path} entry {number}: names must be text, got {left!r}: {right!r}")
        entries.append(MapEntry(TensorSel.parse(str(left)), TensorSel.parse(str(right)), f"{path.name}#{number}"))
    if not entries:
        raise OptionError(f"--mapping {path}: no mapping entries")
    return entries


# --------------------------------------------------------------------------------------------
# Name matching
# --------------------------------------------------------------------------------------------


def _index(names) -> tuple[dict[str, str], dict[str, str | None]]:
    by_key: dict[str, str] = {}
    stripped: dict[str, str | None] = {}
    for name in names:
        key = name_key(name)
        by_key.setdefault(key, name)
        s = _stripped(key)
        stripped[s] = None if s in stripped else name  # None: ambiguous
    return by_key, stripped


def match_names(left: list[str], right: list[str]) -> tuple[dict[str, str], Counter]:
    """left name -> right name by the three rules of the module doc; counts per rule used."""
    right_set = set(right)
    matched: dict[str, str] = {}
    taken: set[str] = set()
    used: Counter = Counter()
    for name in left:
        if name in right_set:
            matched[name] = name
            taken.add(name)
            used["exact"] += 1
    by_key, stripped = _index([n for n in right if n not in taken])
    left_stripped = Counter(_stripped(name_key(n)) for n in left if n not in matched)
    for name in left:
        if name in matched:
            continue
        other = by_key.get(name_key(name))
        if other is not None and other not in taken:
            matched[name] = other
            taken.add(other)
            used["normalised"] += 1
            continue
        key = _stripped(name_key(name))
        other = stripped.get(key)
        if other is not None and other not in taken and left_stripped[key] == 1:
            matched[name] = other
            taken.add(other)
            used["kernel id"] += 1
    return matched, used


def _lookup(run: Run, name: str) -> OpDump | None:
    op = run.ops.get(name)
    if op is not None:
        return op
    key = name_key(name)
    for other, dump in run.ops.items():
        if name_key(other) == key:
            return dump
    return None


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


def plain_axes(ref: TensorRef) -> str:
    """The plain layout of a host tensor: its own, or NCHW/NCDHW for a 4-D/5-D ``ND`` one."""
    fmt = (ref.format or "ND").upper()
    if fmt in _PLAIN and fmt not in ("ND",):
        return fmt
    return {4: "NCHW", 5: "NCDHW"}.get(len(ref.shape), "ND")


def is_plain(ref: TensorRef) -> bool:
    return (ref.format or "ND").upper() in _PLAIN or ref.format == "RESERVED"


def _to_host(ref: TensorRef, dst: str, shape: tuple[int, ...]) -> np.ndarray:
    from convert.layouts import LayoutError, convert_layout

    from ..errors import ShapeError

    from convert.layouts.prepare import paddable_axes, slice_to_golden

    array = ref.load()
    try:
        out = np.asarray(convert_layout(array, ref.format, dst, tuple(ref.shape), shape))
        if out.shape != tuple(shape) and out.ndim == len(shape):
            out = slice_to_golden(out, shape, context=f"{ref.path.name} after {ref.format}->{dst}",
                                  paddable=paddable_axes(str(ref.format).upper(), dst, out.ndim))
        return out.reshape(shape)
    except (LayoutError, ValueError) as exc:
        raise ShapeError(f"cannot bring {ref.path.name} ({ref.format} {list(ref.shape)}) to {dst} "
                         f"{list(shape)}: {exc}") from None


def tensor_pair(base: dict, a: TensorRef, b: TensorRef) -> Pair:
    """The Pair of two tensors, with the layout handling of the module doc."""
    if b.format == "RESERVED":
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, target_shape=a.original_shape or b.shape or None)
    if is_plain(a) and is_plain(b):
        same_rank = len(a.shape) == len(b.shape)
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=b,
                    golden_format=plain_axes(b) if same_rank else None, target_shape=tuple(b.shape) if same_rank else None)
    if not is_plain(a) and is_plain(b):
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, golden_format=plain_axes(b),
                    target_shape=tuple(b.shape))
    if is_plain(a) and not is_plain(b):
        host = plain_axes(a)
        wrapped = dataclasses.replace(b, format=host, shape=tuple(a.shape),
                                      reader=functools.partial(_to_host, b, host, tuple(a.shape)))
        axes = host if len(a.shape) in (4, 5) else None
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=wrapped, golden_format=axes,
                    target_shape=tuple(a.shape) if axes else None)
    return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, convert=False)


def _order(run: Run) -> list[OpDump]:
    order = getattr(run, "order", {}) or {}
    far = len(order) + 1
    return sorted(run.ops.values(), key=lambda d: (order.get(d.name, far), d.timestamp, d.name))


def _kinds(left: Run, right: Run) -> tuple[tuple[TensorKind, ...], list[str]]:
    def has_inputs(run: Run) -> bool:
        return any(op.inputs for op in run.ops.values())

    if has_inputs(left) and has_inputs(right):
        return _KINDS, []
    return (TensorKind.OUTPUT,), ["only outputs are compared: one side holds no input tensors"]


def pair_families(left: Run, right: Run, *, mapping: list[MapEntry] | str | Path | None = None) -> Pairing:
    """Pair two runs by scope name, or through ``mapping`` (entries or a file path).

    Raises :class:`PairingError` when not one operator pairs (the message names a few of each
    side and suggests ``--mapping``), :class:`OptionError` for an unreadable mapping file.
    """
    if mapping is not None and not isinstance(mapping, list):
        mapping = load_mapping(mapping)
    if mapping is not None:
        pairing = _pair_mapped(left, right, mapping)
    else:
        pairing = _pair_by_name(left, right)
    start = max((p.index for p in pairing.pairs), default=-1) + 1
    pairing.pairs.extend(overflow_rows(start, left, right))
    overflow = sum(len(getattr(r, "overflow", ()) or ()) for r in (left, right))
    if overflow:
        pairing.notes.append(f"{overflow} overflow record(s) (Opdebug) listed, not compared")
    pairing.pairs.sort(key=lambda p: p.index)
    return pairing


def _sample(names, limit: int = 5) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return (shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")) or "(none)"


def _pair_by_name(left: Run, right: Run) -> Pairing:
    left_order = _order(left)
    matched, used = match_names([d.name for d in left_order], list(right.ops))
    if not matched and (left.ops or right.ops):
        raise PairingError(
            f"no operator of {left.path} matches one of {right.path} by name: left has {_sample(left.ops)}; right "
            f"has {_sample(right.ops)}. Give a mapping file (--mapping map.csv, lines 'left_name,right_name') "
            "to pair operators whose names differ")
    kinds, notes = _kinds(left, right)
    notes.insert(0, "paired by operator scope name and tensor index")
    if used["normalised"]:
        notes.append(f"{used['normalised']} operator name(s) matched only after reading '--' as '/' and turning "
                     "'/', '.', '\\' and spaces into '_'")
    if used["kernel id"]:
        notes.append(f"{used['kernel id']} operator name(s) matched only without their kernel id (-opN); check them")
    used_right = set(matched.values())
    pairs: list[Pair] = []
    for index, dump in enumerate(left_order):
        other = right.ops.get(matched[dump.name]) if dump.name in matched else None
        pairs.extend(op_tensor_rows(index, kinds, dump, other, tensor_pair))
    right_only = [d for d in _order(right) if d.name not in used_right]
    for index, dump in enumerate(right_only, start=len(left_order)):
        pairs.extend(op_tensor_rows(index, kinds, None, dump, tensor_pair))
    unmatched_left = [d.name for d in left_order if d.name not in matched]
    return Pairing(pairs, unmatched_left, [d.name for d in right_only], MODE_FAMILY, notes)


def _pair_mapped(left: Run, right: Run, entries: list[MapEntry]) -> Pairing:
    kinds, notes = _kinds(left, right)
    notes.insert(0, f"paired through the mapping file ({len(entries)} entries)")
    by_left: dict[str, list[MapEntry]] = {}
    unknown_left: list[MapEntry] = []
    for entry in entries:
        op = _lookup(left, entry.left.name)
        if op is None:
            unknown_left.append(entry)
            continue
        by_left.setdefault(op.name, []).append(entry)
    if not by_left:
        raise PairingError(f"no left name of the mapping file is an operator of {left.path}: mapping names "
                           f"{_sample(e.left.name for e in entries)}; left has {_sample(left.ops)}")
    pairs: list[Pair] = []
    used_right: set[str] = set()
    unmatched_left: list[str] = []
    order = _order(left)
    for index, dump in enumerate(order):
        mapped = by_left.get(dump.name)
        if not mapped:
            unmatched_left.append(dump.name)
            pairs.extend(op_tensor_rows(index, kinds, dump, None, tensor_pair, why_missing=f"{dump.name!r} is not in the mapping file"))
            continue
        for entry in mapped:
            other = _lookup(right, entry.right.name)
            if other is None:
                base = dict(index=index, op_type=dump.op_type, left_op=dump.name, right_op=NO_COUNTERPART,
                            op_sequence=index)
                pairs.append(Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.MISSING_RIGHT,
                                  reason=f"mapping {entry.source} names {entry.right.name!r}, which the right folder "
                                         "does not have"))
                continue
            used_right.add(other.name)
            if entry.left.index is None and entry.right.index is None:
                pairs.extend(op_tensor_rows(index, kinds, dump, other, tensor_pair))
            else:
                pairs.append(_mapped_tensor(index, dump, other, entry))
    start = len(order)
    for offset, entry in enumerate(unknown_left):
        base = dict(index=start + offset, op_type=None, left_op=NO_COUNTERPART, right_op=entry.right.name,
                    op_sequence=start + offset)
        pairs.append(Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.MISSING_LEFT,
                          reason=f"mapping {entry.source} names left operator {entry.left.name!r}, which the left "
                                 "folder does not have"))
    start += len(unknown_left)
    right_only = [d for d in _order(right) if d.name not in used_right]
    for index, dump in enumerate(right_only, start=start):
        pairs.extend(op_tensor_rows(index, kinds, None, dump, tensor_pair, why_missing=f"{dump.name!r} is not in the mapping file"))
    return Pairing(pairs, unmatched_left, [d.name for d in right_only], MODE_MAPPING, notes)


def _mapped_tensor(index: int, left: OpDump, right: OpDump, entry: MapEntry) -> Pair:
    lkind = entry.left.kind or entry.right.kind or TensorKind.OUTPUT
    lindex = entry.left.index if entry.left.index is not None else (entry.right.index or 0)
    rkind = entry.right.kind or lkind
    rindex = entry.right.index if entry.right.index is not None else lindex
    base = dict(index=index, op_type=left.op_type or right.op_type, left_op=left.name, right_op=right.name,
                op_sequence=index)
    a, b = left.tensor(lkind, lindex), right.tensor(rkind, rindex)
    if a is not None and b is not None:
        return tensor_pair(base, a, b)
    missing = []
    if a is None:
        missing.append(f"left {left.name!r} has no {lkind.value} {lindex}")
    if b is None:
        missing.append(f"right {right.name!r} has no {rkind.value} {rindex}")
    reason = f"mapping {entry.source}: " + " and ".join(missing)
    if a is not None:
        return one_sided_pair(base, a, "right", reason)
    if b is not None:
        return one_sided_pair(base, b, "left", reason)
    return Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.NOT_COMPARABLE, reason=reason)


__all__ = ["MapEntry", "TensorSel", "load_mapping", "match_names", "name_key", "overflow_rows", "pair_families",
           "plain_axes", "tensor_pair"]

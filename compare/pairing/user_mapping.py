"""Pairing across dump families: by full scope name, or through a user mapping file.

**By name** (:func:`pair_families` without a mapping; MindSpore vs MindSpore, e.g. a GPU run
against an Ascend run). Op names are matched

1. exactly;
2. by :func:`name_key` -- ``--`` read as ``/``, then ``/ . \\`` and spaces turned into ``_`` (so
   the scope name of a ``.npy``/``.bin`` dump meets the ``_`` spelling of an Ascend-format dump
   of the same kernel);
3. by that key without the trailing kernel id ``-op{N}`` (backends number kernels differently),
   only where the stripped key is unique on both sides; a note counts these;
4. mixed precision: by that key with the scope changes of ``ms.amp.auto_mixed_precision`` read
   back (:func:`amp_key`: the ``_OutputTo16`` / ``_OutputTo32`` cells of O2/O3, the ``ClassOpt``
   class names of O1), only where it identifies one op on each side;
5. short vs scoped: a short O0/O1 kernel name (``Conv2D-op12``) with the one scoped name of the
   other side ending in ``_Conv2D-op12`` (:func:`kernel_tail`), only where that ``{Type}-op{N}``
   identifies one op on each side; two scoped names never pair by this rule.

Notes count the names each of rules 2-5 matched. When one run is a mixed-precision run (names
with those scope changes, :func:`is_amp_name`) and the other is not, its unpaired Cast kernels
are one-sided rows saying they were inserted by mixed precision (a note counts them).

**Row order**: the left run's execution order (``run.order``, else dump time); an op only on
the right comes right after the row of the left op paired with the paired right op preceding it
in the right run's order (first when none does). Index numbers follow the rows.

**By mapping file** (``--mapping map.csv|yaml``; MindSpore vs Ascend / TF / Caffe goldens, or
any two runs whose names differ). The mapping adds, it never takes away: its pairs come first,
and the operators it does not mention (on either side) are paired by the name rules above.
Each entry maps a left name to a right name::

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

import dataclasses
import functools
import operator
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convert.layouts import LayoutError, convert_layout
from convert.layouts.formats import PLAIN_FAMILY
from convert.layouts.prepare import paddable_axes, slice_to_golden
from convert.names.keys import name_key

from ..errors import PairingError, ShapeError
from ..records import OpDump, Pair, Pairing, PairingMode, PairStatus, Run, TensorKind, TensorRef
from ..tensor_table import OpsView, PairTable, has_inputs
from .mapping_file import MapEntry, load_mapping
from .msprobe_mapping import MsprobeMapping, cross_framework, msprobe_entries
from .names import SCOPE_RULES, is_amp_name, kernel_tail, match_names
from .rows import one_sided_pair, op_tensor_rows, overflow_rows

MODE_FAMILY = PairingMode.FAMILY
#: ``Pair.expected_gap`` of a Cast kernel inserted by mixed precision (listed one-sided, not compared).
GAP_AMP_CAST = "mixed-precision cast"
MODE_MAPPING = PairingMode.MAPPING
NO_COUNTERPART = "*"

_KINDS = (TensorKind.INPUT, TensorKind.OUTPUT)


# --------------------------------------------------------------------------------------------
# Mapping files
# --------------------------------------------------------------------------------------------


class _Lookup:
    """Finds the op a mapping names: exactly, else by :func:`name_key` (the first op with that key)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.by_key: dict[str, OpDump] = {}
        for name, dump in run.ops.items():
            self.by_key.setdefault(name_key(name), dump)

    def __call__(self, name: str) -> OpDump | None:
        if not name:  # an entry saying "no counterpart" (msprobe's N/A)
            return None
        op = self.run.ops.get(name)
        return op if op is not None else self.by_key.get(name_key(name))


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


#: ``PairStatus.COMPARED`` (an enum member read through its class is a Python-level lookup: once a row).
_COMPARED = PairStatus.COMPARED

#: ``TensorKind.INPUT``, likewise.
_INPUT = TensorKind.INPUT

#: The plain layout of an ``ND`` tensor by its rank (:func:`plain_axes`).
_ND_AXES = {4: "NCHW", 5: "NCDHW"}


def plain_axes(ref: TensorRef) -> str:
    """The plain layout of a host tensor: its own, or NCHW/NCDHW for a 4-D/5-D ``ND`` one."""
    fmt = (ref.format or "ND").upper()
    if fmt in PLAIN_FAMILY and fmt not in ("ND",):
        return fmt
    return _ND_AXES.get(len(ref.shape), "ND")


def is_plain(ref: TensorRef) -> bool:
    """Whether a tensor is in a plain (framework) layout, not a device one (golden files count as plain)."""
    return (ref.format or "ND").upper() in PLAIN_FAMILY or ref.format == "RESERVED"


def _to_host(ref: TensorRef, dst: str, shape: tuple[int, ...]) -> np.ndarray:
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
    if a.format == "ND" and b.format == "ND":  # both plain (msprobe's, most host dumps'): answered first, positionally
        shape = b.shape
        if len(a.shape) == len(shape):
            return Pair(base["index"], base["op_type"], base["left_op"], base["right_op"], a.tensor_id, a, b,
                        _COMPARED, None, _ND_AXES.get(len(shape), "ND"), tuple(shape), True, base["op_sequence"])
        return Pair(base["index"], base["op_type"], base["left_op"], base["right_op"], a.tensor_id, a, b,
                    _COMPARED, None, None, None, True, base["op_sequence"])
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


def _order(run: Run) -> list[str]:
    """The names of the ops of ``run`` by (position in ``run.order``, timestamp, name), those
    without a position last. When ``run.order`` gives every op, in the order of ``run.ops``,
    increasing positions (a loader that records the order it read the calls in: msprobe's), that
    is the order of ``run.ops``: taken without sorting (10^5 keys) and without its records."""
    order, ops = run.order, run.ops
    if len(order) == len(ops) and list(order) == list(ops):
        positions = list(order.values())
        if all(map(operator.lt, positions, positions[1:])):
            return list(ops)
    far = len(order) + 1
    return [d.name for d in sorted(ops.values(), key=lambda d: (order.get(d.name, far), d.timestamp, d.name))]


def _kinds(left: Run, right: Run) -> tuple[tuple[TensorKind, ...], list[str]]:
    if has_inputs(left.ops) and has_inputs(right.ops):
        return _KINDS, []
    return (TensorKind.OUTPUT,), ["only outputs are compared: one side holds no input tensors"]


def pair_families(left: Run, right: Run, *,
                  mapping: list[MapEntry] | str | Path | MsprobeMapping | None = None) -> Pairing:
    """Pair two runs by scope name, and first through ``mapping`` (entries, a file path, or msprobe's
    mapping options) when given.

    With msprobe's options (:class:`~compare.pairing.msprobe_mapping.MsprobeMapping`) -- or between a
    MindSpore and a PyTorch msprobe tree, whose built-in API mapping applies without asking -- the
    entries are :func:`~compare.pairing.msprobe_mapping.msprobe_entries`: each row they make says
    which rule paired it, the notes count the pairs per rule.

    Raises :class:`PairingError` when not one operator pairs (the message names a few of each
    side and suggests ``--mapping``), :class:`OptionError` for an unreadable mapping file.
    """
    extra: list[str] = []
    if mapping is None and cross_framework(left, right):
        mapping = MsprobeMapping()
    if isinstance(mapping, MsprobeMapping):
        entries, extra = msprobe_entries(left, right, mapping)
        mapping = entries if entries or mapping.names else None
    elif mapping is not None and not isinstance(mapping, list):
        mapping = load_mapping(mapping)
    pairing = _pair(left, right, mapping)
    pairing.notes.extend(extra)
    # _pair's rows come in index order (an op's rows share its place in the merged order), the
    # overflow rows after them: the rows are in index order without sorting
    start = pairing.pairs[-1].index + 1 if pairing.pairs else 0
    pairing.pairs.extend(overflow_rows(start, left, right))  # a list or a PairTable
    overflow = sum(len(r.overflow) for r in (left, right))
    if overflow:
        pairing.notes.append(f"{overflow} overflow record(s) (Opdebug) listed, not compared")
    return pairing


def _sample(names, limit: int = 5) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return (shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")) or "(none)"


@dataclass
class _Plan:
    """Which op pairs with which, before any row is made.

    ``mapped``: left op name -> its mapping entries, each with the right op it names (None when
    the right run has no such op); ``unknown``: entries whose left name is no
    left op; ``named``: left op name -> right op name by the name rules (ops the mapping does not
    mention); ``used``: how many names each rule matched; ``anchor``: right op name -> the left op
    it is paired with (for the row order).
    """

    mapped: dict[str, list[tuple[MapEntry, OpDump | None]]]
    unknown: list[MapEntry]
    named: dict[str, str]
    used: Counter
    anchor: dict[str, str]


def _plan(left: Run, right: Run, left_order: list[str], right_order: list[str], entries: list[MapEntry]) -> _Plan:
    """Mapping entries first; the name rules then pair every op the mapping does not mention."""
    mapped: dict[str, list[tuple[MapEntry, OpDump | None]]] = {}
    unknown: list[MapEntry] = []
    anchor: dict[str, str] = {}
    if entries:  # the lookups key every op's name: built only when a mapping asks them
        find_left, find_right = _Lookup(left), _Lookup(right)
        for entry in entries:
            op = find_left(entry.left.name)
            if op is None:
                unknown.append(entry)
                continue
            other = find_right(entry.right.name)
            mapped.setdefault(op.name, []).append((entry, other))
            if other is not None:
                anchor.setdefault(other.name, op.name)
    free_left = [name for name in left_order if name not in mapped]
    free_right = [name for name in right_order if name not in anchor]
    named, used = match_names(free_left, free_right, SCOPE_RULES)
    anchor.update({r: l for l, r in named.items()})
    return _Plan(mapped, unknown, named, used, anchor)


def _no_pair_error(left: Run, right: Run, entries: list[MapEntry] | None) -> PairingError:
    if entries:
        return PairingError(
            f"no operator pairs: no left name of the mapping file is an operator of {left.path} (mapping names "
            f"{_sample(e.left.name for e in entries)}) and no operator name matches one of {right.path}: left "
            f"has {_sample(left.ops)}; right has {_sample(right.ops)}")
    return PairingError(
        f"no operator of {left.path} matches one of {right.path} by name: left has {_sample(left.ops)}; right "
        f"has {_sample(right.ops)}. Give a mapping file (--mapping map.csv, lines 'left_name,right_name') "
        "to pair operators whose names differ")


def _rule_notes(used: Counter) -> list[str]:
    notes = []
    if used["normalised"]:
        notes.append(f"{used['normalised']} operator name(s) matched only after reading '--' as '/' and turning "
                     "'/', '.', '\\' and spaces into '_'")
    if used["kernel id"]:
        notes.append(f"{used['kernel id']} operator name(s) matched only without their kernel id (-opN); check them")
    if used["mixed precision"]:
        notes.append(f"{used['mixed precision']} operator name(s) matched after reading back the scope changes of "
                     "mixed precision (ms.amp.auto_mixed_precision: '-_OutputTo16/_backbone-' and "
                     "'-_OutputTo32/_backbone-' removed, cell classes 'ClassOpt[_N]' read as 'Class')")
    if used["short name"]:
        notes.append(f"{used['short name']} short O0/O1 kernel name(s) ('Conv2D-op12') matched with the one "
                     "scoped name of the other side ending in that type and kernel id; check them")
    if used["msprobe api"]:
        notes.append(f"{used['msprobe api']} msprobe call(s) matched by API name, call count and direction across "
                     "frameworks (prefixes such as Torch./Mint., Module./Cell. and module classes ignored); check them")
    return notes


def _merge_order(left_order: list[str], right_order: list[str], anchor: dict[str, str]) -> list[tuple[str, str]]:
    """Both sides' op names in one row order, as ``(side, name)``: the left ops in their order;
    each right-only op right after the left op paired with the paired right op preceding it in
    the right side's order (first when none precedes it); right-only ops after one anchor keep
    the right side's order."""
    after: dict[str | None, list[str]] = {}
    last: str | None = None
    for name in right_order:
        if name in anchor:
            last = anchor[name]
        else:
            after.setdefault(last, []).append(name)
    if not after:  # every right op is paired (the usual case): the left ops in their order
        return [("left", name) for name in left_order]
    merged = [("right", name) for name in after.get(None, [])]
    for name in left_order:
        merged.append(("left", name))
        if name in after:
            merged.extend(("right", other) for other in after[name])
    return merged


def _is_cast(dump: OpDump) -> bool:
    tail = kernel_tail(name_key(dump.name)) or ""
    return dump.op_type == "Cast" or (dump.op_type is None and tail.startswith("Cast-op"))


#: ``_one_sided_why``'s ``mapping`` when the entries are msprobe rules' (not a ``--mapping`` file's).
_RULES = "rules"


def _one_sided_why(dump: OpDump, side: str, amp: dict[str, bool], mapping: bool | str) -> str:
    """The reason of an op paired with nothing ('' = the default reason of :func:`op_tensor_rows`).

    An unpaired Cast of a mixed-precision run (``amp[side]``) against a run without mixed
    precision was inserted by it; with a mapping file the reason says the file does not name the op.
    """
    other = "right" if side == "left" else "left"
    if amp[side] and not amp[other] and _is_cast(dump):
        return (f"Cast kernel inserted by mixed precision: the {side} run is a mixed-precision run "
                f"(ms.amp.auto_mixed_precision scopes _OutputTo16/_OutputTo32 or classes renamed ClassOpt), the "
                f"{other} run is not, and this cast has no counterpart; not compared")
    if mapping is _RULES:
        return (f"no msprobe mapping rule pairs {dump.name!r}, and no free {other} call has its name")
    if mapping:
        return (f"{dump.name!r} is not in the mapping file, and no free {other} operator has its name "
                "(operators the mapping names pair only as it says)")
    return ""


def _unknown_rows(start: int, unknown: list[MapEntry]) -> list[Pair]:
    """One MISSING_LEFT row per mapping entry whose left name is no left op, indexes from ``start``."""
    rows = []
    for index, entry in enumerate(unknown, start=start):
        base = dict(index=index, op_type=None, left_op=NO_COUNTERPART, right_op=entry.right.name, op_sequence=index)
        rows.append(Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.MISSING_LEFT,
                         reason=f"mapping {entry.source} names left operator {entry.left.name!r}, which the left "
                                "folder does not have"))
    return rows


def _pair(left: Run, right: Run, entries: list[MapEntry] | None) -> Pairing:
    """Rows of both runs in execution order (see :func:`_merge_order`), mapping pairs first. The
    pairs of two tabled runs (msprobe's) are a :class:`~compare.tensor_table.PairTable`: two
    calls paired by name whose tensors sit at the same places are joined from the columns
    (:func:`_tabled_rows`), every other row is the general rules' Pair."""
    left_order, right_order = _order(left), _order(right)
    plan = _plan(left, right, left_order, right_order, entries or [])
    if not plan.mapped and not plan.named and (left.ops or right.ops):
        raise _no_pair_error(left, right, entries)
    kinds, notes = _kinds(left, right)
    if entries is None:
        notes.insert(0, "paired by operator scope name and tensor index")
    elif any(e.rule for e in entries):
        notes.insert(0, f"paired through {len(entries)} mapping entries (msprobe's mapping rules), then by operator "
                        "scope name for the calls they do not name")
    else:
        notes.insert(0, f"paired through the mapping file ({len(entries)} entries), then by operator scope name "
                        "for the operators it does not mention")
    notes += _rule_notes(plan.used)
    amp: dict[str, bool] = {}  # whether each run is a mixed-precision one: asked only for an op paired with nothing
    views = _views(left, right)
    pairs: list[Pair] | PairTable = [] if views is None else PairTable(views[0].table, views[1].table,
                                                                       make=tensor_pair)
    casts: Counter = Counter()
    merged = _merge_order(left_order, right_order, plan.anchor)
    mapped, named, left_ops, right_ops = plan.mapped, plan.named, left.ops, right.ops
    for index, (side, name) in enumerate(merged):
        if side == "left" and name in mapped:
            pairs.extend(_mapped_rows(index, kinds, left_ops[name], mapped[name]))
        elif side == "left" and name in named:
            if views is None or not _tabled_rows(pairs, index, kinds, views[0].number(name),  # type: ignore[arg-type]
                                                 views[1].number(named[name])):  # type: ignore[arg-type]
                pairs.extend(op_tensor_rows(index, kinds, left_ops[name], right_ops[named[name]], tensor_pair))
        else:
            dump = (left_ops if side == "left" else right_ops)[name]
            if not amp:
                amp.update(left=any(map(is_amp_name, left.ops)), right=any(map(is_amp_name, right.ops)))
            why = _one_sided_why(dump, side, amp, _RULES if entries and all(e.rule for e in entries)
                                 else entries is not None)
            amp_cast = why.startswith("Cast kernel inserted")
            casts[side] += amp_cast
            pair_left, pair_right = (dump, None) if side == "left" else (None, dump)
            rows = op_tensor_rows(index, kinds, pair_left, pair_right, tensor_pair, why_missing=why)
            pairs.extend([dataclasses.replace(p, expected_gap=GAP_AMP_CAST) if amp_cast and p.reason == why else p
                          for p in rows])
    notes += [f"{count} Cast kernel(s) of the {side} run inserted by mixed precision: listed, not compared"
              for side, count in sorted(casts.items()) if count]
    pairs.extend(_unknown_rows(len(merged), plan.unknown))
    if plan.unknown:
        notes.append(f"{len(plan.unknown)} mapping line(s) name a left operator the left folder does not have "
                     f"({_sample(e.source for e in plan.unknown)})")
    unmatched_left = [name for name in left_order if name not in plan.mapped and name not in plan.named]
    unmatched_right = [name for name in right_order if name not in plan.anchor]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_FAMILY if entries is None else MODE_MAPPING, notes)


def _views(left: Run, right: Run) -> tuple[OpsView, OpsView] | None:
    """The two runs' ops when both are tabled (their pairs are then a :class:`PairTable`)."""
    if isinstance(left.ops, OpsView) and isinstance(right.ops, OpsView):
        return left.ops, right.ops
    return None


def _same_rows(left_index: list[int], left_rows: list[int], right_index: list[int], right_rows: list[int]) -> bool:
    """Whether two calls' tensors of one kind hold the same indexes, each once and in increasing
    order (:func:`compare.pairing.rows.op_tensor_rows` then pairs them by place)."""
    if len(left_rows) != len(right_rows):
        return False
    last = -1
    for a, b in zip(left_rows, right_rows):
        index = left_index[a]
        if index != right_index[b] or index <= last:
            return False
        last = index
    return True


def _tabled_rows(pairs: PairTable, index: int, kinds: tuple[TensorKind, ...], left_call: int, right_call: int) -> bool:
    """Add the rows of two calls paired by name from the tables, when both calls are usable and
    every tensor of ``kinds`` pairs with the one at its place (as
    :func:`~compare.pairing.rows.op_tensor_rows` pairs them, inputs first); False (nothing added)
    for any other case, which the general rules then take from the calls' records."""
    left, right = pairs.left, pairs.right
    if left.errors[left_call] is not None or right.errors[right_call] is not None:
        return False
    left_rows, right_rows = left.rows_of(left_call), right.rows_of(right_call)
    left_is_input, right_is_input = left.is_input, right.is_input
    lefts: list[int] = []
    rights: list[int] = []
    for kind in kinds:
        want = kind is _INPUT
        these = [row for row in left_rows if left_is_input[row] is want]
        those = [row for row in right_rows if right_is_input[row] is want]
        if not _same_rows(left.index, these, right.index, those):
            return False
        lefts += these
        rights += those
    if not lefts:
        return False
    pairs.add_tensors(index, left.op_types[left_call] or right.op_types[right_call], left.names[left_call],
                      right.names[right_call], lefts, rights)
    return True


def _mapped_rows(index: int, kinds: tuple[TensorKind, ...], dump: OpDump,
                 entries: list[tuple[MapEntry, OpDump | None]]) -> list[Pair]:
    """Rows of a left op the mapping names: per entry, the whole op or the one tensor pair it maps."""
    if any(entry.rule for entry, _ in entries):
        return _rule_rows(index, kinds, dump, entries)
    rows: list[Pair] = []
    for entry, other in entries:
        if other is None:
            base = dict(index=index, op_type=dump.op_type, left_op=dump.name, right_op=NO_COUNTERPART,
                        op_sequence=index)
            rows.append(Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.MISSING_RIGHT,
                             reason=f"mapping {entry.source} names {entry.right.name!r}, which the right folder "
                                    "does not have"))
        elif entry.left.index is None and entry.right.index is None:
            rows.extend(op_tensor_rows(index, kinds, dump, other, tensor_pair))
        else:
            rows.append(_mapped_tensor(index, dump, other, entry))
    return rows


def paired_by(entry: MapEntry) -> str:
    """The mark of a row an msprobe rule paired: ``paired by {rule} ({source})`` (the source left out
    when it only repeats the rule: the built-in API mapping, the fuzzy match)."""
    return f"paired by {entry.rule}" + (f" ({entry.source})" if entry.source != entry.rule else "")


def _marked(pair: Pair, entry: MapEntry) -> Pair:
    """``pair`` with the rule that paired it in its reason (kept after any reason it had)."""
    if pair.left is None or pair.right is None:
        return pair
    mark = paired_by(entry)
    return dataclasses.replace(pair, reason=f"{mark}; {pair.reason}" if pair.reason else mark)


def _rule_rows(index: int, kinds: tuple[TensorKind, ...], dump: OpDump,
               entries: list[tuple[MapEntry, OpDump | None]]) -> list[Pair]:
    """Rows of a left call msprobe's rules name: the whole call paired (each row marked with the
    rule), one-sided rows when the rule finds no counterpart, or the tensors the rule pairs -- and
    every other tensor of both calls as a one-sided row (nothing dropped)."""
    rows: list[Pair] = []
    whole = [(e, o) for e, o in entries if e.left.index is None]
    for entry, other in whole:
        if other is None:
            why = (f"{entry.rule} ({entry.source}) finds no counterpart for {dump.name!r}" if not entry.right.name
                   else f"{entry.rule} ({entry.source}) names {entry.right.name!r}, which the right folder does not have")
            rows.extend(op_tensor_rows(index, kinds, dump, None, tensor_pair, why_missing=why))
        else:
            rows.extend(_marked(p, entry) for p in op_tensor_rows(index, kinds, dump, other, tensor_pair))
    singles = [(e, o) for e, o in entries if e.left.index is not None]
    if not singles:
        return rows
    used_left: set[tuple[TensorKind, int]] = set()
    used_right: dict[str, set[tuple[TensorKind, int]]] = {}
    for entry, other in singles:
        lkind = entry.left.kind or TensorKind.OUTPUT
        used_left.add((lkind, entry.left.index or 0))
        if other is None:
            ref = dump.tensor(lkind, entry.left.index or 0)
            why = (f"{entry.rule} ({entry.source}) gives {entry.left.text()} no counterpart" if not entry.right.name
                   else f"{entry.rule} ({entry.source}) names {entry.right.name!r}, which the right folder does not have")
            base = dict(index=index, op_type=dump.op_type, left_op=dump.name, right_op=NO_COUNTERPART,
                        op_sequence=index)
            rows.append(one_sided_pair(base, ref, "right", why) if ref is not None else Pair(
                **base, tensor_id=None, left=None, right=None, status=PairStatus.NOT_COMPARABLE,
                reason=f"{why}; and {dump.name!r} has no {lkind.value} {entry.left.index}"))
            continue
        rkind = entry.right.kind or lkind
        used_right.setdefault(other.name, set()).add((rkind, entry.right.index if entry.right.index is not None
                                                      else entry.left.index or 0))
        rows.append(_marked(_mapped_tensor(index, dump, other, entry), entry))
    rest = f"not named by the {singles[0][0].rule} ({singles[0][0].source}), which names other tensors of this call"
    base = dict(index=index, op_type=dump.op_type, left_op=dump.name, right_op=NO_COUNTERPART, op_sequence=index)
    for ref in (*dump.inputs, *dump.outputs):
        if (ref.kind, ref.index) not in used_left and ref.kind in kinds:
            rows.append(one_sided_pair(base, ref, "right", rest))
    for entry, other in singles:
        if other is None or other.name not in used_right:
            continue
        used = used_right.pop(other.name)
        rbase = dict(index=index, op_type=other.op_type, left_op=NO_COUNTERPART, right_op=other.name,
                     op_sequence=index)
        for ref in (*other.inputs, *other.outputs):
            if (ref.kind, ref.index) not in used and ref.kind in kinds:
                rows.append(one_sided_pair(rbase, ref, "left", rest))
    return rows


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


__all__ = ["pair_families", "plain_axes", "tensor_pair"]

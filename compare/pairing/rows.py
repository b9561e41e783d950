"""Rows every pairing strategy builds: one-sided rows, per-tensor rows of two operators, overflow
records, and the texts and markers they share (``*`` for a missing side, the expected-gap reasons)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat

from convert.names.keys import normalize_golden_name

from ..records import OpDump, Pair, PairStatus, Run, TensorKind, TensorRef

#: Marker of the missing side in the NPUDump / GroundTruth cells.
NO_COUNTERPART = "*"


KINDS = (TensorKind.INPUT, TensorKind.OUTPUT)

#: ``TensorKind.INPUT`` (a member read through its enum class is a Python-level lookup: ~65 ns).
_INPUT = TensorKind.INPUT


#: Rule op types the device never dumps (graph inputs and constants are not device tasks): a
#: missing left dump of one is expected (``Pair.expected_gap``), not a gap in the dump.
UNDUMPED_TYPES = frozenset({"Data", "Const"})


#: ``Pair.expected_gap`` texts (why a row is structurally not compared; docs/policy.md).
GAP_OVERFLOW = "overflow record"


GAP_QUANT_FILTER = "quant filter"


GAP_QUANT_SKIPPED = "quant op tensors skipped"


GAP_NEW_OPERATOR = "NPU operator without golden"


GAP_UNDUMPED = "operator type not dumped"


def find_op(run: Run, name: str) -> OpDump | None:
    """Look ``name`` up in ``run``: exact, else (any run kind) its ``/``,``.`` -> ``_`` form.

    Ascend dump file names carry op names with ``/`` and ``.`` replaced, so a TF-style rule name
    needs the normalised form on the left too.
    """
    op = run.find(name)
    if op is None:
        op = run.ops.get(normalize_golden_name(name))
    return op


def sample_names(names: Iterable[str], limit: int = 5) -> str:
    """A few names for an error message: ``'a', 'b', 'c' (+12 more)`` or ``(none)``."""
    names = list(names)
    if not names:
        return "(none)"
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown if len(names) <= limit else f"{shown} (+{len(names) - limit} more)"


def overflow_rows(start: int, left: Run, right: Run) -> list[Pair]:
    """One NOT_COMPARABLE row per overflow record of either run, indexes from ``start``."""
    rows = []
    index = start
    for side, run in (("left", left), ("right", right)):
        for record in run.overflow:
            name = record.path.name
            rows.append(Pair(index=index, op_type="Opdebug", left_op=name if side == "left" else NO_COUNTERPART,
                             right_op=name if side == "right" else NO_COUNTERPART, tensor_id=None, left=None,
                             right=None, status=PairStatus.NOT_COMPARABLE, reason=f"{side}: {record.reason()}",
                             op_sequence=index, expected_gap=GAP_OVERFLOW))
            index += 1
    return rows


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as reasons print it: ``[1,3,224,224]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def by_time(dumps: Iterable[OpDump]) -> list[OpDump]:
    """Ops ordered by the timestamp of their chosen file, ties by name."""
    return sorted(dumps, key=lambda d: (d.timestamp, d.name))


def dump_errors(left: OpDump | None, right: OpDump | None) -> list[str]:
    """Messages of the dumps (of one op) that could not be parsed."""
    sides = (("left", left), ("right", right))
    return [f"{side} dump cannot be used: {d.error}" for side, d in sides if d is not None and d.error]


def type_text(op_type: str | None) -> str:
    """`` (type Conv2D)`` for a reason text, or nothing when the type is unknown."""
    return f" (type {op_type})" if op_type else ""


def one_sided_reason(missing_side: str, kind: TensorKind, index: int, name: str, other: OpDump | None) -> str:
    """Why a tensor has no counterpart: the whole op or just this tensor is absent there."""
    if other is None:
        return f"no operator {name!r} in the {missing_side} folder"
    return f"the {missing_side} folder has no {kind.value} {index} of {other.name!r}"


def one_sided_pair(base: dict, ref: TensorRef, missing: str, why: str) -> Pair:
    """The row of a tensor whose counterpart is missing on side ``missing``."""
    status = PairStatus.MISSING_RIGHT if missing == "right" else PairStatus.MISSING_LEFT
    fields = {k: v for k, v in base.items() if k not in ("left_op", "right_op")}
    return Pair(**fields, left_op=base["left_op"] if missing == "right" else NO_COUNTERPART,
                right_op=base["right_op"] if missing == "left" else NO_COUNTERPART, tensor_id=ref.tensor_id,
                left=ref if missing == "right" else None, right=ref if missing == "left" else None,
                status=status, reason=why)


def _same_indexes(lefts: tuple[TensorRef, ...], rights: tuple[TensorRef, ...]) -> bool:
    """Whether both sides hold the same tensor indexes, each once and in increasing order (the
    usual case: every tensor then pairs with the one at its place, no lookup needed)."""
    if len(lefts) != len(rights):
        return False
    last = -1
    for a, b in zip(lefts, rights):
        index = a.index
        if index != b.index or index <= last:
            return False
        last = index
    return True


def op_tensor_rows(index: int, kinds: tuple[TensorKind, ...], left: OpDump | None, right: OpDump | None,
                   pair_tensors: PairBuilder, why_missing: str = "") -> list[Pair]:
    """Rows of one op paired by name (either side may be absent): one per tensor index of ``kinds``.

    Matched tensors become ``pair_tensors(base, left_tensor, right_tensor)`` where ``base`` holds
    index, op_type, left_op, right_op and op_sequence; a tensor without counterpart gets a
    MISSING_* row; an unusable dump one NOT_COMPARABLE row; an op with no tensor of ``kinds``
    one row saying so. ``why_missing``, when given, replaces the reasons of the one-sided rows.
    """
    left_name = left.name if left else NO_COUNTERPART
    right_name = right.name if right else NO_COUNTERPART
    op_type = (left.op_type if left else None) or (right.op_type if right else None)
    base = {"index": index, "op_type": op_type, "left_op": left_name, "right_op": right_name, "op_sequence": index}
    if (left is not None and left.error) or (right is not None and right.error):
        return [Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.NOT_COMPARABLE,
                     reason="; ".join(dump_errors(left, right)))]
    rows: list[Pair] = []
    for kind in kinds:
        is_input = kind is _INPUT
        left_tensors = (left.inputs if is_input else left.outputs) if left else ()
        right_tensors = (right.inputs if is_input else right.outputs) if right else ()
        if left and right and _same_indexes(left_tensors, right_tensors):
            rows.extend(map(pair_tensors, repeat(base), left_tensors, right_tensors))
            continue
        lefts = {t.index: t for t in left_tensors}
        rights = {t.index: t for t in right_tensors}
        for i in sorted(lefts.keys() | rights.keys()):
            a, b = lefts.get(i), rights.get(i)
            if a is not None and b is not None:
                rows.append(pair_tensors(base, a, b))
            elif a is not None:
                why = why_missing or one_sided_reason("right", kind, i, left_name, right)
                rows.append(one_sided_pair(base, a, "right", why))
            elif b is not None:
                why = why_missing or one_sided_reason("left", kind, i, right_name, left)
                rows.append(one_sided_pair(base, b, "left", why))
    if not rows:
        only = left or right
        assert only is not None
        status = (
            PairStatus.NOT_COMPARABLE if left and right
            else PairStatus.MISSING_RIGHT if left else PairStatus.MISSING_LEFT
        )
        what = "/".join(k.value for k in kinds)
        rows.append(Pair(**base, tensor_id=None, left=None, right=None, status=status,
                         reason=why_missing or f"no {what} tensor of {only.name!r} to compare"))
    return rows


#: Builds the Pair of two matched tensors from the op's common fields (see :func:`op_tensor_rows`).
PairBuilder = Callable[[dict, TensorRef, TensorRef], Pair]

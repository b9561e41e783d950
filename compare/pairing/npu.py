"""NPU vs NPU without a rule (the same model dumped twice): operators paired by name, tensors by kind
and index, each side's raw flat data compared as it is."""

from __future__ import annotations

from ..errors import PairingError
from ..records import OpDump, Pair, Pairing, PairingMode, PairStatus, Run, TensorKind
from .rows import KINDS, NO_COUNTERPART, by_time, dump_errors, sample_names, shape_text, type_text

MODE_NPU_VS_NPU = PairingMode.NPU_VS_NPU


def _group_mismatch(kind: TensorKind, left: OpDump, right: OpDump) -> str | None:
    """Why the input (or output) group of an op cannot be compared raw, or None.

    Counts must be equal, and tensor by tensor the indexes, formats and shapes.
    """
    lefts = sorted(left.tensors(kind), key=lambda t: t.index)
    rights = sorted(right.tensors(kind), key=lambda t: t.index)
    if len(lefts) != len(rights):
        return f"{kind.value} count differs: {len(lefts)} on the left, {len(rights)} on the right"
    for a, b in zip(lefts, rights):
        if a.index != b.index:
            return f"{kind.value} indexes differ: {a.index} on the left, {b.index} on the right"
        if a.format != b.format:
            return f"{kind.value} {a.index} format differs: {a.format} vs {b.format}"
        if a.shape != b.shape:
            return f"{kind.value} {a.index} shape differs: {shape_text(a.shape)} vs {shape_text(b.shape)}"
    return None


def _npu_op_row(index: int, left_op: str, right_op: str, status: PairStatus, reason: str) -> Pair:
    """An op-level NPU-vs-NPU row (OpType empty, as the reference writes NaN there)."""
    return Pair(
        index=index,
        op_type=None,
        left_op=left_op,
        right_op=right_op,
        tensor_id=None,
        left=None,
        right=None,
        status=status,
        reason=reason,
        convert=False,
        op_sequence=index,
    )


def _npu_rows(index: int, left: OpDump, right: OpDump) -> list[Pair]:
    """Rows of an op dumped on both sides: raw tensors, group by group (inputs, then outputs).

    A group whose counts/formats/shapes differ gives one NOT_COMPARABLE op-level row naming the
    difference (the reference drops it silently when the other group passes); both groups
    failing give one row with both reasons.
    """
    name = left.name
    errors = dump_errors(left, right)
    if errors:
        return [_npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, "; ".join(errors))]
    mismatch = {kind: _group_mismatch(kind, left, right) for kind in KINDS}
    if all(mismatch.values()):
        reason = "; ".join(m for m in mismatch.values() if m)
        return [_npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, reason)]
    rows: list[Pair] = []
    for kind in KINDS:
        problem = mismatch[kind]
        if problem:
            rows.append(_npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, problem))
            continue
        lefts = sorted(left.tensors(kind), key=lambda t: t.index)
        rights = sorted(right.tensors(kind), key=lambda t: t.index)
        for a, b in zip(lefts, rights):
            rows.append(
                Pair(
                    index=index,
                    op_type=left.op_type,
                    left_op=name,
                    right_op=name,
                    tensor_id=a.tensor_id,
                    left=a,
                    right=b,
                    convert=False,
                    op_sequence=index,
                )
            )
    if not rows:
        rows.append(
            _npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, f"neither dump of {name!r} holds a tensor")
        )
    return rows


def pair_npu_vs_npu(left: Run, right: Run) -> Pairing:
    """NPU vs NPU (spec §3.2): pair by cleaned op name; raw flat arrays, no layout conversion.

    Index order: left ops by dump timestamp (ties by name), then right-only ops the same way.
    One-sided ops give one op-level row with ``*`` on the missing side.
    """
    left_order = by_time(left.ops.values())
    right_only = by_time(d for name, d in right.ops.items() if name not in left.ops)
    common = [d.name for d in left_order if d.name in right.ops]
    if not common:
        raise PairingError(
            f"no operator name is dumped on both sides ({left.path} vs {right.path}): "
            f"left has {sample_names(d.name for d in left_order)}; right has {sample_names(right.ops)}"
        )
    pairs: list[Pair] = []
    for index, dump in enumerate(left_order):
        other = right.ops.get(dump.name)
        if other is not None:
            pairs.extend(_npu_rows(index, dump, other))
        else:
            reason = f"no dump file for operator {dump.name!r}{type_text(dump.op_type)} in the right folder"
            pairs.append(_npu_op_row(index, dump.name, NO_COUNTERPART, PairStatus.MISSING_RIGHT, reason))
    for index, dump in enumerate(right_only, start=len(left_order)):
        reason = f"no dump file for operator {dump.name!r}{type_text(dump.op_type)} in the left folder"
        pairs.append(_npu_op_row(index, NO_COUNTERPART, dump.name, PairStatus.MISSING_LEFT, reason))
    unmatched_left = [d.name for d in left_order if d.name not in right.ops]
    unmatched_right = [d.name for d in right_only]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_NPU_VS_NPU, [])

"""Pairing: two runs (+ a fusion rule) -> :class:`~compare.records.Pairing`.

:func:`pair_runs` first finds the row of the manual's comparison table the two runs and the rule
options make (:func:`compare.pairing.scenarios.check_scenario`, which refuses unsupported
combinations), builds the rule (:func:`compare.pairing.quant_rule.build_rule`: the ATC rule,
merge(offline, quant), merge(open, close) or the quant rule alone, quant filter applied) and
pairs with one of these strategies:

- **fusion** (a fusion rule is given; spec §3.4-3.6): rows per fusion group, golden tensors found
  through the rule (:func:`compare.pairing.fusion_rule.golden_origin`). Ops the quant filter
  flagged (between a quant and a dequant op) give one NOT_COMPARABLE row each, with the reason.
- **quant** (scenario 3, quantized Caffe vs Caffe, ``-q`` only): the fusion strategy over the
  quant rule, but only output 0 of each left op is compared, as it is (no layout conversion): the
  left and golden shapes must be identical, rank included, else the row says why.
- **npu-vs-npu** (both runs are Ascend dumps, no rule; spec §3.2): pairs by cleaned op name and
  compares the raw flat arrays, which must have equal counts, formats and shapes.
- **by-name** (any other pair of runs, no rule: two golden folders, or an Ascend dump against the
  golden ``.npy`` folder it was converted from; the reference tool refuses these): pairs op names
  (exact, else with ``/`` and ``.`` turned into ``_``) and tensor indexes.

Pairing reads metadata only, never tensor bytes. Nothing is dropped silently: every tensor or
operator without a counterpart becomes a row with ``*`` on the missing side (or is listed in
``unmatched_left`` / ``unmatched_right``), and zero pairable tensors raise
:class:`~compare.errors.PairingError` naming a few operators of both sides.

Pairs are returned stably sorted by ``index``; within an index, inputs come before outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..errors import PairingError
from ..records import (
    OpDump,
    Pair,
    Pairing,
    PairStatus,
    Run,
    RunKind,
    TensorKind,
    TensorRef,
    normalize_golden_name,
)
from .fusion_rule import FusionGroup, FusionRule, NewOperator, Relation, RuleOp, golden_origin
from .quant_rule import RuleLike, build_rule
from .scenarios import Scenario, Strategy, check_scenario

MODE_FUSION = "fusion"
MODE_FUSION_QUANT = "fusion+quant"
MODE_QUANT = "quant"
MODE_CLOSE_FUSION = "close-fusion"
MODE_NPU_VS_NPU = "npu-vs-npu"
MODE_BY_NAME = "by-name"

#: Marker of the missing side in the NPUDump / GroundTruth cells.
NO_COUNTERPART = "*"

#: Name endings of dequantisation ops, whose input rows are skipped (spec §3.4).
_DEQUANT_SUFFIXES = ("_dequant_layer", "AscendDequant", "_dequant")
_KINDS = (TensorKind.INPUT, TensorKind.OUTPUT)
#: Rule op types the device never dumps (graph inputs and constants are not device tasks): a
#: missing left dump of one is expected (``Pair.expected_gap``), not a gap in the dump.
UNDUMPED_TYPES = frozenset({"Data", "Const"})

#: ``Pair.expected_gap`` texts (why a row is structurally not compared; docs/policy.md).
GAP_OVERFLOW = "overflow record"
GAP_QUANT_FILTER = "quant filter"
GAP_QUANT_SKIPPED = "quant op tensors skipped"
GAP_NEW_OPERATOR = "NPU operator without golden"
GAP_UNDUMPED = "operator type not dumped"


def pair_runs(left: Run, right: Run, *, fusion_rule: RuleLike | None = None, quant_rule: RuleLike | None = None,
              close_fusion_rule: RuleLike | None = None, scenario: Scenario | None = None) -> Pairing:
    """Pair the tensors of ``left`` (the run under test) with those of ``right`` (the golden side).

    ``fusion_rule`` (``-f``, the ATC om->json of the left model), ``quant_rule`` (``-q``, the AMCT
    quantization fusion rule) and ``close_fusion_rule`` (``-cf``, the ATC json of the model built
    without fusion) are paths or loaded :class:`FusionRule` objects. The scenario is checked first
    (``scenario`` may pass the result of an earlier :func:`check_scenario` call); its notes come
    first in ``Pairing.notes``. Without any rule: npu-vs-npu when both runs are Ascend (OFFLINE)
    dumps, else by-name.

    Raises :class:`PairingError` for an unsupported scenario and when no tensor at all can be
    paired, :class:`~compare.errors.RuleError` for an unreadable rule file.
    """
    if scenario is None:
        scenario = check_scenario(left, right, fusion=fusion_rule is not None, quant=quant_rule is not None,
                                  close=close_fusion_rule is not None)
    strategy = scenario.strategy
    if strategy is Strategy.NPU_VS_NPU:
        pairing = pair_npu_vs_npu(left, right)
    elif strategy is Strategy.BY_NAME:
        pairing = pair_by_name(left, right)
    else:
        rule = build_rule(fusion_rule if scenario.use_fusion else None,
                          quant_rule if scenario.use_quant else None,
                          close_fusion_rule if scenario.use_close else None)
        assert rule is not None
        try:
            pairing = pair_fusion(left, right, rule, direct=strategy is Strategy.QUANT)
        except PairingError as exc:
            if strategy is Strategy.FUSION and scenario.row == 6:
                raise PairingError(f"{exc}. For two dumps of the same model leave -f out (scenario 6); for the "
                                   "model built without fusion add -cf CLOSE_MODEL.json") from exc
            raise
        pairing.mode = {Strategy.FUSION_QUANT: MODE_FUSION_QUANT, Strategy.QUANT: MODE_QUANT,
                        Strategy.CLOSE_FUSION: MODE_CLOSE_FUSION}.get(strategy, MODE_FUSION)
    pairing.notes[:0] = scenario.notes
    pairing.pairs.sort(key=lambda pair: pair.index)
    return pairing


# --------------------------------------------------------------------------------------------
# Shared helpers.


def find_op(run: Run, name: str) -> OpDump | None:
    """Look ``name`` up in ``run``: exact, else (any run kind) its ``/``,``.`` -> ``_`` form.

    Ascend dump file names carry op names with ``/`` and ``.`` replaced, so a TF-style rule name
    needs the normalised form on the left too.
    """
    op = run.find(name)
    if op is None:
        op = run.ops.get(normalize_golden_name(name))
    return op


def _sample(names: Iterable[str], limit: int = 5) -> str:
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


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _by_time(dumps: Iterable[OpDump]) -> list[OpDump]:
    """Ops ordered by the timestamp of their chosen file, ties by name."""
    return sorted(dumps, key=lambda d: (d.timestamp, d.name))


def _dump_errors(left: OpDump | None, right: OpDump | None) -> list[str]:
    """Messages of the dumps (of one op) that could not be parsed."""
    sides = (("left", left), ("right", right))
    return [f"{side} dump cannot be used: {d.error}" for side, d in sides if d is not None and d.error]


def _type_text(op_type: str | None) -> str:
    return f" (type {op_type})" if op_type else ""


# --------------------------------------------------------------------------------------------
# Fusion strategy.


@dataclass
class _FusionState:
    """What the fusion strategy has seen so far (for leftovers and the zero-pair check)."""

    left: Run
    right: Run
    rule: FusionRule
    direct: bool = False
    used_left: set[str] = field(default_factory=set)
    used_right: set[str] = field(default_factory=set)
    paired: int = 0


def _is_dequant(op: RuleOp) -> bool:
    """Dequant ops (type AscendDequant, or a dequant name ending) get no input rows."""
    return op.type == "AscendDequant" or op.name.endswith(_DEQUANT_SUFFIXES)


def _op_row(
    group: FusionGroup, op: RuleOp, left_str: str, right_str: str, status: PairStatus, reason: str,
    expected_gap: str | None = None,
) -> Pair:
    """An op-level row (no tensor) of the fusion strategy."""
    return Pair(
        index=group.index,
        op_type=op.type,
        left_op=left_str,
        right_op=right_str,
        tensor_id=None,
        left=None,
        right=None,
        status=status,
        reason=reason,
        op_sequence=op.id,
        expected_gap=expected_gap,
    )


def _left_dump(state: _FusionState, op: RuleOp) -> tuple[OpDump | None, tuple[PairStatus, str] | None]:
    """The left dump of ``op`` and, if it cannot give tensor rows, why (missing/unreadable/empty)."""
    dump = find_op(state.left, op.name)
    if dump is None:
        return None, (
            PairStatus.MISSING_LEFT,
            f"no dump file for operator {op.name!r}{_type_text(op.type)} in the left folder",
        )
    state.used_left.add(dump.name)
    if dump.error:
        return dump, (PairStatus.NOT_COMPARABLE, dump.error)
    if not dump.inputs and not dump.outputs:
        return dump, (PairStatus.NOT_COMPARABLE, f"the dump of {op.name!r} ({dump.path.name}) holds no tensors")
    return dump, None


def _golden_pair(
    state: _FusionState, group: FusionGroup, op: RuleOp, ref: TensorRef, left_str: str, right_str: str
) -> Pair:
    """The row of one left tensor: its golden tensor through the rule (spec §3.5)."""
    tensor_id = f"{op.name}:{ref.kind.value}:{ref.index}"
    common = dict(
        index=group.index,
        op_type=op.type,
        left_op=left_str,
        right_op=right_str,
        tensor_id=tensor_id,
        left=ref,
        op_sequence=op.id,
    )
    origin = golden_origin(state.rule, op.name, ref.kind, ref.index)
    if isinstance(origin, str):
        return Pair(
            **common,
            right=None,
            status=PairStatus.MISSING_RIGHT,
            reason=f"no golden tensor for {tensor_id}: {origin}",
            expected_gap=GAP_NEW_OPERATOR if isinstance(origin, NewOperator) else None,
        )
    golden_op = find_op(state.right, origin.origin_name)
    wanted = f"{origin.origin_name} output {origin.origin_index}"
    if golden_op is not None:
        state.used_right.add(golden_op.name)
        if golden_op.error:
            return Pair(
                **common,
                right=None,
                status=PairStatus.NOT_COMPARABLE,
                reason=f"the golden dump of {wanted} cannot be used: {golden_op.error}",
            )
    golden = golden_op.tensor(TensorKind.OUTPUT, origin.origin_index) if golden_op else None
    if golden is None:
        return Pair(
            **common,
            right=None,
            status=PairStatus.MISSING_RIGHT,
            reason=f"no golden tensor for {tensor_id} (looked for {wanted} in the right folder)",
        )
    if state.direct:
        return _direct_pair(state, common, ref, golden)
    state.paired += 1
    if state.right.kind is RunKind.OFFLINE:
        golden_format: str | None = golden.format
        shape: tuple[int, ...] | None = golden.shape
    else:
        golden_format = origin.origin_format or ref.format
        shape = origin.origin_shape
    return Pair(
        **common,
        right=golden,
        golden_format=golden_format,
        target_shape=ref.original_shape or shape,
    )


def _direct_pair(state: _FusionState, common: dict, ref: TensorRef, golden: TensorRef) -> Pair:
    """Scenario 3: the arrays are compared as they are, so the shapes must be identical."""
    if tuple(ref.shape) != tuple(golden.shape):
        return Pair(
            **common,
            right=golden,
            status=PairStatus.NOT_COMPARABLE,
            reason=(
                f"shapes differ: left {_shape_text(ref.shape)} ({ref.path.name}) vs golden "
                f"{_shape_text(golden.shape)} ({golden.path.name}); a quantized Caffe dump is compared "
                "with its golden as it is (no layout conversion), so the shapes must be identical, rank included"
            ),
            convert=False,
        )
    state.paired += 1
    return Pair(**common, right=golden, convert=False, target_shape=tuple(golden.shape))


def _quant_filtered_row(
    state: _FusionState, group: FusionGroup, op: RuleOp, left_str: str, right_str: str
) -> Pair:
    """The NOT_COMPARABLE row of an op the quant filter flagged (the reference drops it silently)."""
    dump = find_op(state.left, op.name)
    if dump is not None:
        state.used_left.add(dump.name)
    reason = state.rule.skip_reasons.get(op.name) or (
        "between a quant and a dequant op: int8/int32 data has no float golden")
    return _op_row(group, op, left_str, right_str, PairStatus.NOT_COMPARABLE, reason, GAP_QUANT_FILTER)


def _tensor_rows(
    state: _FusionState, group: FusionGroup, op: RuleOp, left_str: str, right_str: str
) -> list[Pair]:
    """Rows of one compared op: inputs (unless dequant), then outputs (unless AscendQuant).

    In direct mode (scenario 3) only output 0 is compared.
    """
    dump, problem = _left_dump(state, op)
    if problem is not None or dump is None:
        status, reason = problem or (PairStatus.MISSING_LEFT, f"no dump of {op.name!r}")
        gap = GAP_UNDUMPED if status is PairStatus.MISSING_LEFT and op.type in UNDUMPED_TYPES else None
        return [_op_row(group, op, left_str, right_str, status, reason, gap)]
    if state.direct:
        first = dump.tensor(TensorKind.OUTPUT, 0)
        if first is None:
            reason = (f"the left dump of {op.name!r} has no output 0 (only output 0 of a quantized Caffe "
                      "dump is compared)")
            return [_op_row(group, op, left_str, right_str, PairStatus.NOT_COMPARABLE, reason)]
        return [_golden_pair(state, group, op, first, left_str, right_str)]
    refs: list[TensorRef] = []
    if not _is_dequant(op):
        refs.extend(sorted(dump.inputs, key=lambda t: t.index))
    if op.type != "AscendQuant":
        refs.extend(sorted(dump.outputs, key=lambda t: t.index))
    if not refs:
        reason = f"no tensor of {op.name!r} is compared (inputs of dequant ops and outputs of AscendQuant are skipped)"
        return [_op_row(group, op, left_str, right_str, PairStatus.NOT_COMPARABLE, reason, GAP_QUANT_SKIPPED)]
    return [_golden_pair(state, group, op, ref, left_str, right_str) for ref in refs]


def _group_strings(group: FusionGroup) -> tuple[str, str]:
    """NPUDump / GroundTruth cells of a 1:N, N:M or L1 group (spec §3.6).

    NPUDump: every op name of the group. GroundTruth: the distinct non-empty per-op original-name
    strings, or ``*`` when there are none.
    """
    left_str = ",".join(op.name for op in group.ops)
    distinct = list(dict.fromkeys(op.ground_truth for op in group.ops if op.ground_truth))
    return left_str, ",".join(distinct) or NO_COUNTERPART


def _rows_one_to_one(state: _FusionState, group: FusionGroup) -> list[Pair]:
    """1:1 and N:1 groups: every op is compared; a missing dump gives an op-level row."""
    rows: list[Pair] = []
    for op in group.ops:
        right_str = op.ground_truth or NO_COUNTERPART
        if op.quant_filtered:
            rows.append(_quant_filtered_row(state, group, op, op.name, right_str))
        else:
            rows.extend(_tensor_rows(state, group, op, op.name, right_str))
    return rows


def _rows_multi(state: _FusionState, group: FusionGroup) -> list[Pair]:
    """1:N and N:M groups: inner nodes and ops without a dump are skipped.

    If no op yields a row, one op-level row for the first op says why (the skipped reasons).
    """
    left_str, right_str = _group_strings(group)
    rows: list[Pair] = []
    reasons: list[str] = []
    any_dump = False
    for op in group.ops:
        if op.quant_filtered:
            rows.append(_quant_filtered_row(state, group, op, left_str, right_str))
            continue
        if op.is_inner_node:
            reasons.append(f"{op.name!r} is an inner node of a multi-op fusion (no origin output)")
            continue
        _, problem = _left_dump(state, op)
        if problem is not None and problem[0] is PairStatus.MISSING_LEFT:
            reasons.append(problem[1])
            continue
        any_dump = True
        rows.extend(_tensor_rows(state, group, op, left_str, right_str))
    if not rows:
        status = PairStatus.NOT_COMPARABLE if any_dump else PairStatus.MISSING_LEFT
        reason = "; ".join(reasons) or f"no operator of fusion group {group.key!r} is compared"
        rows.append(_op_row(group, group.ops[0], left_str, right_str, status, reason))
    return rows


def _rows_l1(state: _FusionState, group: FusionGroup) -> list[Pair]:
    """L1 fusion groups: the latest-dumped op, plus the earliest if its original names differ.

    Ops are ordered by their dump timestamp (ties by group order); the earliest op's rows come
    first.
    """
    left_str, right_str = _group_strings(group)
    dumped: list[tuple[int, int, RuleOp]] = []
    filtered: list[Pair] = []
    for position, op in enumerate(group.ops):
        if op.quant_filtered:
            filtered.append(_quant_filtered_row(state, group, op, left_str, right_str))
            continue
        dump = find_op(state.left, op.name)
        if dump is not None:
            dumped.append((dump.timestamp, position, op))
    if filtered and not dumped:
        return filtered
    if not dumped:
        reason = (
            f"none of the {len(group.ops)} operators of L1 fusion group {group.key!r} "
            "has a dump file in the left folder"
        )
        return [_op_row(group, group.ops[0], left_str, right_str, PairStatus.MISSING_LEFT, reason)]
    dumped.sort(key=lambda item: (item[0], item[1]))
    earliest, latest = dumped[0][2], dumped[-1][2]
    chosen = [latest]
    if earliest is not latest and earliest.ground_truth != latest.ground_truth:
        chosen = [earliest, latest]
    rows: list[Pair] = list(filtered)
    for op in chosen:
        rows.extend(_tensor_rows(state, group, op, left_str, right_str))
    return rows


_GROUP_ROWS = {
    Relation.ONE_TO_ONE: _rows_one_to_one,
    Relation.MULTI_TO_ONE: _rows_one_to_one,
    Relation.ONE_TO_MULTI: _rows_multi,
    Relation.MULTI_TO_MULTI: _rows_multi,
    Relation.L1_FUSION: _rows_l1,
}


def pair_fusion(left: Run, right: Run, rule: FusionRule, *, direct: bool = False) -> Pairing:
    """Fusion strategy (spec §3.4-3.6): rows per group, in group order.

    ``direct`` (scenario 3, quantized Caffe vs Caffe): only output 0 of each left op, compared as
    it is (``convert=False``); a left/golden shape difference gives a NOT_COMPARABLE row.
    Quant-filtered ops give one NOT_COMPARABLE row each, whose reason is
    ``rule.skip_reasons[name]``.

    Per compared op: one row per left input (skipped for dequant ops), then one per left output
    (skipped for AscendQuant). The golden tensor is ``right.find(origin_name)``'s output
    ``origin_index``; ``golden_format`` is the rule's origin format (the left format when the rule
    has none) and ``target_shape`` the left tensor's ``original_shape``, else the rule's
    ``origin_shape``. With an Ascend-dump right side (close fusion) the golden dump tensor's own
    format and shape are used instead.

    Left dump ops not in the rule are returned in ``unmatched_left``; golden ops never looked up,
    in ``unmatched_right``.
    """
    state = _FusionState(left, right, rule, direct)
    pairs: list[Pair] = []
    for group in rule.groups:
        pairs.extend(_GROUP_ROWS[group.relation](state, group))
    if state.paired == 0:
        raise PairingError(
            f"fusion rule {rule.path} pairs no tensor of {left.path} with one of {right.path}: "
            f"rule operators {_sample(rule.ops)}; left operators {_sample(left.ops)}; "
            f"right operators {_sample(right.ops)}"
        )
    notes = list(rule.warnings)
    unmatched_left = [name for name in left.ops if name not in state.used_left]
    if unmatched_left:
        notes.append(
            f"{len(unmatched_left)} left operator(s) are not in the fusion rule and are not compared: "
            f"{_sample(unmatched_left)}"
        )
    unmatched_right = [name for name in right.ops if name not in state.used_right]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_FUSION, notes)


# --------------------------------------------------------------------------------------------
# NPU vs NPU.


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
            return f"{kind.value} {a.index} shape differs: {_shape_text(a.shape)} vs {_shape_text(b.shape)}"
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
    errors = _dump_errors(left, right)
    if errors:
        return [_npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, "; ".join(errors))]
    mismatch = {kind: _group_mismatch(kind, left, right) for kind in _KINDS}
    if all(mismatch.values()):
        reason = "; ".join(m for m in mismatch.values() if m)
        return [_npu_op_row(index, name, name, PairStatus.NOT_COMPARABLE, reason)]
    rows: list[Pair] = []
    for kind in _KINDS:
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
    left_order = _by_time(left.ops.values())
    right_only = _by_time(d for name, d in right.ops.items() if name not in left.ops)
    common = [d.name for d in left_order if d.name in right.ops]
    if not common:
        raise PairingError(
            f"no operator name is dumped on both sides ({left.path} vs {right.path}): "
            f"left has {_sample(d.name for d in left_order)}; right has {_sample(right.ops)}"
        )
    pairs: list[Pair] = []
    for index, dump in enumerate(left_order):
        other = right.ops.get(dump.name)
        if other is not None:
            pairs.extend(_npu_rows(index, dump, other))
        else:
            reason = f"no dump file for operator {dump.name!r}{_type_text(dump.op_type)} in the right folder"
            pairs.append(_npu_op_row(index, dump.name, NO_COUNTERPART, PairStatus.MISSING_RIGHT, reason))
    for index, dump in enumerate(right_only, start=len(left_order)):
        reason = f"no dump file for operator {dump.name!r}{_type_text(dump.op_type)} in the left folder"
        pairs.append(_npu_op_row(index, NO_COUNTERPART, dump.name, PairStatus.MISSING_LEFT, reason))
    unmatched_left = [d.name for d in left_order if d.name not in right.ops]
    unmatched_right = [d.name for d in right_only]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_NPU_VS_NPU, [])


# --------------------------------------------------------------------------------------------
# By name.


def _match_names(left: Run, right: Run) -> tuple[dict[str, str], int]:
    """left op name -> right op name: exact first, else by the normalised form; each right op once.

    Returns the mapping and how many names matched only after normalising.
    """
    by_norm: dict[str, str] = {}
    for name in right.ops:
        by_norm.setdefault(normalize_golden_name(name), name)
    matched: dict[str, str] = {name: name for name in left.ops if name in right.ops}
    taken = set(matched.values())
    normalised = 0
    for name in left.ops:
        if name in matched:
            continue
        other = by_norm.get(normalize_golden_name(name))
        if other is not None and other not in taken:
            matched[name] = other
            taken.add(other)
            normalised += 1
    return matched, normalised


def _one_sided_reason(missing_side: str, kind: TensorKind, index: int, name: str, other: OpDump | None) -> str:
    """Why a tensor has no counterpart: the whole op or just this tensor is absent there."""
    if other is None:
        return f"no operator {name!r} in the {missing_side} folder"
    return f"the {missing_side} folder has no {kind.value} {index} of {other.name!r}"


#: Builds the Pair of two matched tensors from the op's common fields (see :func:`op_tensor_rows`).
PairBuilder = Callable[[dict, TensorRef, TensorRef], Pair]


def one_sided_pair(base: dict, ref: TensorRef, missing: str, why: str) -> Pair:
    """The row of a tensor whose counterpart is missing on side ``missing``."""
    status = PairStatus.MISSING_RIGHT if missing == "right" else PairStatus.MISSING_LEFT
    fields = {k: v for k, v in base.items() if k not in ("left_op", "right_op")}
    return Pair(**fields, left_op=base["left_op"] if missing == "right" else NO_COUNTERPART,
                right_op=base["right_op"] if missing == "left" else NO_COUNTERPART, tensor_id=ref.tensor_id,
                left=ref if missing == "right" else None, right=ref if missing == "left" else None,
                status=status, reason=why)


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
    base = dict(index=index, op_type=op_type, left_op=left_name, right_op=right_name, op_sequence=index)
    errors = _dump_errors(left, right)
    if errors:
        return [Pair(**base, tensor_id=None, left=None, right=None, status=PairStatus.NOT_COMPARABLE,
                     reason="; ".join(errors))]
    rows: list[Pair] = []
    for kind in kinds:
        lefts = {t.index: t for t in left.tensors(kind)} if left else {}
        rights = {t.index: t for t in right.tensors(kind)} if right else {}
        for i in sorted(lefts.keys() | rights.keys()):
            a, b = lefts.get(i), rights.get(i)
            if a is not None and b is not None:
                rows.append(pair_tensors(base, a, b))
            elif a is not None:
                why = why_missing or _one_sided_reason("right", kind, i, left_name, right)
                rows.append(one_sided_pair(base, a, "right", why))
            elif b is not None:
                why = why_missing or _one_sided_reason("left", kind, i, right_name, left)
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


def _by_name_rows(
    index: int, kinds: tuple[TensorKind, ...], left: OpDump | None, right: OpDump | None, right_kind: RunKind
) -> list[Pair]:
    """:func:`op_tensor_rows` with the golden target shape rule of by-name pairing."""

    def golden_pair(base: dict, a: TensorRef, b: TensorRef) -> Pair:
        target = a.original_shape or (b.shape if right_kind is not RunKind.OFFLINE else None) or None
        return Pair(**base, tensor_id=a.tensor_id, left=a, right=b, target_shape=target)

    return op_tensor_rows(index, kinds, left, right, golden_pair)


def pair_by_name(left: Run, right: Run) -> Pairing:
    """Pair two runs without a rule by op name and tensor index (vcompare extension).

    Op names match exactly, else after ``/`` and ``.`` become ``_``. When an Ascend dump meets a
    golden folder only outputs are compared (golden folders hold outputs only) and
    ``golden_format`` is None: the engine brings the left device layout to the golden layout
    using ``original_shape`` (else the golden shape, given as ``target_shape``). Index order:
    left ops by timestamp (ties by name), then right-only ops. Every tensor without a counterpart
    gets a row with ``*`` on the missing side.
    """
    matched, normalised = _match_names(left, right)
    if not matched:
        raise PairingError(
            f"no operator of {left.path} matches one of {right.path} by name: "
            f"left has {_sample(left.ops)}; right has {_sample(right.ops)}"
        )
    mixed = (left.kind is RunKind.OFFLINE) != (right.kind is RunKind.OFFLINE)
    kinds: tuple[TensorKind, ...] = (TensorKind.OUTPUT,) if mixed else _KINDS
    notes = ["paired by operator name and tensor index (no fusion rule)"]
    if normalised:
        notes.append(f"{normalised} operator name(s) matched only after turning '/' and '.' into '_'")
    if mixed:
        notes.append("only outputs are compared: a golden folder holds operator outputs only")
    used_right = set(matched.values())
    left_order = _by_time(left.ops.values())
    right_only = _by_time(d for name, d in right.ops.items() if name not in used_right)
    pairs: list[Pair] = []
    for index, dump in enumerate(left_order):
        other = right.ops.get(matched[dump.name]) if dump.name in matched else None
        pairs.extend(_by_name_rows(index, kinds, dump, other, right.kind))
    for index, dump in enumerate(right_only, start=len(left_order)):
        pairs.extend(_by_name_rows(index, kinds, None, dump, right.kind))
    unmatched_left = [d.name for d in left_order if d.name not in matched]
    unmatched_right = [d.name for d in right_only]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_BY_NAME, notes)

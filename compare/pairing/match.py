"""Pairing: two runs (+ a fusion rule) -> :class:`~compare.records.Pairing`.

:func:`pair_runs` first finds the row of the manual's comparison table the two runs and the rule
options make (:func:`compare.pairing.scenarios.check_scenario`, which refuses unsupported
combinations), builds the rule (:func:`compare.pairing.quant_rule.build_rule`: the ATC rule,
merge(offline, quant), merge(open, close) or the quant rule alone, quant filter applied) and
pairs with one of these strategies:

- **fusion** (a fusion rule is given; spec §3.4-3.6): rows per fusion group, golden tensors found
  through the rule (:func:`compare.pairing.fusion_groups.golden_origin`). Ops the quant filter
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

from ..errors import PairingError
from ..records import (
    OpDump,
    Pair,
    Pairing,
    PairingMode,
    PairStatus,
    Run,
    RunKind,
    TensorKind,
    TensorRef,
)
from .by_name import pair_by_name
from .fusion_groups import NewOperator, golden_origin
from .npu import pair_npu_vs_npu
from .quant_rule import RuleLike, build_rule
from .rows import (
    GAP_NEW_OPERATOR,
    GAP_QUANT_FILTER,
    GAP_QUANT_SKIPPED,
    GAP_UNDUMPED,
    NO_COUNTERPART,
    UNDUMPED_TYPES,
    find_op,
    sample_names,
    shape_text,
    type_text,
)
from .rule_records import FusionGroup, FusionRule, Relation, RuleOp
from .scenarios import Scenario, Strategy, check_scenario

MODE_FUSION = PairingMode.FUSION
MODE_FUSION_QUANT = PairingMode.FUSION_QUANT
MODE_QUANT = PairingMode.QUANT
MODE_CLOSE_FUSION = PairingMode.CLOSE_FUSION


#: Name endings of dequantisation ops, whose input rows are skipped (spec §3.4).
_DEQUANT_SUFFIXES = ("_dequant_layer", "AscendDequant", "_dequant")


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


# duplicates: _op_row and _quant_filtered_row build Pair records of one shape with different statuses and
# reasons
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
            f"no dump file for operator {op.name!r}{type_text(op.type)} in the left folder",
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
                f"shapes differ: left {shape_text(ref.shape)} ({ref.path.name}) vs golden "
                f"{shape_text(golden.shape)} ({golden.path.name}); a quantized Caffe dump is compared "
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
            f"rule operators {sample_names(rule.ops)}; left operators {sample_names(left.ops)}; "
            f"right operators {sample_names(right.ops)}"
        )
    notes = list(rule.warnings)
    unmatched_left = [name for name in left.ops if name not in state.used_left]
    if unmatched_left:
        notes.append(
            f"{len(unmatched_left)} left operator(s) are not in the fusion rule and are not compared: "
            f"{sample_names(unmatched_left)}"
        )
    unmatched_right = [name for name in right.ops if name not in state.used_right]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_FUSION, notes)



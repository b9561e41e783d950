"""Fusion groups of a rule and the golden of a left tensor.

- :func:`group_ops`: operators grouped by their original (pre-fusion) names; the relation of each
  group (one-to-one, fused many-to-one, L1 fusion ...) decides how its rows are built.
- :func:`golden_origin`: where the golden tensor of a left tensor lives (walking back through
  Cast / TransData), or :class:`NewOperator` for an operator the framework never had."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace

from ..records import TensorKind
from .rule_records import FusionGroup, FusionRule, Origin, OutputDesc, Relation, RuleOp

#: Op types the golden lookup walks back through (their output is their input, re-laid out).
WALK_BACK_TYPES = frozenset({"Cast", "TransData"})


def group_key(op: RuleOp) -> str:
    """Group key of an op (spec §3.4), in priority order.

    1. a non-empty L1 fusion sub-graph number; 2. exactly one original name: that name (the op's
    own name if it is ''); 3. several original names: UUID3(DNS, their concatenation);
    4. no original names: the op's own name.
    """
    if op.l1_fusion_no:
        return op.l1_fusion_no
    if len(op.original_names) == 1:
        return op.original_names[0] or op.name
    if len(op.original_names) > 1:
        return str(uuid.uuid3(uuid.NAMESPACE_DNS, "".join(op.original_names)))
    return op.name


def relation_of(ops: list[RuleOp]) -> Relation:
    """Relation of a group from its ops (spec §3.4 table)."""
    first = ops[0]
    if len(ops) == 1:
        return Relation.MULTI_TO_ONE if len(first.original_names) > 1 else Relation.ONE_TO_ONE
    if first.l1_fusion_no:
        return Relation.L1_FUSION
    if len(first.original_names) == 1:
        return Relation.ONE_TO_MULTI
    return Relation.MULTI_TO_MULTI


def group_ops(ops: list[RuleOp]) -> list[FusionGroup]:
    """Groups of ``ops`` (taken in the order given), indexed by first appearance.

    Public so that rule merges (quant §3.7, close fusion §3.8) can regroup after changing the
    original names.
    """
    by_key: dict[str, FusionGroup] = {}
    names_of: dict[str, set[str]] = {}  # group key -> names of its ops (a repeated name joins once)
    for op in ops:
        key = group_key(op)
        group = by_key.get(key)
        if group is None:
            by_key[key] = FusionGroup(len(by_key), key, [op], Relation.ONE_TO_ONE)
            names_of[key] = {op.name}
        elif op.name not in names_of[key]:
            group.ops.append(op)
            names_of[key].add(op.name)
    groups = list(by_key.values())
    for group in groups:
        group.relation = relation_of(group.ops)
    return groups


def rename_adjust(ops: list[RuleOp], start: int, group_sizes: Counter[str]) -> None:
    """Rename-node adjustment (in place) of ``ops[start:]``, the ops of the graph just read.

    ``group_sizes`` counts the ops per group key read so far (this graph included). The rule is
    applied after each graph to every group of exactly one op; groups only grow as graphs are
    read (op names are unique, descs do not change keys) and the adjustment is idempotent, so an
    op is adjusted iff its group had one op at the end of the graph that brought it. Checking
    only the new ops therefore gives what re-running over all ops after each graph gives, in
    time linear in the rule's size (instead of quadratic in the number of graphs).
    """
    for i in range(start, len(ops)):
        op = ops[i]
        name = group_key(op)
        if group_sizes[name] != 1 or len(op.original_names) != 1 or op.original_names[0] != name:
            continue
        if op.descs:
            descs = tuple(d if d.origin_name else replace(d, origin_name=name) for d in op.descs)
        else:
            descs = (OutputDesc(0, name, None, "", None),)
        if descs != op.descs:
            ops[i] = replace(op, descs=descs)


def rule_from_ops(template: FusionRule, ops: list[RuleOp], *, warnings: list[str] | None = None,
                  skip_reasons: dict[str, str] | None = None) -> FusionRule:
    """A rule made of ``ops`` (in group order), otherwise like ``template``: used by rule merges.

    Groups are recomputed with :func:`group_ops` (indexes renumbered in the order given); the
    ``ops`` map is in ``id`` order (stable); path, graph names and input nodes are kept.
    """
    groups = group_ops(ops)
    return FusionRule(
        path=template.path,
        ops={op.name: op for op in sorted(ops, key=lambda op: op.id)},
        groups=groups,
        group_of={op.name: group for group in groups for op in group.ops},
        graph_names=list(template.graph_names),
        input_nodes=list(template.input_nodes),
        warnings=list(template.warnings if warnings is None else warnings),
        skip_reasons=dict(template.skip_reasons if skip_reasons is None else skip_reasons),
        quant_filter_applied=template.quant_filter_applied,
    )


def ops_in_group_order(rule: FusionRule) -> list[RuleOp]:
    """Every op of ``rule``, group by group (the order of first appearance in the JSON)."""
    return [op for group in rule.groups for op in group.ops]


def _producer_of(rule: FusionRule, op: RuleOp, k: int) -> tuple[str, int] | None:
    """Input ``k`` of a Cast/TransData op (input 0 when ``k`` is out of range); None if none."""
    if not op.inputs:
        return None
    return op.inputs[k] if k < len(op.inputs) else op.inputs[0]


class NewOperator(str):
    """The reason :func:`golden_origin` gives for an output with no original operator (an operator
    the NPU model added: it has no golden by construction, unlike the other reasons, which are
    gaps in the rule)."""


def golden_origin(rule: FusionRule, op_name: str, kind: TensorKind, index: int) -> Origin | str:
    """Where the golden tensor of ``op_name``'s ``kind`` ``index`` is (spec §3.5).

    Output i of P starts at (P, i); input i of P at P's i-th data input ``Q:k``. While the current
    op is a Cast or TransData, the walk continues to that op's input ``k`` (its input 0 when it
    has fewer inputs). The origin is then ``output_desc[k]`` of the op reached (``output_desc[0]``
    if ``k`` is out of range); its origin index falls back to ``k`` when unset.

    Returns a plain-English reason string instead when there is no golden tensor to look for (a
    :class:`NewOperator` when the rule says the output has no original operator).
    """
    op = rule.ops.get(op_name)
    if op is None:
        return f"operator {op_name!r} is not in the fusion rule"
    current, k = op, index
    if kind is TensorKind.INPUT:
        if index >= len(op.inputs):
            return (
                f"input {index} of {op_name} has no data edge in the fusion rule "
                f"(it lists {len(op.inputs)} input(s))"
            )
        producer, k = op.inputs[index]
        if producer not in rule.ops:
            return f"input {index} of {op_name} comes from {producer!r}, which is not in the fusion rule"
        current = rule.ops[producer]
    visited: set[str] = set()
    while current.type in WALK_BACK_TYPES and current.name not in visited:
        visited.add(current.name)
        edge = _producer_of(rule, current, k)
        if edge is None:
            break
        producer, k = edge
        if producer not in rule.ops:
            return (
                f"walking back from {op_name} through {current.type} {current.name!r} reaches "
                f"{producer!r}, which is not in the fusion rule"
            )
        current = rule.ops[producer]
    if not current.descs:
        return f"operator {current.name!r} has no output_desc with attributes in the fusion rule"
    desc = current.descs[k] if k < len(current.descs) else current.descs[0]
    if not desc.origin_name:
        return NewOperator(
            f"output {desc.position} of {current.name!r} has no original operator in the fusion rule "
            f"(empty _datadump_origin_name): a new NPU operator without golden counterpart"
        )
    return Origin(
        op_name=current.name,
        origin_name=desc.origin_name,
        origin_index=k if desc.origin_index is None else desc.origin_index,
        origin_format=desc.origin_format,
        origin_shape=desc.origin_shape,
    )

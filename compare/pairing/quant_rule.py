"""Quantised models: the quant filter, merge(offline, quant) and merge(open, close) (spec §3.7-3.8).

**Quant filter** (:func:`apply_quant_filter`). In a quantised model the data between an
AscendQuant op and its AscendDequant op is int8/int32: it has no float golden, so those ops are
not compared (their neighbours are: AscendQuant on its float input, AscendDequant on its float
output). Rules, in ``id`` order:

- *Name class* of an op: 2 if its name holds a quant pattern (:data:`QUANT_PATTERNS`), plus 3 if
  it holds a dequant pattern (:data:`DEQUANT_PATTERNS`); when the name holds neither, the same is
  computed from its original names concatenated. So 0, 2, 3 or 5. *Difference from the
  reference*: when both give 0, the op type decides (:data:`TYPE_CLASSES`: AscendQuant 2,
  AscendDequant / AscendAntiQuant 3), so a TF ``.../anti_quant/AscendAntiQuant...`` op, whose
  float16 output has a float golden, is compared instead of being filtered.
- An op is *in pairs* when one of its data inputs ``producer:k`` comes from an earlier op whose
  output ``k`` is QUANT or MIDDLE.
- *Output type* of each output desc: class 0 -> MIDDLE if in pairs, else NORMAL; class 2 or 5
  with ``DT_INT8`` -> QUANT; class 3 or 5 with ``DT_FLOAT16`` -> DEQUANT; a class 2/3/5 op with
  any other dtype -> MIDDLE if in pairs, else NORMAL, and a warning ("looks like a quantization
  op but ...").
- An op is *flagged* when it is in pairs and not all of its outputs are DEQUANT. Flagged ops get
  ``quant_filtered=True`` and a reason in ``FusionRule.skip_reasons`` naming the quant op before
  them and the dequant op after them; pairing writes that reason in one NOT_COMPARABLE row (the
  reference tool drops these ops from its report).

The filter only ever adds flags (a rule built with flags by hand keeps them), so applying it twice
is harmless.

**merge(offline, quant)** (:func:`merge_quant`): the ATC rule of a quantised model names the
layers of the AMCT *deploy* model; the quant rule (same JSON schema) maps those to the layers of
the original float model. For every op of the ATC rule:

1. original names: each name that is an op of the quant rule is replaced by every original name
   of every op of that op's quant group (de-duplicated, first-seen order). Names not in the quant
   rule are kept (and listed in one warning). If nothing maps, the list is unchanged.
2. output descs: a desc whose origin name is an op of the quant rule takes that op's
   ``output_desc[origin_index]`` origin (an empty origin when the index is out of range; every
   desc of every op of the group when the index is unset); when the ATC desc has an origin format,
   the ATC format and shape are kept. The ATC desc's own ``dtype``/``layout``/``shape`` (the
   compiled tensor) are always kept. *Difference from the reference*: a desc whose origin is not
   in the quant rule stays in its position (the reference drops it, shifting later outputs).
3. groups are recomputed from the new names; flags and skip reasons of the ATC rule are kept.

**merge(open, close)** (:func:`merge_close`): NPU dump of a fused model (``open`` rule, ``-f``) vs
NPU dump of the same model built with fusion switched off (``close`` rule, ``-cf``).

1. Every original name of every close op maps to that close op (later ops win).
2. The open rule's ops are walked from last to first (a group is handled once, when its last op
   is reached, its ops again last to first). An op is dropped -- and named in a warning -- when
   its first original name was already taken by a later op, or when the close op that name maps
   to already was (a multi-op fusion is compared once, through its last op). An op whose first
   original name is ``""`` (a new NPU op) is never dropped for that reason (*difference*: the
   reference keeps only one of them).
3. Original names are mapped to close op names (de-duplicated; names no close op owns are
   dropped with a warning; ``[""]`` stays). Each desc's origin becomes the close op owning its
   origin name, with the origin index replaced by the position, in that close op's descs, of the
   desc with the same (origin name, origin index) (kept, with a warning, when there is none).
4. The kept ops keep their forward order; groups are recomputed.

The golden tensor is then output ``origin_index`` of close op ``origin_name`` in the right-side
dump (spec §3.5, "Offline right side").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace
from enum import Enum
from pathlib import Path

from .fusion_groups import ops_in_group_order, rule_from_ops
from .fusion_rule import load_fusion_rule
from .rule_records import FusionRule, OutputDesc, RuleOp

#: Name substrings that mark a quant op (name class +2).
QUANT_PATTERNS = ("_quant_layer", "/AscendQuant", "/AscendWeightQuant", ".quant", ".weight_quant")
#: Name substrings that mark a dequant op (name class +3).
DEQUANT_PATTERNS = ("_dequant_layer", "_anti_quant_layer", "/AscendDequant", "/AntiQuant", ".dequant", ".anti_quant")

#: Op types that classify an op whose names carry no pattern (vcompare addition).
TYPE_CLASSES = {"AscendQuant": 2, "AscendWeightQuant": 2, "AscendDequant": 3, "AscendAntiQuant": 3}

_QUANT_DTYPE = "DT_INT8"
_DEQUANT_DTYPE = "DT_FLOAT16"
_SAMPLE = 5


class QuantOutput(str, Enum):
    """Output type of one op output for the quant filter."""

    NORMAL = "normal"
    QUANT = "quant"
    DEQUANT = "dequant"
    MIDDLE = "middle"


#: Every pattern holds this: a text without it holds none (one test for most names).
PATTERN_CORE = "uant"


def _text_class(text: str) -> int:
    if PATTERN_CORE not in text:
        return 0
    quant = 2 if any(p in text for p in QUANT_PATTERNS) else 0
    dequant = 3 if any(p in text for p in DEQUANT_PATTERNS) else 0
    return quant + dequant


def name_class(op: RuleOp) -> int:
    """Quant name class of ``op``: 0, 2 (quant), 3 (dequant) or 5 (both); see the module doc."""
    return _text_class(op.name) or _text_class("".join(op.original_names)) or TYPE_CLASSES.get(op.type, 0)


def _sample(names: Iterable[str]) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:_SAMPLE])
    return shown if len(names) <= _SAMPLE else f"{shown} (+{len(names) - _SAMPLE} more)"


def quant_output_types(rule: FusionRule) -> tuple[dict[str, list[QuantOutput]], dict[str, bool], list[str]]:
    """Output types per op, the "in pairs" flag per op, and the dtype warnings (id order)."""
    types: dict[str, list[QuantOutput]] = {}
    in_pairs: dict[str, bool] = {}
    odd: list[str] = []
    for op in rule.ops.values():
        paired = False
        for producer, k in op.inputs:
            produced = types.get(producer)
            if produced is not None and k < len(produced) and produced[k] in (QuantOutput.QUANT, QuantOutput.MIDDLE):
                paired = True
                break
        cls = name_class(op)
        fallback = QuantOutput.MIDDLE if paired else QuantOutput.NORMAL
        outs: list[QuantOutput] = []
        for desc in op.descs:
            if cls == 0:
                outs.append(fallback)
            elif cls in (2, 5) and desc.dtype == _QUANT_DTYPE:
                outs.append(QuantOutput.QUANT)
            elif cls in (3, 5) and desc.dtype == _DEQUANT_DTYPE:
                outs.append(QuantOutput.DEQUANT)
            else:
                outs.append(fallback)
                odd.append(f"{op.name} output {desc.position} ({desc.dtype or 'no dtype'})")
        types[op.name] = outs
        in_pairs[op.name] = paired
    warnings = []
    if odd:
        warnings.append(
            f"{len(odd)} output(s) of operators named like quantization ops have neither int8 (quant) nor "
            f"float16 (dequant) data and are treated as ordinary outputs: {_sample(odd)}"
        )
    return types, in_pairs, warnings


def _consumers(rule: FusionRule) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for op in rule.ops.values():
        for producer, _ in op.inputs:
            found.setdefault(producer, []).append(op.name)
    return found


def _nearest(start: str, step, accept) -> str | None:
    """Breadth-first search from ``start`` (excluded) along ``step`` for an op ``accept`` takes."""
    seen = {start}
    queue = deque(step(start))
    while queue:
        name = queue.popleft()
        if name in seen:
            continue
        seen.add(name)
        if accept(name):
            return name
        queue.extend(step(name))
    return None


def _filter_reason(rule: FusionRule, name: str, types: dict[str, list[QuantOutput]],
                   consumers: dict[str, list[str]]) -> str:
    """Why a flagged op is not compared, naming the quant op before it and the dequant op after."""
    ops = rule.ops
    quant = _nearest(name, lambda n: [p for p, _ in ops[n].inputs if p in ops],
                     lambda n: QuantOutput.QUANT in types.get(n, ()))
    dequant = _nearest(name, lambda n: consumers.get(n, []),
                       lambda n: QuantOutput.DEQUANT in types.get(n, ()))
    after = (f"compared after {ops[dequant].type} {dequant}" if dequant
             else "no dequantizing operator follows it in the fusion rule")
    before = f" (quantized by {ops[quant].type} {quant})" if quant else ""
    return f"between a quant and a dequant op: int8/int32 data has no float golden; {after}{before}"


#: The reason of an op a rule flagged already (built with ``quant_filtered`` set).
_KEPT_FLAG = "between a quant and a dequant op: int8/int32 data has no float golden"


def apply_quant_filter(rule: FusionRule) -> FusionRule:
    """The rule with the quant filter applied (module doc): flags, skip reasons and warnings added.

    Returns a new :class:`FusionRule` (groups unchanged); ``rule`` itself is not modified.
    """
    if not any(name_class(op) for op in rule.ops.values()):
        # no quant or dequant op (a float network): nothing is in pairs, no output is odd; only the
        # flags a rule already carries get their reason (what the general path gives, without it)
        reasons = dict(rule.skip_reasons)
        for op in rule.ops.values():
            if op.quant_filtered and op.name not in reasons:
                reasons[op.name] = _KEPT_FLAG
        return replace(rule, warnings=list(rule.warnings), skip_reasons=reasons, quant_filter_applied=True)
    types, in_pairs, warnings = quant_output_types(rule)
    consumers = _consumers(rule)
    reasons = dict(rule.skip_reasons)
    flagged: set[str] = set()
    for op in rule.ops.values():
        computed = in_pairs[op.name] and not all(t is QuantOutput.DEQUANT for t in types[op.name])
        if computed or op.quant_filtered:
            flagged.add(op.name)
            if op.name not in reasons:
                reasons[op.name] = _filter_reason(rule, op.name, types, consumers) if computed else _KEPT_FLAG
    if all(rule.ops[name].quant_filtered for name in flagged):
        # nothing to flag (a float network): the groups stay as they are (rebuilding them is
        # ~0.3 s for 10,000 ops and gives the same groups)
        return replace(rule, warnings=list(rule.warnings) + warnings, skip_reasons=reasons,
                       quant_filter_applied=True)
    ops = [replace(op, quant_filtered=True) if op.name in flagged and not op.quant_filtered else op
           for op in ops_in_group_order(rule)]
    new = rule_from_ops(rule, ops, warnings=list(rule.warnings) + warnings, skip_reasons=reasons)
    new.quant_filter_applied = True
    return new


def quant_filtered_names(rule: FusionRule) -> list[str]:
    """Names of the flagged ops of ``rule`` (id order); the filter is applied if it has not been."""
    if not rule.quant_filter_applied:
        rule = apply_quant_filter(rule)
    return [op.name for op in rule.ops.values() if op.quant_filtered]


# --------------------------------------------------------------------------------------------
# merge(offline, quant)


def _merged_names(op: RuleOp, quant: FusionRule, missing: dict[str, None]) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for name in op.original_names:
        group = quant.group_of.get(name)
        if group is None:
            if name:
                missing.setdefault(name)
            continue
        for member in group.ops:
            for original in member.original_names:
                names.setdefault(original)
    return tuple(names) if names else op.original_names


def _merged_descs(op: RuleOp, quant: FusionRule, missing: dict[str, None]) -> tuple[OutputDesc, ...]:
    taken: list[OutputDesc] = []
    for desc in op.descs:
        group = quant.group_of.get(desc.origin_name) if desc.origin_name else None
        if group is None:
            if desc.origin_name:
                missing.setdefault(desc.origin_name)
            taken.append(desc)
            continue
        if desc.origin_index is None:
            sources = [d for member in group.ops for d in member.descs]
        else:
            sources = []
            for member in group.ops:
                if member.name == desc.origin_name:
                    ok = desc.origin_index < len(member.descs)
                    sources.append(member.descs[desc.origin_index] if ok else
                                   OutputDesc(0, "", None, "", None))
        for source in sources or [desc]:
            new = replace(desc, origin_name=source.origin_name, origin_index=source.origin_index,
                          origin_format=source.origin_format, origin_shape=source.origin_shape)
            if desc.origin_format:
                new = replace(new, origin_format=desc.origin_format, origin_shape=desc.origin_shape)
            taken.append(new)
    return tuple(replace(d, position=k) for k, d in enumerate(taken))


def merge_quant(offline: FusionRule, quant: FusionRule) -> FusionRule:
    """merge(offline, quant) of spec §3.7 (see the module doc); returns a new rule."""
    missing: dict[str, None] = {}
    ops = [replace(op, original_names=_merged_names(op, quant, missing), descs=_merged_descs(op, quant, missing))
           for op in ops_in_group_order(offline)]
    warnings = list(offline.warnings)
    if missing:
        warnings.append(
            f"{len(missing)} original name(s) of {offline.path.name} are not operators of the quant rule "
            f"{quant.path.name} and keep their mapping: {_sample(missing)}"
        )
    return rule_from_ops(offline, ops, warnings=warnings)


# --------------------------------------------------------------------------------------------
# merge(open, close)


def _close_owner(close: FusionRule) -> dict[str, str]:
    owner: dict[str, str] = {}
    for op in close.ops.values():
        for name in op.original_names:
            if name:
                owner[name] = op.name
    return owner


def _close_descs(op: RuleOp, close: FusionRule, owner: dict[str, str], problems: list[str]) -> tuple[OutputDesc, ...]:
    descs = []
    for desc in op.descs:
        target = owner.get(desc.origin_name) if desc.origin_name else None
        if target is None:
            if desc.origin_name:
                problems.append(f"{op.name}: origin {desc.origin_name!r} (no close op owns it)")
            descs.append(desc)
            continue
        matches = [d.position for d in close.ops[target].descs
                   if (d.origin_name, d.origin_index) == (desc.origin_name, desc.origin_index)]
        if not matches:
            problems.append(f"{op.name}: {desc.origin_name!r} output {desc.origin_index} (no output of {target!r})")
        index = matches[0] if matches else desc.origin_index
        descs.append(replace(desc, origin_name=target, origin_index=index))
    return tuple(descs)


def merge_close(open_rule: FusionRule, close: FusionRule) -> FusionRule:
    """merge(open, close) of spec §3.8 (see the module doc); returns a new rule."""
    owner = _close_owner(close)
    seen_first: set[str] = set()
    used_close: set[str] = set()
    handled: set[int] = set()
    kept: list[RuleOp] = []
    dropped: list[str] = []
    problems: list[str] = []
    unmapped: dict[str, None] = {}
    for op_name in reversed(list(open_rule.group_of)):
        group = open_rule.group_of[op_name]
        if id(group) in handled:
            continue
        handled.add(id(group))
        for op in reversed(group.ops):
            first = op.original_names[0] if op.original_names else ""
            target = owner.get(first) if first else None
            if first and (first in seen_first or (target is not None and target in used_close)):
                dropped.append(f"{op.name} (its original op {first!r} is compared through a later op)")
                continue
            if first:
                seen_first.add(first)
            if target is not None:
                used_close.add(target)
            if op.original_names == ("",):
                names: tuple[str, ...] = ("",)
            else:
                mapped: dict[str, None] = {}
                for name in op.original_names:
                    if name in owner:
                        mapped.setdefault(owner[name])
                    elif name:
                        unmapped.setdefault(name)
                names = tuple(mapped)
            kept.append(replace(op, original_names=names, descs=_close_descs(op, close, owner, problems)))
    kept.reverse()
    warnings = list(open_rule.warnings)
    if dropped:
        warnings.append(f"close fusion: {len(dropped)} operator(s) of {open_rule.path.name} are not compared: "
                        f"{_sample(dropped)}")
    if unmapped:
        warnings.append(f"close fusion: {len(unmapped)} original name(s) belong to no operator of "
                        f"{close.path.name} and are dropped: {_sample(unmapped)}")
    if problems:
        warnings.append(f"close fusion: {len(problems)} output origin(s) could not be mapped exactly: "
                        f"{_sample(problems)}")
    return rule_from_ops(open_rule, kept, warnings=warnings)


# --------------------------------------------------------------------------------------------
# Entry point.


RuleLike = FusionRule | str | Path


def _load(rule: RuleLike) -> FusionRule:
    return rule if isinstance(rule, FusionRule) else load_fusion_rule(rule)


def build_rule(fusion_rule: RuleLike | None = None, quant_rule: RuleLike | None = None,
               close_fusion_rule: RuleLike | None = None) -> FusionRule | None:
    """The rule pairing uses for the rule options given (spec §3.1 "Rule-file selection").

    ``-f`` + ``-q``: merge(offline, quant); ``-f`` + ``-cf``: merge(open, close); ``-f`` or ``-q``
    alone: that rule; none: ``None``. The quant filter is applied to each rule read (before the
    merge, as the reference does: the flags come from the compiled model's dtypes). Paths are
    loaded with :func:`load_fusion_rule` (raising :class:`~compare.errors.RuleError`).
    Which combinations make sense is :func:`compare.pairing.scenarios.check_scenario`'s business.
    """
    def filtered(rule: RuleLike) -> FusionRule:
        loaded = _load(rule)
        return loaded if loaded.quant_filter_applied else apply_quant_filter(loaded)

    if fusion_rule is None:
        return filtered(quant_rule) if quant_rule is not None else None
    offline = filtered(fusion_rule)
    if quant_rule is not None:
        return merge_quant(offline, _load(quant_rule))
    if close_fusion_rule is not None:
        return merge_close(offline, _load(close_fusion_rule))
    return offline

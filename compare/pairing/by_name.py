"""By-name pairing (vcompare's extension for folders without a rule): operators matched by exact,
then normalised name; tensors by kind and index."""

from __future__ import annotations

from ..errors import PairingError
from ..records import OpDump, Pair, Pairing, PairingMode, Run, RunKind, TensorKind, TensorRef
from .names import GOLDEN_RULES, NameRule, match_names
from .rows import KINDS, by_time, op_tensor_rows, sample_names

MODE_BY_NAME = PairingMode.BY_NAME


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
    matched, used = match_names(list(left.ops), list(right.ops), GOLDEN_RULES)
    normalised = used[NameRule.GOLDEN_KEY.value]
    if not matched:
        raise PairingError(
            f"no operator of {left.path} matches one of {right.path} by name: "
            f"left has {sample_names(left.ops)}; right has {sample_names(right.ops)}"
        )
    mixed = (left.kind is RunKind.OFFLINE) != (right.kind is RunKind.OFFLINE)
    kinds: tuple[TensorKind, ...] = (TensorKind.OUTPUT,) if mixed else KINDS
    notes = ["paired by operator name and tensor index (no fusion rule)"]
    if normalised:
        notes.append(f"{normalised} operator name(s) matched only after turning '/' and '.' into '_'")
    if mixed:
        notes.append("only outputs are compared: a golden folder holds operator outputs only")
    used_right = set(matched.values())
    left_order = by_time(left.ops.values())
    right_only = by_time(d for name, d in right.ops.items() if name not in used_right)
    pairs: list[Pair] = []
    for index, dump in enumerate(left_order):
        other = right.ops.get(matched[dump.name]) if dump.name in matched else None
        pairs.extend(_by_name_rows(index, kinds, dump, other, right.kind))
    for index, dump in enumerate(right_only, start=len(left_order)):
        pairs.extend(_by_name_rows(index, kinds, None, dump, right.kind))
    unmatched_left = [d.name for d in left_order if d.name not in matched]
    unmatched_right = [d.name for d in right_only]
    return Pairing(pairs, unmatched_left, unmatched_right, MODE_BY_NAME, notes)

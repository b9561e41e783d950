"""The mapping table (``-map``): which left tensor meets which golden tensor, nothing compared.

Both sides are loaded and paired exactly as for a comparison (:func:`compare.runs.loading.load_and_pair`,
the pairing package's one entry), with the fusion rule (``-f``) and/or the quantisation rule
(``-q``); ``--range`` / ``--select`` narrow the rows as they narrow a comparison. One
:class:`MappingRow` per pair, in report order: per compared operator one row per left input
(none for a dequant op) and one per left output (none for AscendQuant); an operator without a
left dump is one row without tensor and paths. No tensor is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError
from ..records import Pair
from ..reports.mapping_table import MappingRow
from .loading import PathLike, RuleArg, load_and_pair
from .op_range import OpChoice, select_pairs


@dataclass(frozen=True)
class MappingTable:
    """The rows, the notes of loading and pairing, and whether an op range / select made them
    (the table then has the OpSequence column, as the reference tool)."""

    rows: list[MappingRow]
    notes: list[str]
    selected: bool


def mapping_row(pair: Pair) -> MappingRow:
    """The mapping row of one pair."""
    return MappingRow(index=pair.index, op_sequence=pair.op_sequence, op_type=pair.op_type, npu_dump=pair.left_op,
                      ground_truth=pair.right_op, tensor_index=pair.tensor_id,
                      npu_path=pair.left.path if pair.left is not None else None,
                      golden_path=pair.right.path if pair.right is not None else None)


def mapping_table(left: PathLike, right: PathLike, fusion_rule: RuleArg | None = None, *,
                  quant_rule: RuleArg | None = None, dump_version: int | None = None,
                  ops: OpChoice | None = None, select: dict | None = None) -> MappingTable:
    """The mapping table of two dump folders through ``fusion_rule`` and/or ``quant_rule``.

    Raises :class:`OptionError` without either rule; otherwise the errors of loading and pairing
    (:class:`~compare.errors.CompareError`: no valid dump, an unsupported scenario, a bad rule).
    ``select``: the dump-tree selection (``rank``, ``iteration``, ...) of :func:`load_and_pair`.
    """
    if fusion_rule is None and quant_rule is None:
        raise OptionError("the mapping table (-map) lists the pairs a fusion rule (-f) or a quantization rule (-q) "
                          "makes: give one of them")
    left_run, right_run, _, rule, pairing = load_and_pair(left, right, fusion_rule, quant_rule=quant_rule,
                                                          dump_version=dump_version, **(select or {}))
    if ops is not None:
        pairing, _ = select_pairs(pairing, rule, ops)
    rows = sorted((mapping_row(pair) for pair in pairing.pairs), key=lambda row: row.index)
    return MappingTable(rows, [*left_run.notes, *right_run.notes, *pairing.notes], ops is not None)

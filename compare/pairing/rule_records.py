"""The records of a parsed fusion rule (the ATC om->json graph): operators, their output
descriptions, fusion groups and where a left tensor's golden lives. Built by
:func:`compare.pairing.fusion_rule.load_fusion_rule`; grouped by :mod:`compare.pairing.fusion_groups`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class Relation(str, Enum):
    """How the ops of one fusion group relate to the original operators (spec §3.4)."""

    ONE_TO_ONE = "OneToOne"
    MULTI_TO_ONE = "MultiToOne"
    ONE_TO_MULTI = "OneToMulti"
    MULTI_TO_MULTI = "MultiToMulti"
    L1_FUSION = "L1Fusion"


@dataclass(frozen=True)
class OutputDesc:
    """One kept ``output_desc`` of a rule op: the original tensor this output reproduces.

    ``position`` is the index among the kept descs (descs without ``attr`` are skipped).
    ``origin_index`` is ``None`` only for descs created by the rename-node adjustment.
    ``origin_shape`` is ``None`` when the rule has no ``origin_shape``.
    """

    position: int
    origin_name: str
    origin_index: int | None
    origin_format: str
    origin_shape: tuple[int, ...] | None
    dtype: str = ""
    layout: str = ""
    shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RuleOp:
    """One operator of the compiled model as the fusion rule describes it.

    ``quant_filtered`` is set by the quantisation filter
    (:func:`compare.pairing.quant_rule.apply_quant_filter`, spec §3.7): the op lies between a
    quant and a dequant op, its data has no float golden, and pairing reports it as one
    NOT_COMPARABLE row (the reason is in :attr:`FusionRule.skip_reasons`).
    """

    name: str
    type: str
    id: int
    inputs: tuple[tuple[str, int], ...]
    original_names: tuple[str, ...]
    descs: tuple[OutputDesc, ...]
    l1_fusion_no: str = ""
    is_multiop: bool = False
    graph: str = ""
    quant_filtered: bool = False

    @property
    def ground_truth(self) -> str:
        """The original names joined with ``,`` ('' when there are none or only empty ones)."""
        return ",".join(self.original_names)

    @property
    def is_inner_node(self) -> bool:
        """A multi-op member whose outputs all lack an origin name (skipped in 1:N / N:M groups)."""
        return self.is_multiop and all(not d.origin_name for d in self.descs)


@dataclass
class FusionGroup:
    """A fusion group: the ops sharing one group key, with its 0-based creation ``index``."""

    index: int
    key: str
    ops: list[RuleOp]
    relation: Relation


@dataclass
class FusionRule:
    """A parsed fusion rule. ``ops`` is keyed by op name, in ``id`` order (stable).

    ``skip_reasons`` maps the name of an op that pairing must not compare (quant-filtered ops)
    to the plain-English reason written in its row. ``quant_filter_applied`` records that
    :func:`compare.pairing.quant_rule.apply_quant_filter` has already run on this rule.
    """

    path: Path
    ops: dict[str, RuleOp]
    groups: list[FusionGroup]
    group_of: dict[str, FusionGroup]
    graph_names: list[str]
    input_nodes: list[str]
    warnings: list[str] = field(default_factory=list)
    skip_reasons: dict[str, str] = field(default_factory=dict)
    quant_filter_applied: bool = False


@dataclass(frozen=True)
class Origin:
    """Where the golden tensor of a left tensor lives: ``origin_name`` output ``origin_index``.

    ``op_name`` is the rule op whose ``output_desc`` was used (after walking back through
    Cast/TransData). ``origin_format`` may be ``""`` (unknown: use the left tensor's format).
    """

    op_name: str
    origin_name: str
    origin_index: int
    origin_format: str
    origin_shape: tuple[int, ...] | None

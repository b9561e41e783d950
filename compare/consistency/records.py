"""Records of the cross-rank consistency check: rank groups, the rows of ranks that disagree, results.

Closed records only (the rules are in :mod:`compare.consistency`, the text in
:mod:`compare.reports.consistency`); they sit just above :mod:`compare.records` so that the
check, the reports, the API and the command line speak of the same things.

**A group** (:class:`RankGroup`) is a set of ranks that hold replicas of the same tensors
(data-parallel replicas: parameters, all-reduced gradients). **A part** (:class:`PartCheck`) is
one group checked at one (graph, iteration) of the dump tree. **A row** (:class:`ReplicaRow`)
is one rank's problem with one replicated tensor of a part: its value differs from the group's
reference value, or it could not be checked (the tensor is missing, cannot be read, or the rank
has no dump folder at all). Ranks that agree give no row; the part counts them.

Metric values are raw floats (``None``: not computed), as in :class:`~compare.records.MetricRow`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from convert.exits import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_OK

from ..records import Label


class ReplicaStatus(Label):
    """What is wrong with one rank's replica of one tensor (a :class:`ReplicaRow`)."""

    DIFFERS = "differs"  # read, and not equal to the group's reference value (beyond the tolerance)
    MISSING = "missing"  # other ranks of the group dumped the tensor; this rank did not
    UNREADABLE = "unreadable"  # the file (or the rank's dump folder) could not be read: the reason says why
    NO_DUMP = "no dump"  # the rank has no dump folder for the part's (graph, iteration)


class Replicated(Label):
    """Why a tensor is expected to be the same on every rank of a group."""

    PARAMETER = "parameter"  # an output of a Parameter op (a trained weight, an optimizer state)
    COLLECTIVE = "collective"  # an output of AllReduce / AllGather / Broadcast (and Hcom* on Ascend)
    SELECTED = "selected"  # chosen by the user's --tensors pattern


class Consistency(Label):
    """The outcome of a check; :attr:`ConsistencyResult.exit_code` maps it to the exit codes."""

    CONSISTENT = "consistent"  # exit 0: every replicated tensor of every rank checked, and agreed
    INCONSISTENT = "inconsistent"  # exit 1: a rank's replica differs from its group's
    INCOMPLETE = "incomplete"  # exit 3: none differs, but some could not be checked (rows say why)


@dataclass(frozen=True)
class RankGroup:
    """Group ``index`` (0-based, in the order the groups were given) and its ranks, ascending."""

    index: int
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class ReplicaRow:
    """One rank's problem with one replicated tensor of a part (module doc).

    ``tensor_id``: ``{op}:{input|output}:{index}``; None for a row about the rank's whole dump
    folder (``NO_DUMP``, or ``UNREADABLE`` when the folder could not be scanned) -- and the op
    name alone for an op whose dump file could not be parsed. ``why``: why the tensor is checked.
    ``reference_rank``: the rank whose value is the group's reference (the lowest rank holding
    the value most ranks hold), None when no rank could be read. ``holders``: how many ranks hold
    the reference value; ``readable``: how many ranks' values were read; ``majority``: the
    reference value is held by more than half of ``readable`` (when not, the row names a rank
    that differs from the lowest rank of the largest set, and which of them is faulty cannot be
    told). ``metrics``: ``MaxAbsoluteError``, ``CosineSimilarity``, ``RelativeEuclideanDistance``
    of this rank's value (left) against the reference (right); empty when not computed.
    ``reason``: the plain-English diagnosis.
    """

    group: int
    rank: int
    status: ReplicaStatus
    tensor_id: str | None = None
    op_type: str | None = None
    why: Replicated | None = None
    reference_rank: int | None = None
    dtype: str | None = None
    reference_dtype: str | None = None
    shape: tuple[int, ...] | None = None
    reference_shape: tuple[int, ...] | None = None
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    holders: int = 0
    readable: int = 0
    majority: bool = True
    reason: str = ""
    graph: int | None = None
    iteration: int | None = None


@dataclass
class PartCheck:
    """One group checked at one (graph, iteration): the rows and what was counted.

    ``present``: the group's ranks that have a dump folder for the part; ``tensors``: the
    distinct replicated tensors found on any of them; ``checked``: (tensor, rank) values read and
    compared; ``within_tolerance``: of those, values whose bytes differ from the reference but
    whose relative Euclidean distance is within the tolerance (agreeing, no row).
    """

    group: RankGroup
    graph: int | None
    iteration: int | None
    present: tuple[int, ...] = ()
    tensors: int = 0
    checked: int = 0
    within_tolerance: int = 0
    rows: list[ReplicaRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def disagreeing(self) -> tuple[int, ...]:
        """The ranks with at least one ``DIFFERS`` row, ascending."""
        return tuple(sorted({row.rank for row in self.rows if row.status is ReplicaStatus.DIFFERS}))


@dataclass
class ConsistencyResult:
    """The whole check of one dump tree (:func:`compare.consistency.check_consistency`).

    ``groups_spec``: the groups as given (``dp:8`` or the group file); ``tensors``: the
    ``--tensors`` pattern, None for the default rule; ``tolerance``: the RED bound, None for
    exact (bitwise) equality.
    """

    tree: Path
    groups_spec: str
    groups: tuple[RankGroup, ...]
    parts: list[PartCheck]
    tensors: str | None = None
    tolerance: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[ReplicaRow]:
        return [row for part in self.parts for row in part.rows]

    @property
    def disagreeing(self) -> dict[int, tuple[int, ...]]:
        """Group index -> the ranks of the group that disagree (in any part), for groups that have one."""
        found: dict[int, set[int]] = {}
        for part in self.parts:
            for rank in part.disagreeing:
                found.setdefault(part.group.index, set()).add(rank)
        return {group: tuple(sorted(ranks)) for group, ranks in sorted(found.items())}

    @property
    def outcome(self) -> Consistency:
        rows = self.rows
        if any(row.status is ReplicaStatus.DIFFERS for row in rows):
            return Consistency.INCONSISTENT
        if rows:
            return Consistency.INCOMPLETE
        return Consistency.CONSISTENT

    @property
    def exit_code(self) -> int:
        return {Consistency.CONSISTENT: EXIT_OK, Consistency.INCONSISTENT: EXIT_GATE_FAILED,
                Consistency.INCOMPLETE: EXIT_INCOMPLETE}[self.outcome]


__all__ = ["Consistency", "ConsistencyResult", "PartCheck", "RankGroup", "ReplicaRow", "ReplicaStatus", "Replicated"]

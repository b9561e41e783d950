"""Records of where error comes from: the operator graph of a run and the verdict of each operator.

These are closed records only (no logic beyond small properties); they sit just above
:mod:`compare.records` so that loaders (the MindSpore ``.ir`` reader), the localisation
(:mod:`compare.diverge`), the reports and the API all speak of the same things.

**The graph** (:class:`OpGraph`) says, for each operator of the left run, what feeds each of its
inputs (:class:`InputEdge`: a producer operator and its output index, and the producer's
:class:`NodeRole`), where it was written in the user's source (:class:`SourceLine`, MindSpore
``.ir`` trace code) and its position in graph order. Names are the operator names of the rows
(``MetricRow.left_op``); a producer that is not an operator of the run (a Parameter, a Data /
Const node, an op that was not dumped) keeps its own name.

**The verdicts** (:class:`OpVerdict`, one per operator): ``ok``, ``origin``, ``inherited``,
``input-differs``, ``not-compared`` (:class:`Verdict`; the rules are in :mod:`compare.diverge`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from ..records import Label


class NodeRole(Label):
    """What a graph node is: a computation, or a source of data (its values come from outside)."""

    COMPUTE = "compute"
    PARAMETER = "parameter"  # a trained weight / bias / statistic (MindSpore Parameter, a Variable)
    DATA = "data"  # a network input (Data, PlaceHolder, a MindSpore graph input)
    CONST = "const"  # a constant folded into the graph (Const, Constant)


#: The roles whose values do not come from a computation of the graph.
SOURCE_ROLES = frozenset({NodeRole.PARAMETER, NodeRole.DATA, NodeRole.CONST})


class GraphSource(Label):
    """Where the graph (edges and order) came from, best first."""

    FUSION_RULE = "fusion rule"  # the ATC om->json graph (-f): input edges and op ids
    MINDSPORE_IR = "mindspore ir"  # graphs/ms_output_trace_code_graph_{g}.ir: edges, trace code
    EXECUTION_ORDER = "execution order"  # MindSpore execution-order files: order only
    #: msprobe dump.json call order, parameter inputs, stack.json source lines (no data edges)
    MSPROBE_CALLS = "msprobe dump.json"
    DUMP_ORDER = "dump order"  # the rows' order (dump timestamps): order only

    @property
    def order(self) -> str:
        """The order the operators are numbered in, as a message names it (``operator 5 in
        execution order``; the value itself is the JSON ``graph_source``)."""
        return _ORDERS[self]


_ORDERS = {GraphSource.FUSION_RULE: "fusion rule order", GraphSource.MINDSPORE_IR: "mindspore ir order",
           GraphSource.EXECUTION_ORDER: "execution order", GraphSource.MSPROBE_CALLS: "msprobe dump.json order",
           GraphSource.DUMP_ORDER: "dump order"}


@dataclass(frozen=True)
class SourceLine:
    """A line of the user's source that wrote an operator (MindSpore trace code)."""

    file: str
    line: int
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, init=False)
class InputEdge:
    """Input ``index`` of an operator is output ``output`` of ``producer`` (None: unknown).

    ``role``: the producer's role (``COMPUTE`` when unknown); ``name``: the producer as the graph
    file names it (a Parameter's name, e.g. ``fc1.weight``), for messages.
    """

    index: int
    producer: str | None
    output: int = 0
    role: NodeRole = NodeRole.COMPUTE
    name: str = ""

    def __init__(self, index: int, producer: str | None, output: int = 0, role: NodeRole = NodeRole.COMPUTE,
                 name: str = "") -> None:
        """The fields above, in their order and with their defaults (a test holds the two lists
        equal). Written out, not generated: the generated ``__init__`` of a frozen dataclass sets
        each field through a call of ``object.__setattr__`` (~1 us an edge), storing them into the
        instance's ``__dict__`` costs a third of it, and a fusion rule's graph has one edge an
        input of every op (35,585 for 17,793 ops). Equality, hashing, ``repr`` and pickling stay
        the dataclass's (:class:`compare.records.TensorRef` says more)."""
        values = self.__dict__
        values["index"] = index
        values["producer"] = producer
        values["output"] = output
        values["role"] = role
        values["name"] = name


@dataclass(frozen=True, init=False)
class OpNode:
    """One operator of the graph (see the module doc for names)."""

    name: str
    op_type: str | None = None
    role: NodeRole = NodeRole.COMPUTE
    inputs: tuple[InputEdge, ...] = ()
    source: SourceLine | None = None

    def __init__(self, name: str, op_type: str | None = None, role: NodeRole = NodeRole.COMPUTE,
                 inputs: tuple[InputEdge, ...] = (), source: SourceLine | None = None) -> None:
        """The fields above, in their order and with their defaults (why written out:
        :meth:`InputEdge.__init__`; one node an operator of the graph)."""
        values = self.__dict__
        values["name"] = name
        values["op_type"] = op_type
        values["role"] = role
        values["inputs"] = inputs
        values["source"] = source


@dataclass(frozen=True)
class OpGraph:
    """The operators of a run in graph order (``nodes`` keeps that order) and where they came
    from. ``edges`` is False when the source gives the order only (no :class:`InputEdge`)."""

    nodes: Mapping[str, OpNode]
    source: GraphSource
    edges: bool = True
    notes: tuple[str, ...] = ()

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(self.nodes)


class Verdict(Label):
    """Whether an operator is wrong itself or only inherits error (rules: :mod:`compare.diverge`)."""

    OK = "ok"
    ORIGIN = "origin"
    INHERITED = "inherited"
    INPUT_DIFFERS = "input-differs"
    NOT_COMPARED = "not-compared"


@dataclass(frozen=True, init=False)
class TensorCheck:
    """One tensor of an operator against the bounds.

    ``passed``: None when not compared; ``error``: its relative error (RelativeEuclideanDistance,
    or ``1 - CosineSimilarity`` when that is all there is); ``failed``: the bounds it broke, as
    ``(metric, value)``; ``nan`` / ``inf`` / ``saturated``: element counts on the left side (None
    when not counted); ``producer``: the edge feeding it (inputs only).
    """

    tensor_id: str
    passed: bool | None
    error: float | None = None
    failed: tuple[tuple[str, float], ...] = ()
    nan: int | None = None
    inf: int | None = None
    saturated: int | None = None
    producer: InputEdge | None = None

    def __init__(self, tensor_id: str, passed: bool | None, error: float | None = None,
                 failed: tuple[tuple[str, float], ...] = (), nan: int | None = None, inf: int | None = None,
                 saturated: int | None = None, producer: InputEdge | None = None) -> None:
        """The fields above, in their order and with their defaults (why written out:
        :meth:`InputEdge.__init__`; one check a tensor of every operator the API or a report reads)."""
        values = self.__dict__
        values["tensor_id"] = tensor_id
        values["passed"] = passed
        values["error"] = error
        values["failed"] = failed
        values["nan"] = nan
        values["inf"] = inf
        values["saturated"] = saturated
        values["producer"] = producer

    @property
    def nonfinite(self) -> bool:
        return bool(self.nan) or bool(self.inf)


@dataclass(frozen=True, init=False)
class OpVerdict:
    """The verdict of one operator and the evidence for it.

    ``position``: graph order; ``error`` / ``input_error``: worst output / input error;
    ``amplification``: ``error / input_error`` (None when either is missing; ``inf`` when the
    inputs are exact and the output is not); ``blame``: for ``inherited`` the producers whose
    outputs failed first, for ``input-differs`` the data inputs that differ.
    """

    op: str
    op_type: str | None
    position: int
    verdict: Verdict
    outputs: tuple[TensorCheck, ...] = ()
    inputs: tuple[TensorCheck, ...] = ()
    error: float | None = None
    input_error: float | None = None
    amplification: float | None = None
    blame: tuple[str, ...] = ()
    source: SourceLine | None = None
    rank: int | None = None
    iteration: int | None = None

    def __init__(self, op: str, op_type: str | None, position: int, verdict: Verdict,
                 outputs: tuple[TensorCheck, ...] = (), inputs: tuple[TensorCheck, ...] = (),
                 error: float | None = None, input_error: float | None = None, amplification: float | None = None,
                 blame: tuple[str, ...] = (), source: SourceLine | None = None, rank: int | None = None,
                 iteration: int | None = None) -> None:
        """The fields above, in their order and with their defaults (why written out:
        :meth:`InputEdge.__init__`; one record an operator when the API reads every verdict)."""
        values = self.__dict__
        values["op"] = op
        values["op_type"] = op_type
        values["position"] = position
        values["verdict"] = verdict
        values["outputs"] = outputs
        values["inputs"] = inputs
        values["error"] = error
        values["input_error"] = input_error
        values["amplification"] = amplification
        values["blame"] = blame
        values["source"] = source
        values["rank"] = rank
        values["iteration"] = iteration


@dataclass(frozen=True)
class CheckColumns:
    """:class:`TensorCheck` s as columns, one list a field, one entry a check (the fields' meaning:
    :class:`TensorCheck`)."""

    tensor_id: list[str]
    passed: list[bool | None]
    error: list[float | None]
    failed: list[tuple[tuple[str, float], ...]]
    nan: list[int | None]
    inf: list[int | None]
    saturated: list[int | None]
    producer: list[InputEdge | None]


@dataclass(frozen=True)
class VerdictTable:
    """:class:`OpVerdict` s as columns, one list a field, one entry an operator (the fields' meaning:
    :class:`OpVerdict`), and their checks (``checks``): operator ``j``'s outputs are the checks
    ``starts[j]:inputs[j]``, its inputs ``inputs[j]:starts[j + 1]``. What the JSON block of the
    verdicts is written from (:func:`compare.reports.divergence.localisation_document`): a
    localisation on columns gives it without building a record an operator
    (:meth:`VerdictList.table`)."""

    op: list[str]
    op_type: list[str | None]
    position: list[int]
    verdict: list[Verdict]
    rank: list[int | None]
    iteration: list[int | None]
    error: list[float | None]
    input_error: list[float | None]
    amplification: list[float | None]
    blame: list[tuple[str, ...]]
    source: list[SourceLine | None]
    starts: list[int]
    inputs: list[int]
    checks: CheckColumns


def verdict_table(verdicts: Sequence[OpVerdict]) -> VerdictTable:
    """The :class:`VerdictTable` of ``verdicts`` (records), field by field."""
    checks: list[TensorCheck] = []
    starts: list[int] = []
    inputs: list[int] = []
    for verdict in verdicts:
        starts.append(len(checks))
        checks.extend(verdict.outputs)
        inputs.append(len(checks))
        checks.extend(verdict.inputs)
    starts.append(len(checks))
    columns = CheckColumns(tensor_id=[c.tensor_id for c in checks], passed=[c.passed for c in checks],
                           error=[c.error for c in checks], failed=[c.failed for c in checks],
                           nan=[c.nan for c in checks], inf=[c.inf for c in checks],
                           saturated=[c.saturated for c in checks], producer=[c.producer for c in checks])
    return VerdictTable(op=[v.op for v in verdicts], op_type=[v.op_type for v in verdicts],
                        position=[v.position for v in verdicts], verdict=[v.verdict for v in verdicts],
                        rank=[v.rank for v in verdicts], iteration=[v.iteration for v in verdicts],
                        error=[v.error for v in verdicts], input_error=[v.input_error for v in verdicts],
                        amplification=[v.amplification for v in verdicts], blame=[v.blame for v in verdicts],
                        source=[v.source for v in verdicts], starts=starts, inputs=inputs, checks=columns)


class VerdictList(Sequence[OpVerdict]):
    """The verdicts of a localisation in graph order, with their counts.

    This one holds its records; the columnar localisation (:class:`compare.diverge.table.LazyVerdicts`)
    builds each record on first use and answers :meth:`counts` / :meth:`labels` from its columns,
    so that a run whose reports only count verdicts never builds the records. Equal to any sequence
    of the same records (a tuple included).
    """

    def __init__(self, verdicts: Iterable[OpVerdict] = ()) -> None:
        self._items = tuple(verdicts)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> OpVerdict: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OpVerdict]: ...

    def __getitem__(self, index: int | slice) -> OpVerdict | Sequence[OpVerdict]:
        return self._items[index]

    def __iter__(self) -> Iterator[OpVerdict]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} verdicts)"

    def counts(self) -> dict[Verdict, int]:
        """Operators per verdict, every verdict listed (zeros included), in :class:`Verdict` order."""
        counts = dict.fromkeys(Verdict, 0)
        for verdict in self:
            counts[verdict.verdict] += 1
        return counts

    def first_of(self, op: str) -> OpVerdict | None:
        """The first verdict of operator ``op``, None when no operator is ``op``."""
        return next((v for v in self if v.op == op), None)

    def labels(self) -> dict[tuple[int | None, int | None, str], Verdict]:
        """(rank, iteration, op) -> verdict of every operator (a key repeated by another graph of the
        same rank and iteration: the last one, as the ``Verdict`` column has it)."""
        return {(verdict.rank, verdict.iteration, verdict.op): verdict.verdict for verdict in self}

    def table(self) -> VerdictTable:
        """The verdicts as columns (:class:`VerdictTable`), in order."""
        return verdict_table(self)


@dataclass(frozen=True)
class Localisation:
    """The answer to "where does it go wrong": every operator's verdict in graph order, the first
    divergence (the first ``origin`` or ``input-differs`` operator, None when nothing diverges)
    and the first tensor holding NaN/Inf on the left side (None when none does). ``uncertain``:
    why the first divergence may be an artefact of the pairing, not of the data (the ``-f`` trap,
    :mod:`compare.diverge.fusion_doubt`); None when it is not in doubt."""

    verdicts: Sequence[OpVerdict]
    graph: OpGraph
    first_divergence: OpVerdict | None
    first_nonfinite: str | None = None
    bounds: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    uncertain: str | None = None

    @property
    def counts(self) -> dict[Verdict, int]:
        """Operators per verdict, zeros included (:meth:`VerdictList.counts`: no record built by a lazy list)."""
        verdicts = self.verdicts
        return verdicts.counts() if isinstance(verdicts, VerdictList) else VerdictList(verdicts).counts()

    @property
    def labels(self) -> dict[tuple[int | None, int | None, str], Verdict]:
        """(rank, iteration, op) -> verdict of every operator (:meth:`VerdictList.labels`: no record
        built by a lazy list)."""
        verdicts = self.verdicts
        return verdicts.labels() if isinstance(verdicts, VerdictList) else VerdictList(verdicts).labels()

    def verdict_of(self, op: str) -> OpVerdict | None:
        """The first operator named ``op`` (in part order, then graph order), None when none is."""
        verdicts = self.verdicts
        if isinstance(verdicts, VerdictList):
            return verdicts.first_of(op)
        return next((v for v in verdicts if v.op == op), None)


__all__ = ["SOURCE_ROLES", "CheckColumns", "GraphSource", "InputEdge", "Localisation", "NodeRole", "OpGraph", "OpNode",
           "OpVerdict", "SourceLine", "TensorCheck", "Verdict", "VerdictList", "VerdictTable", "verdict_table"]

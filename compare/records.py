"""Records that flow through vcompare: loaders -> pairing -> engine -> reports.

All are plain dataclasses. Loaders create :class:`TensorRef` / :class:`OpDump` / :class:`Run`
from metadata only (file names and dump headers); tensor bytes are read by
:meth:`TensorRef.load` when the engine compares that pair, and then let go.

Why one module of about 600 lines: these are the closed records every layer shares (the bottom
layer of the import contracts), so one import gives a stage its whole vocabulary and no record
module depends on another; the records of one room live in that room (``diverge/records.py``,
``consistency/records.py``) and msprobe's row records in :mod:`compare.records_msprobe`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

import numpy as np

from convert.exits import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_OK
from convert.names.keys import normalize_golden_name

from .errors import DumpFormatError
from .records_msprobe import ARGUMENT_DIFFERS, ARGUMENT_METRIC, Argument, ArgumentDiff, MsprobeCells  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from .tensor_table import TensorTable


#: The item type of :func:`built_item`.
T = TypeVar("T")


def built_item(at: int | slice, count: int, build: Callable[[int], T]) -> T | list[T]:
    """``sequence[at]`` of a read-only sequence of ``count`` items, each built by ``build(i)`` when
    it is read (the views over columns: :class:`compare.stats_table.MetricRows`,
    :class:`compare.tensor_table.PairTable`, :class:`compare.diverge.table.LazyVerdicts`): an int
    counts from the end when negative (IndexError beyond either end), a slice gives a list."""
    if isinstance(at, slice):
        return [build(i) for i in range(*at.indices(count))]
    if not -count <= at < count:
        raise IndexError(f"index {at} out of range for {count} items")
    return build(at % count)


class TensorKind(str, Enum):
    """Whether a tensor is an operator input or output."""

    INPUT = "input"
    OUTPUT = "output"


class RunKind(str, Enum):
    """What kind of dump folder a run is (decides pairing scenarios)."""

    OFFLINE = "offline"  # Ascend dump files {op_type}.{op_name}.{task_id}[.{stream_id}].{ts}
    NUMPY = "numpy"  # golden {op_name}.{output_index}.{ts}.npy (Caffe / TF tfdbg)
    STANDARD = "standard"  # golden {op_name}.{output_index}.{ts}.pb (DumpData files)
    QUANT = "quant"  # quantized golden {op_name}.{output_index}.{ts}.quant (DumpData files)


class Label(str, Enum):
    """A closed set of text labels: members compare equal to their text and print as it
    (``str()`` and ``format()`` give the value on every Python version)."""

    def __str__(self) -> str:
        return str(self.value)


class DumpLayout(Label):
    """The folder layout a run was read from (``Run.family``, a dump-tree leaf's ``layout``)."""

    NONE = ""  # an Ascend dump folder or a golden folder given directly
    GE = "ge"  # TF NPU / GE: {time}/{device}/{model_name}/{model_id}/{data_index}
    MINDSPORE_SYNC = "mindspore-sync"  # .../device_N/iteration_M with .bin files (GPU / CPU, MindSpore <= 2.x)
    MINDSPORE_NPY = "mindspore-npy"  # rank_N/{net}/{graph}/{iteration} with .npy files
    MINDSPORE_ASYNC = "mindspore-async"  # {rank}/{net}_graph_{g}/{g}/{iteration} with Ascend-format files
    MINDSPORE_O2 = "mindspore-o2"  # GE layout below a {step} folder (MindSpore O2 / jit_level)
    PLAIN = "plain"  # a tree leaf in no known layout
    SINGLE_OP = "single-op"  # {dump_path}/{device_id}/{op_name}/ folders read as one run
    MSPROBE = "msprobe"  # msprobe {dump_path}/step{N}/rank{R}/dump.json (+ dump_tensor_data/*.pt|*.npy)
    STATS = "stats"  # a plain tree leaf of statistics CSVs only

    @property
    def scope_named(self) -> bool:
        """Whether runs of this layout name their operators by framework scope (MindSpore scope
        names, msprobe data names): they are paired by scope name (:mod:`compare.pairing.user_mapping`),
        not through the Ascend comparison table. A new family says it here, with its member."""
        return self in SCOPE_NAMED_LAYOUTS

    @property
    def graded(self) -> bool:
        """Whether the rows of runs of this layout are graded the way their own tool grades them
        (msprobe's Result / Err_message: :func:`compare.engine.grades.grade_rows`) when a side of
        the pair is one. A new family says it here, with its member."""
        return self in GRADED_LAYOUTS


#: The layouts MindSpore writes (pairing by scope names applies to their runs).
MINDSPORE_LAYOUTS = frozenset({DumpLayout.MINDSPORE_SYNC, DumpLayout.MINDSPORE_NPY, DumpLayout.MINDSPORE_ASYNC,
                               DumpLayout.MINDSPORE_O2})
#: The layouts whose runs are named by framework scope (:attr:`DumpLayout.scope_named`).
SCOPE_NAMED_LAYOUTS = MINDSPORE_LAYOUTS | {DumpLayout.MSPROBE}
#: The layouts whose runs' rows are graded msprobe's way (:attr:`DumpLayout.graded`).
GRADED_LAYOUTS = frozenset({DumpLayout.MSPROBE})


class PairingMode(Label):
    """How the pairs of a run were found (``Pairing.mode``; the report's ``mode``)."""

    NONE = ""
    FUSION = "fusion"
    FUSION_QUANT = "fusion+quant"
    QUANT = "quant"
    CLOSE_FUSION = "close-fusion"
    BY_NAME = "by-name"
    FAMILY = "by-name (scope)"
    MAPPING = "mapping"
    NPU_VS_NPU = "npu-vs-npu"


class PairStatus(str, Enum):
    """Outcome class of one report row; the summary counts rows per status."""

    COMPARED = "compared"
    NOT_COMPARABLE = "not comparable"
    MISSING_LEFT = "missing on left"
    MISSING_RIGHT = "missing on right"


@dataclass(frozen=True, init=False)
class TensorRef:
    """Metadata of one tensor of a dump plus a lazy reader for its data.

    ``dtype`` is a numpy-style name (``float16``, ``float32``, ``bfloat16``, ``uint1``,
    ``complex64``, ...) or, for a data type vcompare cannot decode, the dump's own name such as
    ``DT_STRING``. ``format`` is a layout name (``NCHW``, ``NC1HWC0``, ``FRACTAL_Z``, ``ND``...);
    golden ``.npy`` files carry ``RESERVED`` (no layout information) as the reference tool does.
    ``shape`` is the dump shape (device layout); ``original_shape`` the framework shape recorded
    by the dump, or ``()`` if none.
    """

    op_name: str
    kind: TensorKind
    index: int
    dtype: str
    format: str
    shape: tuple[int, ...]
    path: Path
    original_shape: tuple[int, ...] = ()
    address: int = 0
    sub_format: int = 0
    nbytes: int = 0
    reader: Callable[[], np.ndarray] | None = field(default=None, compare=False, repr=False)
    #: Recorded statistics (canonical names of :data:`compare.loaders.stats_csv.STAT_COLUMNS` ->
    #: values) from a ``statistic.csv`` / GE stats CSV row, or None; with ``reader`` None the
    #: tensor has statistics only (no data was saved). ``stats_source`` names the CSV and row.
    stats: dict | None = field(default=None, compare=False, hash=False)
    stats_source: str = ""
    #: What the reader knows about this tensor that its report row must say (an FFTS+ op whose
    #: slice count differs from ``slice_instance_num``, an input taken from the first slice file
    #: ...): the engine puts it first in the row's reasons; ``""`` for none.
    remark: str = field(default="", compare=False)
    #: Its name in its own tool's form (msprobe: :func:`convert.names.msprobe.item_name`), ``""`` when none.
    label: str = field(default="", compare=False)
    #: The ``requires_grad`` a dump recorded (msprobe), None when not recorded.
    requires_grad: bool | None = field(default=None, compare=False)

    #: The kinds, for :attr:`tensor_id` (read through the enum class, a member is a Python-level
    #: lookup: ~65 ns, once a row).
    _INPUT = TensorKind.INPUT
    _OUTPUT = TensorKind.OUTPUT

    def __init__(self, op_name: str, kind: TensorKind, index: int, dtype: str, format: str,
                 shape: tuple[int, ...], path: Path, original_shape: tuple[int, ...] = (), address: int = 0,
                 sub_format: int = 0, nbytes: int = 0, reader: Callable[[], np.ndarray] | None = None,
                 stats: dict | None = None, stats_source: str = "", remark: str = "", label: str = "",
                 requires_grad: bool | None = None) -> None:
        """The fields above, in their order and with their defaults (a test holds the two lists
        equal). Written out, not generated, because the generated ``__init__`` of a frozen
        dataclass sets each of the 17 fields through a call of ``object.__setattr__``: ~2.1 us a
        tensor, while storing them into the instance's ``__dict__`` is ~0.8 us -- and loaders make
        10^5-10^6 of these (one per leaf of an msprobe ``dump.json``). Stored one by one, in field
        order, so that the dicts of all instances share one key table (a dict built whole and
        assigned to ``__dict__`` would not: ~560 bytes a record instead of ~300). Equality,
        hashing, ``repr``, pickling and :func:`dataclasses.replace` stay the dataclass's."""
        values = self.__dict__
        values["op_name"] = op_name
        values["kind"] = kind
        values["index"] = index
        values["dtype"] = dtype
        values["format"] = format
        values["shape"] = shape
        values["path"] = path
        values["original_shape"] = original_shape
        values["address"] = address
        values["sub_format"] = sub_format
        values["nbytes"] = nbytes
        values["reader"] = reader
        values["stats"] = stats
        values["stats_source"] = stats_source
        values["remark"] = remark
        values["label"] = label
        values["requires_grad"] = requires_grad

    @property
    def tensor_id(self) -> str:
        """``{op_name}:{input|output}:{index}`` -- the TensorIndex of report rows. (The two kinds
        are told apart by identity: ``Enum.value`` is a Python-level descriptor, asked once a row.)"""
        kind = self.kind
        text = "input" if kind is self._INPUT else "output" if kind is self._OUTPUT else kind.value
        return f"{self.op_name}:{text}:{self.index}"

    def load(self) -> np.ndarray:
        """Read and decode the tensor (native dtype, reshaped to ``shape`` when sizes agree).

        Raises :class:`compare.errors.DumpFormatError` naming the file and byte offset when the
        bytes cannot be decoded.
        """
        if self.reader is None:
            if self.stats is not None:
                raise DumpFormatError(self.path, f"{self.tensor_id} has statistics only ({self.stats_source}), no "
                                                 "tensor data: compare it by its statistics")
            raise DumpFormatError(self.path, f"no data reader for {self.tensor_id}")
        return self.reader()


@dataclass(frozen=True, init=False)
class OpDump:
    """One operator of a run: the chosen dump file and its tensors.

    ``files`` holds every file found for this operator (oldest first); ``path`` is the one used
    (latest 16-digit timestamp). ``error`` is set, and the tensors are empty, when the chosen file
    could not be parsed: the engine reports it as a row with that reason.
    """

    name: str
    op_type: str | None
    path: Path
    files: tuple[Path, ...] = ()
    inputs: tuple[TensorRef, ...] = ()
    outputs: tuple[TensorRef, ...] = ()
    error: str | None = None
    timestamp: int = 0
    #: Non-tensor items of the call (msprobe), compared by value (:class:`Argument`).
    arguments: tuple[Argument, ...] = ()
    #: The call stack its tool recorded (msprobe's ``stack.json`` frames, innermost first); ``()`` when none.
    stack: tuple[str, ...] = ()

    def __init__(self, name: str, op_type: str | None, path: Path, files: tuple[Path, ...] = (),
                 inputs: tuple[TensorRef, ...] = (), outputs: tuple[TensorRef, ...] = (), error: str | None = None,
                 timestamp: int = 0, arguments: tuple[Argument, ...] = (), stack: tuple[str, ...] = ()) -> None:
        """The fields above, in their order and with their defaults; fields stored into ``__dict__``
        (why: :meth:`TensorRef.__init__`; one OpDump per call of a dump)."""
        values = self.__dict__
        values["name"] = name
        values["op_type"] = op_type
        values["path"] = path
        values["files"] = files
        values["inputs"] = inputs
        values["outputs"] = outputs
        values["error"] = error
        values["timestamp"] = timestamp
        values["arguments"] = arguments
        values["stack"] = stack

    def tensors(self, kind: TensorKind) -> tuple[TensorRef, ...]:
        return self.inputs if kind is TensorKind.INPUT else self.outputs

    def tensor(self, kind: TensorKind, index: int) -> TensorRef | None:
        """The tensor with this kind and index (golden folders may hold sparse indexes)."""
        for ref in self.tensors(kind):
            if ref.index == index:
                return ref
        return None


@dataclass(frozen=True)
class OverflowRecord:
    """An ``Opdebug.Node_OpDebug.*`` overflow record (dumped when overflow detection fired)."""

    path: Path
    task_id: int | None
    stream_id: int | None
    timestamp: int
    summary: str

    def reason(self) -> str:
        where = f"task {self.task_id}, stream {self.stream_id}" if self.task_id is not None else "unknown task"
        return (f"overflow/underflow record ({where}, file {self.path.name}): {self.summary}; "
                "an overflow record is reported, not compared")


@dataclass(frozen=True)
class SkippedFile:
    """A file (or folder) of one side that a comparison did not use, and why: one entry of
    ``Run.skipped`` with its side (``left`` / ``right``), as the JSON result lists them."""

    side: str
    path: Path
    reason: str


class PartStatus(str, Enum):
    """What became of one (rank, [graph,] iteration) part of a compare-each-in-turn run.

    A part that is not :attr:`COMPARED` is *missing* from the comparison: it has a row of its own
    (:meth:`PartReport.row`) and makes a gated run incomplete (docs/policy.md)."""

    COMPARED = "compared"
    #: The part could not be compared (unreadable, no counterpart on the other side, nothing
    #: paired ...): a note and the part's row say why.
    NOT_COMPARED = "not compared"
    #: Its cluster task failed every retry (a worker that kept dying, an unexpected error): a note,
    #: one not-comparable row per left operator and the part's row carry the reason.
    LOST = "lost"


def part_name(rank: int | None, graph: int | None, iteration: int | None) -> str:
    """``rank R [graph G ]iteration I``: how notes, rows and verdicts name a part. A part without a
    rank (an msprobe ``proc{pid}`` folder, a MindSpore CPU tree) is named by its iteration alone;
    ``graph`` is given only when graphs are compared in turn."""
    where = f"graph {graph} " if graph is not None else ""
    return (f"rank {rank} " if rank is not None else "") + f"{where}iteration {iteration}"


@dataclass(frozen=True)
class PartNote:
    """One note of one part of a compare-each-in-turn run, as the terminal groups them.

    ``text``: the note in full, as the JSON result keeps it and ``--verbose`` prints it
    (``[rank 0 iteration 1] left: ...``); ``part``: the part's name (:func:`part_name`); ``kind``:
    the note without its part: its prefix dropped and every number read as ``#`` (the part's
    folder path, rank, iteration and counts), so that the same note of 24 parts is one kind and
    one line (:meth:`of`).

    The notes themselves are plain text made in some 130 places of the loaders, the pairing and
    the runs (a run's and a pairing's ``notes`` lists, which the JSON result writes verbatim): the
    part is known, and attached, only where the merge of the parts takes them, which is where
    this record is made.
    """

    kind: str
    part: str
    text: str

    @classmethod
    def of(cls, part: str, text: str) -> PartNote:
        """The note ``text`` of the part named ``part`` (``text`` starts with ``[part] `` as the
        merge writes it; the kind is the rest with its numbers abstracted)."""
        body = text.removeprefix(f"[{part}] ")
        return cls(re.sub(r"\d+", "#", body), part, text)

    @property
    def body(self) -> str:
        """The note without its ``[part] `` prefix."""
        return self.text.removeprefix(f"[{self.part}] ")


@dataclass(frozen=True)
class PartReport:
    """One part of a compare-each-in-turn run as the JSON result's ``parts`` list gives it.

    ``seconds``: the time spent on the part (loading, pairing, comparing; on its worker for a
    cluster run); ``worker``: the Dask worker's address, None when this process compared it;
    ``reason``: why it was not compared (None when it was).
    """

    rank: int | None
    graph: int | None
    iteration: int | None
    status: PartStatus
    seconds: float
    worker: str | None = None
    reason: str | None = None

    @property
    def name(self) -> str:
        """The part as notes and verdicts name it (:func:`part_name`)."""
        return part_name(self.rank, self.graph, self.iteration)

    @property
    def missing(self) -> bool:
        """Whether the part is missing from the comparison (not compared, or lost)."""
        return self.status is not PartStatus.COMPARED

    @property
    def why(self) -> str:
        """``part NAME STATUS: REASON``, the text of the part's row and of its gate failure."""
        return f"part {self.name} {self.status.value}: {self.reason or 'no reason recorded'}"

    def row(self, index: int, metrics: Iterable[str]) -> MetricRow:
        """The row that stands for this missing part in the report: not comparable, no tensor,
        the part's name as its operator on both sides, its rank / graph / iteration, the reason
        (:attr:`why`). Strict gates, JUnit and ``vcompare gate`` see it as any row not compared;
        :meth:`stands_for` finds it again among a result's rows."""
        return MetricRow(index, None, self.name, self.name, None, metrics={m: None for m in metrics},
                         reasons=[self.why], status=PairStatus.NOT_COMPARABLE, rank=self.rank,
                         iteration=self.iteration, graph=self.graph)

    def stands_for(self, row: MetricRow) -> bool:
        """Whether ``row`` is this part's row (:meth:`row`), as written or read back from a saved result."""
        return (row.tensor_id is None and row.status is not PairStatus.COMPARED and row.left_op == self.name
                and row.rank == self.rank and row.graph == self.graph and row.iteration == self.iteration)


@dataclass
class Run:
    """One side of a comparison: a resolved dump folder and its operators.

    ``root`` is the path the user gave; ``path`` the dump folder actually read (for Ascend dumps
    the ``data_index`` leaf of ``time/device/model_name/model_id/data_index``). ``ops`` is keyed
    by operator name (cleaned, as in dump file names); for golden folders, by the file-name form
    of the op name. ``skipped`` lists files that were not used and why (also FIFOs, devices,
    broken links and link loops, never opened, and folders of the tree that could not be read:
    ``permission denied: PATH``); ``notes`` tells the user what was chosen (e.g. which of several
    dump folders).

    Runs read from a MindSpore or TensorFlow-NPU dump tree also say: ``family``, the layout
    (``mindspore-sync``, ``mindspore-npy``, ``mindspore-async``, ``mindspore-o2``, ``ge`` (TF NPU /
    GE), ``stats``; ``""`` for an Ascend or golden folder); ``coords``, where the leaf sits
    (``rank``, ``iteration``, ``graph``, ``model_name``, ...); ``order``, op names -> position in
    the execution order (when an execution-order file exists, every op has one); ``overflow``, the
    overflow records; ``stats_only``, True when some tensors have statistics and no data (the
    comparison is then by statistics, :mod:`compare.stats`); ``ran_iterations``, the iterations an
    execution-order file says ran.
    """

    root: Path
    path: Path
    kind: RunKind
    #: (An msprobe run's is a read-only :class:`~compare.tensor_table.OpsView` over ``tensors``.)
    ops: dict[str, OpDump] = field(default_factory=dict)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    quantized: bool = False
    family: DumpLayout = DumpLayout.NONE
    coords: dict = field(default_factory=dict)
    order: dict = field(default_factory=dict)
    overflow: list[OverflowRecord] = field(default_factory=list)
    stats_only: bool = False
    ran_iterations: tuple = ()
    #: An msprobe run's calls and tensors as columns (:class:`compare.tensor_table.TensorTable`;
    #: ``ops`` is then its :class:`~compare.tensor_table.OpsView`), None for other runs.
    tensors: TensorTable | None = field(default=None, compare=False, repr=False)

    @property
    def rank(self) -> int | None:
        """The rank of a dump-tree leaf (``coords["rank"]``), None when it has none."""
        value = self.coords.get("rank")
        return int(value) if value is not None and str(value).isdecimal() else None

    @property
    def iteration(self) -> int | None:
        """The iteration of a dump-tree leaf (``coords["iteration"]``), None when it has none."""
        value = self.coords.get("iteration")
        return int(value) if value is not None and str(value).isdecimal() else None

    def find(self, name: str) -> OpDump | None:
        """Look an operator up by name; golden runs also try the normalised file-name form."""
        op = self.ops.get(name)
        if op is None and self.kind is not RunKind.OFFLINE:
            op = self.ops.get(normalize_golden_name(name))
        return op


@dataclass(frozen=True, init=False)
class Pair:
    """One row-to-be of the report: a left tensor and its golden counterpart (either may be absent).

    ``index`` is the report Index (fusion-group order, or NPU-vs-NPU order). ``left_op`` /
    ``right_op`` are the NPUDump / GroundTruth cells (``*`` = no counterpart). ``tensor_id`` is
    ``None`` for op-level rows (operator without any dump). ``golden_format`` / ``target_shape``
    steer the layout conversion of the left tensor (from the fusion rule's ``output_desc`` or the
    left dump's ``original_shape``); ``convert`` is False when both raw flat arrays are compared
    as they are (NPU vs NPU). ``reason`` is set when pairing already knows why the row cannot be
    compared; ``status`` classifies the row.
    """

    index: int
    op_type: str | None
    left_op: str
    right_op: str
    tensor_id: str | None
    left: TensorRef | None
    right: TensorRef | None
    status: PairStatus = PairStatus.COMPARED
    reason: str | None = None
    golden_format: str | None = None
    target_shape: tuple[int, ...] | None = None
    convert: bool = True
    op_sequence: int | None = None
    #: Why this row is, by the structure of the comparison, not compared (a mixed-precision Cast
    #: with no counterpart, a quant-filtered op, an overflow record, an NPU-only operator the
    #: fusion rule gives no golden, a Data/Const op the device does not dump); None otherwise.
    #: Gates count such rows and do not fail them (docs/policy.md).
    expected_gap: str | None = None

    def __init__(self, index: int, op_type: str | None, left_op: str, right_op: str, tensor_id: str | None,
                 left: TensorRef | None, right: TensorRef | None, status: PairStatus = PairStatus.COMPARED,
                 reason: str | None = None, golden_format: str | None = None,
                 target_shape: tuple[int, ...] | None = None, convert: bool = True, op_sequence: int | None = None,
                 expected_gap: str | None = None) -> None:
        """The fields above, in their order and with their defaults; fields stored into ``__dict__``
        (why: :meth:`TensorRef.__init__`; one Pair per row)."""
        values = self.__dict__
        values["index"] = index
        values["op_type"] = op_type
        values["left_op"] = left_op
        values["right_op"] = right_op
        values["tensor_id"] = tensor_id
        values["left"] = left
        values["right"] = right
        values["status"] = status
        values["reason"] = reason
        values["golden_format"] = golden_format
        values["target_shape"] = target_shape
        values["convert"] = convert
        values["op_sequence"] = op_sequence
        values["expected_gap"] = expected_gap


@dataclass
class Pairing:
    """Result of pairing two runs: the pairs, plus the names nobody paired (never dropped).
    ``pairs`` is a list, or for two msprobe runs a :class:`~compare.tensor_table.PairTable` (a
    sequence building each Pair when read)."""

    pairs: list[Pair]
    unmatched_left: list[str] = field(default_factory=list)
    unmatched_right: list[str] = field(default_factory=list)
    mode: PairingMode = PairingMode.NONE
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ValueCounts:
    """Special values among one side's compared elements (``MetricRow.left_counts`` /
    ``right_counts``; the engine copies them from the kernels' counts of the same name).

    ``nan``: NaN elements; ``inf``: +inf or -inf elements; ``saturated``: elements with
    ``|v| == 65504.0`` (the float16 maximum), counted only for a side stored as float16 -- 0 for
    every other dtype. Integer and bool data count 0 for all three; complex data are counted over
    their interleaved ``(real, imag)`` parts.
    """

    nan: int
    inf: int
    saturated: int


class RowKind(Label):
    """What a row compares: two tensors' data (the ten metrics) or two tensors' recorded
    statistics (``MaxDiff``, ``MaxRelDiff`` ... :mod:`compare.stats`). Built-in bounds follow it."""

    TENSOR = "tensor"
    STATISTICS = "statistics"
    #: A non-tensor argument compared by value (:class:`ArgumentDiff`; one metric, :data:`ARGUMENT_METRIC`).
    ARGUMENT = "argument"


@dataclass(slots=True)
class StatDiff:
    """One statistic of one row: both values and their differences (``None`` = not available).

    ``diff`` is ``left - right`` (``same`` / ``different`` for a checksum), ``rel`` is
    ``|diff| / |right|`` (:func:`compare.stats.diff_stat`)."""

    left: float | str | None
    right: float | str | None
    diff: float | str | None = None
    rel: float | None = None


class Grade(Label):
    """msprobe's per-row reading (its ``Result`` column): pass, warning or error."""

    PASS = "pass"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class RowGrade:
    """msprobe's ``Result`` and ``Err_message`` of one row (:attr:`MetricRow.grade`): the grade
    and the messages that decided it, by msprobe's documented rules (docs/msprobe.md). The gate
    stays the CI decision; the grade is the reading msprobe users know."""

    grade: Grade
    messages: tuple[str, ...] = ()


@dataclass(slots=True)
class MetricRow:
    """The comparison result of one :class:`Pair`, as raw numbers.

    ``metrics`` maps metric name -> float. ``None`` means "not computed" (printed ``NaN``); a
    float NaN means "computed, and the data made it NaN" (printed ``nan``). ``std`` is
    ``(left_mean, left_std, right_mean, right_std)`` or ``None``. ``reasons`` are plain-English
    messages joined into the FailReason cell. ``bool(row)`` is True when the row was compared.
    ``rank`` / ``iteration`` are set when several ranks or iterations of a dump tree are compared
    in one report (``--rank all`` / ``--iteration all``); ``None`` otherwise. ``graph`` is set when
    several graphs are compared in one report (``--graph all`` or a list). ``left_counts`` /
    ``right_counts`` count the NaN, infinite and float16-saturated values of each side's compared
    elements (:class:`ValueCounts`); ``None`` when the row was not compared by the kernels (and in
    rows read back from a saved report, which does not carry them).
    """

    index: int
    op_type: str | None
    left_op: str
    right_op: str
    tensor_id: str | None
    left_dtype: str | None = None
    right_dtype: str | None = None
    shape: tuple[int, ...] | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    std: tuple[float, float, float, float] | None = None
    reasons: list[str] = field(default_factory=list)
    left_address: int | None = None
    right_address: int | None = None
    status: PairStatus = PairStatus.COMPARED
    op_sequence: int | None = None
    rank: int | None = None
    iteration: int | None = None
    graph: int | None = None
    #: Copied from :attr:`Pair.expected_gap`: why the row is structurally not compared, or None.
    expected_gap: str | None = None
    #: NaN / infinite / float16-saturated elements of each side, counted in the kernel pass (None: not counted).
    left_counts: ValueCounts | None = None
    right_counts: ValueCounts | None = None
    #: msprobe's Result / Err_message for this row (:class:`RowGrade`); None when not graded.
    grade: RowGrade | None = None
    #: Metrics that have no value for this row's data (a statistic a side recorded as null, e.g.
    #: msprobe's mean of an int64 tensor): gates count them as undefined, not as missing.
    undefined: frozenset[str] = frozenset()
    #: Tensor data or statistics (:class:`RowKind`).
    kind: RowKind = RowKind.TENSOR
    #: A statistics row's statistics (name -> :class:`StatDiff`: left, right, diff, rel); None for tensor rows.
    statistics: dict[str, StatDiff] | None = None
    #: msprobe's own columns (names, data files, requires_grad, stack) for rows of msprobe runs; None otherwise.
    msprobe: MsprobeCells | None = None
    #: Both values of an argument row (``kind`` ARGUMENT); None for tensor and statistics rows.
    argument: ArgumentDiff | None = None

    def __bool__(self) -> bool:
        return self.status is PairStatus.COMPARED


def count_by_status(statuses: Iterable[PairStatus]) -> dict[str, int]:
    """Rows per :class:`PairStatus` value, in the enum's order, zeros included (the run summary),
    of the rows' statuses (``compare.stats_table.RowColumns(rows).status``: a table's column)."""
    counts = Counter(statuses)
    return {status.value: counts.get(status, 0) for status in PairStatus}


# --------------------------------------------------------------------------------------------
# Accuracy-gate verdicts (made by compare.verdict.gates, rendered by compare.reports, read by the CLI)
# --------------------------------------------------------------------------------------------


class Outcome(str, Enum):
    """The verdict of a gated run; :attr:`Verdict.exit_code` maps it to the documented codes."""

    NOT_GATED = "not gated"  # no --gate and no --policy: exit 0 whatever the rows say
    PASSED = "passed"  # exit 0
    FAILED = "failed"  # exit 1: a compared value violated a bound, or a waiver has expired
    INCOMPLETE = "incomplete"  # exit 3: only rows that should have been compared and were not failed


@dataclass(frozen=True)
class Bound:
    """One accuracy bound ``metric op value`` and where it came from.

    ``op`` is one of ``>= <= > < ==``; ``source`` says who set it (``--gate CosineSimilarity>=0.99``,
    ``gates.toml rule 2 (op_type = "Conv2D")``, ``default for float16``) so a failure can say why
    that bound applied.
    """

    metric: str
    op: str
    value: float
    source: str
    #: The bound applies only to rows that have the metric (the built-in statistics bounds: a
    #: checksum bound on rows with a checksum); a row without it is not checked, not incomplete.
    if_present: bool = False

    @property
    def text(self) -> str:
        return f"{self.metric}{self.op}{self.value!r}"


@dataclass(frozen=True)
class CheckFailure:
    """One failed check of one report row, or one part of a multi-part run that is missing.

    ``row`` is the position of the row in the result's row list (for a missing part: its row,
    :meth:`PartReport.row`; -1 when a saved result has none). ``incomplete`` is True when the
    row (or the gated metric) was not computed -- the check failed for want of a number, not
    because of one; then ``value``/``bound`` may be None. ``message`` is the full-precision
    diagnosis (values written with ``repr``). ``waived_by`` holds the waiver's text when a waiver
    covers this failure (such failures do not decide the outcome).
    """

    row: int
    tensor_id: str | None
    op_type: str | None
    left_op: str
    right_op: str
    metric: str | None
    value: float | None
    bound: Bound | None
    message: str
    incomplete: bool = False
    waived_by: str | None = None
    #: The name of the part of a multi-part run (:func:`part_name`) this failure stands for: the
    #: part was not compared or was lost (always incomplete, never waived); None for a row's failure.
    part: str | None = None


@dataclass
class Verdict:
    """The result of checking a run's rows against a policy (``compare.verdict.gates.evaluate``).

    ``failures`` decide the outcome; ``waived`` are failures a valid waiver covers; ``errors`` are
    policy problems found while checking (an expired waiver), each of which fails the run.
    ``checked`` counts the rows the policy looked at, ``bounds`` the distinct bounds applied.
    """

    outcome: Outcome
    failures: list[CheckFailure] = field(default_factory=list)
    waived: list[CheckFailure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    checked: int = 0
    bounds: list[Bound] = field(default_factory=list)
    #: Rows not checked because they are structurally not compared (``MetricRow.expected_gap``).
    expected_gaps: int = 0
    #: Checks not made because the metric has no value for the row's data (bool data, empty tensor).
    undefined: int = 0

    @property
    def passed(self) -> bool:
        return self.outcome in (Outcome.PASSED, Outcome.NOT_GATED)

    @property
    def exit_code(self) -> int:
        return {Outcome.NOT_GATED: EXIT_OK, Outcome.PASSED: EXIT_OK, Outcome.FAILED: EXIT_GATE_FAILED,
                Outcome.INCOMPLETE: EXIT_INCOMPLETE}[self.outcome]

"""The engine: for each :class:`Pair`, load -> convert layout -> kernels -> :class:`MetricRow`.

Policy: a problem with one pair (unreadable dump, unknown data type, shapes that cannot be
reconciled) becomes that pair's row with the diagnosis as its reason; the engine never raises for
one pair and never drops one. Tensors are loaded one pair at a time and released afterwards; a
golden tensor used by several left tensors (a producer's output feeding several consumers) is
loaded once and kept while it is still needed.

Performance (docs/performance.md):

- **Zero copies.** Large float dump tensors are memory-mapped (:mod:`convert.codecs.fastread`), golden
  ``.npy`` files are mapped by their loader, and a layout conversion is not materialised: the
  pair becomes an iteration plan (:func:`convert.layouts.lazy.plan_decided`) that the kernels walk
  with the device layout's strides (:func:`compare.kernels.compare_planned`). Pairs the plan
  cannot express go through :func:`convert.layouts.prepare_decided` and :func:`compare_arrays`,
  with the same numbers up to float64 summation order. Both apply the pair's one
  :class:`~convert.layouts.LayoutDecision` (:attr:`LayoutRequest.decision`), made once.
- **Two threads.** The kernels release the GIL; :func:`iter_compare` runs pairs on a small thread
  pool (``EngineOptions.workers``), a bounded window ahead of the consumer, and yields rows in
  pair order. Memory stays bounded by the window, whatever the number of operators.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from convert.codecs.fastread import file_snapshots
from convert.layouts import LayoutDecision, LayoutError
from convert.layouts.lazy import Unsupported, kernel_plan

from ..errors import CompareError, ShapeError
from ..kernels import KernelResult, Note
from ..kernels import ValueCounts as KernelCounts
from ..kernels import bind_plan, compare_arrays, compare_planned, is_scalar_like, resolve_algorithms, storage
from ..records import MetricRow, Pair, PairStatus, ValueCounts
from .goldens import GoldenCache, PlanEntry
from .prepare import NO_LAYOUT, LayoutRequest, layout_request, prepare_flat
from .wire import RowBatch

#: Default thread count (``EngineOptions.workers == 0``): the cores, at most this many.
MAX_WORKERS = 4
#: Groups of pairs submitted ahead per worker (they hold rows only: tensors are loaded when a group runs).
AHEAD = 8


@dataclass
class EngineOptions:
    """What to compute and how.

    ``algorithms``: metric names in column order (``None`` = all ten). ``plugins``: custom layout
    converters from ``-custom DIR`` (see :func:`convert.layouts.load_plugins`). ``max_elements``:
    compare only the first N flattened elements (0 = all).
    """

    algorithms: Sequence[str] | None = None
    plugins: dict | None = None
    max_elements: int = 0
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)
    #: Threads comparing pairs (0: the number of cores, at most MAX_WORKERS; 1: no threads).
    workers: int = 0
    #: Use the zero-copy path (lazy layouts, in-kernel decoding) where it applies.
    fast: bool = True
    #: Compare in forked worker processes instead of threads: None (default) decides by the pairs
    #: (see :func:`use_processes`), True / False force it (False: threads only).
    processes: bool | None = None


def _base_row(pair: Pair) -> MetricRow:
    left, right = pair.left, pair.right
    return MetricRow(
        index=pair.index,
        op_type=pair.op_type,
        left_op=pair.left_op,
        right_op=pair.right_op,
        tensor_id=pair.tensor_id,
        left_dtype=left.dtype if left is not None else None,
        right_dtype=right.dtype if right is not None else None,
        # a one-sided row shows the shape of the tensor it lists
        shape=tuple(left.shape) if left is not None else tuple(right.shape) if right is not None else None,
        left_address=(left.address or None) if left is not None else None,
        right_address=(right.address or None) if right is not None else None,
        status=pair.status,
        op_sequence=pair.op_sequence,
        expected_gap=pair.expected_gap,
        reasons=[ref.remark for ref in (left, right) if ref is not None and ref.remark],
    )


def _not_compared(row: MetricRow, algorithms: Sequence[str], reason: str, status: PairStatus) -> MetricRow:
    row.metrics = {name: None for name in algorithms}
    row.std = None
    row.status = status
    if reason:
        row.reasons.append(reason)
    return row


def note_text(note: object, pair: Pair) -> str:
    """Plain-English reason for a kernel note (the kernels return flags, never text)."""

    left = pair.left.path.name if pair.left is not None else "left"
    right = pair.right.path.name if pair.right is not None else "right"
    texts = {
        Note.SCALAR: "scalar-like tensor: CosineSimilarity set to 1",
        Note.LEFT_ALL_ZERO: f"CosineSimilarity not computed: all data is zero in the left tensor ({left})",
        Note.RIGHT_ALL_ZERO: f"CosineSimilarity not computed: all data is zero in the golden tensor ({right})",
        Note.BOTH_ZERO: "both tensors are all zero: CosineSimilarity set to 1",
        Note.KL_GOLDEN_ZERO: "KullbackLeiblerDivergence is inf: the golden data contains 0",
        Note.EMPTY: "empty tensor (0 elements)",
        Note.BOOL_DATA: ("bool data: only CosineSimilarity is computed, and RelativeEuclideanDistance "
                         "when the golden has no True (0)"),
        Note.COMPLEX_PAIRS: "complex data: compared as interleaved (real, imaginary) pairs",
    }
    return texts.get(note, str(note))


#: Notes that do not need a reason text in the report (they restate the obvious).
_QUIET_NOTES = {"BOTH_ZERO"}


def compare_pair(pair: Pair, options: EngineOptions, goldens: GoldenCache | None = None) -> MetricRow:
    """Compare one pair; every failure becomes the row's reason (never raises CompareError)."""


    algorithms = list(options.algorithms) if options.algorithms else resolve_algorithms(None)
    row = _base_row(pair)
    if pair.status is not PairStatus.COMPARED or pair.left is None or pair.right is None:
        status = pair.status
        if status is PairStatus.COMPARED:  # a pair without one side cannot be compared
            status = PairStatus.MISSING_LEFT if pair.left is None else PairStatus.MISSING_RIGHT
        return _not_compared(row, algorithms, pair.reason or "", status)

    goldens = goldens or GoldenCache()
    try:
        # A custom converter gets the left data as it always did: a writable array, not a mapping.
        left = pair.left.load()  # Ascend readers memory-map large float tensors (read-only)
        if options.plugins and not left.flags.writeable:  # a plugin may work in place on its input
            left = np.array(left)
    except CompareError as exc:
        return _not_compared(row, algorithms, f"left tensor unreadable: {exc}", PairStatus.NOT_COMPARABLE)
    right_key = GoldenCache.key(pair.right)
    try:
        right = goldens.load(pair.right, right_key)
    except CompareError as exc:
        return _not_compared(row, algorithms, f"golden tensor unreadable: {exc}", PairStatus.NOT_COMPARABLE)

    if pair.convert:
        request = layout_request(pair, left, right, plugins=options.plugins)
        try:
            fast = None
            if options.fast and options.max_elements <= 0:
                fast = _compare_planned(pair, request, algorithms, goldens, right_key)
            if fast is None:
                x, y, shape = request.prepare()
        except (LayoutError, ValueError) as exc:
            return _not_compared(
                row, algorithms, f"cannot bring {pair.tensor_id} to the golden layout of {pair.right.path.name}: {exc}", PairStatus.NOT_COMPARABLE
            )
        if fast is not None:
            row.shape = _shape_column(pair, fast.decision, fast.shape)
            return _finish(row, fast.result, pair)
        row.shape = _shape_column(pair, request.decision, shape)
        scalar = is_scalar_like(shape)
    else:
        try:
            flat = prepare_flat(pair, left, right)
        except ShapeError as exc:
            return _not_compared(row, algorithms, str(exc), PairStatus.NOT_COMPARABLE)
        x, y = flat.x, flat.y
        scalar = is_scalar_like(row.shape if row.shape is not None else ())
    if options.max_elements > 0:
        x, y = x[: options.max_elements], y[: options.max_elements]
    try:
        result = compare_arrays(x, y, metrics=algorithms, scalar=scalar)
    except CompareError as exc:
        return _not_compared(row, algorithms, str(exc), PairStatus.NOT_COMPARABLE)
    return _finish(row, result, pair)


def _shape_column(pair: Pair, decision: LayoutDecision, prepared: Sequence[int]) -> tuple[int, ...]:
    """The Shape cell of a compared, converted-mode pair (``prepared``: the shape its ``decision``
    gave).

    - The layout was converted: the converted (and padding-cropped) shape, ``prepared``.
    - Nothing was converted, a device dump against a reference golden file (``RESERVED``: Caffe /
      TF ``.npy``, DumpData ``.pb``): ``prepared``, i.e. the flat ``[n]`` -- the reference tool's
      Shape for ND data against such goldens, kept so that its reports and ours agree.
    - Nothing was converted otherwise (MindSpore dumps, ``-cf`` NPU goldens, ``.npy`` vs ``.npy``):
      the left tensor's own shape, ``[]`` for a 0-d scalar (the reference flattens these too).

    (NPU vs NPU without a rule, ``pair.convert`` False, shows the left dump shape without coming
    here.) CosineSimilarity's scalar-like rule keeps using ``prepared``, as the reference does.
    """

    shape = tuple(int(d) for d in prepared)
    assert pair.left is not None and pair.right is not None
    if pair.right.format == NO_LAYOUT != pair.left.format:
        return shape
    return shape if decision.network.converted else tuple(int(d) for d in pair.left.shape)


def _fast_dtype(dtype: np.dtype) -> bool:
    """Dtypes the fast path reads (bool and complex data keep their special rules on the
    ordinary path; ml_dtypes other than bfloat16 are converted there too -- float8_e5m2 as well,
    which numpy files under kind "f" but whose 1-byte typestr ``<f1`` no strided view accepts)."""
    return (dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize > 1)
            or (dtype.kind == "V" and dtype.name == "bfloat16"))


@dataclass(frozen=True)
class _Planned:
    """A pair compared on the zero-copy path: its prepared ``shape``, the kernels' ``result`` and
    the layout ``decision`` it was compared by (for the Shape column)."""

    shape: tuple[int, ...]
    result: KernelResult
    decision: LayoutDecision


def _compare_planned(pair: Pair, request: LayoutRequest, algorithms: list[str],
                     goldens: GoldenCache | None = None, right_key: tuple | None = None) -> _Planned | None:
    """The zero-copy comparison of a converted pair, or None when the lazy plan does not apply
    (then the caller takes the ordinary path, with the decision already made). Raises what
    :meth:`LayoutRequest.prepare` would raise for the pair (LayoutError, ValueError).

    Operators of one network share a few shapes: the plan (~0.3 ms of Python a pair, holding the
    GIL the other worker thread needs) and the layout decision it applies are made once per
    :meth:`LayoutRequest.plan_key` (a :class:`PlanEntry`)."""

    left, right = request.left, request.right
    if not (_fast_dtype(np.asarray(left).dtype) and _fast_dtype(np.asarray(right).dtype)):
        return None
    key = request.plan_key() if goldens is not None else None
    entry = goldens.plans.get(key) if key is not None else None
    if entry is not None:
        xbuf, _ = storage(left.reshape(-1), "left")
        ybuf, _ = storage(right.reshape(-1), "right")
    else:
        try:
            lx, ly, shape = request.plan()
            plan = bind_plan(kernel_plan(lx, ly))
        except Unsupported:
            return None
        entry = PlanEntry(plan=plan, shape=shape, count=lx.size, scalar=is_scalar_like(tuple(int(d) for d in shape)),
                          decision=request.decision)
        xbuf, _ = storage(lx.base, "left")
        ybuf, _ = storage(ly.base, "right")
        if key is not None and _is_whole(lx.base, left) and _is_whole(ly.base, right):
            goldens.plans[key] = entry
    cache = goldens.stats if goldens is not None else None
    result = compare_planned(xbuf, ybuf, entry.plan, entry.count, metrics=algorithms, scalar=entry.scalar,
                             right_cache=cache,
                             right_key=(right_key or GoldenCache.key(pair.right)) if goldens is not None else None)
    return _Planned(shape=entry.shape, result=result, decision=entry.decision)


def _is_whole(base: np.ndarray, array: np.ndarray) -> bool:
    """Whether a lazy view's flat ``base`` is exactly ``array``'s memory (then a cached plan can be
    applied to another array of the same shape through ``array.reshape(-1)``)."""
    return (base.size == array.size and base.dtype == array.dtype
            and base.__array_interface__["data"][0] == array.__array_interface__["data"][0])


def _finish(row: MetricRow, result: KernelResult, pair: Pair) -> MetricRow:
    """``row`` with ``result`` copied onto it: metrics, std, the sides' value counts, and the
    notes worded as reasons (after the pair's own reason)."""
    row.metrics = dict(result.values)
    row.std = result.std
    row.left_counts = row_counts(result.left_counts)
    row.right_counts = row_counts(result.right_counts)
    if result.notes:
        for note in sorted(result.notes, key=lambda n: n.name):
            if note.name not in _QUIET_NOTES:
                row.reasons.append(note_text(note, pair))
    if pair.reason:
        row.reasons.insert(0, pair.reason)
    return row


def row_counts(counts: KernelCounts | None) -> ValueCounts | None:
    """The kernels' counts as the record the rows carry (records do not import the kernels).

    One record per distinct count (:func:`_shared_counts`): almost every side of a network counts
    ``(0, 0, 0)``, and a frozen record can be shared by any number of rows."""
    if counts is None:
        return None
    return _shared_counts(counts.nan, counts.inf, counts.saturated)


@functools.lru_cache(maxsize=1024)
def _shared_counts(nan: int, inf: int, saturated: int) -> ValueCounts:
    return ValueCounts(nan=nan, inf=inf, saturated=saturated)


def _safe_compare(pair: Pair, options: EngineOptions, goldens: GoldenCache) -> MetricRow:
    try:
        return compare_pair(pair, options, goldens)
    except Exception as exc:  # noqa: BLE001 - one pair must never abort the run
        algorithms = list(options.algorithms or ())
        return _not_compared(_base_row(pair), algorithms,
                             f"internal error while comparing {pair.tensor_id or pair.left_op}: "
                             f"{type(exc).__name__}: {exc} (please report)", PairStatus.NOT_COMPARABLE)


def _run_group(group: Sequence[Pair], options: EngineOptions, goldens: GoldenCache) -> list[MetricRow]:
    """The rows of consecutive pairs (a thread's group, a worker process's chunk), their small dump
    files each read once (:func:`convert.codecs.fastread.file_snapshots`: an operator's tensors
    are in one file)."""
    with file_snapshots():
        return [_safe_compare(pair, options, goldens) for pair in group]


def _workers(options: EngineOptions, count: int) -> int:
    wanted = options.workers if options.workers > 0 else min(os.cpu_count() or 1, MAX_WORKERS)
    return max(1, min(wanted, count))


def iter_compare(pairs: Iterable[Pair], options: EngineOptions | None = None) -> Iterator[MetricRow]:
    """Compare pairs, yielding rows in pair order as they are ready (streaming-friendly).

    With ``workers > 1`` pairs run on a thread pool in small groups (:func:`_groups`: consecutive
    pairs that share a golden tensor stay on one thread, which computes that golden's statistics
    once instead of making the other thread wait for them), at most ``AHEAD * workers`` groups
    ahead of the row being yielded, so memory does not grow with the number of pairs.
    """
    options = options or EngineOptions()
    goldens = GoldenCache()
    pairs = list(pairs)
    total = len(pairs)
    workers = _workers(options, total)
    if workers > 1 and use_processes(options, pairs):
        yield from _iter_processes(pairs, options, workers)
        return
    if workers == 1:
        with file_snapshots():  # ends when the rows do (or when the consumer drops this generator)
            for done, pair in enumerate(pairs, start=1):
                yield _safe_compare(pair, options, goldens)
                if options.progress is not None:
                    options.progress(done, total)
        return

    def run(group: list[Pair]) -> list[MetricRow]:
        return _run_group(group, options, goldens)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vcompare") as pool:
        pending = _groups(pairs)
        window: deque = deque()
        for group in pending:
            window.append(pool.submit(run, group))
            if len(window) >= AHEAD * workers:
                break
        done = 0
        try:
            while window:
                rows = window.popleft().result()
                nxt = next(pending, None)
                if nxt is not None:
                    window.append(pool.submit(run, nxt))
                for row in rows:
                    done += 1
                    yield row
                    if options.progress is not None:
                        options.progress(done, total)
        finally:
            for future in window:
                future.cancel()


#: At least this many pairs to compare for the engine to fork worker processes (see use_processes).
PROCESS_MIN_PAIRS = 2000
#: Pairs per task sent to a worker process (cut where no golden is shared across the cut).
PROCESS_CHUNK = 512

#: The pairs and options of the run being compared in worker processes (inherited by fork).
_FORKED: tuple[list[Pair], EngineOptions] | None = None


def use_processes(options: EngineOptions, pairs: Sequence[Pair]) -> bool:
    """Whether to compare in forked worker processes rather than threads.

    Threads share one interpreter: the kernels run in parallel (they release the GIL), the Python
    around them does not. With many small tensors that Python (reading a dump's header and data,
    choosing the kernel plan, building the row) is most of the time, so two threads are no faster
    than one; two processes are about twice as fast. Chosen when ``options.processes`` is True, or
    when it is None, there are at least :data:`PROCESS_MIN_PAIRS` pairs and the platform can fork
    (Linux). Fewer pairs keep threads (a network of big tensors spends its time in the kernels, and
    a thread starts faster than a process).
    """
    if options.processes is not None:
        return options.processes and _can_fork()
    return len(pairs) >= PROCESS_MIN_PAIRS and _can_fork()


def _can_fork() -> bool:
    import multiprocessing  # here: only when worker processes are used (~5 ms)

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _chunks(pairs: list[Pair]) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of about PROCESS_CHUNK pairs, cut between two of :func:`_groups`'
    groups (pairs that share a golden stay in one chunk, so a worker computes its statistics once)."""
    out: list[tuple[int, int]] = []
    start = stop = 0
    for group in _groups(pairs):
        stop += len(group)
        if stop - start >= PROCESS_CHUNK:
            out.append((start, stop))
            start = stop
    if stop > start:
        out.append((start, stop))
    return out


def _child_start() -> None:
    """A worker process: Ctrl-C and SIGTERM are the parent's to handle, and the worker dies with
    its parent (see :func:`die_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()


def die_with_parent() -> None:
    """Ask Linux to send this (forked worker) process SIGKILL when its parent exits.

    A command line stopped by Ctrl-C exits at once; its workers would otherwise live on, blocked
    on pipes that the other workers (forked from the same parent) keep open. No-op where
    ``prctl`` is not available.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child_run(chunk: tuple[int, int]) -> RowBatch:
    """A worker process: the rows of the pairs ``[start, stop)``, as the columns the parent lays
    over the base rows of its own pairs (:class:`~compare.engine.wire.RowBatch`)."""
    assert _FORKED is not None
    pairs, options = _FORKED
    goldens = _CHILD_GOLDENS
    return RowBatch.of(_run_group(pairs[chunk[0]:chunk[1]], options, goldens))


_CHILD_GOLDENS = GoldenCache()


def _iter_processes(pairs: list[Pair], options: EngineOptions, workers: int) -> Iterator[MetricRow]:
    """:func:`iter_compare` on forked worker processes: the children inherit the pairs (nothing
    is pickled on the way in) and send back their rows, chunk by chunk, in pair order (as
    :class:`~compare.engine.wire.RowBatch` columns over the base rows made here). A worker
    that dies (killed, out of memory) does not hang or abort the run: the pairs not compared yet
    are compared in this process, on threads."""
    import multiprocessing  # here: only when worker processes are used (~5 ms)
    from concurrent.futures.process import BrokenProcessPool  # here: only when worker processes are used

    global _FORKED
    total = len(pairs)
    _FORKED = (pairs, EngineOptions(algorithms=options.algorithms, plugins=options.plugins,
                                    max_elements=options.max_elements, workers=1, fast=options.fast,
                                    processes=False))
    done = 0
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_child_start) as pool:
            try:
                chunks = _chunks(pairs)
                for (start, stop), batch in zip(chunks, pool.map(_child_run, chunks)):
                    for row in batch.rows([_base_row(pair) for pair in pairs[start:stop]]):
                        done += 1
                        yield row
                        if options.progress is not None:
                            options.progress(done, total)
            except BrokenProcessPool:
                pass
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
    finally:
        _FORKED = None
    if done < total:  # a worker died: the rest on threads, here
        rest = EngineOptions(algorithms=options.algorithms, plugins=options.plugins,
                             max_elements=options.max_elements, workers=workers, fast=options.fast,
                             processes=False)
        for row in iter_compare(pairs[done:], rest):
            done += 1
            yield row
            if options.progress is not None:
                options.progress(done, total)


#: Pairs in one group at most, and how far ahead a shared golden is looked for (see _groups).
GROUP_MAX = 8
LOOKAHEAD = 4


def _groups(pairs: list[Pair]) -> Iterator[list[Pair]]:
    """Consecutive pairs in small groups, cut only where no golden tensor of the group is used
    again by one of the next LOOKAHEAD pairs: a producer's output and its consumer's input (the
    same golden, a pair or two apart) stay on one thread. At most GROUP_MAX pairs a group."""
    keys = [GoldenCache.key(p.right) if p.right is not None else None for p in pairs]
    group: list[Pair] = []
    seen: set = set()
    for i, pair in enumerate(pairs):
        if group and (len(group) >= GROUP_MAX or not seen.intersection(keys[i : i + LOOKAHEAD])):
            yield group
            group, seen = [], set()
        group.append(pair)
        if keys[i] is not None:
            seen.add(keys[i])
    if group:
        yield group


def compare_pairs(pairs: Iterable[Pair], options: EngineOptions | None = None) -> list[MetricRow]:
    """Compare every pair; the rows come back in pair order (stable by Index)."""
    return list(iter_compare(pairs, options))

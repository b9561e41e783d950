"""Compare-each-in-turn on a Dask cluster: the parts of an :class:`~compare.runs.each.EachPlan`
as Dask tasks (``--dask-cluster local:N``, ``--scheduler tcp://HOST:PORT``; docs/distributed.md).

Policy:

- **The client plans, the workers compare.** The client walks both trees and makes the plan
  (:func:`~compare.runs.each.plan_each`) exactly as an in-turn run does; each worker loads, pairs
  and compares whole parts with the same function (:func:`~compare.runs.each.compare_part`),
  reading the dumps from the same paths (shared storage, or the mirror of a URL: *URLs*). What a
  task gets is the plan's paths and selection, never tensors; what it sends back is the part's
  rows and notes (its runs without their operators, and the pairing only for the last part).
- **Same report.** The outcomes are merged in plan order by the in-turn run's own merge
  (:func:`~compare.runs.each.merge_parts`) as they arrive, so rows, notes, unused files and the
  localisation are those of the local run, byte for byte; only the JSON ``parts`` timings and
  workers differ. The report files are written when every part is in (atomically, as always).
- **Written as they arrive.** Each part, as it arrives, is written to the spool folder beside
  the ``-o`` table (:mod:`compare.reports.spool`: the part's rows with the report's own cells, and
  a line of ``arrivals.csv``), so a client killed midway keeps every part that came back; the
  command line removes the spool once the report is written. The rows are also kept in memory:
  the final report, the JSON summary, the gate and ``--verdicts`` need all of them at once.
- **URLs.** A side given as an fsspec URL (``s3://``, ``file://`` ..., :mod:`convert.remote`) is
  listed and copied into the client's local mirror (the walk, the model / graph choices and a
  golden side read it there), and the plan names the mirror's paths. Before comparing a part, a
  worker copies into the same mirror path on its machine what the part reads and is not there
  yet (:func:`fetch_part`): nothing on the client's machine or on a shared cache folder, the
  part's own leaves on a machine of its own.
- **Task size.** A part is never split (its tensors are loaded one pair at a time by the engine,
  so a task's memory is one part's metadata plus the engine's window). Small parts are batched:
  consecutive parts share a task until it holds :data:`BATCH_FILES` dump files (about 0.15 s of
  work, so Dask's few milliseconds a task stay ~2 %), a part of :data:`MAX_SNIFF` files or more
  (the count the tree walk stops at) is a task of its own, and there are at least
  :data:`TASKS_PER_WORKER` tasks a worker while parts allow, so that work stays balanced.
- **Placement.** No worker hints: the dumps are equally far from every worker on shared storage,
  and each part is read by the one worker that runs its task. The shared inputs (plan, rules,
  golden run of a side without levels) are scattered to every worker once.
- **Failures.** A part that cannot be compared is a note and a row of its own, as in turn. A
  task that raises anything else is retried :data:`RETRIES` times, and a task whose worker dies
  is rescheduled by Dask on another worker; a part whose task still fails is **lost**, not
  dropped: a note, one not-comparable row per left operator (listed by the client) with the
  reason, the part's own row, and ``lost`` in the JSON ``parts``; a gate then says incomplete
  (exit 3). A task of several parts that fails for good is tried again part by part first, so
  that only the broken part is lost.
- **Threads.** Each task compares on ``cores // N`` engine threads on a ``local:N`` cluster (one
  task at a time per worker process) and on one thread on a remote one (a worker runs as many
  tasks at once as it has threads); never in forked processes (a Dask worker is a daemon).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from types import ModuleType

from convert.layouts import load_plugins
from convert.remote import RemoteRoot, materialise

from ..errors import CompareError, OptionError
from ..heap import frozen_heap
from ..loaders.parts import part_op_names
from ..loaders.reader import MAX_SNIFF
from ..pairing.fusion_rule import load_fusion_rule
from ..pairing.rule_records import FusionRule
from ..records import MetricRow, Pairing, PairStatus, PartStatus, Run
from ..reports.spool import PartSpool, SpooledPart
from .each import EachJob, GoldenSide, PartOutcome, compare_part, merge_parts, part_prefix, right_only_outcomes
from .network import NetworkResult, Progress

#: How to install the optional dependency (the message of every "Dask is missing" error).
INSTALL = "pip install 'vcompare[dask]'"
#: A task carries consecutive small parts until they hold this many dump files.
BATCH_FILES = 1024
#: At least this many tasks per worker (while there are parts enough), for balance.
TASKS_PER_WORKER = 2
#: Times Dask runs a failed task again before its parts are lost.
RETRIES = 2
#: Seconds to wait for a remote scheduler to answer.
CONNECT_TIMEOUT = 20
#: Seconds to wait for a first worker when the cluster has none yet (workers still starting).
WORKER_WAIT = 300


#: ``local:N`` starts at most this many worker processes, whatever the machine ...
MAX_LOCAL_WORKERS = 256
#: ... and at most this many per CPU (each worker is a Python process with numpy and the kernels
#: loaded; more processes than this only wait and fill the memory, or hit a process limit).
LOCAL_WORKERS_PER_CPU = 4
_COUNT_RE = re.compile(r"[0-9]{1,6}")


def max_local_workers() -> int:
    """The largest N of ``--dask-cluster local:N`` on this machine: ``LOCAL_WORKERS_PER_CPU`` x
    the CPU count, at most :data:`MAX_LOCAL_WORKERS`."""
    return min(MAX_LOCAL_WORKERS, LOCAL_WORKERS_PER_CPU * (os.cpu_count() or 1))


@dataclass(frozen=True)
class ClusterSpec:
    """Where the parts are compared: a LocalCluster of ``local_workers`` worker processes on this
    machine (``--dask-cluster local:N``), or the Dask scheduler at ``scheduler``
    (``--scheduler tcp://HOST:PORT``, or the file ``dask scheduler --scheduler-file FILE`` wrote)."""

    local_workers: int | None = None
    scheduler: str | None = None

    @classmethod
    def parse(cls, cluster: str | None, scheduler: str | None) -> "ClusterSpec | None":
        """The spec of the options (None when neither is given); :class:`OptionError` for both,
        or for a ``cluster`` that is not ``local:N``."""
        if cluster is None and scheduler is None:
            return None
        if cluster is not None and scheduler is not None:
            raise OptionError("--dask-cluster and --scheduler both say where to compare: give one (local:N starts "
                              "a cluster here, --scheduler uses a running one)")
        if scheduler is not None:
            if not scheduler.strip():
                raise OptionError("--scheduler needs the Dask scheduler's address, e.g. tcp://HOST:8786")
            return cls(scheduler=scheduler.strip())
        kind, _, count = str(cluster).partition(":")
        shown = cluster if len(str(cluster)) <= 40 else f"{str(cluster)[:30]}... ({len(str(cluster))} characters)"
        if kind != "local" or _COUNT_RE.fullmatch(count) is None or int(count) < 1:
            raise OptionError(f"--dask-cluster {shown}: expected local:N (N worker processes on this machine, "
                              "e.g. local:4); for a cluster elsewhere give --scheduler tcp://HOST:8786")
        most = max_local_workers()
        if int(count) > most:
            raise OptionError(f"--dask-cluster {shown}: at most local:{most} (4 worker processes per CPU, "
                              f"{os.cpu_count() or 1} CPU(s) here, and never more than {MAX_LOCAL_WORKERS}); "
                              "for more workers start a cluster and give --scheduler tcp://HOST:8786")
        return cls(local_workers=int(count))

    def describe(self) -> str:
        return f"local:{self.local_workers}" if self.local_workers is not None else str(self.scheduler)

    def engine_threads(self) -> int:
        """Engine threads of one task (module doc: *Threads*)."""
        if self.local_workers is None:
            return 1
        return max(1, (os.cpu_count() or 1) // self.local_workers)


def require_dask() -> ModuleType:
    """``distributed``, or :class:`OptionError` saying how to install it."""
    try:
        import distributed  # here: Dask is an optional extra, loaded only for a cluster run
    except ImportError as exc:
        raise OptionError(f"--dask-cluster / --scheduler compare on a Dask cluster, and Dask is not installed "
                          f"({exc}): {INSTALL}") from None
    return distributed


def task_batches(files: Sequence[int], workers: int) -> list[list[int]]:
    """The parts (indices into ``files``, each part's dump file count) of each task, in order
    (module doc: *Task size*)."""
    total = sum(files)
    limit = max(1, min(BATCH_FILES, total // max(1, TASKS_PER_WORKER * workers)))
    batches: list[list[int]] = []
    held = 0  # dump files of the last task
    for index, count in enumerate(files):
        big = count >= MAX_SNIFF
        if batches and not big and held < limit:
            batches[-1].append(index)
            held += count
        else:
            batches.append([index])
            held = limit if big else count  # nothing joins a big part
    return batches


@dataclass
class WorkerJob:
    """What every task gets (scattered once): the in-turn job without what cannot or need not
    travel (the progress callback, loaded plugins: ``custom_dir`` is loaded again on the worker)."""

    each: EachJob
    custom_dir: Path | None
    #: The plan's last part: the one whose pairing comes back (the result's ``pairing``).
    last: int
    #: The URL roots of the sides given as fsspec URLs (module doc: *URLs*), else None.
    left_remote: RemoteRoot | None = None
    right_remote: RemoteRoot | None = None


@dataclass
class Shipped:
    """A part's outcome on its way back: ``shared_right`` / ``shared_rule`` say that its right
    run / fusion rule is the job's (not sent back; the client puts its own object in)."""

    outcome: PartOutcome
    shared_right: bool = False
    shared_rule: bool = False


def _without_ops(run: Run) -> Run:
    return replace(run, ops={}, tensors=None)


def run_parts(job: WorkerJob, indices: list[int]) -> list[Shipped]:
    """The task: compare the parts ``indices`` of the job's plan on this worker (module doc)."""
    from distributed import get_worker  # here: this runs on a Dask worker, where Dask is installed

    each = job.each
    plugins = load_plugins(job.custom_dir) if job.custom_dir is not None else None
    if plugins is not None:
        each = replace(each, options=replace(each.options, plugins=plugins))
    golden = GoldenSide(each.plan)
    worker = get_worker().address
    shipped = []
    with frozen_heap():  # the loaded records are not walked by collections while comparing (compare.heap)
        for index in indices:
            fetch_part(job, index)
            outcome = compare_part(each, index, golden)
            outcome.worker = worker
            shipped.append(_ship(outcome, each, golden.run, keep_pairing=index == job.last))
    return shipped


def fetch_part(job: WorkerJob, index: int) -> None:
    """Copy from the URL roots into this machine's mirror what part ``index`` reads and the mirror
    lacks (module doc: *URLs*): its left leaf folder, the right leaves of the same rank and
    iteration (the whole right side when it has no levels), and every file outside the plan's
    leaves (execution orders, graphs, mapping files). Nothing for sides given as paths."""
    plan = job.each.plan
    leaf = plan.left_leaves[index]
    if job.left_remote is not None:
        others = [Path(other.path) for other in plan.left_leaves]
        materialise(job.left_remote, _part_files(job.left_remote, [Path(leaf.path)], others))
    if job.right_remote is not None:
        if plan.right_candidates is None:
            materialise(job.right_remote)
            return
        coords = (str(leaf.get("rank")), str(leaf.get("iteration")))
        mine = [Path(c.path) for c in plan.right_candidates if (str(c.get("rank")), str(c.get("iteration"))) == coords]
        others = [Path(c.path) for c in plan.right_candidates]
        materialise(job.right_remote, _part_files(job.right_remote, mine, others))


def _part_files(remote: RemoteRoot, mine: list[Path], others: list[Path]) -> Callable[[str], bool]:
    """Which listed files a part needs: those under its own leaf folders, and those under no leaf."""
    prefixes = [f"{r}/" for r in (remote.relative(p) for p in mine) if r is not None]
    foreign = [f"{r}/" for r in (remote.relative(p) for p in others) if r is not None]

    def wanted(relative: str) -> bool:
        if any(relative.startswith(p) for p in prefixes):
            return True
        return not any(relative.startswith(p) for p in foreign)

    return wanted


def _ship(outcome: PartOutcome, each: EachJob, golden: Run | None, *, keep_pairing: bool) -> Shipped:
    """The outcome made small for the way back (module doc: *The client plans*)."""
    part = outcome.result
    sent = Shipped(outcome)
    if part is None:
        return sent
    part.left = _without_ops(part.left)
    part.part_lefts = [part.left]
    sent.shared_right = golden is not None and part.right is golden
    part.right = _without_ops(part.right)
    sent.shared_rule = isinstance(each.fusion_rule, FusionRule) and part.rule is each.fusion_rule
    if sent.shared_rule:
        part.rule = None
    if not keep_pairing:
        part.pairing = Pairing([], mode=part.pairing.mode)
    return sent


def compare_each_on_cluster(job: EachJob, spec: ClusterSpec, *, custom_dir: Path | None = None,
                            progress: Progress | None = None,
                            on_dashboard: Callable[[str], None] | None = None,
                            spool: PartSpool | None = None,
                            remotes: tuple[RemoteRoot | None, RemoteRoot | None] = (None, None)) -> NetworkResult:
    """Run the in-turn job's parts on the cluster; the merged result (module doc).

    ``progress(done, total)`` counts parts; ``on_dashboard(link)`` is called once with the Dask
    dashboard's address when the cluster is up; ``spool`` gets each part as it arrives (module
    doc: *Written as they arrive*); ``remotes``: the URL roots of the sides given as URLs (module
    doc: *URLs*). Raises :class:`OptionError` when Dask is missing or
    the scheduler cannot be reached; what :func:`merge_parts` raises otherwise.
    """
    distributed = require_dask()
    plan = job.plan
    golden = GoldenSide(plan)
    if plan.right_candidates is None:
        try:
            golden.get()
        except CompareError as exc:  # every part would say so: no cluster needed to find out
            reason = str(exc)
            return merge_parts(plan, job.metrics, (_not_compared(job, i, reason) for i in range(len(plan.left_leaves))),
                               where="on the cluster")
    rule = job.fusion_rule
    if rule is not None and not isinstance(rule, FusionRule):
        try:
            rule = load_fusion_rule(rule)  # once here rather than once a part; a bad file fails as in turn
        except CompareError:
            pass
    options = replace(job.options, progress=None, plugins=None, workers=spec.engine_threads(), processes=False)
    slim_plan = replace(plan, right_probe=golden.run, notes=[], walked=[])
    each = replace(job, plan=slim_plan, fusion_rule=rule, options=options)
    worker_job = WorkerJob(each, custom_dir, last=len(plan.left_leaves) - 1, left_remote=remotes[0],
                           right_remote=remotes[1])
    with _client(distributed, spec) as client:
        if on_dashboard is not None:
            on_dashboard(client.dashboard_link)
        workers = _wait_for_workers(client, spec)
        batches = task_batches([leaf.files for leaf in plan.left_leaves], workers)
        shared = client.scatter(worker_job, broadcast=True, hash=False)
        run = uuid.uuid4().hex[:8]

        def submit(batch: list[int]) -> object:
            return client.submit(run_parts, shared, batch, key=f"vcompare-parts-{batch[0]}-{batch[-1]}-{run}",
                                 retries=RETRIES, pure=False)

        arrived = chain(_arrivals(distributed, client, submit, batches, worker_job, golden.run, rule, progress),
                        right_only_outcomes(plan, job.metrics))
        if spool is not None:
            arrived = _spooled(arrived, spool, job.metrics)
        return merge_parts(plan, job.metrics, _in_order(arrived, len(plan.left_leaves) + len(plan.right_only)),
                           where=f"on {workers} worker(s) of {spec.describe()}")


def _wait_for_workers(client: object, spec: ClusterSpec) -> int:
    """The number of workers, once there is one (the shared inputs are scattered to them): a
    cluster whose workers are still starting is waited for, up to :data:`WORKER_WAIT` seconds."""
    workers = len(client.scheduler_info().get("workers", {}))  # type: ignore[attr-defined]
    if workers:
        return workers
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)  # type: ignore[attr-defined]
    except TimeoutError:
        raise OptionError(f"--scheduler {spec.describe()}: no Dask worker joined the scheduler in {WORKER_WAIT} s; "
                          "start workers with `dask worker ADDRESS` (docs/distributed.md)") from None
    return max(1, len(client.scheduler_info().get("workers", {})))  # type: ignore[attr-defined]


@contextmanager
def _client(distributed: ModuleType, spec: ClusterSpec) -> Iterator[object]:
    """A client of the spec's cluster, closed (and a local cluster stopped) on the way out, also
    on Ctrl-C: the work still queued is dropped with it."""
    if spec.local_workers is not None:
        try:
            with _workers_ignore_ctrl_c():
                cluster = distributed.LocalCluster(n_workers=spec.local_workers, threads_per_worker=1,
                                                   processes=True, silence_logs=logging.CRITICAL,
                                                   dashboard_address=":0")
        except RuntimeError as exc:  # Dask's "Nanny failed to start" and the like
            raise OptionError(f"--dask-cluster {spec.describe()}: the local Dask workers did not start ({exc}). "
                              "They are started with the spawn method, which imports the main module again: a "
                              "Python script must call compare_network(cluster=...) under "
                              "`if __name__ == \"__main__\":`, and cannot be read from stdin") from None
        try:
            with distributed.Client(cluster, set_as_default=False) as client:
                yield client
        finally:
            cluster.close()
        return
    address = str(spec.scheduler)
    where = {"scheduler_file": address} if Path(address).is_file() else {"address": address}
    try:
        client = distributed.Client(**where, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise OptionError(f"--scheduler {spec.scheduler}: cannot reach the Dask scheduler ({exc}); start one "
                          "with `dask scheduler` (docs/distributed.md) or check the address") from None
    try:
        yield client
    finally:
        client.close()


@contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """SIGINT ignored while the local worker processes start, so that they inherit it ignored:
    Ctrl-C at a terminal reaches the whole process group, and it is this process that stops the
    cluster (its workers would otherwise each print a KeyboardInterrupt traceback). Only from
    the main thread (where signal handlers live); a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _arrivals(distributed: ModuleType, client: object, submit: Callable[[list[int]], object],
              batches: list[list[int]], job: WorkerJob, golden: Run | None, rule: object,
              progress: Progress | None) -> Iterator[PartOutcome]:
    """The outcomes as their tasks finish (any order), the client's shared objects put back in.

    A task of several parts that failed for good is submitted again part by part (each with its
    retries), so that one broken part does not take the others of its task with it; a task of
    one part that failed for good is that part, lost."""
    total = len(job.each.plan.left_leaves)
    done = 0
    futures = {submit(batch): batch for batch in batches}
    loop = client.loop  # type: ignore[attr-defined]
    arriving = distributed.as_completed(list(futures), loop=loop, with_results=True, raise_errors=False)
    for future, value in arriving:
        batch = futures.pop(future)
        if future.status == "finished":
            for sent in value:
                part = sent.outcome.result
                if part is not None and sent.shared_right and golden is not None:
                    part.right = golden
                if part is not None and sent.shared_rule and isinstance(rule, FusionRule):
                    part.rule = rule
                yield sent.outcome
        elif len(batch) > 1:
            for index in batch:
                again = submit([index])
                futures[again] = [index]
                arriving.add(again)
            continue
        else:
            yield _lost(job, batch[0], _failure(distributed, future))
        done += len(batch)
        if progress is not None:
            progress(done, total)


def _spooled(arrived: Iterator[PartOutcome], spool: PartSpool, metrics: list[str]) -> Iterator[PartOutcome]:
    """The outcomes as they arrive, each written to the spool first. A part without runs (lost,
    not compared) takes the address columns of the last part that had them (the final table's
    come from the plan's last part; a run's sides do not change kind from part to part)."""
    address = (True, True)
    for outcome in arrived:
        part = outcome.result
        if part is not None:
            left_npy, right_npy = part.has_npy
            address = (not left_npy, not right_npy)
        spool.append(SpooledPart(
            outcome.index, outcome.rank, outcome.graph, outcome.iteration, outcome.status,
            rows=part.rows if part is not None else outcome.rows,
            metrics=part.metrics if part is not None else metrics,
            stats=part.stats if part is not None else None, left_address=address[0], right_address=address[1],
            reason=outcome.error))
        yield outcome


def _in_order(arrived: Iterator[PartOutcome], total: int) -> Iterator[PartOutcome]:
    """The outcomes in plan order, each as soon as every part before it is in."""
    waiting: dict[int, PartOutcome] = {}
    following = 0
    for outcome in arrived:
        waiting[outcome.index] = outcome
        while following in waiting:
            yield waiting.pop(following)
            following += 1
    if following != total:  # pragma: no cover - every task gives every part of its batch
        raise RuntimeError(f"the cluster gave back {following} of {total} parts")


def _failure(distributed: ModuleType, future: object) -> str:
    """Why a task failed for good, for the report."""
    if future.status == "cancelled":  # type: ignore[attr-defined]
        return "its cluster task was cancelled (the scheduler lost it)"
    exc = future.exception()  # type: ignore[attr-defined]
    if isinstance(exc, distributed.KilledWorker):
        return ("every worker that ran its cluster task died (out of memory? a crash?): see the Dask workers' "
                "logs")
    return f"its cluster task failed {RETRIES + 1} times: {type(exc).__name__}: {exc}"


def _not_compared(job: EachJob, index: int, reason: str) -> PartOutcome:
    rank, graph, iteration, prefix = part_prefix(job.plan, job.plan.left_leaves[index])
    return PartOutcome(index, rank, graph, iteration, prefix).miss(PartStatus.NOT_COMPARED, reason, job.metrics)


def _lost(worker_job: WorkerJob, index: int, reason: str) -> PartOutcome:
    """A part whose task failed for good: the reason, a not-comparable row per left operator
    (listed here from the leaf's file names or metadata, the part's files fetched first when its
    side is a URL; none when even that fails), and the part's own row (:meth:`PartOutcome.miss`)."""
    job = worker_job.each
    leaf = job.plan.left_leaves[index]
    rank, graph, iteration, prefix = part_prefix(job.plan, leaf)
    try:
        fetch_part(worker_job, index)
        names = part_op_names(leaf)
    except Exception:  # noqa: BLE001 - the part is lost already; listing its operators is a courtesy
        names = []
    rows = [MetricRow(i, None, name, "*", None, metrics={m: None for m in job.metrics},
                      reasons=[f"not compared: {reason}"], status=PairStatus.NOT_COMPARABLE, rank=rank,
                      iteration=iteration, graph=graph) for i, name in enumerate(names)]
    return PartOutcome(index, rank, graph, iteration, prefix).miss(PartStatus.LOST, reason, job.metrics, rows)


__all__ = ["BATCH_FILES", "INSTALL", "RETRIES", "ClusterSpec", "compare_each_on_cluster", "require_dask",
           "run_parts", "task_batches"]

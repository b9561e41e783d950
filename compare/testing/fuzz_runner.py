"""The parallel fuzz run behind ``scripts/fuzz.py``: every target, worker processes, a hang
watchdog, part of the inputs as an unprivileged user, escapes grouped by signature.

    python scripts/fuzz.py --n 50000 --jobs 2 --nobody-share 0.3 --table fuzz.md --json fuzz.json

Targets are those of :mod:`compare.testing.fuzz` (``dump-v2`` ... ``tree``) and of
:mod:`compare.testing.fuzz_formats` (``nano`` ... ``url``). Input ``i`` of target ``t`` uses
``random.Random(f"{seed}/{t}/{i}")``, so any input is reproduced alone (``--targets t --only i``)
whatever the number of processes.

Each worker is a forked process that (when it belongs to the unprivileged pool) drops to
``--nobody-uid`` (``setgroups([])``, ``setgid``, ``setuid``) before it writes its seeds into a
private temporary folder, then takes ``(target, index)`` tasks from its pool's queue. Every input
runs under the :data:`compare.testing.fuzz.DEADLINE` alarm (a **hang** escape); the parent also
kills a worker silent for ``DEADLINE + WATCHDOG_GRACE`` seconds on one input (a hang the alarm
could not interrupt: a C loop) or that died (a crash) and starts another.

An escape's **signature** is its exception type and the innermost frame of the product
(``compare/`` or ``convert/``, not ``compare/testing``) of its traceback -- ``hang``,
``crash`` or ``Invariant: ...`` when there is no traceback -- so that known classes being fixed
elsewhere stay visible as one line each.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare.testing.fuzz import DEADLINE, WEIGHTS, Hang, Outcome, build_corpus, deadline, run_one
from compare.testing.fuzz_formats import FORMAT_TARGETS, build_format_corpus, run_format_target

#: Every target, the first fuzzer's then the new ones.
ALL_TARGETS: tuple[str, ...] = tuple(WEIGHTS) + tuple(FORMAT_TARGETS)

#: Share of ``--n`` per target (relative; normalised over the selected targets). Chosen from the
#: smoke run's seconds per input so that 50,000 inputs take about 15 minutes on 2 cores.
RUN_WEIGHTS: dict[str, float] = {
    "dump-v2": 5, "dump-v1": 4, "npy": 5, "rule": 4, "mapping": 3, "network": 2, "sparse": 2, "names": 1.5,
    "tree": 1.5, "nano": 6, "ffts": 6, "opdebug": 5, "msprobe-json": 6, "pt": 6, "policy": 6, "gate-json": 5,
    "gate-csv": 5, "gate-parquet": 5, "groups": 6, "url": 5,
}

#: Seconds past :data:`DEADLINE` before the parent kills a silent worker.
WATCHDOG_GRACE = 30

#: The unprivileged user of ``--nobody-share`` (nobody / nogroup).
NOBODY = 65534

_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def signature(target: str, outcome: Outcome) -> str:
    """``Type @ path:function`` of an escape (module doc)."""
    kind = outcome.kind or "escape"
    if kind == "hang" or kind.startswith(("Invariant", "crash", "traceback printed", "exit ")):
        return kind.split(":")[0] + (":" + kind.split(":", 1)[1].split("'")[0] if kind.startswith("Invariant") else "")
    frames = _FRAME_RE.findall(outcome.detail or "")
    product = [f for f in frames if re.search(r"/(compare|convert)/", f[0]) and "/compare/testing/" not in f[0]]
    where = product[-1] if product else (frames[-1] if frames else None)
    exc_type = kind.split(":", 1)[0]
    if where is None:
        return exc_type
    path = re.sub(r"^.*/((compare|convert)/)", r"\1", where[0])
    return f"{exc_type} @ {path}:{where[2]}"


def plan(n: int, targets: Sequence[str], counts: dict[str, int] | None = None) -> dict[str, int]:
    """Inputs per target: ``n`` shared by :data:`RUN_WEIGHTS` over ``targets``, then ``counts``."""
    total = sum(RUN_WEIGHTS[t] for t in targets)
    out = {t: int(round(n * RUN_WEIGHTS[t] / total)) for t in targets}
    out.update(counts or {})
    return {t: c for t, c in out.items() if c > 0}


def case_rng(seed: int, target: str, index: int) -> random.Random:
    """The generator of input ``index`` of ``target`` (module doc)."""
    return random.Random(f"{seed}/{target}/{index}")


@dataclass
class Cell:
    """Counts of one (target, uid) line of the summary table."""

    inputs: int = 0
    accepted: int = 0
    refused: int = 0
    escapes: int = 0
    hangs: int = 0
    lost: int = 0
    seconds: float = 0.0


@dataclass
class RunReport:
    """What a parallel run found."""

    seed: int
    jobs: int
    seconds: float = 0.0
    cells: dict[tuple[str, int], Cell] = field(default_factory=dict)
    signatures: dict[str, Counter] = field(default_factory=dict)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)
    kinds: Counter = field(default_factory=Counter)

    @property
    def escapes(self) -> int:
        """All escapes (hangs and lost operators included)."""
        return sum(c.escapes for c in self.cells.values())

    def add(self, target: str, uid: int, index: int, outcome: Outcome, seconds: float) -> None:
        """Count one input."""
        cell = self.cells.setdefault((target, uid), Cell())
        cell.inputs += 1
        cell.seconds += seconds
        if outcome.kind:
            self.kinds[f"[{target}] {outcome.kind}"] += 1
        if outcome.verdict == "accepted":
            cell.accepted += 1
        elif outcome.verdict == "refused":
            cell.refused += 1
        else:
            cell.escapes += 1
            cell.hangs += outcome.kind in ("hang", "hang (killed)")
            cell.lost += "lost operator" in outcome.kind or "lost operator" in outcome.detail
            sig = signature(target, outcome)
            self.signatures.setdefault(target, Counter())[sig] += 1
            self.examples.setdefault((target, sig), f"--targets {target} --seed {self.seed} --only {index} "
                                                    f"(uid {uid})\n{outcome.detail[-3000:]}")

    def table(self) -> str:
        """The markdown summary table (target, uid, inputs, escapes, hangs, lost operators, seconds)."""
        lines = ["| target | uid | inputs | accepted | refused | escapes | hangs | lost operators | seconds |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        total = Cell()
        for (target, uid), c in sorted(self.cells.items(), key=lambda kv: (ALL_TARGETS.index(kv[0][0]), kv[0][1])):
            lines.append(f"| {target} | {uid} | {c.inputs} | {c.accepted} | {c.refused} | {c.escapes} | {c.hangs} | "
                         f"{c.lost} | {c.seconds:.0f} |")
            for name in ("inputs", "accepted", "refused", "escapes", "hangs", "lost", "seconds"):
                setattr(total, name, getattr(total, name) + getattr(c, name))
        uids = ", ".join(str(u) for u in sorted({u for _, u in self.cells}))
        lines.append(f"| **all** | {uids} | {total.inputs} | {total.accepted} | {total.refused} | {total.escapes} | "
                     f"{total.hangs} | {total.lost} | {total.seconds:.0f} (wall {self.seconds:.0f}, "
                     f"{self.jobs} processes) |")
        return "\n".join(lines) + "\n"

    def text(self, keep: int = 3) -> str:
        """The table, the escape signatures by target, and ``keep`` examples per target."""
        lines = [f"vcompare fuzz: seed {self.seed}, {sum(c.inputs for c in self.cells.values())} inputs in "
                 f"{self.seconds:.1f} s on {self.jobs} processes", "", self.table(),
                 f"escapes: {self.escapes}"]
        for target in ALL_TARGETS:
            sigs = self.signatures.get(target)
            if not sigs:
                continue
            lines.append(f"\n[{target}] {sum(sigs.values())} escapes, {len(sigs)} signatures")
            lines += [f"{count:>7}  {sig}" for sig, count in sigs.most_common()]
        shown = 0
        for (target, sig), example in self.examples.items():
            if shown >= keep * max(1, len(self.signatures)):
                break
            lines += ["", f"--- [{target}] {sig}", example]
            shown += 1
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        """The report as JSON."""
        return {"seed": self.seed, "jobs": self.jobs, "seconds": round(self.seconds, 1),
                "cells": [{"target": t, "uid": u, **vars(c)} for (t, u), c in self.cells.items()],
                "signatures": {t: dict(c.most_common()) for t, c in self.signatures.items()},
                "examples": {f"[{t}] {s}": e for (t, s), e in self.examples.items()},
                "kinds": dict(self.kinds.most_common())}


# ============================================================================ one input


def run_input(target: str, corpora: tuple[Any, Any], rng: random.Random, work: Path, *,
              alarm: int = DEADLINE) -> Outcome:
    """One input of any target, under the alarm (a hang and a MemoryError are escapes); ``alarm``
    applies to the new targets (the first fuzzer's keep :data:`DEADLINE`)."""
    corpus, formats = corpora
    if target in FORMAT_TARGETS:
        try:
            with deadline(alarm):
                return run_format_target(target, formats, rng, work)
        except Hang as exc:
            return Outcome("escape", "hang", f"{target}: {exc}")
        except MemoryError:
            return Outcome("escape", "MemoryError", traceback.format_exc())
    return run_one(target, corpus, rng, work)


def build_corpora(root: Path) -> tuple[Any, Any]:
    """The first fuzzer's corpus and the new targets' seeds under ``root``."""
    corpus = build_corpus(root / "corpus")
    return corpus, build_format_corpus(root / "formats", corpus.network)


#: Inputs of every selected target the parent runs before forking unprivileged workers.
WARM_UP = 4


def warm_up(targets: Iterable[str], seed: int) -> None:
    """Run a few inputs of every target in this process (results dropped) so that every module
    the targets import lazily is imported before the fork: an unprivileged worker may not be
    able to read the interpreter's own files (a Python under ``/root/.pyenv``)."""
    import fsspec  # noqa: F401 - the url target's store
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    from typer.testing import CliRunner  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="vcompare-fuzz-warm-") as tmp:
        previous = os.environ.get("VCOMPARE_REMOTE_CACHE")
        os.environ["VCOMPARE_REMOTE_CACHE"] = str(Path(tmp) / "remote-cache")
        try:
            corpora = build_corpora(Path(tmp))
            work = Path(tmp) / "work"
            work.mkdir()
            for target in targets:
                for index in range(WARM_UP):
                    try:
                        run_input(target, corpora, case_rng(seed + 1, target, index), work)
                    except Exception:  # noqa: BLE001 - a harness error shows again in the workers' count
                        pass
        finally:
            if previous is None:
                os.environ.pop("VCOMPARE_REMOTE_CACHE", None)
            else:
                os.environ["VCOMPARE_REMOTE_CACHE"] = previous


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (group ``uid``, no supplementary groups) for good."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _worker(uid: int | None, seed: int, tasks: Any, results: Any, alarm: int) -> None:
    """A worker process: drop privileges, write the seeds, run tasks until ``None``; every
    message goes to ``results`` (its own pipe) before the next step."""
    if uid is not None and os.getuid() != uid:
        drop_privileges(uid)
    me = os.getuid()
    tmp = Path(tempfile.mkdtemp(prefix=f"vcompare-fuzz-{me}-"))
    try:
        os.environ["VCOMPARE_REMOTE_CACHE"] = str(tmp / "remote-cache")
        corpora = build_corpora(tmp)
        work = tmp / "work"
        work.mkdir()
        results.send(("ready", os.getpid(), str(tmp)))
        while True:
            task = tasks.get()
            if task is None:
                break
            target, index = task
            results.send(("start", os.getpid(), target, index, me))
            started = time.perf_counter()
            try:
                outcome = run_input(target, corpora, case_rng(seed, target, index), work, alarm=alarm)
            except BaseException as exc:  # noqa: BLE001 - the harness itself must report, not die
                outcome = Outcome("escape", f"harness {type(exc).__name__}", traceback.format_exc())
            results.send(("done", os.getpid(), target, index, me, outcome.verdict, outcome.kind, outcome.detail,
                         time.perf_counter() - started))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ============================================================================ the run


@dataclass
class _Pool:
    uid: int | None
    tasks: Any
    size: int
    procs: dict[int, Any] = field(default_factory=dict)


def run_parallel(counts: dict[str, int], seed: int, *, jobs: int = 2, nobody_share: float = 0.0,
                 nobody_uid: int = NOBODY, only: Iterable[int] | None = None, progress: bool = False,
                 alarm: int = DEADLINE, grace: float = WATCHDOG_GRACE) -> RunReport:
    """Run ``counts[target]`` inputs of each target on ``jobs`` worker processes (module doc).

    ``nobody_share``: the share of each target's inputs run by workers that dropped to
    ``nobody_uid`` (needs root; those workers are ``round(jobs * share)``, at least one, and
    with a share below 1 at least one worker keeps root: ``jobs=1`` then runs two processes).
    ``only``: run just these input indices of every target (reproducing an escape). ``alarm``:
    seconds per input of the new targets; ``grace``: seconds past it before the watchdog kills.
    """
    if nobody_share > 0:
        warm_up(counts, seed)
    ctx = mp.get_context("fork")
    if nobody_share > 0 and os.getuid() != 0:
        raise SystemExit("--nobody-share needs root (or run the whole runner under setpriv, see docs/reliability.md)")
    pools: list[_Pool] = []
    nobody_jobs = 0 if nobody_share <= 0 else max(1, min(jobs - (nobody_share < 1), round(jobs * nobody_share)))
    root_jobs = jobs - nobody_jobs if nobody_share <= 0 or nobody_share >= 1 else max(1, jobs - nobody_jobs)
    if root_jobs > 0:
        pools.append(_Pool(None, ctx.Queue(), root_jobs))
    if nobody_jobs:
        pools.append(_Pool(nobody_uid, ctx.Queue(), nobody_jobs))
    report = RunReport(seed=seed, jobs=jobs)
    pending = 0
    indices = sorted(set(only)) if only is not None else None
    for target, count in counts.items():
        for index in (indices if indices is not None else range(count)):
            as_nobody = nobody_jobs and (len(pools) == 1 or int((index + 1) * nobody_share) > int(index * nobody_share))
            (pools[-1] if as_nobody else pools[0]).tasks.put((target, index))
            pending += 1
    for pool in pools:
        for _ in range(pool.size):
            pool.tasks.put(None)

    readers: list[Any] = []
    pipes: dict[int, Any] = {}
    folders: dict[int, str] = {}  # worker -> its temporary folder (removed here when it was killed or died)

    def start(pool: _Pool) -> None:
        # one pipe per worker, written synchronously: a worker killed or crashed mid-message
        # cannot hold a lock that the others need (a shared Queue's would deadlock the run)
        reader, writer = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(pool.uid, seed, pool.tasks, writer, alarm), daemon=True)
        proc.start()
        writer.close()
        readers.append(reader)
        pipes[proc.pid] = reader
        pool.procs[proc.pid] = proc

    for pool in pools:
        for _ in range(pool.size):
            start(pool)
    in_flight: dict[int, tuple[str, int, int, float]] = {}
    ready: set[int] = set()
    began = time.perf_counter()
    done = 0
    def handle(message: tuple) -> None:
        nonlocal done
        if message[0] == "ready":
            ready.add(message[1])
            folders[message[1]] = message[2]
        elif message[0] == "start":
            _, pid, target, index, uid = message
            in_flight[pid] = (target, index, uid, time.perf_counter())
        else:
            _, pid, target, index, uid, verdict, kind, detail, seconds = message
            in_flight.pop(pid, None)
            report.add(target, uid, index, Outcome(verdict, kind, detail), seconds)
            done += 1
            if progress and done % 500 == 0:
                print(f"  {done}/{pending} inputs, {report.escapes} escapes, {time.perf_counter() - began:.0f} s",
                      file=sys.stderr, flush=True)

    def receive(reader: Any, *, drain: bool) -> None:
        """One message of ``reader`` (all of them when ``drain``); a closed pipe leaves ``readers``."""
        while reader in readers:
            try:
                if drain and not reader.poll():
                    return
                handle(reader.recv())
            except (EOFError, OSError):  # the worker exited (or was killed)
                readers.remove(reader)
                return
            if not drain:
                return

    while done < pending:
        for reader in mp_connection.wait(readers, timeout=min(5.0, max(grace / 2, 0.2))):
            receive(reader, drain=False)
        now = time.perf_counter()
        for pool in pools:
            for pid, proc in list(pool.procs.items()):
                if not proc.is_alive():  # what it said before it ended counts first
                    receive(pipes[pid], drain=True)
                flight = in_flight.get(pid)
                stuck = flight is not None and now - flight[3] > alarm + grace
                died = not proc.is_alive() and proc.exitcode not in (0, None)
                if not (stuck or died):
                    if not proc.is_alive():
                        del pool.procs[pid]
                    continue
                if died and pid not in ready:
                    raise RuntimeError(f"a worker (uid {pool.uid if pool.uid is not None else os.getuid()}) "
                                       f"could not write its seeds (exit code {proc.exitcode}; its traceback is above)")
                if stuck:
                    proc.kill()
                proc.join(5)
                del pool.procs[pid]
                if pid in folders:
                    shutil.rmtree(folders.pop(pid), ignore_errors=True)
                if pipes[pid] in readers:
                    readers.remove(pipes[pid])
                if flight is not None:
                    in_flight.pop(pid, None)
                    target, index, uid, t0 = flight
                    kind = "hang (killed)" if stuck else f"crash (exit code {proc.exitcode})"
                    report.add(target, uid, index, Outcome("escape", kind, f"{target} input {index}: {kind}"),
                               now - t0)
                    done += 1
                start(pool)
    for pool in pools:
        for proc in pool.procs.values():
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    report.seconds = time.perf_counter() - began
    return report


__all__ = ["ALL_TARGETS", "NOBODY", "RUN_WEIGHTS", "RunReport", "build_corpora", "case_rng", "drop_privileges",
           "plan", "run_input", "run_parallel", "signature"]

#!/usr/bin/env python3
"""End-to-end benchmark: vcompare against a plain-numpy float64 baseline and, where installed,
the reference tool, in one run.

    python scripts/bench.py --size-gb 1.8 --small-ops 10000 --scale 10000,30000,100000   # the issue's suite
    python scripts/bench.py --size-gb 0.02 --ops 10 --runs 1 --no-baseline               # CI smoke test
    python scripts/bench.py --size-gb 0 --ranks 8 --dask local:2                         # issue 18: Dask overhead
    python scripts/bench.py --size-gb 0 --msprobe-stats 706 --rows 10000,100000,1000000     # issue 31: per row
    VCOMPARE_REFERENCE='python3 msaccucmp.py compare -m {left} -g {right} -f {fusion} -out {out}' \
        python scripts/bench.py --size-gb 1.8 --small-ops 10000 --write-doc docs/performance.md --label after

Cases (each generated once, cached in --workdir and keyed by its parameters, with
``compare.testing.synthetic_large.make_large_network``): the **large** network (``--size-gb``, ``--ops``:
~300 operators of NC1HWC0 / FRACTAL_Z / FRACTAL_NZ fp16 dumps against fp32 ``.npy`` goldens), the
**many-small-tensors** network (``--small-ops``: 20 KB of dumps an operator, LLM style) and a
**scaling curve** of many-small networks by tensor count (``--scale``; a least-squares line through
the warm times shows the per-row cost and how linear it is), and the **multi-rank** case
(``--ranks N``: ``compare.testing.synthetic_rank_trees``, N ranks x ``--iterations`` of ``--rank-ops``
operators of small tensors) compared in turn and on the Dask cluster ``--dask`` alternately.

The **msprobe statistics** cases (``--msprobe-stats REPEAT``, ``--rows``) are the real statistics
trees ``../shared/msprobe-real/trees/s_L1_perturb`` / ``s_L1_base`` (105 calls, 380 report rows)
with their calls repeated (``scripts/bench_msprobe_stats.py``'s ``repeat_tree``): REPEAT 706 is the
issue's 74,130 calls a side, timed beside ``msprobe compare`` when ``--msprobe`` /
``VCOMPARE_MSPROBE`` names its entry point (skipped with a note otherwise). ``--rows`` sizes such
cases by report rows (10,000 / 100,000 / 1,000,000): the 1,000,000-row case is of this family
because LLM dumps at that scale are statistics dumps (msprobe's default task: one ``dump.json`` of
max / min / mean / norm a tensor -- dumping every tensor of a large model is terabytes), its files
are two JSON documents (~0.37 GB, generated in seconds, where a million small tensor files would be
two million files), and its cost is vcompare's per-row Python alone, no kernel and no bytes:
exactly what a columnar engine removes. Every case measured by rows, the tensor cases of the run
included, goes into one **per-row table**: us a row (wall and CPU), peak RSS, bytes a row, the
marginal CPU a row between sizes and the CPU a row against the smallest size (flat = 1.00).

Each case runs ``vcompare`` as a subprocess: once **cold** (a fresh process with empty user kernel
caches: it uses the kernel objects built at install time, or builds them, and says which; the
case's files are read once before it, so that "cold" is about vcompare's first run, not about the
operating system's file cache, which the cases run before may have evicted), then
``--runs`` times **warm** (median reported). Every run records wall time and the child's peak RSS
(``os.wait4``). The **numpy baseline** runs in a subprocess too: the same pairs loaded with the same
readers and layout conversion, the ten metrics in plain float64 numpy, one pair at a time. The
**reference tool** runs once per case when ``--reference`` / ``VCOMPARE_REFERENCE`` gives its
command. Ratios are always between figures of the same run on the same machine. Tests never assert
on these numbers; they are for humans and docs/performance.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_msprobe_stats  # the statistics cases' generator, beside this script (after the path above)

VCOMPARE = [sys.executable, "-c", "from compare.cli import main; main()"]


@dataclass(frozen=True)
class Timing:
    """One run of a command as a whole process: wall and CPU seconds (user + system of the child,
    ``os.wait4``), its peak RSS in MiB and its exit code."""

    wall: float
    cpu: float
    rss: int
    code: int


#: The measuring parent of every timed command (``python -S -c _MEASURE FD CMD...``): a fresh, small
#: interpreter forks and execs CMD, waits for it and writes "wall cpu maxrss" to the pipe FD. Linux counts
#: in a child's ``ru_maxrss`` the memory of the process it was forked from (measured: a child
#: ``python -c pass`` of a parent holding 500 MiB reports 513 MiB), so a command spawned straight
#: from this script would report this script's own RSS (the generated cases, the parsed JSON) as
#: its peak; forked from this small parent, its peak is its own.
_MEASURE = """
import os, sys, time
start = time.perf_counter()
out = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    try:
        os.close(out)
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
os.write(out, f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}".encode())
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def _timed(cmd: list[str], env: dict[str, str] | None = None, *, check: bool = True) -> Timing:
    """Run ``cmd`` and measure it (through :data:`_MEASURE`: its own wall and CPU seconds, its own
    peak RSS). With ``check``, an exit code other than 0, 1 or 3 (1 / 3: a gate failed / was
    incomplete -- the run itself worked) stops the benchmark with the command's stderr."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-c", _MEASURE, str(write_end), *cmd],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    err = proc.stderr.read() if proc.stderr else b""  # drained while it runs: a full pipe would block it
    code = proc.wait()
    with os.fdopen(read_end, "rb") as handle:
        measured = handle.read().split()
    if check and code not in (0, 1, 3):
        raise SystemExit(f"command failed ({code}): {' '.join(cmd)}\n{err.decode(errors='replace')}")
    if len(measured) != 3:  # the measuring parent itself failed (cannot happen short of a kill)
        raise SystemExit(f"no measurement of: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    wall, cpu, rss = measured
    return Timing(wall=float(wall), cpu=float(cpu), rss=int(rss) // 1024, code=code)


def _case(workdir: Path, size_gb: float, n_ops: int, seed: int) -> dict[str, Path]:
    from compare.testing.synthetic_large import make_large_network

    key = {"size_gb": size_gb, "n_ops": n_ops, "seed": seed, "version": 1}
    stamp = workdir / "params.json"
    paths = {"left": workdir / "npu", "right": workdir / "golden", "fusion_rule": workdir / "model.json"}
    if stamp.exists() and json.loads(stamp.read_text()) == key:
        return paths
    if workdir.exists():
        import shutil

        shutil.rmtree(workdir)
    print(f"generating {size_gb} GB, {n_ops} ops in {workdir} ...", flush=True)
    t0 = time.perf_counter()
    made = make_large_network(workdir, size_gb=size_gb, n_ops=n_ops, seed=seed)
    print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    stamp.write_text(json.dumps(key))
    return {k: made[k] for k in paths}


def _read_all(folders: list[Path]) -> None:
    """Read every file under ``folders`` once (into one reused buffer): brings the case into the
    operating system's file cache before it is timed."""
    buf = bytearray(1 << 22)
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                with open(path, "rb", buffering=0) as handle:
                    while handle.readinto(buf):
                        pass


def _dump_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def baseline(left: str, right: str, rule: str) -> None:
    """Plain float64 numpy metrics over the same pairs (run in a subprocess by main)."""
    import numpy as np

    from compare.runs.loading import load_and_pair
    from convert.layouts import prepare_pair

    eps = np.finfo(np.float64).eps
    _, _, _, _, pairing = load_and_pair(left, right, rule)
    count = 0
    for pair in pairing.pairs:
        if pair.left is None or pair.right is None or pair.reason:
            continue
        try:
            a, b = pair.left.load(), pair.right.load()
            x, y, _ = prepare_pair(a, pair.left.format, pair.left.shape, b, pair.golden_format or "",
                                   target_shape=pair.target_shape, golden_shape=b.shape,
                                   sub_format=pair.left.sub_format)
        except Exception:  # noqa: BLE001 - the baseline skips what it cannot prepare
            continue
        x = x.astype(np.float64)
        y = y.astype(np.float64)
        d = x - y
        _cos = (x @ y) / (np.linalg.norm(x) * np.linalg.norm(y))
        _maxabs = np.abs(d).max()
        mask = np.abs(y) > eps
        rel = np.where(mask, np.abs(np.divide(x, y, out=np.zeros_like(x), where=mask) - 1), 0.0)
        _acc, _maxrel, _meanrel = rel.sum(), rel.max(), rel.mean()
        _red = np.sqrt((d * d).sum() / (y * y).sum())
        p = np.maximum((x - x.min()) / (np.ptp(x) or 1), 1.1920929e-07)
        q = np.maximum((y - y.min()) / (np.ptp(y) or 1), 1.1920929e-07)
        p, q = p / p.sum(), q / q.sum()
        _kl = (p * np.log(p / q)).sum()
        _std = (x.mean(), x.std(), y.mean(), y.std())
        _meanabs, _rmse = np.abs(d).mean(), np.sqrt((d * d).mean())
        count += 1
    print(f"baseline compared {count} pairs", file=sys.stderr)


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import numba
    import numpy

    return (f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}")


def _regate_line(cmd: list[str], saved: Path, gate: str, runs: int) -> str:
    """Re-gating the benchmark's JSON result without recomputing (issue 13: well under 0.5 s).

    The comparison is run once more with ``--json``; then ``vcompare gate saved.json --gate GATE``
    is timed as a subprocess (what a CI job runs: interpreter start, reading the JSON, evaluating)
    and :func:`compare.api.regate` in-process (reading + evaluating only); medians over ``runs``.
    """
    _timed(cmd + ["--json", str(saved)])
    rows = len(json.loads(saved.read_text())["rows"])
    size = saved.stat().st_size / 2**20
    walls = [_timed(VCOMPARE + ["gate", str(saved), "--gate", gate, "--quiet"]).wall for _ in range(max(1, runs))]
    from compare.api import regate

    regate(saved, gates=[gate])  # imports done once, as in a running process
    inner = []
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        verdict = regate(saved, gates=[gate]).verdict
        inner.append(time.perf_counter() - start)
    return (f"re-gate of the JSON result ({rows} rows, {size:.1f} MiB; {gate}: {verdict.outcome.name}): "
            f"vcompare gate median {statistics.median(walls):.3f} s (subprocess, start-up included), "
            f"regate() median {statistics.median(inner):.3f} s in-process")


#: Bytes of left dump per operator in the many-small-tensors cases (0.2 GB for 10,000 ops, about
#: 3.6 tensors an operator: LLM-style dumps of small tensors).
SMALL_BYTES_PER_OP = 20_000
#: Tensor pairs per operator in the generated networks (measured: 35,585 pairs for 10,000 ops).
PAIRS_PER_OP = 3.56


@dataclass
class CaseResult:
    """One measured case: what ran and how long it took."""

    name: str
    ops: int
    pairs: int
    dump_gb: float
    golden_gb: float
    cold: float | None
    cold_rss: int | None
    cold_built: bool | None
    warm: list[float]
    warm_cpu: list[float]
    warm_rss: int
    baseline: float | None = None
    baseline_rss: int | None = None
    reference: float | None = None
    reference_rss: int | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.warm)


def _pairs_in(result_csv: Path) -> int:
    """Rows of a CSV report (records, not lines: a statistics report's cells may hold line breaks)."""
    with result_csv.open(newline="") as handle:
        return max(sum(1 for _ in csv.reader(handle)) - 1, 0)


def _reference_cmd(template: str, paths: dict[str, Path], out: Path) -> list[str]:
    """The reference tool's command line from ``--reference`` / ``VCOMPARE_REFERENCE`` (a template
    with ``{left}``, ``{right}``, ``{fusion}`` and ``{out}``)."""
    return shlex.split(template.format(left=paths["left"], right=paths["right"], fusion=paths["fusion_rule"],
                                       out=out))


def measure(name: str, paths: dict[str, Path], workdir: Path, *, runs: int, cold: bool, baseline_runs: int,
            reference: str | None, ops: int) -> CaseResult:
    """Time vcompare on one generated case (subprocesses; see the module docstring)."""
    out = workdir / f"result_{name}.csv"
    cmd = VCOMPARE + ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"]),
                      "-o", str(out), "--quiet"]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: Python's byte-code cache on
    cold_wall = cold_rss = built = None
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            _read_all([paths["left"], paths["right"]])
            # a fresh user: empty kernel caches (the objects packaged at install time, if any, are used)
            cold_env = dict(env, VCOMPARE_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache)
            first = _timed(cmd, cold_env)
            cold_wall, cold_rss = first.wall, first.rss
            built = any(Path(cache).iterdir())
            env = cold_env
        warm = [_timed(cmd, env) for _ in range(runs)]
    result = CaseResult(name=name, ops=ops, pairs=_pairs_in(out), dump_gb=_dump_bytes(paths["left"]) / 1e9,
                        golden_gb=_dump_bytes(paths["right"]) / 1e9, cold=cold_wall, cold_rss=cold_rss,
                        cold_built=built, warm=[t.wall for t in warm], warm_cpu=[t.cpu for t in warm],
                        warm_rss=max(t.rss for t in warm))
    if baseline_runs:
        base = [_timed([sys.executable, __file__, "--_baseline", str(paths["left"]), str(paths["right"]),
                        str(paths["fusion_rule"])]) for _ in range(baseline_runs)]
        result.baseline = statistics.median(t.wall for t in base)
        result.baseline_rss = max(t.rss for t in base)
    if reference:
        ref_out = workdir / f"reference_{name}"
        ref_out.mkdir(parents=True, exist_ok=True)
        ref = _timed(_reference_cmd(reference, paths, ref_out))
        result.reference, result.reference_rss = ref.wall, ref.rss
    return result


def _ratio(other: float | None, ours: float | None) -> str:
    if other is None or ours is None or ours <= 0:
        return "-"
    return f"{other / ours:.1f}x"


def report_lines(case: CaseResult) -> list[str]:
    """Human lines for one case: times, RSS and the ratios to the baseline and the reference."""
    lines = [f"case {case.name}: {case.ops} ops, {case.pairs} tensor rows, left dumps {case.dump_gb:.3f} GB "
             f"(fp16), goldens {case.golden_gb:.3f} GB (fp32 .npy)"]
    if case.cold is not None:
        how = "built the kernel objects" if case.cold_built else "used the kernel objects built at install time"
        lines.append(f"  cold (fresh process, empty user cache; {how}): {case.cold:.2f} s, peak RSS {case.cold_rss} MiB"
                     f" = {case.cold / case.median:.2f}x warm + {case.cold - case.median:.2f} s")
    walls = case.warm
    lines.append(f"  warm: median {case.median:.2f} s over {len(walls)} runs (min {min(walls):.2f}, max {max(walls):.2f}), "
                 f"{case.dump_gb / case.median:.2f} GB/s, {case.median / max(case.pairs, 1) * 1e6:.0f} us per tensor row, "
                 f"peak RSS {case.warm_rss} MiB, CPU median {statistics.median(case.warm_cpu):.2f} s")
    if case.baseline is not None:
        lines.append(f"  numpy float64 baseline: {case.baseline:.2f} s, peak RSS {case.baseline_rss} MiB; vcompare "
                     f"{_ratio(case.baseline, case.median)} faster, RSS ratio {case.baseline_rss / case.warm_rss:.2f}")
    if case.reference is not None:
        lines.append(f"  reference tool: {case.reference:.2f} s, peak RSS {case.reference_rss} MiB; vcompare warm "
                     f"{_ratio(case.reference, case.median)} faster, cold {_ratio(case.reference, case.cold)} faster, "
                     f"RSS ratio {case.reference_rss / case.warm_rss:.2f}")
    return lines


def scaling_lines(points: list[CaseResult]) -> list[str]:
    """The scaling curve: warm time against tensor rows, a least-squares line through it and how
    far each point is from that line (linear means: small, constant per-row cost)."""
    xs = [float(p.pairs) for p in points]
    ys = [p.median for p in points]
    lines = ["scaling (warm time vs tensor rows, many small tensors):"]
    if len(points) >= 2:
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
        icept = my - slope * mx
        for p, x, y in zip(points, xs, ys):
            fit = icept + slope * x
            lines.append(f"  {p.pairs:>7} rows: {y:7.2f} s ({y / x * 1e6:5.0f} us a row; line {fit:.2f} s, "
                         f"{(y - fit) / fit * 100 if fit else 0:+.0f}%)")
        lines.append(f"  fit: {icept:.2f} s + {slope * 1e6:.1f} us x rows")
    else:
        lines += [f"  {p.pairs} rows: {p.median:.2f} s" for p in points]
    return lines


def _rank_case(workdir: Path, ranks: int, iterations: int, ops: int, elements: int, seed: int) -> dict[str, Path]:
    """The multi-rank case (``compare.testing.synthetic_rank_trees``), generated once and cached."""
    from compare.testing.synthetic_rank_trees import make_rank_trees

    key = {"ranks": ranks, "iterations": iterations, "ops": ops, "elements": elements, "seed": seed, "version": 1}
    stamp = workdir / "params.json"
    paths = {"left": workdir / "left", "right": workdir / "right"}
    if stamp.exists() and json.loads(stamp.read_text()) == key:
        return paths
    if workdir.exists():
        import shutil

        shutil.rmtree(workdir)
    print(f"generating {ranks} ranks x {iterations} iterations x {ops} ops in {workdir} ...", flush=True)
    t0 = time.perf_counter()
    make_rank_trees(workdir, ranks=ranks, iterations=iterations, ops=ops, elements=elements, seed=seed)
    print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
    stamp.write_text(json.dumps(key))
    return paths


def _task_overhead(cluster: str, tasks: int = 1000) -> tuple[float, float]:
    """(seconds to start and stop the cluster, seconds a task) of ``local:N``: a LocalCluster as
    vcompare starts it, and ``tasks`` empty tasks through it (submit to result, all in flight)."""
    import logging

    from distributed import Client, LocalCluster

    workers = int(cluster.split(":", 1)[1])
    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL,
                      dashboard_address=":0") as running, Client(running, set_as_default=False) as client:
        up = time.perf_counter() - start
        client.gather(client.map(abs, range(-10, 0), pure=False))  # the workers warm
        start = time.perf_counter()
        client.gather(client.map(abs, range(tasks), pure=False))
        per_task = (time.perf_counter() - start) / tasks
        start = time.perf_counter()
    return up + (time.perf_counter() - start), per_task


def _client_costs(paths: dict[str, Path], workdir: Path, cluster: str) -> str:
    """Where the client's time goes in one cluster run, in this process: planning and waiting for
    the parts (to the last arrival), the localisation, the CSV and the JSON (seconds, and us a row)."""
    from compare.api import compare_network
    from compare.reports.network import write_report

    where = {"cluster": cluster} if cluster.startswith("local:") else {"scheduler": cluster}
    arrivals: list[float] = []
    start = time.perf_counter()
    result = compare_network(paths["left"], paths["right"], rank="all", iteration="all",
                             progress=lambda done, total: arrivals.append(time.perf_counter()), **where)
    merged = time.perf_counter()
    result.localisation
    localised = time.perf_counter()
    write_report(result.rows, workdir / "ranks_costs.csv", result.metrics)
    csv_done = time.perf_counter()
    result.write_json(workdir / "ranks_costs.json")  # the --json writer (rows streamed)
    json_done = time.perf_counter()
    rows = max(1, len(result.rows))
    last = (arrivals[-1] if arrivals else merged) - start

    def cost(seconds: float) -> str:
        return f"{seconds:.2f} s ({seconds / rows * 1e6:.0f} us a row)"

    return (f"  client, in-process (one run): start, plan and parts to the last arrival {last:.2f} s, merge and "
            f"cluster stop after it {merged - start - last:.2f} s, localisation {cost(localised - merged)}, "
            f"CSV {cost(csv_done - localised)}, JSON {cost(json_done - csv_done)}")


def rank_lines(paths: dict[str, Path], workdir: Path, cluster: str, runs: int, ranks: int, iterations: int,
               ops: int) -> list[str]:
    """The multi-rank case compared in turn here and on the Dask cluster (``--dask``), alternately,
    ``runs`` times each: wall times, the overhead of the cluster run against the in-turn run, the
    reports compared byte for byte, and the per-worker throughput and task cost behind the paper
    estimate of docs/performance.md."""
    base = VCOMPARE + ["-l", str(paths["left"]), "-r", str(paths["right"]), "--rank", "all", "--iteration", "all",
                       "--quiet"]
    option = ["--dask-cluster", cluster] if cluster.startswith("local:") else ["--scheduler", cluster]
    here_cmd = base + ["-o", str(workdir / "ranks_here.csv")]
    there_cmd = base + option + ["-o", str(workdir / "ranks_there.csv")]
    here, there = [], []
    for _ in range(max(1, runs)):
        here.append(_timed(here_cmd))
        there.append(_timed(there_cmd))
    same = (workdir / "ranks_here.csv").read_bytes() == (workdir / "ranks_there.csv").read_bytes()
    # once more each with --json (not timed: writing 80,000 rows as JSON is the same work in both): the parts' times
    for cmd, name in ((here_cmd, "here"), (there_cmd, "there")):
        _timed(cmd + ["--json", str(workdir / f"ranks_{name}.json")])
    document = json.loads((workdir / "ranks_there.json").read_text())
    local_doc = json.loads((workdir / "ranks_here.json").read_text())
    rows = len(document["rows"])
    part_seconds = sum(p["seconds"] for p in document["parts"])
    workers = sorted({p["worker"] for p in document["parts"]})
    data_gb = (_dump_bytes(paths["left"]) + _dump_bytes(paths["right"])) / 1e9
    h, t = statistics.median(r.wall for r in here), statistics.median(r.wall for r in there)
    mib = (_dump_bytes(paths["left"]) + _dump_bytes(paths["right"])) / rows / 2**20
    lines = [f"case ranks: {ranks} ranks x {iterations} iterations x {ops} ops, {mib:.3f} MiB a tensor pair "
             f"(MindSpore .npy trees, {len(document['parts'])} parts, {rows} tensor rows, {data_gb:.3f} GB both sides)",
             f"  in turn here: median {h:.2f} s over {len(here)} runs (min {min(r.wall for r in here):.2f}, "
             f"max {max(r.wall for r in here):.2f}), peak RSS {max(r.rss for r in here)} MiB; parts "
             f"{sum(p['seconds'] for p in local_doc['parts']):.2f} s",
             f"  on Dask {cluster} ({len(workers)} workers): median {t:.2f} s (min {min(r.wall for r in there):.2f}, "
             f"max {max(r.wall for r in there):.2f}), peak RSS {max(r.rss for r in there)} MiB (largest process); "
             f"{t / h:.2f}x the in-turn time, overhead {(t - h) / h * 100:+.1f} % of it",
             f"  the same CSV byte for byte: {'yes' if same else 'NO'}",
             f"  per worker: {part_seconds:.2f} s of parts over {len(workers)} workers = "
             f"{rows / part_seconds:.0f} tensor rows/s, {data_gb / part_seconds:.3f} GB/s (both sides read) a worker"]
    if cluster.startswith("local:"):
        up, per_task = _task_overhead(cluster)
        busy = part_seconds / max(1, len(workers))
        lines.append(f"  LocalCluster start + stop {up:.2f} s; an empty task {per_task * 1e3:.2f} ms (1000 in flight); "
                     f"wall minus the busiest-worker estimate (parts / workers = {busy:.2f} s): {t - busy:.2f} s")
    lines.append(_client_costs(paths, workdir, cluster))
    return lines


# --------------------------------------------------------------------------- msprobe statistics at LLM scale


#: The issue's msprobe-statistics case: the real trees' 105 calls repeated 706 times (74,130 calls a side).
STATS_REPEAT = 706


@dataclass(frozen=True)
class StatsCase:
    """A generated msprobe statistics case: the two dump roots (``step0/proc*/dump.json`` under
    each), the repeat count, the calls a side and the bytes of one side's ``dump.json``."""

    left: Path
    right: Path
    repeat: int
    calls: int
    json_bytes: int


def _stats_case(workdir: Path, repeat: int) -> StatsCase:
    """The real msprobe statistics trees (``s_L1_perturb`` / ``s_L1_base``, 105 calls) with their
    calls repeated ``repeat`` times by :func:`bench_msprobe_stats.repeat_tree` (each repeat's call
    counters shifted, so names stay unique), written once into ``workdir`` and cached by its
    parameters."""
    source = Path(bench_msprobe_stats.TREES)
    key = {"repeat": repeat, "source": str(source), "version": 1}
    stamp = workdir / "params.json"
    left, right = workdir / "perturb", workdir / "base"
    if not (stamp.exists() and json.loads(stamp.read_text()) == key):
        if not (source / "s_L1_perturb").is_dir():
            raise SystemExit(f"{source} has no s_L1_perturb: the msprobe statistics cases need ../shared/msprobe-real")
        if workdir.exists():
            import shutil

            shutil.rmtree(workdir)
        print(f"generating msprobe statistics, {repeat} repeats of the real calls, in {workdir} ...", flush=True)
        t0 = time.perf_counter()
        bench_msprobe_stats.repeat_tree(source / "s_L1_perturb", left, repeat)
        bench_msprobe_stats.repeat_tree(source / "s_L1_base", right, repeat)
        print(f"  generated in {time.perf_counter() - t0:.1f} s", flush=True)
        stamp.write_text(json.dumps(key))
    (dump,) = sorted(left.glob("step*/*/dump.json"))
    return StatsCase(left=left, right=right, repeat=repeat, calls=len(json.loads(dump.read_text())["data"]),
                     json_bytes=dump.stat().st_size)


@dataclass(frozen=True)
class RowsPoint:
    """One case of the per-row table: its dump family, rows (report lines), calls or operators,
    and the medians of its warm runs (wall and CPU seconds) with the largest peak RSS."""

    family: str
    rows: int
    calls: int
    wall: float
    cpu: float
    rss: int
    runs: int

    @classmethod
    def of_case(cls, family: str, case: CaseResult) -> RowsPoint:
        return cls(family=family, rows=case.pairs, calls=case.ops, wall=case.median,
                   cpu=statistics.median(case.warm_cpu), rss=case.warm_rss, runs=len(case.warm))


def _warm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: Python's byte-code cache on
    return env


def measure_stats(case: StatsCase, workdir: Path, runs: int) -> RowsPoint:
    """``vcompare -l PERTURB -r BASE -o result.csv`` on a statistics case, ``runs`` times (the
    case was just written or read: its files are in the page cache)."""
    out = workdir / f"result_stats_{case.repeat}.csv"
    cmd = VCOMPARE + ["-l", str(case.left), "-r", str(case.right), "-o", str(out), "--quiet"]
    env = _warm_env()
    timings = [_timed(cmd, env) for _ in range(max(1, runs))]
    return RowsPoint(family="msprobe statistics", rows=_pairs_in(out), calls=case.calls,
                     wall=statistics.median(t.wall for t in timings), cpu=statistics.median(t.cpu for t in timings),
                     rss=max(t.rss for t in timings), runs=len(timings))


def _stats_rows_per_repeat(workdir: Path) -> int:
    """Report rows of one repeat of the real trees (measured: one vcompare run on the unrepeated
    pair), to size the cases of ``--rows`` by their rows."""
    return measure_stats(_stats_case(workdir / "stats_x1", 1), workdir, 1).rows


def _msprobe_result(case: StatsCase, msprobe: str, workdir: Path) -> Timing | str:
    """One run of ``msprobe compare -tp PERTURB/step0 -gp BASE/step0 -o DIR``: its timing, or why
    it did not give a result (then the case is reported without it)."""
    import shutil

    out = workdir / f"msprobe_stats_{case.repeat}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    timing = _timed([msprobe, "compare", "-tp", str(case.left / "step0"), "-gp", str(case.right / "step0"),
                     "-o", str(out)], check=False)
    if timing.code != 0 or not any(out.glob("compare_result_*")):
        return f"msprobe compare exited {timing.code} without a result in {out}"
    return timing


def stats_lines(case: StatsCase, point: RowsPoint, msprobe: str | None, workdir: Path) -> list[str]:
    """The msprobe statistics case: vcompare's warm runs and, given its entry point, one run of
    ``msprobe compare`` on the same trees, with the ratios (wall, CPU, peak RSS)."""
    lines = [(f"case msprobe-stats: {case.calls} calls a side ({case.repeat} repeats of the real trees' calls), "
              f"{point.rows} tensor rows, dump.json {case.json_bytes / 1e6:.0f} MB a side"),
             (f"  vcompare -o result.csv: median {point.wall:.2f} s over {point.runs} runs, CPU median {point.cpu:.2f} s, "
              f"{point.cpu / max(point.rows, 1) * 1e6:.0f} us CPU per tensor row, peak RSS {point.rss} MiB")]
    if msprobe is None:
        lines.append("  msprobe compare: not given (--msprobe PATH or VCOMPARE_MSPROBE: the msprobe entry point of a "
                     "venv with mindstudio-probe and torch); skipped")
        return lines
    theirs = _msprobe_result(case, msprobe, workdir)
    if isinstance(theirs, str):
        lines.append(f"  msprobe compare: {theirs}; no ratio")
        return lines
    lines.append(f"  msprobe compare (one run): {theirs.wall:.2f} s, CPU {theirs.cpu:.2f} s, peak RSS {theirs.rss} MiB; "
                 f"vcompare {_ratio(theirs.wall, point.wall)} faster (wall), {_ratio(theirs.cpu, point.cpu)} (CPU), "
                 f"RSS ratio {theirs.rss / max(point.rss, 1):.2f}")
    return lines


def rows_table(points: list[RowsPoint]) -> list[str]:
    """Per-row cost and memory of every case measured by rows, one Markdown table: us a row (wall
    and CPU), peak RSS, bytes a row (whole RSS, and the rise from the family's previous point: the
    memory one more row holds), the marginal CPU a row (from the family's previous point: the cost
    of one more row without the start-up) and the CPU a row against the family's first point
    (flat = 1.00)."""
    lines = ["per-row cost (one run of this script; CPU figures are the ones to compare on a shared machine):",
             ("| family | rows | calls / ops | warm wall s | CPU s | us a row (wall) | us a row (CPU) | peak RSS MiB | "
              "KiB a row (RSS) | bytes a row (RSS rise) | marginal us a row (CPU) | CPU a row / first |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    first: dict[str, RowsPoint] = {}
    previous: dict[str, RowsPoint] = {}
    for p in points:
        base = first.setdefault(p.family, p)
        before = previous.get(p.family)
        grown = before is not None and p.rows > before.rows
        rise = f"{(p.rss - before.rss) * 2**20 / (p.rows - before.rows):.0f}" if grown else "-"
        marginal = f"{(p.cpu - before.cpu) / (p.rows - before.rows) * 1e6:.1f}" if grown else "-"
        per_row = p.cpu / max(p.rows, 1)
        lines.append(f"| {p.family} | {p.rows} | {p.calls} | {p.wall:.2f} | {p.cpu:.2f} | "
                     f"{p.wall / max(p.rows, 1) * 1e6:.1f} | {per_row * 1e6:.1f} | {p.rss} | "
                     f"{p.rss * 1024 / max(p.rows, 1):.2f} | {rise} | {marginal} | "
                     f"{per_row / max(base.cpu / max(base.rows, 1), 1e-12):.2f} |")
        previous[p.family] = p
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.8, help="the large case: GB of left dumps")
    parser.add_argument("--ops", type=int, default=300, help="the large case: operators")
    parser.add_argument("--small-ops", type=int, default=0,
                        help="also the many-small-tensors case with this many operators (the issue's: 10000; "
                             f"{SMALL_BYTES_PER_OP // 1000} KB of dumps an operator)")
    parser.add_argument("--scale", default="",
                        help="a scaling curve of many-small-tensors cases: comma-separated tensor counts "
                             "(e.g. 10000,30000,100000)")
    parser.add_argument("--msprobe-stats", type=int, default=0, metavar="REPEAT",
                        help="also the msprobe statistics case: the real trees' 105 calls repeated REPEAT times "
                             f"(the issue's: {STATS_REPEAT} = 74,130 calls a side; needs ../shared/msprobe-real)")
    parser.add_argument("--msprobe", default=os.environ.get("VCOMPARE_MSPROBE"),
                        help="msprobe's entry point (a venv's bin/msprobe), timed on the msprobe statistics case "
                             "(default: $VCOMPARE_MSPROBE; skipped when unset)")
    parser.add_argument("--rows", default="",
                        help="per-row table: msprobe statistics cases of about these many report rows, comma-separated "
                             "(the issue's: 10000,100000,1000000); the tensor cases of the run join the table")
    parser.add_argument("--ranks", type=int, default=0,
                        help="also the multi-rank case: this many ranks of MindSpore .npy trees (with --dask: "
                             "compared in turn here and on the cluster)")
    parser.add_argument("--iterations", type=int, default=2, help="the multi-rank case: iterations a rank")
    parser.add_argument("--rank-ops", type=int, default=2500, help="the multi-rank case: operators a part")
    parser.add_argument("--rank-elements", type=int, default=64,
                        help="the multi-rank case: float32 elements a tensor (64: the many-small shape of LLM dumps)")
    parser.add_argument("--dask", default="local:2",
                        help="the multi-rank case's cluster: local:N (a LocalCluster here) or tcp://HOST:PORT")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=5, help="warm runs (median reported)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vcompare_bench")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--reference", default=os.environ.get("VCOMPARE_REFERENCE"),
                        help="the reference tool's command, a template with {left} {right} {fusion} {out} "
                             "(default: $VCOMPARE_REFERENCE; skipped when unset)")
    parser.add_argument("--gate", default="CosineSimilarity>=0.99",
                        help="the gate of the re-gate measurement (vcompare gate result.json --gate GATE)")
    parser.add_argument("--write-doc", type=Path, help="append the results to this Markdown file")
    parser.add_argument("--label", default="", help="a title for the results written with --write-doc")
    parser.add_argument("--_baseline", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._baseline:
        baseline(*args._baseline)
        return 0

    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    base_runs = 0 if args.no_baseline else max(1, min(3, args.runs))
    help_wall = min(_timed(VCOMPARE + ["--help"]).wall for _ in range(3))
    lines = [f"machine: {_machine()}", f"vcompare --help: {help_wall:.3f} s",
             "reference tool: " + ("command from --reference / VCOMPARE_REFERENCE" if args.reference
                                   else "not installed here (set VCOMPARE_REFERENCE to measure it; skipped)")]
    if args.size_gb > 0:
        paths = _case(workdir / f"{args.size_gb:g}gb_{args.ops}ops", args.size_gb, args.ops, args.seed)
        large = measure("large", paths, workdir, runs=args.runs, cold=True, baseline_runs=base_runs,
                        reference=args.reference, ops=args.ops)
        lines += report_lines(large)
        cmd = VCOMPARE + ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"]),
                          "-o", str(workdir / "result.csv"), "--quiet"]
        lines.append("  " + _regate_line(cmd, workdir / "result.json", args.gate, args.runs))
    table: list[RowsPoint] = []
    if args.small_ops > 0:
        gb = args.small_ops * SMALL_BYTES_PER_OP / 1e9
        paths = _case(workdir / f"{gb:g}gb_{args.small_ops}ops", gb, args.small_ops, args.seed)
        small = measure("many-small", paths, workdir, runs=args.runs, cold=True, baseline_runs=base_runs,
                        reference=args.reference, ops=args.small_ops)
        lines += report_lines(small)
        table.append(RowsPoint.of_case("many small tensors", small))
    if args.scale:
        points = []
        for tensors in (int(t) for t in args.scale.split(",") if t.strip()):
            ops = max(1, round(tensors / PAIRS_PER_OP))
            gb = ops * SMALL_BYTES_PER_OP / 1e9
            paths = _case(workdir / f"{gb:g}gb_{ops}ops", gb, ops, args.seed)
            points.append(measure(f"scale-{tensors}", paths, workdir, runs=max(1, min(3, args.runs)), cold=False,
                                  baseline_runs=0, reference=None, ops=ops))
        lines += scaling_lines(points)
        table += [RowsPoint.of_case("many small tensors", p) for p in points]
    if args.msprobe_stats > 0:
        case = _stats_case(workdir / f"stats_x{args.msprobe_stats}", args.msprobe_stats)
        point = measure_stats(case, workdir, args.runs)
        lines += stats_lines(case, point, args.msprobe, workdir)
        table.append(point)
    if args.rows:
        per_repeat = _stats_rows_per_repeat(workdir)
        measured = {args.msprobe_stats}  # repeats already measured (0: none)
        for rows in (int(r) for r in args.rows.split(",") if r.strip()):
            repeat = max(1, round(rows / per_repeat))
            if repeat in measured:  # the --msprobe-stats case (or an earlier target) already is this point
                continue
            measured.add(repeat)
            table.append(measure_stats(_stats_case(workdir / f"stats_x{repeat}", repeat), workdir,
                                       max(1, min(3, args.runs))))
    if table:
        lines += rows_table(sorted(table, key=lambda p: (p.family, p.rows)))
    if args.ranks > 0:
        paths = _rank_case(workdir / f"ranks{args.ranks}_it{args.iterations}_ops{args.rank_ops}_el{args.rank_elements}",
                           args.ranks, args.iterations, args.rank_ops, args.rank_elements, args.seed)
        lines += rank_lines(paths, workdir, args.dask, max(1, min(3, args.runs)), args.ranks, args.iterations,
                            args.rank_ops)
    print("\n".join(lines))
    if args.write_doc:
        with args.write_doc.open("a") as handle:
            title = f"{args.label}, " if args.label else ""
            shown = " ".join(argv if argv is not None else sys.argv[1:])
            handle.write(f"\n### {title}{time.strftime('%Y-%m-%d')}: `scripts/bench.py {shown}`\n\n")
            handle.write("".join(f"- {line.strip()}\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

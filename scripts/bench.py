#!/usr/bin/env python3
"""End-to-end benchmark: vcompare on a large seeded network vs a plain-numpy float64 baseline.

    python scripts/bench.py --size-gb 1.8            # the issue's case (~300 ops, fp16 dumps)
    python scripts/bench.py --size-gb 0.02 --ops 10 --runs 1 --no-baseline   # CI smoke test
    python scripts/bench.py --size-gb 1.8 --write-doc docs/performance.md --label after

It generates the case once (cached in --workdir, keyed by its parameters) with
``convert.synthetic_large.make_large_network``, then runs ``vcompare`` as a subprocess: once with
an empty numba cache (cold: includes JIT compilation), then ``--runs`` times warm (page cache and
numba cache warm). For each run it records wall time and the child's peak RSS (``os.wait4``).
The baseline runs in a subprocess too: the same pairs loaded with the same readers and layout
conversion, the ten metrics computed with plain float64 numpy, one tensor pair at a time.
Tests never assert on these numbers; they are for humans and docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VCOMPARE = [sys.executable, "-c", "from compare.cli import main; main()"]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, int]:
    """Run ``cmd``; return (wall seconds, peak RSS in MiB, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):  # 1 / 3: a gate failed / was incomplete -- the run itself worked
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"command failed ({code}): {' '.join(cmd)}\n{err}")
    return wall, usage.ru_maxrss // 1024, code


def _case(workdir: Path, size_gb: float, n_ops: int, seed: int) -> dict[str, Path]:
    from convert.synthetic_large import make_large_network

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


def _dump_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def baseline(left: str, right: str, rule: str) -> None:
    """Plain float64 numpy metrics over the same pairs (run in a subprocess by main)."""
    import numpy as np

    from compare.api import load_and_pair
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
    walls = [_timed(VCOMPARE + ["gate", str(saved), "--gate", gate, "--quiet"])[0] for _ in range(max(1, runs))]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-gb", type=float, default=1.8)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=5, help="warm runs (median reported)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vcompare_bench")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--gate", default="CosineSimilarity>=0.99",
                        help="the gate of the re-gate measurement (vcompare gate result.json --gate GATE)")
    parser.add_argument("--write-doc", type=Path, help="append the results to this Markdown file")
    parser.add_argument("--label", default="", help="a title for the results written with --write-doc")
    parser.add_argument("--_baseline", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._baseline:
        baseline(*args._baseline)
        return 0

    paths = _case(args.workdir.resolve() / f"{args.size_gb:g}gb_{args.ops}ops", args.size_gb, args.ops, args.seed)
    dump_gb = _dump_bytes(paths["left"]) / 1e9
    golden_gb = _dump_bytes(paths["right"]) / 1e9
    out = args.workdir / "result.csv"
    cmd = VCOMPARE + ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"]),
                      "-o", str(out), "--quiet"]

    help_wall = min(_timed(VCOMPARE + ["--help"])[0] for _ in range(3))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        # as installed: Python's byte-code cache on (some sandboxes turn it off, which recompiles
        # every module of the package at each start: ~60 ms)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold, cold_rss, _ = _timed(cmd, env)
        warm = [_timed(cmd, env) for _ in range(args.runs)]
    walls = [w for w, _, _ in warm]
    median = statistics.median(walls)
    peak = max(r for _, r, _ in warm)

    lines = [
        f"machine: {_machine()}",
        f"case: {args.ops} ops, left dumps {dump_gb:.3f} GB (fp16), goldens {golden_gb:.3f} GB (fp32 .npy)",
        f"vcompare --help: {help_wall:.3f} s",
        f"vcompare cold (empty kernel cache: includes compiling the kernels): {cold:.2f} s, peak RSS {cold_rss} MiB",
        f"vcompare warm: median {median:.2f} s over {len(walls)} runs (min {min(walls):.2f}, max {max(walls):.2f}), "
        f"{dump_gb / median:.2f} GB/s of dump data, peak RSS {peak} MiB",
        f"kernel compile cost, once per machine (cold - warm median): {max(cold - median, 0):.2f} s",
        _regate_line(cmd, args.workdir / "result.json", args.gate, args.runs),
    ]
    if not args.no_baseline:
        base = [_timed([sys.executable, __file__, "--_baseline", str(paths["left"]), str(paths["right"]),
                        str(paths["fusion_rule"])]) for _ in range(max(1, min(3, args.runs)))]
        base_wall = statistics.median(w for w, _, _ in base)
        base_rss = max(r for _, r, _ in base)
        lines.append(f"numpy float64 baseline: median {base_wall:.2f} s, {dump_gb / base_wall:.2f} GB/s, "
                     f"peak RSS {base_rss} MiB; vcompare is {base_wall / median:.2f}x faster")
    print("\n".join(lines))
    if args.write_doc:
        with args.write_doc.open("a") as handle:
            title = f"{args.label}, " if args.label else ""
            handle.write(f"\n### {title}{time.strftime('%Y-%m-%d')}: `scripts/bench.py --size-gb {args.size_gb:g} "
                         f"--ops {args.ops} --runs {args.runs}`\n\n")
            handle.write("".join(f"- {line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time vcompare and ``msprobe compare`` side by side on msprobe tensor dumps (issue 28's speed acceptance).

Pairs (step 0 of each; a pair whose trees are absent is left out with a message):
    shared    ../shared/msprobe-real/trees/t_L1_perturb vs t_L1_base (105 calls, 310 tensors)
    fixture   fixtures/msprobe_real/t_L1_perturb vs t_L1_base (43 calls, 130 tensors)

Each command runs as a whole process, the two tools in turn (vcompare, msprobe, vcompare, ...)
so that both see the same machine load; one untimed warm-up run of each first. Reported per tool:
the median wall seconds and CPU seconds (user + system of the child, ``os.wait4``), the largest
peak RSS of its runs, and the ratio msprobe / vcompare of the medians. The commands:

    vcompare: python -m compare.cli -l LEFT/step0 -r RIGHT/step0 -o WORK/v.csv --quiet   (this checkout)
    msprobe:  MSPROBE compare -tp LEFT/step0 -gp RIGHT/step0 -o WORK/msprobe_N/

``--msprobe`` is the ``msprobe`` entry point of a venv with ``mindstudio-probe`` and ``torch``
(``python3 -m venv V && V/bin/pip install mindstudio-probe torch``); without it only vcompare is
timed and the script says so. With it, the exit code is 1 when the wall-time ratio on the shared
pair is below ``--min-ratio`` (default 9.4: the issue's 6.8 s / 0.72 s), else 0.

    python scripts/bench_msprobe_tensor.py --msprobe /tmp/msvenv/bin/msprobe [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VCOMPARE_SHARED", ROOT.parent / "shared")).resolve()
PAIRS = {"shared": SHARED / "msprobe-real" / "trees", "fixture": ROOT / "fixtures" / "msprobe_real"}
#: The issue's measurement: msprobe 6.8 s against vcompare 0.72 s on the shared pair.
ISSUE_RATIO = 6.8 / 0.72


@dataclass(frozen=True)
class Timing:
    """One run of one command: wall and CPU seconds, peak RSS (MiB) of the child, exit code."""

    wall: float
    cpu: float
    peak_mib: float
    code: int


def timed(command: list[str]) -> Timing:
    """Run ``command`` (output discarded) and measure it: ``os.wait4`` gives that child's own CPU
    time and peak RSS."""
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, child.returncode)


@dataclass(frozen=True)
class Summary:
    """Medians of a tool's runs."""

    wall: float
    cpu: float
    peak_mib: float
    runs: int

    @classmethod
    def of(cls, timings: list[Timing]) -> Summary:
        return cls(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings),
                   max(t.peak_mib for t in timings), len(timings))


def bench_pair(label: str, trees: Path, msprobe: str | None, runs: int, work: Path) -> tuple[Summary, Summary | None]:
    left, right = trees / "t_L1_perturb" / "step0", trees / "t_L1_base" / "step0"
    vcompare = [sys.executable, "-m", "compare.cli", "-l", str(left), "-r", str(right), "-o", str(work / "v.csv"),
                "--quiet"]

    def msprobe_command(n: int) -> list[str]:
        out = work / f"msprobe_{label}_{n}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        return [msprobe, "compare", "-tp", str(left), "-gp", str(right), "-o", str(out)]

    ours: list[Timing] = []
    theirs: list[Timing] = []
    for n in range(runs + 1):  # run 0: warm-up, not counted
        timing = timed(vcompare)
        if timing.code != 0:
            raise SystemExit(f"vcompare exited {timing.code} on {label}: {' '.join(vcompare)}")
        if n:
            ours.append(timing)
        if msprobe is not None:
            command = msprobe_command(n)
            timing = timed(command)
            made = list(Path(command[-1]).glob("compare_result_*"))
            if timing.code != 0 or not made:
                raise SystemExit(f"msprobe exited {timing.code} with {len(made)} result file(s) on {label}: "
                                 f"{' '.join(command)}")
            if n:
                theirs.append(timing)
    return Summary.of(ours), Summary.of(theirs) if theirs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprobe", help="msprobe's entry point (a venv's bin/msprobe); without it, vcompare only")
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each tool (after one warm-up)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/vcompare-bench-msprobe-tensor"))
    parser.add_argument("--min-ratio", type=float, default=9.4,
                        help="smallest wall-time ratio msprobe / vcompare accepted on the shared pair")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    msprobe = args.msprobe
    if msprobe is not None and shutil.which(msprobe) is None:
        parser.error(f"--msprobe {msprobe}: not an executable")
    if msprobe is None:
        print("msprobe not given (--msprobe PATH): timing vcompare only, no ratio", file=sys.stderr)
    args.work.mkdir(parents=True, exist_ok=True)
    print("| pair | tool | median wall s | median CPU s | peak MiB | runs |")
    print("|---|---|---:|---:|---:|---:|")
    ratios: dict[str, float] = {}
    for label, trees in PAIRS.items():
        if not (trees / "t_L1_perturb").is_dir():
            print(f"{label}: {trees} has no t_L1_perturb: pair left out", file=sys.stderr)
            continue
        ours, theirs = bench_pair(label, trees, msprobe, args.runs, args.work)
        print(f"| {label} | vcompare | {ours.wall:.2f} | {ours.cpu:.2f} | {ours.peak_mib:.0f} | {ours.runs} |")
        if theirs is not None:
            print(f"| {label} | msprobe | {theirs.wall:.2f} | {theirs.cpu:.2f} | {theirs.peak_mib:.0f} | "
                  f"{theirs.runs} |")
            ratios[label] = theirs.wall / ours.wall
            print(f"| {label} | ratio msprobe/vcompare | {ratios[label]:.1f}x | {theirs.cpu / ours.cpu:.1f}x | | |")
    if "shared" in ratios:
        verdict = ratios["shared"] >= args.min_ratio
        print(f"shared pair: msprobe/vcompare {ratios['shared']:.1f}x wall; required >= {args.min_ratio:.1f}x "
              f"(the issue measured {ISSUE_RATIO:.1f}x): {'kept' if verdict else 'NOT kept'}")
        return 0 if verdict else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

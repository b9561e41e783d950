"""Time a large msprobe statistics comparison: the real trees' calls repeated to LLM scale.

Reads ``../shared/msprobe-real/trees/s_L1_perturb`` and ``s_L1_base`` (105 calls, 310 tensors
each), writes each ``dump.json`` again with its calls repeated ``--repeat`` times (the call
counter of every repeat shifted, so names stay unique: ``Functional.linear.2.forward`` ->
``Functional.linear.100002.forward``), and times ``vcompare -l BIG_PERTURB -r BIG_BASE -o r.csv
--json r.json`` (with and without a gate) as a whole process: wall seconds and peak RSS of the
child (``resource.getrusage``). The default, 715 repeats, gives ~75,000 calls / ~221,000 tensors.

    python scripts/bench_msprobe_stats.py [--repeat 715] [--work /tmp/vcompare-bench-stats] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ROOT.parent / "shared" / "msprobe-real" / "trees"
_COUNTER = re.compile(r"\.(\d+)(?=\.|$)")


def _shifted(name: str, shift: int) -> str:
    """``name`` with its first numeric component (the call counter) raised by ``shift``."""
    return _COUNTER.sub(lambda m: f".{int(m.group(1)) + shift}", name, count=1)


def repeat_tree(source: Path, target: Path, repeat: int) -> int:
    """Write ``source``'s dump.json with its calls repeated into ``target`` (same layout); return
    the number of calls written."""
    (json_path,) = sorted(source.glob("step*/*/dump.json"))
    document = json.loads(json_path.read_text())
    data = document["data"]
    big = {}
    for r in range(repeat):
        for name, entry in data.items():
            big[_shifted(name, r * 100000)] = entry
    document["data"] = big
    out = target / json_path.relative_to(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document))
    for extra in ("stack.json", "construct.json"):
        (out.parent / extra).write_text("{}")
    return len(big)


def timed(command: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB of the child, exit code) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024.0, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=715)
    parser.add_argument("--work", type=Path, default=Path("/tmp/vcompare-bench-stats"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not TREES.is_dir():
        print(f"{TREES} not found: this benchmark needs ../shared/msprobe-real", file=sys.stderr)
        return 2
    left, right = args.work / "perturb", args.work / "base"
    calls = repeat_tree(TREES / "s_L1_perturb", left, args.repeat)
    repeat_tree(TREES / "s_L1_base", right, args.repeat)
    print(f"{calls} calls per side ({args.repeat} repeats of the real trees' 105 calls)")
    vcompare = [sys.executable, "-m", "compare.cli", "-l", str(left), "-r", str(right),
                "-o", str(args.work / "r.csv"), "--json", str(args.work / "r.json"), "--quiet"]
    for label, extra in (("no gate", []), ("--gate L2NormRelDiff<=1e-4", ["--gate", "L2NormRelDiff<=1e-4"])):
        walls = []
        peak = 0.0
        for _ in range(args.runs):
            wall, rss, code = timed(vcompare + extra)
            walls.append(wall)
            peak = max(peak, rss)
        print(f"vcompare {label}: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max "
              f"{max(walls):.2f}) over {args.runs} run(s), peak RSS {peak:.0f} MiB, exit {code}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    raise SystemExit(main())

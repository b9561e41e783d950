"""Fuzz vcompare's loaders, side files and whole runs with mutated inputs; report what escaped.

    python scripts/fuzz.py                                   # 10,000 inputs, every target, 2 processes
    python scripts/fuzz.py --n 50000 --jobs 2 --nobody-share 0.3 --table fuzz.md --json fuzz.json
    python scripts/fuzz.py --targets pt,url --n 500          # a few targets
    python scripts/fuzz.py --targets pt --seed 0 --only 17   # input 17 of pt again, alone

The targets (``--list``), the mutators and what counts as an escape are in
:mod:`compare.testing.fuzz` and :mod:`compare.testing.fuzz_formats`; the parallel run, the hang
watchdog, the unprivileged workers and the escape signatures in :mod:`compare.testing.fuzz_runner`.
``tests/props/test_fuzz.py`` and ``tests/compare/test_fuzz_targets.py`` drive the same functions.
Exit code 1 when anything escaped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compare.testing.fuzz_runner import ALL_TARGETS, NOBODY, plan, run_parallel  # noqa: E402


def _counts(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        target, _, number = item.partition("=")
        if target not in ALL_TARGETS or not number.isdigit():
            raise SystemExit(f"--count {item}: write TARGET=N with a target of --list")
        out[target] = int(number)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="inputs in all (default 10000), shared by the weights")
    parser.add_argument("--targets", default="all", help="comma-separated targets (default all; see --list)")
    parser.add_argument("--count", action="append", default=[], metavar="TARGET=N", help="inputs of one target")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--nobody-share", type=float, default=0.0,
                        help="share of every target's inputs run by workers that dropped to --nobody-uid (root only)")
    parser.add_argument("--nobody-uid", type=int, default=NOBODY, help=f"the unprivileged uid (default {NOBODY})")
    parser.add_argument("--only", type=int, action="append", default=None,
                        help="run only this input index of each target (repeatable)")
    parser.add_argument("--keep", type=int, default=2, help="tracebacks to print per target (default 2)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    parser.add_argument("--table", type=Path, default=None, help="also write the markdown summary table")
    parser.add_argument("--progress", action="store_true", help="print progress every 500 inputs")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(ALL_TARGETS))
        return 0
    targets = list(ALL_TARGETS) if args.targets == "all" else [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in ALL_TARGETS]
    if unknown:
        raise SystemExit(f"--targets: unknown {unknown}; the targets are {', '.join(ALL_TARGETS)}")
    counts = plan(args.n, targets, _counts(args.count))
    report = run_parallel(counts, args.seed, jobs=args.jobs, nobody_share=args.nobody_share,
                          nobody_uid=args.nobody_uid, only=args.only, progress=args.progress)
    sys.stdout.write(report.text(args.keep))
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=1))
    if args.table is not None:
        args.table.write_text(report.table())
    return 1 if report.escapes else 0


if __name__ == "__main__":
    raise SystemExit(main())

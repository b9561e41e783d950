"""Fuzz vcompare's loaders and a whole network run with mutated inputs; report what escaped.

    python scripts/fuzz.py                    # 10,000 inputs, seed 0
    python scripts/fuzz.py --n 50000 --seed 7 --json fuzz.json

The mutators, the targets, what counts as an escape and the run itself are in
:mod:`compare.testing.fuzz` (see its docstring); ``tests/props/test_fuzz.py`` drives the same
functions from hypothesis for the bounded CI pass. This script is only the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compare.testing.fuzz import run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="inputs to try (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mutation loop (default 0)")
    parser.add_argument("--keep", type=int, default=5, help="tracebacks of escapes to print (default 5)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    parser.add_argument("--progress", action="store_true", help="print progress every 1000 inputs")
    args = parser.parse_args(argv)
    report = run(args.n, args.seed, keep=args.keep, progress=args.progress)
    sys.stdout.write(report.text())
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=1))
    return 1 if report.escapes else 0


if __name__ == "__main__":
    raise SystemExit(main())

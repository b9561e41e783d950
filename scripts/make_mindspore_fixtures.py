#!/usr/bin/env python3
"""Write the MindSpore / TensorFlow-NPU fixture trees (seeded, deterministic) into fixtures/mindspore.

Usage: python scripts/make_mindspore_fixtures.py [OUT_DIR]   (default: fixtures/mindspore)

One tiny network (four kernels) in every layout vcompare reads: synchronous .bin (device and CPU
forms), O0/O1 .npy (two ranks, two graphs, three iterations, constants, statistic.csv,
mapping.csv, execution order), statistics only, asynchronous r1.x, O2 bin (with an overflow
record) and O2 npy, TF NPU (two model folders and a GE build file) and TF NPU dump_data=stats.
See compare/testing/synthetic_mindspore.py; tests/compare/loaders/test_mindspore.py reads every tree back.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compare.testing.synthetic_mindspore import make_trees  # noqa: E402


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "fixtures" / "mindspore"
    if out.exists():
        shutil.rmtree(out)
    for key, path in make_trees(out).items():
        print(f"{key:10s} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

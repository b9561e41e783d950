#!/usr/bin/env python3
"""Write the bundled demo comparison case (seeded, deterministic) into fixtures/demo.

Usage: python scripts/make_demo.py [OUT_DIR]   (default: fixtures/demo)

The case is an Ascend binary dump of a small fused CNN (fp16, NC1HWC0 / FRACTAL_Z / ND), the
Caffe-style float32 .npy goldens of the original model, and the ATC om->json graph (model.json).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compare.testing.synthetic import make_network  # noqa: E402


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "fixtures" / "demo"
    if out.exists():
        shutil.rmtree(out)
    paths = make_network(out, seed=2024)
    for key, path in paths.items():
        print(f"{key:12s} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Write the bundled demo comparison case (seeded, deterministic) into fixtures/demo.

Usage: python scripts/make_demo.py [OUT_DIR]   (default: fixtures/demo; --help for the options)

The case is an Ascend binary dump of a small fused CNN (fp16, NC1HWC0 / FRACTAL_Z / ND), the
Caffe-style float32 .npy goldens of the original model, and the ATC om->json graph (model.json).
OUT_DIR is replaced as a whole when it exists.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compare.testing.synthetic import make_network  # noqa: E402

#: Where the demo goes without an OUT_DIR argument.
DEFAULT_OUT = ROOT / "fixtures" / "demo"


def parser() -> argparse.ArgumentParser:
    """The command line: one optional output folder (``--help`` prints the usage, writes nothing)."""
    cli = argparse.ArgumentParser(
        prog="make_demo.py",
        description="Write the seeded demo case (Ascend dump of a small fused CNN, its .npy goldens and the "
                    "om->json graph model.json) into OUT_DIR, replacing the folder if it exists.")
    cli.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, metavar="OUT_DIR",
                     help=f"output folder (default: {DEFAULT_OUT.relative_to(ROOT)})")
    return cli


def main(argv: list[str]) -> int:
    out: Path = parser().parse_args(argv).out
    if out.exists():
        shutil.rmtree(out)
    paths = make_network(out, seed=2024)
    for key, path in paths.items():
        print(f"{key:12s} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

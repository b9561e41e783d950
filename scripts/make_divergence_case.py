#!/usr/bin/env python3
"""Write a seeded network with errors injected at known operators, and print its ground truth.

Usage: python scripts/make_divergence_case.py OUT_DIR [--inject a3=0.05,b2=0.02] [--perturb w_b4=0.05]
                                              [--nan OP] [--seed N] [--size S]

The case (compare/testing/synthetic_divergence.py) is an Ascend binary dump of a two-branch
network (``npu/``), float32 .npy goldens (``golden/``) and the ATC om->json graph (``model.json``);
compare it with ``vcompare -l OUT_DIR/npu -r OUT_DIR/golden -f OUT_DIR/model.json -o result.csv``.
``--inject OP=SIZE``: the op's output gets an error of relative size SIZE; ``--perturb NODE=SIZE``:
a Const weight (or ``data``) reaches its consumers with that error; ``--nan OP``: NaN and Inf in
the op's output. Default: ``--inject a3=0.05``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compare.testing.synthetic_divergence import make_divergence_network  # noqa: E402


def _sizes(text: str) -> dict[str, float]:
    """``a3=0.05,b2=0.02`` -> ``{"a3": 0.05, "b2": 0.02}``."""
    found: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        try:
            found[name.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not NAME=SIZE (e.g. a3=0.05)") from None
        if not sep:
            raise argparse.ArgumentTypeError(f"{item!r} is not NAME=SIZE (e.g. a3=0.05)")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--inject", type=_sizes, default=None, help="OP=SIZE[,OP=SIZE...] (default a3=0.05)")
    parser.add_argument("--perturb", type=_sizes, default={}, help="CONST=SIZE[,CONST=SIZE...]")
    parser.add_argument("--nan", default=None, metavar="OP", help="put NaN and Inf into this op's output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=8, help="spatial size (tensors are 1 x 8 x SIZE x SIZE)")
    args = parser.parse_args(argv)
    inject = {"a3": 0.05} if args.inject is None else args.inject
    try:
        case = make_divergence_network(args.out_dir, seed=args.seed, inject=inject, perturb_inputs=args.perturb,
                                       nonfinite_at=args.nan, size=args.size)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"left         {case.left}")
    print(f"right        {case.right}")
    print(f"fusion rule  {case.rule}")
    print(f"compare:     vcompare -l {case.left} -r {case.right} -f {case.rule} -o result.csv")
    print("graph (data edges, topological order):")
    for name in case.order:
        producers = ", ".join(case.edges[name]) or "-"
        label = case.truth_of(name) if name in case.compute else "source"
        print(f"  {name:9s} {case.op_types[name]:8s} <- {producers:18s} {label}")
    for label, names in (("injected", case.injected), ("data_differs", case.data_differs),
                         ("downstream", case.downstream), ("clean", case.clean)):
        print(f"{label + ':':14s}{' '.join(names) or '(none)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

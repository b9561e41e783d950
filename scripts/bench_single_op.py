"""Benchmark of single-operator mode: per-element detail files for a large tensor.

Generates (in a temporary folder, or ``--keep DIR``) an Ascend dump holding one fp16 NC1HWC0
output of ``--elements`` elements (default 1,000,000: NCHW 1x16x250x250) and its float32 NCHW
golden ``.npy``, then times:

- ``compare``: load + pair + layout conversion + per-element errors + the ten metrics;
- ``details``: writing the per-element CSV file(s) (the vectorised writer);
- ``top-N`` + summary;

and prints seconds and MB/s for each layout. Run: ``python scripts/bench_single_op.py``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compare.reports.single_op import top_rows, write_detail_file  # noqa: E402
from compare.runs.single_op import compare_operator  # noqa: E402
from convert.codecs.dumpwrite import TensorSpec, write_dump  # noqa: E402
from convert.layouts import convert_layout  # noqa: E402


def make_case(root: Path, elements: int, seed: int = 0) -> tuple[Path, Path]:
    """An NC1HWC0 fp16 dump of op ``big`` and its NCHW float32 golden (by-name pairing)."""
    channels = 16
    side = max(1, round(math.sqrt(elements / channels)))
    shape = (1, channels, side, side)
    rng = np.random.default_rng(seed)
    golden = rng.standard_normal(shape).astype(np.float32)
    golden[golden < -1.5] = 0.0  # some zeros: undefined relative errors
    left = (golden + rng.standard_normal(shape).astype(np.float32) * 1e-3).astype(np.float16)
    npu = root / "npu"
    gold = root / "golden"
    npu.mkdir(parents=True, exist_ok=True)
    gold.mkdir(parents=True, exist_ok=True)
    device = np.asarray(convert_layout(left, "NCHW", "NC1HWC0", shape))
    write_dump(npu / "Conv2D.big.1.1.1704110400001000", op_name="big",
               outputs=[TensorSpec(device, format="NC1HWC0", original_shape=shape)])
    np.save(gold / "big.0.1704110405000000.npy", golden)
    return npu, gold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N for the detail write")
    parser.add_argument("--keep", type=Path, default=None, help="write the case and results here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        npu, gold = make_case(root, args.elements)
        t0 = time.perf_counter()
        result = compare_operator(npu, gold, "big")
        t_cmp = time.perf_counter() - t0
        print(f"elements: {result.count:,}  shape {list(result.shape)}  axes {result.format}")
        print(f"compare (load, convert, errors, metrics; includes first-call JIT): {t_cmp:.3f} s")
        out = root / "out"
        out.mkdir(exist_ok=True)
        for layout in ("vcompare", "msaccucmp"):
            best = math.inf
            path = out / f"big_output_0_0.{layout}.csv"
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                write_detail_file(path, result, 0, result.count, layout)
                best = min(best, time.perf_counter() - t0)
            size = path.stat().st_size
            print(f"details [{layout:9s}]: {best:.3f} s for {result.count:,} rows, "
                  f"{size / 1e6:.1f} MB, {size / 1e6 / best:.0f} MB/s")
        t0 = time.perf_counter()
        for which in ("absolute", "relative"):
            top_rows(result, which, 10_000)
        print(f"top-10000 x2: {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()

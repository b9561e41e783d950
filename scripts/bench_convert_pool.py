"""Time ``vconvert`` folder conversions with a process pool, a thread pool and serially.

Usage: ``python scripts/bench_convert_pool.py [--small 200] [--large 4] [--repeat 3] [--work DIR]``

Four folders are written with :func:`convert.codecs.dumpwrite.write_dump`: SMALL, ``--small`` dumps of
one NC1HWC0 float16 input and output of ``(1, 2, 8, 8, 16)`` (a few KiB each); LARGE, ``--large``
dumps of one NC1HWC0 float16 output of ``(2, 4, 128, 128, 16)`` (2 Mi values, 4 MiB each); MIXED,
both together in one folder (same-named files: 196 small + 4 large); HUGE, 4 dumps of one
``(16, 4, 128, 128, 16)`` output (32 MiB each). Each folder is converted by ``vconvert dump``
without and with ``-f NCHW`` and (except HUGE: 16 Mi values per file) by ``vconvert txt``.
One untimed run warms the imports; then the best of ``--repeat`` wall times is printed per case
and pool: serial (``--workers 1``), threads and processes (``--workers 0``: one per usable CPU).
The results are in ``docs/convert.md`` ("Parallel conversion").
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from convert.codecs.dumpwrite import TensorSpec, write_dump  # noqa: E402
from convert.tool import batch  # noqa: E402
from convert.tool.convert_dump import DumpConvertOptions, convert_dumps  # noqa: E402
from convert.tool.to_text import to_text  # noqa: E402


def make_folder(folder: Path, count: int, shape: tuple[int, ...], with_input: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    nchw = (shape[0], shape[1] * shape[4], shape[2], shape[3])
    for i in range(count):
        data = rng.standard_normal(shape).astype(np.float16)
        spec = TensorSpec(data, format="NC1HWC0", original_shape=nchw)
        write_dump(folder / f"Conv2D.layer{i}.{i}.{1700000000000000 + i}",
                   inputs=[spec] if with_input else [], outputs=[spec], op_name=f"layer{i}")
    return folder


def best_of(repeat: int, action) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        report = action()
        times.append(time.perf_counter() - start)
        assert report.all_converted, report.failed
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="vconvert-bench-"))
    small = make_folder(work / "small", args.small, (1, 2, 8, 8, 16), True)
    large = make_folder(work / "large", args.large, (2, 4, 128, 128, 16), False)
    mixed = work / "mixed"
    shutil.copytree(small, mixed, dirs_exist_ok=True)
    shutil.copytree(large, mixed, dirs_exist_ok=True)
    huge = make_folder(work / "huge", 4, (16, 4, 128, 128, 16), False)
    out = work / "out"
    cases = []
    for label, folder in (("small", small), ("large", large), ("mixed", mixed)):
        cases += [
            (f"dump, {label}", lambda w, f=folder: convert_dumps(f, out, DumpConvertOptions(workers=w))),
            (f"dump -f NCHW, {label}",
             lambda w, f=folder: convert_dumps(f, out, DumpConvertOptions(target_format="NCHW", workers=w))),
            (f"txt, {label}", lambda w, f=folder: to_text(f, out, workers=w)),
        ]
    cases += [
        ("dump, huge", lambda w: convert_dumps(huge, out, DumpConvertOptions(workers=w))),
        ("dump -f NCHW, huge", lambda w: convert_dumps(huge, out, DumpConvertOptions(target_format="NCHW", workers=w))),
    ]
    for _label, run in cases[:3]:  # warm-up: imports, first touch of the files
        run(1)
        shutil.rmtree(out, ignore_errors=True)
    print(f"usable CPUs: {batch.usable_cpus()}; best of {args.repeat}; seconds")
    print(f"{'case':24} {'serial':>8} {'threads':>8} {'processes':>10}")
    for label, run in cases:
        row = []
        for pool, workers in (("thread", 1), ("thread", 0), ("process", 0)):
            batch.DEFAULT_POOL = pool

            def action(run=run, workers=workers):
                shutil.rmtree(out, ignore_errors=True)
                return run(workers)

            row.append(best_of(args.repeat, action))
        print(f"{label:24} {row[0]:8.3f} {row[1]:8.3f} {row[2]:10.3f}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

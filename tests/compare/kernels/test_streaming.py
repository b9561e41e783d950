"""A tensor pair larger than the memory the process may allocate is still compared (issue 7).

Golden .npy files and large Ascend dump tensors are memory-mapped and the kernels read them
in place (decoding fp16/bf16 and mapping device layouts inside the kernel), so the data streams
through the page cache instead of being copied. The test caps the process's heap (RLIMIT_DATA,
which file-backed mappings do not count against) well below what one float64 copy of either
side would need, and checks the comparison still succeeds with the right numbers.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

N = 50_000_000  # 200 MB per float32 side; float64 copies of both sides would need 763 MiB
HEAP_LIMIT_MIB = 300


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA semantics are Linux's")
def test_pair_larger_than_the_heap_limit_is_streamed(tmp_path: Path) -> None:
    for side, offset in (("l", 0.0), ("r", 0.5)):
        folder = tmp_path / side
        folder.mkdir()
        out = np.lib.format.open_memmap(folder / "big.0.1700000000000000.npy", mode="w+", dtype=np.float32,
                                        shape=(N,))
        step = 5_000_000
        for start in range(0, N, step):
            out[start:start + step] = (np.arange(start, start + step, dtype=np.float32) % 1000) + offset
        out.flush()
        del out
    script = textwrap.dedent(f"""
        import resource
        limit = {HEAP_LIMIT_MIB} * 2**20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        from compare.kernels import preload
        preload(blas=False)
        from compare.runs.folders import run_network
        result = run_network({str(tmp_path / 'l')!r}, {str(tmp_path / 'r')!r})
        row = next(r for r in result.rows if r.tensor_id)
        print(row.status.value, row.metrics["MaxAbsoluteError"], row.metrics["MeanAbsoluteError"], row.reasons)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    status, max_abs, mean_abs, reasons = done.stdout.split(" ", 3)
    assert status == "compared", done.stdout
    assert float(max_abs) == pytest.approx(0.5) and float(mean_abs) == pytest.approx(0.5)

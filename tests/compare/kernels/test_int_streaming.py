"""Integer and bool tensors are read in place by the kernels, like floats (issue 14): the same
numbers as ``astype(float64)`` would give, on both kernel backends, and no widened copy in memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from compare.kernels import METRIC_NAMES, _abi, compare_arrays, native, storage
from compare.kernels.metrics import DEFAULT_METRICS
from conftest import ROOT

INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _close(a, b, rel: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is b
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def _data(dtype, n: int = 3001, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -(2**40)), min(info.max, 2**40)
    x = rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
    y = x.copy()
    y[::7] = rng.integers(lo, hi, y[::7].size, dtype=dtype, endpoint=True)
    return x, y


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integers_are_stored_without_a_copy(dtype) -> None:
    x, _ = _data(dtype)
    buf, is_complex = storage(x)
    assert not is_complex and np.shares_memory(buf, x)  # read in place, not widened
    assert buf.dtype in _abi.CODES and _abi.ITEMSIZE[_abi.CODES[buf.dtype]] == x.dtype.itemsize


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integers_give_the_numbers_of_their_float64_values(dtype) -> None:
    x, y = _data(dtype)
    got = compare_arrays(x, y, metrics=list(METRIC_NAMES))
    want = compare_arrays(x.astype(np.float64), y.astype(np.float64), metrics=list(METRIC_NAMES))
    assert got.notes == want.notes
    for name in METRIC_NAMES:
        assert _close(got.values[name], want.values[name]), (dtype, name, got.values[name], want.values[name])
    assert all(_close(a, b) for a, b in zip(got.std, want.std))


def test_int16_integers_are_not_read_as_bfloat16_bits() -> None:
    x = np.array([1, 2, 3, -4, 16384], dtype=np.int16)
    y = np.array([1, 2, 3, -4, 16383], dtype=np.int16)
    assert compare_arrays(x, y).values["MaxAbsoluteError"] == 1.0
    u = np.array([1, 60000], dtype=np.uint16)
    assert compare_arrays(u, u + np.uint16(1)).values["MaxAbsoluteError"] == 1.0


def test_bool_bytes_other_than_0_and_1_read_as_true() -> None:
    """A bool array whose bytes are 2 or 255 (decoded from a dump) is True there, as numpy's
    casts read it."""
    raw = np.frombuffer(bytes([2, 0, 255, 1, 0, 7]), dtype=np.bool_)
    ones = np.array([1, 0, 1, 1, 0, 1], dtype=np.bool_)
    r = compare_arrays(raw, ones)
    assert r.values["CosineSimilarity"] == pytest.approx(1.0, abs=1e-15)
    assert r.values["RelativeEuclideanDistance"] is None or r.values["RelativeEuclideanDistance"] == 0.0
    assert np.shares_memory(storage(raw)[0], raw)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.bool_])
def test_both_backends_agree_on_integer_storage(dtype) -> None:
    """The compiled objects and numba's functions read the new codes the same way."""
    k = native.kernels()
    if k is None:
        pytest.skip(f"native kernels not available: {native.status}")
    from compare.kernels import flat_kernel_plan, fused
    from compare.kernels.buffers import raw, tile

    x, y = _data(np.int8 if dtype is np.bool_ else dtype, n=5000, seed=2)
    if dtype is np.bool_:
        x, y = x > 0, y > 0
    xb, yb = storage(x)[0], storage(y)[0]
    plan = flat_kernel_plan(x.size)
    for fn_native, fn_numba, args in (
        (k.side, fused._side_boxes, (*raw(xb), *plan.left)),
        (k.side, fused._side_boxes, (*raw(yb), *plan.right)),
    ):
        a, b = fn_native(*args, tile()), fn_numba(*args, tile())
        assert all(_close(float(p), float(q)) for p, q in zip(a, b)), (a, b)
    prm = (0.0, 1.0, 1e-7, 0.0, 1.0)
    a = k.pair(*raw(xb), *raw(yb), *plan.pair, prm, True, True, True, False, tile(), tile())
    b = fused._pair_boxes(*raw(xb), *raw(yb), *plan.pair, prm, True, True, True, False, tile(), tile())
    assert all(_close(float(p), float(q), 1e-9) for p, q in zip(a, b)), (a, b)


def _peak_rss(tmp_path: Path, dtype: str, n: int) -> int:
    """Peak RSS (KiB) of a fresh process comparing two memory-mapped .npy files of ``n`` elements."""
    code = textwrap.dedent(f"""
        import resource, numpy as np
        from compare.kernels import compare_arrays, native
        native.kernels()
        x = np.load({str(tmp_path / "x.npy")!r}, mmap_mode="r")
        y = np.load({str(tmp_path / "y.npy")!r}, mmap_mode="r")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = compare_arrays(x, y)
        assert r.values["CosineSimilarity"] is not None
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """)
    rng = np.random.default_rng(5)
    for name in ("x", "y"):
        data = np.lib.format.open_memmap(tmp_path / f"{name}.npy", mode="w+", dtype=dtype, shape=(n,))
        data[:] = rng.integers(1, 100, n).astype(dtype)
        data.flush()
        del data
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


#: Elements of each file of the streaming tests (48 Mi).
STREAMED = 48 * 2**20


@pytest.fixture(scope="module")
def float16_peak(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The yardstick of the streaming tests, measured once for all of them: the peak RSS of
    comparing two float16 files of :data:`STREAMED` elements."""
    return _peak_rss(tmp_path_factory.mktemp("float16"), "float16", STREAMED)


@pytest.mark.parametrize("dtype", ["int8", "int32", "bool"])
def test_integer_pairs_stream_like_float_pairs(tmp_path: Path, dtype: str, float16_peak: int) -> None:
    """Comparing two 48 Mi-element integer (or bool) files costs about the memory of comparing
    two float16 ones: pages of the mapped files, no widened copy (which would be 192-384 MiB a side)."""
    n = STREAMED
    floats = float16_peak
    ints = _peak_rss(tmp_path, dtype, n)
    widened = 2 * n * 4 // 1024  # what astype(float32) of both sides would add, in KiB
    assert ints <= floats + n * np.dtype(dtype).itemsize * 2 // 1024 + 48 * 1024, (dtype, ints, floats)
    assert ints < widened / 2, (ints, widened)


# --------------------------------------------------------------------------- 1-byte ml_dtypes

ml_dtypes = pytest.importorskip("ml_dtypes")
ONE_BYTE = [name for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                              "float8_e4m3b11fnuz", "int4", "uint4", "float4_e2m1fn") if hasattr(ml_dtypes, name)]


@pytest.mark.parametrize("name", ONE_BYTE)
def test_one_byte_types_are_read_in_place_through_a_table(name: str) -> None:
    """float8 / float4 / int4 data: no widened copy, and the numbers of their float64 values."""
    dtype = np.dtype(getattr(ml_dtypes, name))
    rng = np.random.default_rng(4)
    x = rng.standard_normal(4099).astype(np.float32).astype(dtype)
    y = (rng.standard_normal(4099) * 0.1 + x.astype(np.float32)).astype(dtype)
    buf = storage(x)[0]
    assert np.shares_memory(buf, x)
    # the reference's metrics (msprobe's error ratios are float32 for 1-byte floats, like msprobe's)
    got, want = compare_arrays(x, y), compare_arrays(x.astype(np.float64), y.astype(np.float64))
    for metric in DEFAULT_METRICS:
        assert _close(got.values[metric], want.values[metric]), (name, metric, got.values[metric], want.values[metric])


def test_one_byte_nan_is_nan() -> None:
    """A NaN byte of float8_e4m3fn (0x7f) reaches the metrics as NaN, as astype gives it."""
    x = np.frombuffer(bytes([0x38, 0x7F, 0x40]), dtype=ml_dtypes.float8_e4m3fn)
    y = np.frombuffer(bytes([0x38, 0x38, 0x40]), dtype=ml_dtypes.float8_e4m3fn)
    # the reference's metrics (msprobe's error ratios are float32 for 1-byte floats, like msprobe's)
    got, want = compare_arrays(x, y), compare_arrays(x.astype(np.float64), y.astype(np.float64))
    for metric in DEFAULT_METRICS:
        assert _close(got.values[metric], want.values[metric]), (metric, got.values[metric], want.values[metric])


def test_one_byte_types_agree_on_both_backends() -> None:
    k = native.kernels()
    if k is None:
        pytest.skip(f"native kernels not available: {native.status}")
    from compare.kernels import flat_kernel_plan, fused
    from compare.kernels.buffers import raw, tile

    x = np.random.default_rng(6).standard_normal(5000).astype(ml_dtypes.float8_e4m3fn)
    plan = flat_kernel_plan(x.size)
    a = k.side(*raw(x), *plan.left, tile(x))
    b = fused._side_boxes(*raw(x), *plan.left, tile(x))
    assert all(_close(float(p), float(q)) for p, q in zip(a, b)), (a, b)

"""The fast paths give the numbers of the slow paths (no timing assertions here).

- lazy layout plans (convert/layouts/lazy.py) pair exactly the elements prepare_pair pairs, raise
  the same errors, and give the same metrics (float64 summation order aside: 1e-12);
- float16 / bfloat16 decoded in the kernel == widened copies, bit for bit;
- the engine's zero-copy, multi-threaded path == the ordinary single-threaded path;
- memory-mapped tensor reads (convert/codecs/fastread.py) == convert.codecs.dumpfile.read_tensor;
- scripts/bench.py runs end to end (the CI smoke test).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.engine.goldens import SideStats
from compare.kernels import METRIC_NAMES, compare_arrays, compare_planned, is_scalar_like, storage
from convert.layouts import LAYOUTS, LayoutError, prepare_pair
from convert.layouts.lazy import LazyView, Unsupported, kernel_plan, plan_pair


def _close(a, b, rel: float = 1e-12, abs_: float = 1e-12) -> bool:
    """Equal within 1e-12 (relative or absolute: KL is a difference of sums, its last digits
    follow the summation order)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, tuple):
        return all(_close(u, v, rel, abs_) for u, v in zip(a, b))
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def _same_result(fast, slow) -> None:
    assert fast.count == slow.count and fast.notes == slow.notes
    for name in METRIC_NAMES:
        assert _close(fast.values[name], slow.values[name]), (name, fast.values[name], slow.values[name])
    assert _close(fast.std, slow.std), (fast.std, slow.std)


def _noisy(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    golden = rng.standard_normal(shape).astype(np.float32)
    left = (golden + rng.standard_normal(shape).astype(np.float32) * 1e-2).astype(dtype)
    return left, golden


def _device(fmt, golden_nchw, left_framework, **kw):
    return np.asarray(LAYOUTS[(kw.pop("src", "NCHW"), fmt)](golden_nchw.shape, None, left_framework, **kw))


def _cases():
    """(id, left device array, left format, golden array, golden format, target shape, extra kw)."""
    out = []
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32):
        left, golden = _noisy((2, 20, 5, 7), dtype)
        dev = _device("NC1HWC0", golden, left)
        out.append((f"nc1hwc0-nchw-{np.dtype(dtype).name}", dev, "NC1HWC0", golden, "NCHW", golden.shape, {}))
    left, golden = _noisy((2, 20, 5, 7), np.float16)
    dev = _device("NC1HWC0", golden, left)
    nhwc = golden.transpose(0, 2, 3, 1).copy()
    out.append(("nc1hwc0-nhwc", dev, "NC1HWC0", nhwc, "NHWC", nhwc.shape, {}))
    out.append(("nc1hwc0-nhwc-detail", dev, "NC1HWC0", nhwc, "NHWC", nhwc.shape, {"detail": True}))
    hwcn = golden.transpose(2, 3, 1, 0).copy()
    out.append(("nc1hwc0-hwcn", dev, "NC1HWC0", hwcn, "HWCN", hwcn.shape, {}))
    out.append(("nc1hwc0-label-fix", dev, "NC1HWC0", golden, "NHWC", (2, 5, 7, 20), {}))
    left, golden = _noisy((2, 20, 3, 4, 5), np.float16)
    dev = np.asarray(LAYOUTS[("NCDHW", "NDC1HWC0")](golden.shape, None, left))
    out.append(("ndc1hwc0-ncdhw", dev, "NDC1HWC0", golden, "NCDHW", golden.shape, {}))
    for shape in ((37, 21), (3, 37, 21), (16, 32)):
        left, golden = _noisy(shape, np.float16)
        dev = np.asarray(LAYOUTS[("ND", "FRACTAL_NZ")](shape, None, left))
        out.append((f"fractal_nz-{'x'.join(map(str, shape))}", dev, "FRACTAL_NZ", golden, "ND", shape, {}))
    left, golden = _noisy((20, 18, 3, 3), np.float16)
    dev = _device("FRACTAL_Z", golden, left)
    out.append(("fractal_z-nchw", dev, "FRACTAL_Z", golden, "NCHW", golden.shape, {}))
    hwcn = golden.transpose(2, 3, 1, 0).copy()
    out.append(("fractal_z-hwcn", dev, "FRACTAL_Z", hwcn, "HWCN", hwcn.shape, {}))
    left, golden = _noisy((6, 50), np.float16)
    out.append(("nd-2d", left, "ND", golden, "ND", golden.shape, {}))
    out.append(("nd-vs-1d-golden", left, "ND", golden.ravel(), "", (300,), {}))
    left, golden = _noisy((2, 3, 4, 5), np.float32)
    out.append(("nchw-nhwc-transpose", left, "NCHW", golden.transpose(0, 2, 3, 1).copy(), "NHWC", (2, 4, 5, 3), {}))
    out.append(("nchw-f64-golden", left, "NCHW", golden.astype(np.float64), "NCHW", golden.shape, {}))
    out.append(("scalar-like", np.ones((1, 1, 1, 1, 1), np.float16) * 3, "NC1HWC0", np.full((1,), 2.5, np.float32),
                "NCHW", (1,), {}))
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_lazy_plan_pairs_what_prepare_pair_pairs(case):
    _, dev, fmt, golden, gfmt, target, kw = case
    args = (dev.reshape(-1), fmt, dev.shape, golden, gfmt)
    kwargs = dict(target_shape=target, golden_shape=golden.shape, **kw)
    x, y, shape = prepare_pair(*args, **kwargs)
    lx, ly, lshape = plan_pair(*args, **kwargs)
    assert lshape == shape
    assert lx.shape == ly.shape and lx.size == x.size
    np.testing.assert_array_equal(lx.materialize().reshape(-1).view(np.uint8), x.view(np.uint8))
    np.testing.assert_array_equal(ly.materialize().reshape(-1).view(np.uint8), y.view(np.uint8))

    plan = kernel_plan(lx, ly)
    xbuf, _ = storage(lx.base)
    ybuf, _ = storage(ly.base)
    scalar = is_scalar_like(shape)
    fast = compare_planned(xbuf, ybuf, plan, lx.size, scalar=scalar)
    slow = compare_arrays(x, y, scalar=scalar)
    _same_result(fast, slow)
    # the golden-statistics cache gives the same numbers the second time
    cache = SideStats()
    for _ in range(2):
        cached = compare_planned(xbuf, ybuf, plan, lx.size, scalar=scalar, right_cache=cache, right_key="g")
        _same_result(cached, fast)
    assert len(cache) == 1


@pytest.mark.parametrize(
    "dev_shape,fmt,golden_shape,gfmt,target",
    [
        ((1, 4, 8, 8, 16), "NC1HWC0", (1, 16, 12, 12), "NCHW", (1, 16, 12, 12)),  # dim smaller than golden
        ((1, 2, 3, 3, 16), "NC1HWC0", (1, 20, 3, 3), "NOT_A_FORMAT", (1, 20, 3, 3)),
        ((1, 2, 3, 3, 16), "NC1HWC0", (1, 20, 3, 4), "NCHW", (1, 20, 3, 4)),
        ((7,), "FRACTAL_NZ", (3, 20), "ND", (3, 20)),  # too few source dims
        ((2, 2, 16, 16), "FRACTAL_NZ", (40, 20), "ND", (40, 20)),  # target does not fit
        ((6,), "NCHW", (2, 3, 1, 1), "NCHW", None),  # fewer dims, differ in more than 1s
        ((27, 3, 16, 16), "FRACTAL_Z", (20, 18, 3, 3), "NCHW", (20, 18, 3)),  # 3-D target
    ],
)
def test_lazy_plan_raises_what_prepare_pair_raises(dev_shape, fmt, golden_shape, gfmt, target):
    dev = np.zeros(dev_shape, np.float16)
    golden = np.zeros(golden_shape, np.float32)
    kwargs = dict(target_shape=target, golden_shape=golden_shape)
    with pytest.raises((LayoutError, ValueError)) as slow:
        prepare_pair(dev, fmt, dev_shape, golden, gfmt, **kwargs)
    with pytest.raises(type(slow.value)) as fast:
        plan_pair(dev, fmt, dev_shape, golden, gfmt, **kwargs)
    assert str(fast.value) == str(slow.value)


def test_lazy_plan_declines_what_it_cannot_express():
    w = np.arange(8 * 4 * 3, dtype=np.float16).reshape(8, 4, 1, 3)
    dev = np.asarray(LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, 2, reference_quirk=False))
    with pytest.raises(Unsupported):  # grouped FRACTAL_Z: the ordinary path does it
        plan_pair(dev, "FRACTAL_Z", dev.shape, w.astype(np.float32), "NCHW", target_shape=w.shape, sub_format=2)
    with pytest.raises(Unsupported):  # a custom converter
        x = np.zeros((1, 1, 2, 2, 16), np.float16)
        plan_pair(x, "NC1HWC0", x.shape, np.zeros((1, 16, 2, 2)), "NCHW",
                  plugins={("NC1HWC0", "NCHW"): lambda *a: a[2]})
    with pytest.raises(Unsupported):
        LazyView.of(np.zeros((0, 3)))
    with pytest.raises(Unsupported):
        np.asarray(LazyView.of(np.zeros(3)))  # never materialised by accident


@settings(max_examples=int(os.environ.get("VCOMPARE_HYPO_EXAMPLES", "150")), deadline=None)
@given(st.data())
def test_lazy_view_follows_numpy(data):
    """Random transpose / reshape / leading-slice / integer-index chains: LazyView == numpy."""
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    arr = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    if data.draw(st.booleans()):
        arr = arr.transpose(tuple(data.draw(st.permutations(range(arr.ndim)))))
    lazy = LazyView.of(arr)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["transpose", "reshape", "slice", "index"]))
        try:
            if op == "transpose":
                axes = tuple(data.draw(st.permutations(range(arr.ndim))))
                arr, lazy = arr.transpose(axes), lazy.transpose(axes)
            elif op == "reshape":
                if arr.size == 1:
                    continue
                dims = _factor(data, arr.size)
                new_lazy = lazy.reshape(dims)
                arr, lazy = arr.reshape(dims), new_lazy
            elif op == "slice":
                stops = tuple(data.draw(st.integers(1, d)) for d in arr.shape)
                key = tuple(slice(0, s) for s in stops)
                arr, lazy = arr[key], lazy[key]
            elif arr.ndim > 1:
                i = data.draw(st.integers(-arr.shape[0], arr.shape[0] - 1))
                arr, lazy = arr[i], lazy[i]
        except Unsupported:
            continue  # allowed: the caller falls back to numpy
        assert lazy.shape == arr.shape
        np.testing.assert_array_equal(lazy.materialize(), arr)


def _factor(data, n: int) -> tuple[int, ...]:
    dims = []
    while n > 1:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = data.draw(st.sampled_from(divisors))
        dims.append(d)
        n //= d
    return tuple(dims) if dims else (1,)


# --------------------------------------------------------------------------- in-kernel decoding


def _special(dtype) -> np.ndarray:
    info = ml_dtypes.finfo(dtype)
    values = [0.0, -0.0, 1.0, -2.5, float(info.tiny), float(info.tiny) / 4, -float(info.tiny) / 8, float(info.max),
              -float(info.max), np.inf, -np.inf, np.nan, 3.14159, 1e-3, -7.75]
    return np.array(values, dtype=np.float64).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("which", ["finite", "with-nan-inf"])
def test_in_kernel_decoding_equals_widened_copy(dtype, which):
    rng = np.random.default_rng(11)
    x = np.concatenate([_special(dtype), (rng.standard_normal(5000) * 30).astype(dtype)])
    y = np.concatenate([_special(dtype)[::-1], (rng.standard_normal(5000) * 30).astype(dtype)]).astype(np.float32)
    if which == "finite":
        keep = np.isfinite(x.astype(np.float64)) & np.isfinite(y)
        x, y = x[keep], y[keep]
    decoded = compare_arrays(x, y)
    widened = compare_arrays(x.astype(np.float64), y.astype(np.float64))
    assert decoded.values.keys() == widened.values.keys()
    for name in METRIC_NAMES:  # same order of the same float64 values: bit for bit
        a, b = decoded.values[name], widened.values[name]
        assert (a is None and b is None) or (math.isnan(a) and math.isnan(b)) or a == b, (name, a, b)
    assert str(decoded.std) == str(widened.std)


def test_storage_is_zero_copy_for_kernel_dtypes():
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
        a = np.zeros(100, dtype)
        buf, _ = storage(a)
        assert np.shares_memory(buf, a)


# --------------------------------------------------------------------------- engine


@pytest.fixture(scope="module")
def small_network(tmp_path_factory):
    from compare.runs.loading import load_and_pair
    from compare.testing.synthetic_large import make_large_network

    case = make_large_network(tmp_path_factory.mktemp("net"), size_gb=0.004, n_ops=16, seed=3)
    return load_and_pair(case["left"], case["right"], case["fusion_rule"])[-1].pairs


def test_engine_fast_threads_equal_slow_sequential(small_network, monkeypatch):
    import compare.kernels as kernels
    from compare.engine import EngineOptions, compare_pairs

    calls = []
    original = kernels.compare_planned
    import compare.engine as engine

    monkeypatch.setattr(kernels, "compare_planned", lambda *a, **k: calls.append(1) or original(*a, **k))
    monkeypatch.setattr(engine, "compare_planned", kernels.compare_planned)  # the engine's own reference
    fast = compare_pairs(small_network, EngineOptions(fast=True, workers=2))
    slow = compare_pairs(small_network, EngineOptions(fast=False, workers=1))
    assert calls, "the fast path was not taken"
    assert [r.index for r in fast] == [r.index for r in slow]
    compared = 0
    for a, b in zip(fast, slow):
        assert (a.status, a.reasons, a.shape, a.tensor_id) == (b.status, b.reasons, b.shape, b.tensor_id)
        for name in a.metrics:
            assert _close(a.metrics[name], b.metrics[name]), (a.tensor_id, name, a.metrics[name], b.metrics[name])
        assert _close(a.std, b.std)
        compared += a.metrics.get("CosineSimilarity") is not None
    assert compared > 10
    again = compare_pairs(small_network, EngineOptions(fast=True, workers=3))
    assert [(r.metrics, r.std) for r in again] == [(r.metrics, r.std) for r in fast]  # deterministic


def test_engine_progress_in_order_with_threads(small_network):
    from compare.engine import EngineOptions, iter_compare

    seen = []
    rows = list(iter_compare(small_network, EngineOptions(workers=2, progress=lambda d, t: seen.append((d, t)))))
    n = len(small_network)
    assert seen == [(i, n) for i in range(1, n + 1)]
    assert [r.index for r in rows] == [p.index for p in small_network]


def test_ascend_reader_maps_large_dump_tensors(small_network, monkeypatch):
    from convert.codecs import fastread
    from convert.codecs.dumpfile import read_tensor
    from convert.codecs.fastread import is_mapped

    monkeypatch.setattr(fastread, "MIN_MAP_BYTES", 4096)  # the test network's tensors are small
    refs = [p.left for p in small_network if p.left is not None and p.left.nbytes >= 4096]
    assert refs
    for ref in refs[:3]:
        mapped = ref.load()
        assert is_mapped(mapped) and not mapped.flags.writeable
        header, info = ref.reader.args  # functools.partial(read_dump_tensor, header, info)
        np.testing.assert_array_equal(mapped.view(np.uint8), read_tensor(header, info).view(np.uint8))


# --------------------------------------------------------------------------- fastread


def _dump(tmp_path: Path, arrays) -> object:
    from convert.codecs import dumpfile, dumpwrite

    path = tmp_path / "Conv2D.conv.1.1.1700000000000000"
    dumpwrite.write_dump(path, inputs=[dumpwrite.TensorSpec(a) for a in arrays], outputs=[], op_name="conv")
    return dumpfile.read_header(path)


def test_read_tensor_mapped_equals_read_tensor(tmp_path):
    from convert.codecs import dumpfile
    from convert.codecs.fastread import MIN_MAP_BYTES, is_mapped, read_tensor_mapped

    big = np.random.default_rng(1).standard_normal(MIN_MAP_BYTES).astype(np.float16)  # 2 MiB
    small = np.arange(10, dtype=np.float32)
    ints = np.arange(MIN_MAP_BYTES, dtype=np.int32)  # integers are mapped too (read in place by the kernels)
    header = _dump(tmp_path, [big, small, ints])
    for info, mapped_expected in zip(header.tensors, (True, False, True)):
        got = read_tensor_mapped(header, info)
        want = dumpfile.read_tensor(header, info)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        assert is_mapped(got) == mapped_expected


def test_read_tensor_mapped_leaves_errors_to_read_tensor(tmp_path):
    from convert.codecs import dumpfile
    from convert.codecs.fastread import MIN_MAP_BYTES, read_tensor_mapped

    big = np.ones(MIN_MAP_BYTES, np.float16)
    header = _dump(tmp_path, [big])
    info = header.tensors[0]
    with open(header.path, "r+b") as f:  # cut the file inside the tensor's data
        f.truncate(info.offset + info.size // 2)
    with pytest.raises(dumpfile.DumpFormatError) as slow:
        dumpfile.read_tensor(header, info)
    with pytest.raises(dumpfile.DumpFormatError) as fast:
        read_tensor_mapped(header, info)
    assert str(fast.value) == str(slow.value)


# --------------------------------------------------------------------------- the benchmark (CI smoke test)


def test_bench_smoke(tmp_path):
    """The benchmark's whole suite on tiny cases: large (cold + warm), many-small, the scaling
    curve, and a stand-in reference command (its template is filled and run)."""
    fake_reference = f"{sys.executable} -c 'import sys; sys.exit(0 if sys.argv[1:] == [\"{{left}}\", \"{{out}}\"] else 7)' {{left}} {{out}}"
    cmd = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--size-gb", "0.02", "--ops", "10", "--runs", "1",
           "--no-baseline", "--small-ops", "12", "--scale", "20,40", "--reference", fake_reference,
           "--workdir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for figure in ("vcompare --help:", "case large:", "case many-small:", "cold (fresh process", "x warm +",
                   "warm: median", "GB/s", "peak RSS", "us per tensor row", "reference tool:", "faster",
                   "scaling (warm time vs tensor rows", "fit:", "re-gate"):
        assert figure in proc.stdout, (figure, proc.stdout)


def test_bench_ranks_smoke(tmp_path):
    """The multi-rank case of the benchmark on a tiny tree: in turn and on a LocalCluster of 2, the
    same CSV, the throughput and task-cost lines (issue 18; skipped without Dask)."""
    pytest.importorskip("distributed", reason="dask[distributed] is not installed: pip install 'vcompare[dask]'")
    cmd = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--size-gb", "0", "--ranks", "2", "--iterations", "1",
           "--rank-ops", "4", "--runs", "1", "--no-baseline", "--workdir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for figure in ("case ranks:", "in turn here:", "on Dask local:2", "the same CSV byte for byte: yes",
                   "tensor rows/s", "an empty task", "client, in-process"):
        assert figure in proc.stdout, (figure, proc.stdout)

"""The native kernel objects, the golden-statistics store, the engine's grouping and plan cache,
and the accuracy of KL and of its log-ratio helper.

- compare/kernels/native/: the ahead-of-time objects compute what numba's kernels compute
  (summation order aside), are used without importing numba, can be switched off, and a failed
  build falls back to numba without failing the run;
- compare.engine.goldens.SideStats: one computation per key across threads, waiters do other work first,
  a failed owner leaves the key to a waiter;
- compare.engine._groups: pairs sharing a golden within LOOKAHEAD stay in one group (one thread);
- the engine gives the same rows with 1 and 2 threads, and reuses lazy plans across pairs;
- KL (sum of non-negative Bregman terms) against a long-double reference; fused.logratio within
  a few ulp.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT

from compare.engine.goldens import SideStats
from compare.kernels import (
    EPS32,
    METRIC_NAMES,
    KernelPlan,
    _kl_side,
    bind_plan,
    compare_arrays,
    flat_kernel_plan,
    native,
    passes,
    storage,
)
from compare.kernels._abi import ErrMode, PairPass, SidePass
from compare.kernels.buffers import raw, tile
from compare.records import TensorKind

DEMO = ROOT / "fixtures" / "demo"

pytestmark = [pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                 reason="compiled-kernel tests (too slow as plain Python)"),
              # numba's kernels are compiled on first use: one xdist worker compiles them once
              pytest.mark.xdist_group("numba")]

KL_NAME = "KullbackLeiblerDivergence"


# --------------------------------------------------------------------------- helpers


def _native_kernels() -> native.Kernels:
    """The native kernels, or skip the test saying why they are not in use here."""
    k = native.kernels()
    if k is None:
        pytest.skip(f"native kernels not available on this machine: {native.status}")
    return k


def _numba_kernels() -> native.Kernels:
    from compare.kernels import fused

    return native.Kernels(side=fused._side_boxes, pair=fused._pair_boxes)


def _close(a: float | None, b: float | None, rel: float = 1e-12, abs_: float = 0.0) -> bool:
    """Equal, both NaN, or within ``rel`` (relative) / ``abs_`` (absolute)."""
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def _same_bits(a: float, b: float) -> bool:
    """Exactly equal (NaN == NaN): for order-independent results (extrema)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def _passes_of(k: native.Kernels, xf: np.ndarray, yf: np.ndarray, plan: KernelPlan, n: int,
               prm: tuple | None, do_rel: bool, do_kl: bool, do_err: bool = False,
               err32: bool = False) -> tuple[tuple, tuple, tuple, tuple]:
    """The three kernel calls of compare.kernels._compute with backend ``k``: (left side, right side,
    pair, prm). ``prm`` None derives the KL parameters from this backend's side passes (as _compute
    does); pass one to give two backends the very same parameters."""
    left = tuple(k.side(*raw(xf), *plan.left, tile()))
    right = tuple(k.side(*raw(yf), *plan.right, tile()))
    if prm is None:
        cx, ix, spe = _kl_side(left[0], left[1], left[2], n)
        cy, iy, sqe = _kl_side(right[0], right[1], right[2], n)
        kk = sqe / spe if spe > 0.0 else 1.0
        if not (0.0 < kk < math.inf) or abs(kk - 1.0) < 1e-6:
            kk = 1.0
        prm = (cx, ix * kk, EPS32 * kk, cy, iy)
    finite = n == 0 or all(-math.inf < v < math.inf for v in (left[0], left[1], right[0], right[1]))
    pair = tuple(k.pair(*raw(xf), *raw(yf), *plan.pair, prm, do_rel, do_kl and finite and n > 0,
                        do_err, err32, tile(), tile()))
    return left, right, pair, prm


def _finite_abs_sum(v: np.ndarray) -> float:
    v = np.asarray(v, dtype=np.float64)
    return float(np.abs(v[np.isfinite(v)]).sum())


def _assert_backends_agree(xf: np.ndarray, yf: np.ndarray, plan: KernelPlan | None = None) -> None:
    """Native and numba passes agree: extrema bit for bit, sums within 1e-12 (relative, or of the
    sum of magnitudes where the sum cancels), in each of the pair pass's three loops."""
    nat, nb = _native_kernels(), _numba_kernels()
    n = int(xf.shape[0])
    plan = plan or flat_kernel_plan(n)
    xv = xf.view(np.float16) if xf.dtype == np.uint16 else (
        xf.view(ml_dtypes.bfloat16) if xf.dtype == np.int16 else xf)
    yv = yf.view(np.float16) if yf.dtype == np.uint16 else (
        yf.view(ml_dtypes.bfloat16) if yf.dtype == np.int16 else yf)
    x64, y64 = xv.astype(np.float64), yv.astype(np.float64)
    with np.errstate(all="ignore"):
        side_scale = {"left": (0.0, 0.0, _finite_abs_sum(x64), 0.0, _finite_abs_sum(x64 * x64)),
                      "right": (0.0, 0.0, _finite_abs_sum(y64), 0.0, _finite_abs_sum(y64 * y64))}
        sxy_scale = _finite_abs_sum(x64 * y64)
    for do_rel, do_kl, do_err, err32 in ((False, False, False, False), (True, False, False, False),
                                         (True, True, False, False), (False, False, True, False),
                                         (True, True, True, True)):
        with np.errstate(all="ignore"):
            ln, rn, pn, prm = _passes_of(nb, xf, yf, plan, n, None, do_rel, do_kl, do_err, err32)
            la, ra, pa, _ = _passes_of(nat, xf, yf, plan, n, prm, do_rel, do_kl, do_err, err32)
        for label, got, want, scale in (("left", la, ln, side_scale["left"]),
                                        ("right", ra, rn, side_scale["right"])):
            assert len(got) == len(want) == len(SidePass._fields)
            assert _same_bits(got[0], want[0]) and _same_bits(got[1], want[1]), (label, got, want)
            assert got[5:] == want[5:], (label, "NaN / inf / saturated counts", got, want)
            for i in (2, 3, 4):
                assert _close(got[i], want[i], 1e-12, 1e-12 * scale[i]), (label, i, got[i], want[i])
        assert len(pa) == len(pn) == len(PairPass._fields) == 13
        # msprobe's terms: counts exact, efin a sum of squares (0 without do_err)
        assert pa[10:] == pn[10:], ("emis / w1 / w5", pa[10:], pn[10:])
        assert _close(pa[9], pn[9], 1e-12, 1e-300), ("efin", pa[9], pn[9])
        if not do_err:
            assert pa[9:] == (0.0, 0.0, 0.0, 0.0)
        for i in (3, 5):  # max |x-y|, max r: order-independent
            assert _same_bits(pa[i], pn[i]), (i, pa[i], pn[i], do_rel, do_kl)
        assert _close(pa[0], pn[0], 1e-12, 1e-12 * sxy_scale), ("sxy", pa[0], pn[0])
        for i in (1, 2, 4, 7, 8):  # sums of non-negative terms
            assert _close(pa[i], pn[i], 1e-12, 1e-300), (i, pa[i], pn[i], do_rel, do_kl)
        # KL's terms u*log(u/w) + (w - u) are >= 0 but each is the sum of two parts that round
        # on their own: the tolerance scales with the parts (~20 eps of them measured)
        cx, ixk, uk, cy, iy = prm
        with np.errstate(all="ignore"):
            u = np.maximum((x64 - cx) * ixk, uk)
            w = np.maximum((y64 - cy) * iy, EPS32)
            parts = _finite_abs_sum(u * np.log(u / w)) + _finite_abs_sum(u - w)
        assert _close(pa[6], pn[6], 1e-12, 1e-12 * parts), ("A", pa[6], pn[6], parts)


def _random(dtype, n: int, seed: int, shift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) + shift).astype(dtype)


LEFT_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
RIGHT_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16}
SIZES = (0, 1, 7, 2048, 2049, 100_003)


# --------------------------------------------------------------------------- 1. native == numba


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rt", RIGHT_DTYPES)
@pytest.mark.parametrize("lt", LEFT_DTYPES)
def test_native_equals_numba_random(lt: str, rt: str, n: int) -> None:
    """The native objects compute numba's numbers for every storage type pairing and the tile /
    chunk boundary sizes (0, 1, 7, TILE, TILE + 1, a large odd size)."""
    y = _random(RIGHT_DTYPES[rt], n, seed=n + 1)
    x = (y.astype(np.float64) + 0.01 * _random(np.float64, n, seed=n + 2)).astype(LEFT_DTYPES[lt])
    _assert_backends_agree(storage(x, "left")[0], storage(y, "right")[0])


def _special(case: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = _random(np.float64, n, seed=7)
    y = _random(np.float64, n, seed=8)
    if case == "nan":
        x[n // 3] = np.nan
    elif case == "nan_right":
        y[n // 2] = np.nan
    elif case == "inf":
        x[n // 2] = np.inf
        y[n // 3] = -np.inf
    elif case == "zeros":
        y[::3] = 0.0
        x[::5] = -0.0
    elif case == "constant":
        x[:] = 3.0
        y[:] = -1.5
    elif case == "all_zero":
        x[:] = 0.0
        y[:] = 0.0
    return x, y


@pytest.mark.parametrize("n", (1, 2049, 100_003))
@pytest.mark.parametrize("lt,rt", [("float16", "float32"), ("bfloat16", "float64"), ("float32", "float16"),
                                   ("float64", "float64")])
@pytest.mark.parametrize("case", ("nan", "nan_right", "inf", "zeros", "constant", "all_zero"))
def test_native_equals_numba_special_values(case: str, lt: str, rt: str, n: int) -> None:
    """NaN, +-inf, (signed) zeros, constant and all-zero sides: same NaN/inf propagation, same
    relative-error masking, same extrema in both builds."""
    x, y = _special(case, n)
    _assert_backends_agree(storage(x.astype(LEFT_DTYPES[lt]), "left")[0],
                           storage(y.astype(RIGHT_DTYPES[rt]), "right")[0])


@pytest.mark.parametrize("rows,cols", [(3, 5), (64, 40), (2, 3000), (130, 33)])
def test_native_equals_numba_strided_plan(rows: int, cols: int) -> None:
    """A plan that reads the golden transposed (the gather paths, not only the in-place reads)
    gives the same numbers in both builds -- and the numbers of the flat comparison."""
    x = _random(np.float16, rows * cols, seed=rows)
    y_rc = (x.astype(np.float64) + 0.01 * _random(np.float64, rows * cols, seed=cols)).astype(np.float32)
    y_store = np.ascontiguousarray(y_rc.reshape(rows, cols).T).reshape(-1)  # golden stored column-major
    dims = np.ones((1, 6), np.int64)
    dims[0, 4:] = rows, cols
    sx = np.zeros((1, 6), np.int64)
    sx[0, 4:] = cols, 1
    sy = np.zeros((1, 6), np.int64)
    sy[0, 4:] = 1, rows
    zero = np.zeros(1, np.int64)
    flat = flat_kernel_plan(rows * cols)
    plan = KernelPlan((dims, sx, sy, zero, zero), flat.left, flat.right)
    xf, yf = storage(x)[0], storage(y_store)[0]
    _assert_backends_agree(xf, yf, plan)
    _, _, strided, _ = _passes_of(_native_kernels(), xf, yf, plan, rows * cols, None, True, True)
    _, _, plain, _ = _passes_of(_native_kernels(), xf, storage(y_rc)[0], flat, rows * cols, None, True, True)
    for i, (a, b) in enumerate(zip(strided, plain)):
        assert _close(a, b, 1e-12, 1e-12 * abs(plain[7])), (i, a, b)


@pytest.fixture(params=["native", "numba"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with the native objects, then with numba's kernels (native switched off)."""
    if request.param == "native":
        _native_kernels()
    else:
        monkeypatch.setattr(native, "_loaded", None)
        monkeypatch.setattr(native, "_tried", True)
    return request.param


def test_passes_pick_native_else_numba(backend: str) -> None:
    """compare.kernels.passes.backend() hands out the native objects when loaded, numba's otherwise."""
    from compare.kernels import fused

    chosen = passes.backend()
    if backend == "native":
        assert chosen is native.kernels()
        assert chosen.side is not fused._side_boxes
    else:
        assert (chosen.side, chosen.pair) == (fused._side_boxes, fused._pair_boxes)
    r = compare_arrays(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 5.0], np.float32))
    assert r.values["MaxAbsoluteError"] == 1.0 and r.values["MeanAbsoluteError"] == pytest.approx(1 / 3)


def test_pass_results_read_by_name(backend: str) -> None:
    """Each pass's raw floats come back as a SidePass / PairPass (fields in the order of the
    kernels' tuples and of the entry points' out[] arrays), on both backends."""
    x, y = np.array([1.0, -2.0, 4.0]), np.array([1.0, 2.0, 5.0])
    calls = passes.pair_passes(x, y, bind_plan(flat_kernel_plan(3)))
    left, right = calls.left(), calls.right()
    assert isinstance(left, SidePass) and isinstance(right, SidePass)
    assert (left.min, left.max, left.sum, left.ssq) == (-2.0, 4.0, 3.0, 21.0)
    assert left.m2 == pytest.approx(21.0 - 3.0)
    pair = calls.pair((0.0, 1.0, EPS32, 0.0, 1.0), True, False, ErrMode.OFF)
    assert isinstance(pair, PairPass) and len(pair) == len(PairPass._fields)
    assert (pair.sxy, pair.sabs, pair.ssq, pair.maxabs) == (1.0 - 4.0 + 20.0, 5.0, 17.0, 4.0)
    assert pair.srel == pytest.approx(2.0 + 0.2) and pair.maxrel == 2.0
    assert (pair.efin, pair.emis, pair.w1, pair.w5) == (0.0, 0.0, 0.0, 0.0)
    pair = calls.pair((0.0, 1.0, EPS32, 0.0, 1.0), False, False, ErrMode.F64)
    assert (pair.efin, pair.emis, pair.w1, pair.w5) == (17.0, 0.0, 1.0, 1.0)


def test_enabled_follows_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """VCOMPARE_NATIVE=0/no/false/off and NUMBA_DISABLE_JIT=1 switch the native objects off."""
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    monkeypatch.delenv("VCOMPARE_NATIVE", raising=False)
    assert native.enabled()
    for off in ("0", "no", "False", " off "):
        monkeypatch.setenv("VCOMPARE_NATIVE", off)
        assert not native.enabled(), off
    monkeypatch.setenv("VCOMPARE_NATIVE", "1")
    assert native.enabled()
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert not native.enabled()
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "0")
    assert native.enabled()


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """VCOMPARE_CACHE_DIR wins over NUMBA_CACHE_DIR, which wins over the user's cache folder."""
    monkeypatch.setenv("VCOMPARE_CACHE_DIR", str(tmp_path / "v"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "n"))
    assert native._cache_dir() == tmp_path / "v"
    monkeypatch.delenv("VCOMPARE_CACHE_DIR")
    assert native._cache_dir() == tmp_path / "n"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert native._cache_dir() == Path("~/.cache/vcompare").expanduser()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert native._cache_dir() == tmp_path / "x" / "vcompare"


def _fresh_native(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """Forget the loaded objects for this test (restored afterwards) and use an empty cache."""
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "_loaded", None)
    monkeypatch.setattr(native, "status", "not loaded yet")
    monkeypatch.setattr(native, "_cache_dir", lambda: cache)
    monkeypatch.setattr(native, "_packaged_dir", lambda: cache / "no-packaged-objects")
    monkeypatch.setattr(native, "notes", [])
    monkeypatch.delenv("VCOMPARE_NATIVE", raising=False)
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)


def test_build_failure_falls_back_to_numba(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A failing build leaves native.kernels() None with the reason in native.status, is not
    retried, and comparisons still work (numba's kernels, same numbers)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5000).astype(np.float16)
    y = x.astype(np.float32) + 0.01 * rng.standard_normal(5000).astype(np.float32)
    before = compare_arrays(x, y, metrics=list(METRIC_NAMES))
    calls: list[Path] = []

    def broken(index: Path, *args: object) -> None:
        calls.append(index)
        raise RuntimeError("kernel build failed (exit 1): no compiler today")

    _fresh_native(monkeypatch, tmp_path)
    monkeypatch.setattr(native, "build", broken)
    assert native.kernels() is None
    assert native.status.startswith("unavailable") and "RuntimeError" in native.status
    assert "no compiler today" in native.status
    assert len(calls) == 1 and calls[0].parent == tmp_path
    assert native.kernels() is None and len(calls) == 1  # tried once per process
    assert list(tmp_path.glob("*.failed"))  # and once per machine: a later process reads the note
    _fresh_native(monkeypatch, tmp_path)
    assert native.kernels() is None and len(calls) == 1
    assert "an earlier build failed" in native.status and "no compiler today" in native.status
    from compare.kernels import fused

    assert passes.backend().side is fused._side_boxes
    after = compare_arrays(x, y, metrics=list(METRIC_NAMES))
    assert after.notes == before.notes and after.count == before.count
    for name in METRIC_NAMES:
        assert _close(after.values[name], before.values[name], 1e-12, 1e-15), name
    assert all(_close(a, b, 1e-12, 1e-15) for a, b in zip(after.std, before.std))


def test_missing_objects_without_build_are_not_final(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """kernels(build=False) on an empty cache says "not built" and leaves a later kernels() free
    to build (it does not mark the objects as tried)."""
    _fresh_native(monkeypatch, tmp_path)
    built: list[Path] = []

    def build(index: Path, *args: object) -> None:
        built.append(index)
        raise RuntimeError("stop here")

    monkeypatch.setattr(native, "build", build)
    assert native.kernels(build=False) is None
    assert native.status == "not built" and native._tried is False and not built
    assert native.kernels() is None and len(built) == 1 and "stop here" in native.status


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VCOMPARE_NATIVE", "NUMBA_DISABLE_JIT")}
    env.update(extra)
    return env


def test_disabled_in_a_fresh_process() -> None:
    """VCOMPARE_NATIVE=0 in a fresh process: status "disabled ...", numba does the comparison."""
    code = ("import sys, numpy as np; from compare.kernels import compare_arrays, native; "
            "r = compare_arrays(np.arange(5.0), np.arange(5.0) + 1); "
            "print(native.status); print(native.kernels() is None, 'numba' in sys.modules, "
            "r.values['MaxAbsoluteError'])")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_child_env(VCOMPARE_NATIVE="0"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, rest = proc.stdout.strip().splitlines()
    assert status.startswith("disabled"), status
    assert rest.split() == ["True", "True", "1.0"]


def test_native_comparison_does_not_import_numba() -> None:
    """With the objects cached, a fresh process compares without importing numba at all."""
    _native_kernels()
    code = ("import sys, numpy as np; from compare.kernels import compare_arrays, native; "
            "r = compare_arrays(np.ones(10, np.float16), np.ones(10, np.float32)); "
            "print('numba' in sys.modules, r.values['CosineSimilarity']); print(native.status)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_child_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, status = proc.stdout.strip().splitlines()
    imported, cosine = first.split()
    assert imported == "False" and status.startswith("loaded"), proc.stdout
    assert float(cosine) == pytest.approx(1.0, abs=1e-15)


# --------------------------------------------------------------------------- 2. SideStats

TIMEOUT = 30.0


def _thread(target: Callable[[], object], out: dict, name: str) -> threading.Thread:
    def run() -> None:
        try:
            out[name] = target()
        except Exception as exc:  # noqa: BLE001 - recorded for the assertions
            out[name] = exc

    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    return t


def test_side_stats_computes_each_key_once() -> None:
    """Sequential asks: one compute per key, then the stored value."""
    stats = SideStats()
    calls: list[str] = []
    assert stats.get_or_compute("a", lambda: calls.append("a") or 1.5) == 1.5
    assert stats.get_or_compute("a", lambda: calls.append("a again") or 9.0) == 1.5
    assert stats.get_or_compute(("b", 2), lambda: calls.append("b") or (1, 2)) == (1, 2)
    assert calls == ["a", "b"] and len(stats) == 2


def test_side_stats_waiter_runs_meanwhile_then_shares_the_result() -> None:
    """A second thread asking while the first computes runs meanwhile(), waits, and gets the
    owner's value without computing; another key is not held up meanwhile."""
    stats = SideStats()
    started, release, meanwhile_done = threading.Event(), threading.Event(), threading.Event()
    calls: list[str] = []

    def owner_compute() -> str:
        calls.append("owner")
        started.set()
        assert release.wait(TIMEOUT)
        return "value"

    def waiter_compute() -> str:
        calls.append("waiter")
        return "wrong"

    out: dict = {}
    a = _thread(lambda: stats.get_or_compute("k", owner_compute), out, "owner")
    assert started.wait(TIMEOUT)
    b = _thread(lambda: stats.get_or_compute("k", waiter_compute, meanwhile=meanwhile_done.set), out, "waiter")
    assert meanwhile_done.wait(TIMEOUT)  # ran while the owner still computes
    assert "owner" not in out and "waiter" not in out
    assert stats.get_or_compute("other", lambda: 7) == 7  # a different key does not wait
    release.set()
    a.join(TIMEOUT)
    b.join(TIMEOUT)
    assert out == {"owner": "value", "waiter": "value"}
    assert calls == ["owner"] and len(stats) == 2


def test_side_stats_waiter_computes_when_owner_fails() -> None:
    """If the owner's compute raises, the waiting thread computes the key itself (once), and the
    value is stored for later asks."""
    stats = SideStats()
    started, release = threading.Event(), threading.Event()
    meanwhile: list[int] = []

    def failing() -> float:
        started.set()
        assert release.wait(TIMEOUT)
        raise ValueError("unreadable golden")

    out: dict = {}
    a = _thread(lambda: stats.get_or_compute("k", failing), out, "owner")
    assert started.wait(TIMEOUT)
    waiter_calls: list[int] = []
    in_meanwhile = threading.Event()

    def other_work() -> None:
        meanwhile.append(1)
        in_meanwhile.set()

    b = _thread(lambda: stats.get_or_compute("k", lambda: waiter_calls.append(1) or 4.25, meanwhile=other_work),
                out, "waiter")
    assert in_meanwhile.wait(TIMEOUT)
    release.set()
    a.join(TIMEOUT)
    b.join(TIMEOUT)
    assert isinstance(out["owner"], ValueError) and out["waiter"] == 4.25
    assert waiter_calls == [1] and meanwhile == [1]
    assert not stats._busy  # the failed owner released the key
    later: list[int] = []  # the waiter's value is stored: "each key is computed once"
    assert stats.get_or_compute("k", lambda: later.append(1) or 4.25) == 4.25
    assert later == [] and len(stats) == 1


# --------------------------------------------------------------------------- 3. engine._groups


def _fake_pairs(keys: list[str | None]) -> list[SimpleNamespace]:
    """Pairs whose golden is named by ``keys`` (None: no right side)."""
    return [SimpleNamespace(index=i, right=None if k is None else
                            SimpleNamespace(path=Path(f"golden/{k}.npy"), kind=TensorKind.OUTPUT, index=0))
            for i, k in enumerate(keys)]


def _labels(groups: list[list[SimpleNamespace]]) -> list[list[int]]:
    return [[p.index for p in g] for g in groups]


def test_groups_examples() -> None:
    """Concrete cuts: distinct goldens alone; a shared golden LOOKAHEAD pairs apart joins, one
    more apart does not; a pair without golden between two sharers is absorbed; GROUP_MAX caps."""
    from compare.engine import GROUP_MAX, LOOKAHEAD, _groups

    assert _labels(list(_groups(_fake_pairs(["a", "b", "c"])))) == [[0], [1], [2]]
    near = ["a"] + [f"b{i}" for i in range(LOOKAHEAD - 1)] + ["a"]  # a ... a, LOOKAHEAD apart
    assert _labels(list(_groups(_fake_pairs(near)))) == [list(range(LOOKAHEAD + 1))]
    far = ["a"] + [f"b{i}" for i in range(LOOKAHEAD)] + ["a"]  # one more apart
    assert len(list(_groups(_fake_pairs(far)))) == LOOKAHEAD + 2
    assert _labels(list(_groups(_fake_pairs(["a", None, "a", "c"])))) == [[0, 1, 2], [3]]
    assert _labels(list(_groups(_fake_pairs([None, None])))) == [[0], [1]]
    assert list(_groups([])) == []
    many = list(_groups(_fake_pairs(["a"] * (2 * GROUP_MAX + 3))))
    assert [len(g) for g in many] == [GROUP_MAX, GROUP_MAX, 3]


def _check_groups(keys: list[str | None]) -> None:
    from compare.engine import GROUP_MAX, LOOKAHEAD, _groups

    pairs = _fake_pairs(keys)
    groups = list(_groups(pairs))
    assert [p for g in groups for p in g] == pairs  # every pair once, in order
    assert all(1 <= len(g) <= GROUP_MAX for g in groups)
    where = {p.index: gi for gi, g in enumerate(groups) for p in g}
    for i, ki in enumerate(keys):
        for j in range(i + 1, min(i + LOOKAHEAD + 1, len(keys))):
            if ki is not None and keys[j] == ki and where[i] != where[j]:
                assert len(groups[where[i]]) == GROUP_MAX, (keys, i, j)  # only a full group splits them
    start = 0
    for g, nxt in zip(groups, groups[1:]):  # a cut that is not for size: nothing shared ahead
        start += len(g)
        if len(g) < GROUP_MAX:
            mine = {keys[p.index] for p in g} - {None}
            assert not mine & set(keys[start:start + LOOKAHEAD]), (keys, _labels(groups))


def test_groups_properties_random() -> None:
    """On random golden sequences (few goldens, some pairs without one): order kept, sizes capped,
    sharers within LOOKAHEAD together unless the group is full, and no needless cut."""
    rng = np.random.default_rng(11)
    for trial in range(400):
        n = int(rng.integers(0, 40))
        alphabet = ["a", "b", "c", "d", "e", "f", None][: int(rng.integers(2, 8))]
        _check_groups([alphabet[int(i)] for i in rng.integers(0, len(alphabet), n)])


@pytest.fixture(scope="module")
def demo_pairs() -> list:
    from compare.runs.loading import load_and_pair

    pairs = load_and_pair(DEMO / "npu", DEMO / "golden", DEMO / "model.json")[-1].pairs
    assert sum(p.right is not None and p.left is not None for p in pairs) >= 8
    return pairs


def test_groups_on_demo_pairs(demo_pairs: list) -> None:
    """The demo network's pairs: a producer's output and its consumer's input (same golden) share a
    group; concatenated, the groups are the pairs."""
    from compare.engine import _groups
    from compare.engine.goldens import GoldenCache

    groups = list(_groups(demo_pairs))
    assert [p for g in groups for p in g] == demo_pairs
    assert len(groups) < len(demo_pairs)
    group_of = {id(p): gi for gi, g in enumerate(groups) for p in g}
    keys = [GoldenCache.key(p.right) if p.right is not None else None for p in demo_pairs]
    shared = [(i, i + 1) for i in range(len(keys) - 1) if keys[i] is not None and keys[i] == keys[i + 1]]
    assert shared, "the demo has consecutive pairs on one golden"
    for i, j in shared:
        assert group_of[id(demo_pairs[i])] == group_of[id(demo_pairs[j])]


# --------------------------------------------------------------------------- 4. engine


def _rows_equal(a: list, b: list, rel: float) -> None:
    assert [(r.index, r.tensor_id) for r in a] == [(r.index, r.tensor_id) for r in b]
    for ra, rb in zip(a, b):
        assert (ra.status, ra.reasons, ra.shape) == (rb.status, rb.reasons, rb.shape), ra.tensor_id
        assert ra.metrics.keys() == rb.metrics.keys()
        for name in ra.metrics:
            assert _close(ra.metrics[name], rb.metrics[name], rel, 1e-15), (ra.tensor_id, name)
        assert (ra.std is None) == (rb.std is None)
        if ra.std is not None:
            assert all(_close(u, v, rel, 1e-15) for u, v in zip(ra.std, rb.std)), ra.tensor_id


def test_engine_two_threads_equal_one(demo_pairs: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """workers=2 gives workers=1's rows (order, reasons, metrics to 1e-12); each group of _groups
    runs on one pool thread."""
    from compare import engine
    from compare.engine import EngineOptions, compare_pairs

    one = compare_pairs(demo_pairs, EngineOptions(workers=1))
    threads: dict[int, str] = {}
    original = engine._safe_compare

    def recording(pair, options, goldens):
        threads[id(pair)] = threading.current_thread().name
        return original(pair, options, goldens)

    monkeypatch.setattr(engine, "_safe_compare", recording)
    two = list(engine.iter_compare(demo_pairs, EngineOptions(workers=2)))
    _rows_equal(two, one, 1e-12)
    assert sum(r.metrics.get("CosineSimilarity") is not None for r in two) >= 8
    assert len(threads) == len(demo_pairs) and all(t.startswith("vcompare") for t in threads.values())
    for group in engine._groups(demo_pairs):
        assert len({threads[id(p)] for p in group}) == 1


def test_engine_reuses_lazy_plans(demo_pairs: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pairs with the same shapes and formats reuse one lazy plan and its layout decision
    (plan_decided and decide_layout run fewer times than pairs are compared), and the rows still
    equal the ordinary path's (fast=False) to 1e-9."""
    from compare.engine import EngineOptions, compare_pairs, prepare

    plans: list[int] = []
    decisions: list[int] = []
    plan, decide = prepare.plan_decided, prepare.decide_layout
    monkeypatch.setattr(prepare, "plan_decided", lambda *a, **k: plans.append(1) or plan(*a, **k))
    monkeypatch.setattr(prepare, "decide_layout", lambda *a, **k: decisions.append(1) or decide(*a, **k))
    fast = compare_pairs(demo_pairs, EngineOptions(workers=1))
    compared = sum(r.metrics.get("CosineSimilarity") is not None for r in fast)
    assert 1 <= len(plans) < compared, (len(plans), compared)
    assert len(decisions) == len(plans)  # one decision a plan, none for a pair that reuses one
    slow_plans = len(plans)
    decisions.clear()
    slow = compare_pairs(demo_pairs, EngineOptions(fast=False, workers=1))
    assert len(plans) == slow_plans  # the ordinary path plans nothing
    assert len(decisions) == sum(p.convert and p.left is not None and p.right is not None for p in demo_pairs)
    _rows_equal(fast, slow, 1e-9)


def test_one_layout_decision_per_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair the zero-copy plan cannot express (empty tensors: Unsupported) falls back to the
    eager path with the decision already made: one decision for the plan, the preparation and the
    Shape column."""
    from compare.engine import _compare_planned, prepare

    decisions: list[int] = []
    decide = prepare.decide_layout
    monkeypatch.setattr(prepare, "decide_layout", lambda *a, **k: decisions.append(1) or decide(*a, **k))
    request = prepare.LayoutRequest(
        left=np.zeros(0, np.float32), left_format="NCHW", left_shape=(0,), right=np.zeros(0, np.float32),
        golden_format="NCHW", target_shape=None, golden_shape=(0,), sub_format=0, plugins=None, assumed=False)
    assert _compare_planned(None, request, ["CosineSimilarity"]) is None  # empty: no zero-copy plan
    x, y, _ = request.prepare()
    assert x.size == y.size == 0 and request.decision.network.converted and len(decisions) == 1


def test_golden_cache_shares_statistics_and_plans(demo_pairs: list) -> None:
    """One GoldenCache over the demo: one statistics entry per golden (a golden compared twice is
    summarised once) and one plan per layout signature."""
    from compare.engine import EngineOptions, compare_pair
    from compare.engine.goldens import GoldenCache

    goldens = GoldenCache()
    rows = [compare_pair(p, EngineOptions(), goldens) for p in demo_pairs]
    compared = [p for p, r in zip(demo_pairs, rows) if r.metrics.get("CosineSimilarity") is not None]
    distinct_goldens = {GoldenCache.key(p.right) for p in compared}
    assert len(compared) > len(distinct_goldens)
    assert 1 <= len(goldens.stats) <= len(distinct_goldens)
    assert 1 <= len(goldens.plans) < len(compared)


# --------------------------------------------------------------------------- 5. KL accuracy


def _kl_reference(x: np.ndarray, y: np.ndarray) -> float:
    """The metric's formula in long double: min-max normalise, clamp at 2**-23, sum P log(P/Q)."""
    def normalised(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64).astype(np.longdouble)
        rng = v.max() - v.min()
        p = (v - v.min()) / rng if rng != 0 else v
        return np.maximum(p, np.longdouble(2.0) ** -23)

    p, q = normalised(x), normalised(y)
    big_p, big_q = p / p.sum(), q / q.sum()
    return float((big_p * np.log(big_p / big_q)).sum())


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_kl_ill_conditioned_is_accurate(backend: str, seed: int) -> None:
    """float16 data against a golden 1e-3 away: KL ~ 3e-8, whose plain P*log(P/Q) terms cancel
    by ~1e5; the Bregman-term kernel gets it to 1e-10 relative of the long-double reference
    (measured <= 1.4e-11 over 8 seeds; the plain float64 formula is off by 2e-10 to 5e-9)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(100_003).astype(np.float16)
    y = x.astype(np.float32) + (1e-3 * rng.standard_normal(x.size)).astype(np.float32)
    want = _kl_reference(x, y)
    got = compare_arrays(x, y, metrics="kl").values[KL_NAME]
    assert 1e-9 < want < 1e-6
    assert abs(got - want) <= 1e-10 * want, (got, want, abs(got - want) / want)


def test_kl_of_nearly_equal_data_keeps_its_digits(backend: str) -> None:
    """float64 sides 1e-7 apart: KL ~ 2.5e-16, each term's parts ~1e-7. The kernel's terms must
    not be re-associated by fast-math into ``(u*lr + w) - u`` (that left 4e-3 relative error).
    Reference: the same float64-normalised inputs, summed in long double as the non-negative
    terms ``P log(P/Q) - P + Q`` (a long-double ``P log(P/Q)`` sum itself cancels down to 4e-5
    here); agreement measured 4e-7 (the normalised inputs' own rounding against a 1e-7 ratio)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(200_003)
    y = x + 1e-7 * rng.standard_normal(x.size)

    def normalised(v: np.ndarray) -> np.ndarray:
        return np.maximum((v - v.min()) / (v.max() - v.min()), 2.0**-23).astype(np.longdouble)

    p, q = normalised(x), normalised(y)
    big_p, big_q = p / p.sum(), q / q.sum()
    want = float((big_p * np.log(big_p / big_q) - big_p + big_q).sum())
    got = compare_arrays(x, y, metrics="kl").values[KL_NAME]
    assert 1e-17 < want < 1e-14
    assert abs(got - want) <= 1e-5 * want, (got, want, abs(got - want) / want)


def test_kl_of_different_distributions(backend: str) -> None:
    """Very different distributions (KL ~ 1): within 1e-12 of the long-double reference."""
    rng = np.random.default_rng(5)
    x = rng.random(10_000).astype(np.float32)
    y = rng.random(10_000) ** 2
    want = _kl_reference(x, y)
    got = compare_arrays(x, y, metrics="kl").values[KL_NAME]
    assert 0.5 < want < 2.0
    assert abs(got - want) <= 1e-12 * want, (got, want)


@pytest.mark.parametrize("dtype", (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))
def test_kl_of_identical_data_is_exactly_zero(backend: str, dtype) -> None:
    """x == y: KL is 0.0 exactly (the |kl| < eps snap), whatever the storage type."""
    x = np.random.default_rng(2).standard_normal(100_003).astype(dtype)
    assert compare_arrays(x, x.copy(), metrics="kl").values[KL_NAME] == 0.0


# --------------------------------------------------------------------------- 6. fused.logratio


@pytest.fixture(scope="module")
def logratio_jit() -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    import numba

    from compare.kernels import fused

    @numba.njit
    def lr(u: np.ndarray, w: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
        out = np.empty_like(u)
        for i in range(u.size):
            out[i] = fused.logratio(u[i], w[i])
        return out

    return lr


def _log_ratio_reference(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """log(u/w) in long double: log1p((u - w)/w) near 1 (u - w is exact, so the long-double
    rounding of the quotient does not swamp a log near 0), log(u/w) elsewhere."""
    lu, lw = u.astype(np.longdouble), w.astype(np.longdouble)
    ratio = lu / lw
    near = np.abs(ratio - 1) < 0.5
    return np.where(near, np.log1p((lu - lw) / lw), np.log(ratio))


def _ratio_inputs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(9)
    n = 20_000
    lo = 2.0 ** -23
    uniform = (rng.uniform(lo, 1.0, n), rng.uniform(lo, 1.0, n))
    octaves = (np.exp2(rng.uniform(-23, 0, n)), np.exp2(rng.uniform(-23, 0, n)))
    u = rng.uniform(lo, 1.0, n)
    near_one = (u, u * (1 + 1e-6 * rng.standard_normal(n)))
    v = np.exp2(rng.uniform(-23, 0, n))
    ulps = (v, v + np.spacing(v) * rng.integers(-3, 4, n))  # ratios within a few ulp of 1, and 1 itself
    return {"uniform": uniform, "octaves": octaves, "near_one": near_one, "ulps": ulps}


@pytest.mark.parametrize("which", ("uniform", "octaves", "near_one", "ulps"))
def test_logratio_within_4_ulp(logratio_jit, which: str) -> None:
    """Compiled fused.logratio(u, w) is within 4 ulp of log(u/w) (long-double reference) for u, w
    in [2**-23, 1]: random, spread over 23 octaves, and with u/w within 1e-6 or a few ulp of 1."""
    u, w = _ratio_inputs()[which]
    assert (u >= 2.0 ** -23).all() and (w >= 2.0 ** -23).all()
    got = logratio_jit(u, w)
    want = _log_ratio_reference(u, w)
    err = np.abs(got.astype(np.longdouble) - want)
    ulp = np.spacing(np.abs(want.astype(np.float64)))
    worst = float(np.max(err / ulp))
    assert worst <= 4.0, worst
    assert (got[u == w] == 0.0).all()


def test_logratio_python_body_matches(logratio_jit) -> None:
    """The plain-Python logratio (used under NUMBA_DISABLE_JIT=1) is within 4 ulp too."""
    from compare.kernels import fused

    rng = np.random.default_rng(4)
    u = np.exp2(rng.uniform(-23, 0, 300))
    w = np.where(np.arange(300) % 2 == 0, u * (1 + 1e-7 * rng.standard_normal(300)), np.exp2(rng.uniform(-23, 0, 300)))
    got = np.array([fused.logratio(float(a), float(b)) for a, b in zip(u, w)])
    want = _log_ratio_reference(u, w)
    err = np.abs(got.astype(np.longdouble) - want) / np.spacing(np.abs(want.astype(np.float64)))
    assert float(err.max()) <= 4.0, float(err.max())
    assert np.abs(got - logratio_jit(u, w)).max() <= 4 * np.spacing(np.abs(got)).max()

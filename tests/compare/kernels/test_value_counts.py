"""The NaN / inf / float16-saturation counts of each side, against a plain numpy twin.

The one-side kernel pass counts, per side, the elements that are NaN, +-inf and -- for float16
storage only -- ``|v| == 65504`` (``SidePass.nan/inf/saturated``), and the results carry them:
``KernelResult.left_counts`` / ``right_counts`` (:class:`compare.kernels.ValueCounts`) and
``MetricRow.left_counts`` / ``right_counts`` (:class:`compare.records.ValueCounts`).

The twin: ``np.isnan`` / ``np.isinf`` of the values as float64 and ``np.abs(a) == 65504`` of a
float16 array (0 for every other dtype; 0 for integer and bool data; complex data over the
interleaved ``(real, imag)`` parts). Checked with special values at random positions (a chunk of
the kernels is ``TILE`` = 2048 elements, and only chunks whose extrema show a special value are
counted: the sizes straddle chunk boundaries), through :func:`compare_arrays`, through
:func:`compare_planned` (a strided plan whose padding holds special values that must not be
counted; a golden whose counts come from the engine's cache) and through the engine
(:func:`compare.engine.compare_pair` on the demo network's pairs, layouts converted), each on
the native objects and on numba's JIT kernels.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compare.engine import EngineOptions, compare_pair, compare_pairs
from compare.engine.goldens import GoldenCache, SideStats
from compare.engine.prepare import prepare
from compare.kernels import (KernelPlan, ValueCounts, compare_arrays, compare_planned, flat_kernel_plan, native, passes,
                             storage)
from compare.kernels._abi import TILE
from compare.records import MetricRow, Pair
from compare.records import ValueCounts as RowCounts
from conftest import ROOT

DEMO = ROOT / "fixtures" / "demo"
#: numba's kernels are compiled on first use: one xdist worker compiles them once
pytestmark = pytest.mark.xdist_group("numba")
F16_MAX = 65504.0
#: Whether the kernels run as plain Python here (then the arrays stay small).
NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SIZES = (0, 1, 7, TILE - 1, TILE, TILE + 1, 3 * TILE + 5) if NO_JIT else (0, 1, 7, TILE, TILE + 1, 10_007)

FLOATS: dict[str, Any] = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e5m2": ml_dtypes.float8_e5m2,  # a 1-byte type read through its decode table (NaN and inf)
}
INTS: dict[str, Any] = {name: np.dtype(name).type for name in
                        ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")}


# --------------------------------------------------------------------------- twin and data


def twin(a: np.ndarray) -> ValueCounts:
    """The counts by plain numpy (see the module docstring)."""
    a = np.asarray(a)
    if a.dtype.kind in "biu":
        return ValueCounts(0, 0, 0)
    if a.dtype.kind == "c":  # interleaved (real, imag) parts
        a = np.ascontiguousarray(a).reshape(-1).view(np.dtype(f"f{a.dtype.itemsize // 2}"))
    with np.errstate(all="ignore"):
        v = a.astype(np.float64)
    saturated = int(np.count_nonzero(np.abs(a) == F16_MAX)) if a.dtype == np.float16 else 0
    return ValueCounts(int(np.count_nonzero(np.isnan(v))), int(np.count_nonzero(np.isinf(v))), saturated)


def specials(n: int, rng: np.random.Generator, density: float | None = None) -> np.ndarray:
    """``n`` float64 values, ordinary ones with NaN (both signs), +-inf and +-65504 at random
    positions (``density``: their share; random, zero included, when None)."""
    v = rng.standard_normal(n) * 100.0
    if n == 0:
        return v
    share = float(rng.choice([0.0, 1.0 / n, 0.001, 0.05, 0.5, 1.0])) if density is None else density
    k = min(n, int(round(share * n)))
    where = rng.choice(n, size=k, replace=False)
    pool = np.array([np.nan, -np.nan, np.inf, -np.inf, F16_MAX, -F16_MAX])
    v[where] = pool[rng.integers(0, pool.size, size=k)]
    return v


def as_dtype(v: np.ndarray, dtype: Any) -> np.ndarray:
    """``v`` in ``dtype`` (integers: NaN / inf become ordinary numbers, 65504 kept where it fits)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        top, bottom = float(min(info.max, 2**53)), float(max(info.min, -(2**53)))  # exact in float64
        clean = np.nan_to_num(v, nan=7.0, posinf=top, neginf=bottom)
        return np.clip(clean, bottom, top).astype(dt)
    with np.errstate(all="ignore"):
        return v.astype(dt)


def u16_traps(n: int, rng: np.random.Generator, dtype: Any) -> np.ndarray:
    """int16 / uint16 integers whose bits would be binary16 NaN, inf and 65504 (0xFFE0, 0x7C00,
    0x7BFF, ...): integers, so none of them may be counted."""
    bits = np.array([0x7C00, 0xFC00, 0x7E00, 0xFFE0, 0x7BFF, 0xFBFF], dtype=np.uint16)
    return bits[rng.integers(0, bits.size, size=n)].view(np.int16 if np.dtype(dtype) == np.int16 else np.uint16)


def counts_of(row: MetricRow) -> tuple[ValueCounts | None, ValueCounts | None]:
    """A row's counts as the kernels' record (the engine converted them into records.ValueCounts)."""

    def conv(c: RowCounts | None) -> ValueCounts | None:
        if c is None:
            return None
        assert isinstance(c, RowCounts)
        return ValueCounts(c.nan, c.inf, c.saturated)

    return conv(row.left_counts), conv(row.right_counts)


@pytest.fixture(params=["native", "numba"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on the native objects, then on numba's kernels (native switched off; plain
    Python under NUMBA_DISABLE_JIT=1)."""
    if request.param == "native":
        if native.kernels() is None:
            pytest.skip(f"native kernels not available here: {native.status}")
    else:
        monkeypatch.setattr(native, "_loaded", None)
        monkeypatch.setattr(native, "_tried", True)
        from compare.kernels import fused  # here: numba only for this backend

        assert passes.backend().side is fused._side_boxes
    return request.param


# --------------------------------------------------------------------------- compare_arrays


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("rt", ["float32", "float16", "float64"])
@pytest.mark.parametrize("lt", list(FLOATS))
def test_float_counts_equal_twin(backend: str, lt: str, rt: str, n: int) -> None:
    """Floats of every storage type with NaN, +-inf and +-65504 at random positions (several
    densities, none included): both sides' counts equal the twin's; 65504 counts only in float16
    (in bfloat16 / float8 it is not even representable, in float32 / float64 it is ordinary)."""
    rng = np.random.default_rng([n, len(lt), len(rt)])
    for _ in range(3):
        x = as_dtype(specials(n, rng), FLOATS[lt])
        y = as_dtype(specials(n, rng), FLOATS[rt])
        r = compare_arrays(x, y)
        assert r.left_counts == twin(x), (lt, n, r.left_counts, twin(x))
        assert r.right_counts == twin(y), (rt, n, r.right_counts, twin(y))
        assert isinstance(r.left_counts, ValueCounts) and all(type(c) is int for c in r.left_counts)


def test_placed_counts_across_chunk_boundaries(backend: str) -> None:
    """Known positions: a special value as the last element of one chunk and the first of the
    next, in the middle of an otherwise clean chunk, at the very end; the clean chunks between
    them must add nothing, and a float16 side with only 65504 (no NaN / inf) is counted too."""
    n = 4 * TILE + 3
    x = np.linspace(-3.0, 3.0, n).astype(np.float16)
    x[TILE - 1] = np.nan
    x[TILE] = -np.inf
    x[2 * TILE + 100] = F16_MAX
    x[n - 1] = -F16_MAX
    y = np.linspace(-3.0, 3.0, n).astype(np.float16)
    y[3 * TILE + 1] = -F16_MAX  # saturation only: a chunk without NaN or inf
    r = compare_arrays(x, y)
    assert r.left_counts == ValueCounts(1, 1, 2) == twin(x)
    assert r.right_counts == ValueCounts(0, 0, 1) == twin(y)
    clean = compare_arrays(np.linspace(-1, 1, n).astype(np.float16), np.full(n, 65503.0, np.float32))
    assert clean.left_counts == clean.right_counts == ValueCounts(0, 0, 0)


@pytest.mark.parametrize("dtype", list(INTS))
def test_integer_counts_are_zero(backend: str, dtype: str) -> None:
    """Integers hold no NaN, inf or saturated float16: 0, whatever their value -- even 65504 in
    int32 and int16 / uint16 integers whose bits would be binary16 NaN / inf / 65504."""
    rng = np.random.default_rng(len(dtype))
    for n in (1, TILE + 1, 5000):
        x = as_dtype(specials(n, rng, 0.3), INTS[dtype])
        y = u16_traps(n, rng, INTS[dtype]) if dtype in ("int16", "uint16") else x[::-1].copy()
        r = compare_arrays(x, y)
        assert r.left_counts == r.right_counts == ValueCounts(0, 0, 0) == twin(x) == twin(y)
    f = specials(3000, rng, 0.1).astype(np.float16)  # an integer left, a float16 golden
    r = compare_arrays(np.arange(3000, dtype=np.int32), f)
    assert r.left_counts == ValueCounts(0, 0, 0) and r.right_counts == twin(f)


def test_bool_and_complex_counts(backend: str) -> None:
    """bool: zeros, also when no kernel pass runs (a selection without bool-capable metrics);
    complex: NaN / inf over the interleaved (real, imag) parts, no saturation; a real side
    compared with complex data is counted after its conversion to complex128."""
    b = np.array([True, False, True] * 1000)
    for metrics in (None, ["MaxAbsoluteError"]):
        r = compare_arrays(b, ~b, metrics=metrics)
        assert r.left_counts == r.right_counts == ValueCounts(0, 0, 0)
    rng = np.random.default_rng(5)
    n = 3000
    for ctype in (np.complex64, np.complex128):
        z = np.empty(n, ctype)
        z.real, z.imag = specials(n, rng, 0.05), specials(n, rng, 0.05)
        w = np.empty(n, ctype)
        w.real, w.imag = specials(n, rng, 0.01), -2.0
        r = compare_arrays(z, w)
        assert r.count == 2 * n
        assert r.left_counts == twin(z) and r.right_counts == twin(w)
        assert twin(z).nan > 0 and twin(z).saturated == 0
    h = specials(n, rng, 0.05).astype(np.float16)
    r = compare_arrays(z, h)
    assert r.right_counts == twin(h.astype(np.complex128))
    assert r.right_counts.saturated == 0 and r.right_counts.nan == twin(h).nan


# --------------------------------------------------------------------------- compare_planned


def _padded_plan(rows: int, cols: int, pad: int) -> KernelPlan:
    """The left side: ``rows x cols`` elements of a ``rows x (cols + pad)`` buffer (its own plan
    strided, not contiguous: the gather path); the right side flat."""
    dims = np.ones((1, 6), np.int64)
    dims[0, 4:] = rows, cols
    sx = np.zeros((1, 6), np.int64)
    sx[0, 4:] = cols + pad, 1
    sy = np.zeros((1, 6), np.int64)
    sy[0, 4:] = cols, 1
    zero = np.zeros(1, np.int64)
    flat = flat_kernel_plan(rows * cols)
    return KernelPlan((dims, sx, sy, zero, zero), (dims, sx, zero), flat.right)


@pytest.mark.parametrize("lt", ["float16", "bfloat16", "float32", "int32"])
@pytest.mark.parametrize("rows,cols,pad", [(3, 5, 11), (64, 40, 24), (2, 3000, 7), (130, 33, 1)])
def test_planned_counts_skip_padding(backend: str, lt: str, rows: int, cols: int, pad: int) -> None:
    """compare_planned counts the elements its plan visits: NaN / inf / 65504 in the left
    buffer's padding are not counted, those in the visited elements are (gather path)."""
    rng = np.random.default_rng([rows, cols, pad])
    dtype = FLOATS.get(lt) or INTS[lt]
    buf = as_dtype(specials(rows * (cols + pad), rng, 0.05), dtype).reshape(rows, cols + pad)
    buf[:, cols:] = as_dtype(np.full((rows, pad), np.nan), dtype)  # padding: never counted
    x = buf[:, :cols]
    y = as_dtype(specials(rows * cols, rng, 0.05), np.float16)
    r = compare_planned(storage(buf.reshape(-1))[0], storage(y)[0], _padded_plan(rows, cols, pad), rows * cols)
    assert r.left_counts == twin(x), (r.left_counts, twin(x))
    assert r.right_counts == twin(y)
    if dtype is np.float16:
        assert twin(buf) != twin(x) or rows * pad == 0  # the padding would have been counted


def test_planned_golden_counts_come_from_the_cache(backend: str) -> None:
    """A golden compared twice under one key: its SidePass (counts included) is computed once and
    taken from the store the second time -- the counts are the first computation's."""
    rng = np.random.default_rng(3)
    n = 5000
    y = specials(n, rng, 0.02).astype(np.float16)
    plan = flat_kernel_plan(n)
    stats = SideStats()
    first = compare_planned(storage(np.zeros(n, np.float32))[0], storage(y)[0], plan, n,
                            right_cache=stats, right_key=("golden", 0))
    assert first.right_counts == twin(y) and len(stats) == 1
    changed = y.copy()
    changed[:] = 1.0  # the same key: the store answers, with the counts of y
    second = compare_planned(storage(specials(n, rng, 0.1).astype(np.float16))[0], storage(changed)[0], plan, n,
                             right_cache=stats, right_key=("golden", 0))
    assert second.right_counts == twin(y) and len(stats) == 1
    third = compare_planned(storage(np.zeros(n, np.float32))[0], storage(changed)[0], plan, n)
    assert third.right_counts == ValueCounts(0, 0, 0)


# --------------------------------------------------------------------------- property


@st.composite
def sides(draw: st.DrawFn) -> np.ndarray:
    width = draw(st.sampled_from([16, 32, 64]))
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[width]
    elements = st.one_of(st.floats(width=width, allow_nan=True, allow_infinity=True),
                         st.sampled_from([F16_MAX, -F16_MAX, np.nan, np.inf, -np.inf]))
    return draw(hnp.arrays(dtype, st.integers(0, 2 * TILE + 3), elements=elements))


@settings(max_examples=int(os.environ.get("VCOMPARE_HYPO_EXAMPLES", "150")), deadline=None)
@given(sides(), sides())
def test_property_counts_equal_twin(x: np.ndarray, y: np.ndarray) -> None:
    """Any float16 / float32 / float64 values (NaN, inf, 65504 and sub-normals included): the
    counts of both sides equal the twin's (the sides' lengths are made equal by cropping)."""
    n = min(x.size, y.size)
    x, y = x[:n], y[:n]
    r = compare_arrays(x, y)
    assert r.left_counts == twin(x) and r.right_counts == twin(y)


# --------------------------------------------------------------------------- engine


def _demo_pairs() -> list[Pair]:
    from compare.runs.loading import load_and_pair

    pairs = load_and_pair(DEMO / "npu", DEMO / "golden", DEMO / "model.json")[-1].pairs
    compared = [p for p in pairs if p.left is not None and p.right is not None]
    assert len(compared) >= 8
    return pairs


def _with_data(pair: Pair, left: np.ndarray, right: np.ndarray) -> Pair:
    """``pair`` reading the given arrays (of the dump's shapes) instead of its files."""
    assert pair.left is not None and pair.right is not None
    return dataclasses.replace(
        pair,
        left=dataclasses.replace(pair.left, reader=lambda: left, dtype=np.dtype(left.dtype).name),
        right=dataclasses.replace(pair.right, reader=lambda: right, dtype=np.dtype(right.dtype).name),
    )


def _demo_with(make_left: Callable[[np.ndarray], np.ndarray], make_right: Callable[[np.ndarray], np.ndarray],
               *, keep_missing: bool = False) -> list[Pair]:
    """The demo pairs reading new data, made from each tensor's own array: one left array per pair,
    one golden array per golden tensor (pairs sharing a golden file share its data, as the engine's
    golden cache assumes); pairs without both sides are kept (``keep_missing``) or dropped."""
    goldens: dict[tuple, np.ndarray] = {}
    out: list[Pair] = []
    for pair in _demo_pairs():
        if pair.left is None or pair.right is None:
            if keep_missing:
                out.append(pair)
            continue
        key = GoldenCache.key(pair.right)
        if key not in goldens:
            goldens[key] = make_right(pair.right.load())
        out.append(_with_data(pair, make_left(pair.left.load()), goldens[key]))
    return out


@pytest.mark.parametrize("lt,rt", [("float16", "float32"), ("float16", "float16"), ("bfloat16", "float64"),
                                   ("float32", "float16"), ("int32", "float32")])
def test_engine_rows_carry_counts(backend: str, lt: str, rt: str) -> None:
    """compare_pair on the demo network's pairs (NCHW, NC1HWC0 with channel padding, FRACTAL_Z,
    ND) with special values at random positions of both tensors, padding included: each row's
    counts equal the twin's on the elements actually compared (the pair prepared by the engine's
    own layout policy), on the zero-copy path and on the ordinary one (fast=False) alike; rows
    not compared carry None."""
    rng = np.random.default_rng([len(lt), len(rt)])
    ltype = FLOATS.get(lt) or INTS[lt]
    pairs = _demo_with(lambda a: as_dtype(specials(a.size, rng, 0.05), ltype).reshape(a.shape),
                       lambda a: as_dtype(specials(a.size, rng, 0.05), FLOATS[rt]).reshape(a.shape), keep_missing=True)
    checked = 0
    for fast in (True, False):
        rows = compare_pairs(pairs, EngineOptions(workers=1, fast=fast))
        for pair, row in zip(pairs, rows):
            if pair.left is None or pair.right is None:
                assert row.left_counts is None and row.right_counts is None
                continue
            assert row, row.reasons
            prepared = prepare(pair, pair.left.load(), pair.right.load())
            want = (twin(prepared.x), twin(prepared.y))
            assert counts_of(row) == want, (pair.tensor_id, fast, counts_of(row), want)
            single = compare_pair(pair, EngineOptions(fast=fast), GoldenCache())
            assert counts_of(single) == want
            checked += 1
    assert checked >= 16


def test_engine_counts_two_threads_equal_one(backend: str) -> None:
    """workers=2 (a golden's statistics shared between the threads) gives workers=1's counts."""
    rng = np.random.default_rng(9)

    def f16(a: np.ndarray) -> np.ndarray:
        return specials(a.size, rng, 0.1).astype(np.float16).reshape(a.shape)

    pairs = _demo_with(f16, f16)
    one = compare_pairs(pairs, EngineOptions(workers=1))
    two = compare_pairs(pairs, EngineOptions(workers=2))
    assert [counts_of(r) for r in one] == [counts_of(r) for r in two]
    assert any(r.left_counts is not None and r.left_counts.saturated for r in one)


def test_engine_counts_for_bool_and_unreadable(backend: str, tmp_path: Path) -> None:
    """A bool pair compared by the engine counts zeros; a pair whose tensor cannot be read is not
    compared and carries None."""
    pair = next(p for p in _demo_pairs() if p.left is not None and p.right is not None)
    assert pair.left is not None and pair.right is not None
    left, right = pair.left.load(), pair.right.load()
    row = compare_pair(_with_data(pair, (np.asarray(left) > 0), (np.asarray(right) > 0)), EngineOptions())
    assert row and counts_of(row) == (ValueCounts(0, 0, 0), ValueCounts(0, 0, 0))
    missing = dataclasses.replace(pair, left=dataclasses.replace(pair.left, reader=None, path=tmp_path / "gone"))
    row = compare_pair(missing, EngineOptions())
    assert not row and row.left_counts is None and row.right_counts is None

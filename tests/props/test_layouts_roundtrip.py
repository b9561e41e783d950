"""Property round trips for every built-in layout pair, through ``vconvert``'s tensor path.

``tests/convert/test_layouts.py`` already round-trips NCHW<->NC1HWC0 (C0 4/16/32), NCHW<->FRACTAL_Z
(groups), ND<->FRACTAL_NZ, NCDHW<->NDC1HWC0 and the 4-D transposes on the converters
themselves. This file adds what was missing -- the 5-D transposes, the FRACTAL_NZ -> NCHW / NHWC
keys, NHWC / HWCN -> FRACTAL_Z with groups -- and runs every pair through
:func:`convert.tool.convert_dump.convert_tensor` (what ``vconvert dump -f`` / ``shape`` call), with
channel and matrix sizes that are not multiples of 16. ``test_every_pair_is_covered`` fails when
a converter is registered without a round trip here or in ``test_layouts.py``.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convert.codecs.dtypes import format_code
from convert.codecs.dumpfile import TensorInfo
from convert.layouts import LAYOUTS, group_geometry
from convert.layouts.transpose import PERMUTATIONS
from convert.tool.convert_dump import convert_tensor

FAST = settings(max_examples=30, deadline=None)

small = st.integers(1, 5)
not16 = st.integers(1, 40).filter(lambda v: v % 16 != 0)

#: Pairs each round-trip test of this file goes through (keep in step with the tests below).
TESTED: dict[str, set[tuple[str, str]]] = {
    "nc1hwc0": {("NCHW", "NC1HWC0"), ("NC1HWC0", "NCHW"), ("NC1HWC0", "NHWC"), ("NC1HWC0", "HWCN")},
    "ndc1hwc0": {("NCDHW", "NDC1HWC0"), ("NDC1HWC0", "NCDHW"), ("NDC1HWC0", "ND")},
    "fractal_nz": {("ND", "FRACTAL_NZ"), ("FRACTAL_NZ", "ND"), ("FRACTAL_NZ", "NCHW"), ("FRACTAL_NZ", "NHWC")},
    "fractal_z": {("NCHW", "FRACTAL_Z"), ("NHWC", "FRACTAL_Z"), ("HWCN", "FRACTAL_Z"), ("FRACTAL_Z", "NCHW"),
                  ("FRACTAL_Z", "HWCN")},
    "transposes": set(PERMUTATIONS),
}

#: Pairs whose round trips live in tests/convert/test_layouts.py.
COVERED_IN_TEST_LAYOUTS = {
    ("NCHW", "NC1HWC0"), ("NC1HWC0", "NCHW"), ("NC1HWC0", "NHWC"), ("NC1HWC0", "HWCN"),
    ("NCHW", "FRACTAL_Z"), ("FRACTAL_Z", "NCHW"), ("FRACTAL_Z", "HWCN"),
    ("ND", "FRACTAL_NZ"), ("FRACTAL_NZ", "ND"), ("NCDHW", "NDC1HWC0"), ("NDC1HWC0", "NCDHW"),
    ("NDC1HWC0", "ND"),
} | {pair for pair, axes in PERMUTATIONS.items() if len(axes) == 4}


def _info(fmt: str, shape: tuple[int, ...], original: tuple[int, ...] = (), group: int = 0) -> TensorInfo:
    return TensorInfo(kind="output", index=0, data_type=0, format=format_code(fmt), shape=tuple(shape),
                      original_shape=tuple(original), size=0, offset=0, sub_format=group)


def _convert(array: np.ndarray, fmt: str, dst: str, original: tuple[int, ...] = (), *, target=None,
             group: int = 0) -> np.ndarray:
    out = convert_tensor(array, _info(fmt, array.shape, original, group), dst, target)
    assert out.converted and not out.notes, out.notes
    return out.array


def _random(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


@FAST
@given(n=small, c=not16, h=small, w=small)
def test_nc1hwc0_round_trips_through_vconvert(n: int, c: int, h: int, w: int) -> None:
    x = _random((n, c, h, w))
    dev = _convert(x, "NCHW", "NC1HWC0")
    assert dev.shape == (n, math.ceil(c / 16), h, w, 16)
    assert np.array_equal(_convert(dev, "NC1HWC0", "NCHW", x.shape), x)
    assert np.array_equal(_convert(dev, "NC1HWC0", "NHWC", target=(n, h, w, c)), x.transpose(0, 2, 3, 1))
    assert np.array_equal(_convert(dev, "NC1HWC0", "HWCN", target=(h, w, c, n)), x.transpose(2, 3, 1, 0))


@FAST
@given(n=small, c=not16, d=st.integers(1, 3), h=small, w=small)
def test_ndc1hwc0_round_trips_through_vconvert(n: int, c: int, d: int, h: int, w: int) -> None:
    x = _random((n, c, d, h, w), 1)
    dev = _convert(x, "NCDHW", "NDC1HWC0")
    assert dev.shape == (n, d, math.ceil(c / 16), h, w, 16)
    assert np.array_equal(_convert(dev, "NDC1HWC0", "NCDHW", x.shape), x)
    assert np.array_equal(_convert(dev, "NDC1HWC0", "ND", x.shape), x)


@FAST
@given(lead=st.lists(st.integers(1, 3), max_size=2), r=not16, c=not16)
def test_fractal_nz_round_trips_through_vconvert(lead: list[int], r: int, c: int) -> None:
    shape = (*lead, r, c)
    x = _random(shape, 2)
    dev = _convert(x, "ND", "FRACTAL_NZ")
    assert dev.shape == (*lead, math.ceil(c / 16), math.ceil(r / 16), 16, 16)
    for dst in ("ND", "NCHW", "NHWC"):  # the three keys share one reader; each is dispatched on its own
        assert np.array_equal(_convert(dev, "FRACTAL_NZ", dst, shape), x), dst


@FAST
@given(n=st.integers(1, 12), c=not16, kh=st.integers(1, 3), kw=st.integers(1, 3), group=st.integers(1, 6),
       source=st.sampled_from(["NCHW", "NHWC", "HWCN"]))
def test_fractal_z_with_groups_round_trips(n: int, c: int, kh: int, kw: int, group: int, source: str) -> None:
    """Producers from all three weight layouts (exact layout), readers through vconvert with sub_format."""
    w = _random((n * group, c, kh, kw), 3)
    axes = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1), "HWCN": (2, 3, 1, 0)}[source]
    src = np.ascontiguousarray(w.transpose(axes))
    exact = LAYOUTS[(source, "FRACTAL_Z")](src.shape, None, src, group, reference_quirk=False)
    reference = LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, group, reference_quirk=False)
    assert exact.tobytes() == reference.tobytes()
    assert np.array_equal(_convert(exact, "FRACTAL_Z", "NCHW", w.shape, group=group), w)
    hwcn = (kh, kw, c, n * group)
    assert np.array_equal(_convert(exact, "FRACTAL_Z", "HWCN", target=hwcn, group=group), w.transpose(2, 3, 1, 0))
    _, e, _, _ = group_geometry(n * group, c, kh, kw, group)
    if e == group:  # one super-group: the reference's formula (vconvert's default) is exact too
        assert _convert(src, source, "FRACTAL_Z", group=group).tobytes() == exact.tobytes()


@FAST
@given(dims=st.tuples(small, not16, small, small, small), pair=st.sampled_from(sorted(PERMUTATIONS)))
def test_every_transpose_round_trips_through_vconvert(dims: tuple[int, ...], pair: tuple[str, str]) -> None:
    src, dst = pair
    shape = dims[: len(PERMUTATIONS[pair])]
    x = _random(shape, 4)
    out = _convert(x, src, dst)
    assert np.array_equal(out, x.transpose(PERMUTATIONS[pair]))
    back = PERMUTATIONS.get((dst, src))
    if back is not None:
        assert np.array_equal(_convert(np.ascontiguousarray(out), dst, src), x)
    else:  # e.g. DHWCN -> NCDHW: undo with numpy
        assert np.array_equal(out.transpose(np.argsort(PERMUTATIONS[pair])), x)


def test_every_pair_is_covered() -> None:
    tested = set().union(*TESTED.values()) | COVERED_IN_TEST_LAYOUTS
    missing = sorted(set(LAYOUTS) - tested)
    assert not missing, f"no round-trip test for {missing}"
    assert tested <= set(LAYOUTS), f"tested pairs that are not registered: {sorted(tested - set(LAYOUTS))}"

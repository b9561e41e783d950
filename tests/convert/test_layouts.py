"""Layout converters, dispatch, plugins and pair preparation (convert.layouts)."""

from __future__ import annotations

import csv
import json
import math
import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convert.layouts import (
    LAYOUTS,
    LayoutDecision,
    LayoutError,
    LayoutWarning,
    Route,
    check_nz_target,
    convert_layout,
    decide_layout,
    group_geometry,
    load_plugins,
    prepare_decided,
    prepare_pair,
    slice_to_golden,
)
from convert.layouts.transpose import PERMUTATIONS

FAST = settings(max_examples=40, deadline=None)

dims = st.integers(min_value=1, max_value=7)
channels = st.integers(min_value=1, max_value=40)


def _arange(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return np.arange(1, math.prod(shape) + 1).astype(dtype).reshape(shape)


# --------------------------------------------------------------------------- hand-checked indices


def test_nc1hwc0_to_nchw_index_mapping() -> None:
    src = _arange((2, 2, 3, 2, 4))  # N, C1, H, W, C0=4
    out = LAYOUTS[("NC1HWC0", "NCHW")](src.shape, None, src.ravel())
    assert out.shape == (2, 8, 3, 2)  # uncropped C1*C0
    # (n=1, c1=1, h=2, w=0, c0=3) -> (n, c1*C0+c0, h, w) = (1, 7, 2, 0)
    assert out[1, 7, 2, 0] == src[1, 1, 2, 0, 3]
    nhwc = LAYOUTS[("NC1HWC0", "NHWC")](src.shape, None, src)
    assert nhwc.shape == (2, 3, 2, 8) and nhwc[1, 2, 0, 7] == src[1, 1, 2, 0, 3]
    hwcn = LAYOUTS[("NC1HWC0", "HWCN")](src.shape, None, src)
    assert hwcn.shape == (3, 2, 8, 2) and hwcn[2, 0, 7, 1] == src[1, 1, 2, 0, 3]


def test_fractal_z_to_nchw_index_mapping_and_crop() -> None:
    # Target (N=3, C=5, H=1, W=2); source (C1*H*W = 2*2, No=1, Ni=4, C0=4) -> C1 = 2.
    src = _arange((4, 1, 4, 4))
    out = LAYOUTS[("FRACTAL_Z", "NCHW")](src.shape, (3, 5, 1, 2), src.ravel())
    assert out.shape == (3, 5, 1, 2)
    blocks = src.reshape(2, 1, 2, 1, 4, 4)  # (C1, H, W, No, Ni, C0)
    # (c1=1, h=0, w=1, no=0, ni=2, c0=0) -> (no*Ni+ni, c1*C0+c0, h, w) = (2, 4, 0, 1)
    assert out[2, 4, 0, 1] == blocks[1, 0, 1, 0, 2, 0]
    hwcn = LAYOUTS[("FRACTAL_Z", "HWCN")](src.shape, (1, 2, 5, 3), src)
    assert hwcn.shape == (1, 2, 5, 3)
    np.testing.assert_array_equal(hwcn, out.transpose(2, 3, 1, 0))


def test_fractal_z_needs_a_consistent_target() -> None:
    src = np.zeros((4, 1, 16, 16), np.float16)
    with pytest.raises(LayoutError, match="4-D target"):
        LAYOUTS[("FRACTAL_Z", "NCHW")](src.shape, None, src)
    with pytest.raises(LayoutError, match="C1\\*H\\*W"):
        LAYOUTS[("FRACTAL_Z", "NCHW")](src.shape, (16, 3, 3, 3), src)
    with pytest.raises(LayoutError, match="target C=20"):
        LAYOUTS[("FRACTAL_Z", "NCHW")](src.shape, (16, 20, 2, 2), src)


def test_fractal_nz_to_nd_index_mapping_and_rank() -> None:
    src = _arange((2, 1, 2, 2))  # C1=2, No=1, Ni=2, C0=2 -> 2 x 4 padded
    out = LAYOUTS[("FRACTAL_NZ", "ND")](src.shape, (2, 3), src.ravel())
    assert out.shape == (2, 3)
    # (c1=1, no=0, ni=1, c0=0) -> (no*Ni+ni, c1*C0+c0) = (1, 2)
    assert out[1, 2] == src[1, 0, 1, 0]
    batched = _arange((3, 2, 2, 1, 2, 2))  # batch dims (3, 2)
    out3 = LAYOUTS[("FRACTAL_NZ", "ND")](batched.shape, (3, 2, 2, 3), batched)
    assert out3.shape == (6, 2, 3)  # 3-D (B, rows, cols), not the rank of T
    assert out3[5, 1, 2] == batched[2, 1, 1, 0, 1, 0]
    one_d = LAYOUTS[("FRACTAL_NZ", "ND")](src.shape, (3,), src)
    assert one_d.shape == (1, 3) and one_d[0, 2] == src[1, 0, 0, 0]


def test_to_fractal_z_group_1_layout() -> None:
    src = _arange((2, 3, 1, 1))  # N=2, C=3
    out = LAYOUTS[("NCHW", "FRACTAL_Z")](src.shape, None, src)
    assert out.shape == (1, 1, 16, 16) and out.dtype == src.dtype
    expected = np.zeros((16, 16), np.float32)
    expected[:2, :3] = src[:, :, 0, 0]  # [first=0][n // 16][n % 16][c % 16]
    np.testing.assert_array_equal(out[0, 0], expected)


def _naive_to_fractal_z(w: np.ndarray, group: int) -> np.ndarray:
    """The reference's per-element loop, written out from the spec (slow, obviously literal)."""
    big_n, c, kh, kw = w.shape
    n = big_n // group
    e = min(math.lcm(math.lcm(c, 16) // c, math.lcm(n, 16) // n), group)
    c1 = math.ceil(e * c / 16)
    out = np.zeros((math.ceil(group / e) * c1 * kh * kw, math.ceil(e * n / 16), 16, 16), w.dtype)
    for g in range(group):
        for ni in range(n):
            for ci in range(c):
                for h in range(kh):
                    for x in range(kw):
                        ev = g % e
                        dc, dn = ev * c + ci, ev * n + ni
                        first = (g // e) * (dc // 16) * kh * kw + (dc // 16) * kh * kw + h * kw + x
                        out[first, dn // 16, dn % 16, dc % 16] = w[g * n + ni, ci, h, x]
    return out


@pytest.mark.parametrize(
    ("shape", "group"),
    [((16, 3, 3, 3), 1), ((40, 20, 1, 2), 1), ((32, 16, 2, 2), 2), ((8, 4, 1, 3), 2), ((12, 3, 2, 1), 3),
     ((64, 2, 1, 1), 8), ((36, 5, 1, 2), 6), ((20, 16, 1, 1), 4)],
)
def test_to_fractal_z_matches_the_reference_loop_byte_for_byte(shape: tuple[int, ...], group: int) -> None:
    w = _arange(shape, "float16")
    ours = LAYOUTS[("NCHW", "FRACTAL_Z")](shape, None, w.ravel(), group)
    ref = _naive_to_fractal_z(w, group)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    assert ours.tobytes() == ref.tobytes()
    nhwc = LAYOUTS[("NHWC", "FRACTAL_Z")](w.transpose(0, 2, 3, 1).shape, None, w.transpose(0, 2, 3, 1), group)
    hwcn = LAYOUTS[("HWCN", "FRACTAL_Z")](w.transpose(2, 3, 1, 0).shape, None, w.transpose(2, 3, 1, 0), group)
    assert nhwc.tobytes() == ref.tobytes() == hwcn.tobytes()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 20), c=st.integers(1, 20), kh=st.integers(1, 2), kw=st.integers(1, 2),
       group=st.integers(1, 6))
def test_to_fractal_z_equals_the_reference_loop_property(n: int, c: int, kh: int, kw: int, group: int) -> None:
    w = np.random.default_rng(7).standard_normal((n * group, c, kh, kw)).astype(np.float16)
    ours = LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, group)
    assert ours.tobytes() == _naive_to_fractal_z(w, group).tobytes()


def test_to_fractal_z_quirk_collides_where_the_reference_does() -> None:
    # G=2, C=16, n=16: e = 1, two super-groups; the quirky first index puts group 1 on group 0's
    # block, so block 1 stays zero and block 0 holds group 1 (the last write).
    w = _arange((32, 16, 1, 1))
    out = LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, 2)
    assert out.shape == (2, 1, 16, 16)
    assert not out[1].any()
    np.testing.assert_array_equal(out[0, 0], w[16:, :, 0, 0])
    exact = LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, 2, reference_quirk=False)
    np.testing.assert_array_equal(exact[1, 0], w[16:, :, 0, 0])


def test_group_geometry() -> None:
    # C=4, n=4: lcm(4,16)/4 = 4 for both -> e = min(4, G=8) = 4; C1' = 1.
    assert group_geometry(32, 4, 3, 3, 8) == (4, 4, 1, (2 * 1 * 9, 1, 16, 16))
    with pytest.raises(LayoutError, match="groups"):
        group_geometry(2, 4, 1, 1, 4)


def test_nz_target_validation() -> None:
    check_nz_target((2, 1, 16, 16), (10, 20))
    for bad in [(), (20,), (17, 20), (10, 33), (10, 16), (1, 10, 20)]:
        with pytest.raises(LayoutError, match=r"recommended shape \[16,32\]"):
            check_nz_target((2, 1, 16, 16), bad)


# --------------------------------------------------------------------------- round trips


@FAST
@given(n=dims, c=channels, h=dims, w=dims, c0=st.sampled_from([4, 16, 32]))
def test_roundtrip_nchw_nc1hwc0(n: int, c: int, h: int, w: int, c0: int) -> None:
    x = np.random.default_rng(0).standard_normal((n, c, h, w)).astype(np.float16)
    dev = LAYOUTS[("NCHW", "NC1HWC0")](x.shape, None, x, c0=c0)
    assert dev.shape == (n, math.ceil(c / c0), h, w, c0)
    back = LAYOUTS[("NC1HWC0", "NCHW")](dev.shape, None, dev.ravel())
    assert back.shape[1] == math.ceil(c / c0) * c0 and not back[:, c:].any()
    np.testing.assert_array_equal(slice_to_golden(back, x.shape), x)
    nhwc = LAYOUTS[("NC1HWC0", "NHWC")](dev.shape, None, dev)[..., :c]
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))
    hwcn = LAYOUTS[("NC1HWC0", "HWCN")](dev.shape, None, dev)[:, :, :c]
    np.testing.assert_array_equal(hwcn, x.transpose(2, 3, 1, 0))


def test_nc1hwc0_c0_defaults_to_32_for_int8() -> None:
    x = np.ones((1, 3, 2, 2), np.int8)
    assert LAYOUTS[("NCHW", "NC1HWC0")](x.shape, None, x).shape == (1, 1, 2, 2, 32)
    assert LAYOUTS[("NCHW", "NC1HWC0")](x.shape, None, x.astype(np.float16)).shape == (1, 1, 2, 2, 16)


@FAST
@given(n=st.integers(1, 40), c=channels, kh=st.integers(1, 3), kw=st.integers(1, 3))
def test_roundtrip_nchw_fractal_z(n: int, c: int, kh: int, kw: int) -> None:
    x = np.random.default_rng(1).standard_normal((n, c, kh, kw)).astype(np.float32)
    dev = LAYOUTS[("NCHW", "FRACTAL_Z")](x.shape, None, x)
    assert dev.shape == (math.ceil(c / 16) * kh * kw, math.ceil(n / 16), 16, 16)
    np.testing.assert_array_equal(LAYOUTS[("FRACTAL_Z", "NCHW")](dev.shape, x.shape, dev.ravel()), x)
    hwcn_shape = (kh, kw, c, n)
    np.testing.assert_array_equal(
        LAYOUTS[("FRACTAL_Z", "HWCN")](dev.shape, hwcn_shape, dev), x.transpose(2, 3, 1, 0)
    )


@FAST
@given(n=st.integers(1, 12), c=st.integers(1, 20), kh=st.integers(1, 2), kw=st.integers(1, 2),
       group=st.integers(2, 8))
def test_roundtrip_fractal_z_groups(n: int, c: int, kh: int, kw: int, group: int) -> None:
    x = np.random.default_rng(2).standard_normal((n * group, c, kh, kw)).astype(np.float32)
    exact = LAYOUTS[("NCHW", "FRACTAL_Z")](x.shape, None, x, group, reference_quirk=False)
    back = LAYOUTS[("FRACTAL_Z", "NCHW")](exact.shape, x.shape, exact.ravel(), group)
    np.testing.assert_array_equal(back, x)
    hwcn = LAYOUTS[("FRACTAL_Z", "HWCN")](exact.shape, (kh, kw, c, n * group), exact, group)
    np.testing.assert_array_equal(hwcn, x.transpose(2, 3, 1, 0))
    _, e, _, _ = group_geometry(n * group, c, kh, kw, group)
    if e == group:  # one super-group: the reference's formula is the exact one
        quirky = LAYOUTS[("NCHW", "FRACTAL_Z")](x.shape, None, x, group)
        assert quirky.tobytes() == exact.tobytes()


def test_grouped_fractal_z_reader_checks_the_source_shape() -> None:
    with pytest.raises(LayoutError, match="grouped"):
        LAYOUTS[("FRACTAL_Z", "NCHW")]((18, 1, 16, 16), (16, 4, 3, 3), np.zeros(18 * 256), 2)


@FAST
@given(lead=st.lists(st.integers(1, 3), max_size=2), r=st.integers(1, 40), c=st.integers(1, 40),
       c0=st.sampled_from([16, 32]))
def test_roundtrip_nd_fractal_nz(lead: list[int], r: int, c: int, c0: int) -> None:
    shape = (*lead, r, c)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float16)
    dev = LAYOUTS[("ND", "FRACTAL_NZ")](shape, None, x.ravel(), c0=c0)
    assert dev.shape == (*lead, math.ceil(c / c0), math.ceil(r / 16), 16, c0)
    check_nz_target(dev.shape, shape)
    back = LAYOUTS[("FRACTAL_NZ", "ND")](dev.shape, shape, dev.ravel())
    expected = x if len(shape) == 2 else x.reshape(-1, r, c)
    np.testing.assert_array_equal(back, expected)


@FAST
@given(n=st.integers(1, 3), c=channels, d=st.integers(1, 3), h=dims, w=dims)
def test_roundtrip_ncdhw_ndc1hwc0(n: int, c: int, d: int, h: int, w: int) -> None:
    x = np.random.default_rng(4).standard_normal((n, c, d, h, w)).astype(np.float32)
    dev = LAYOUTS[("NCDHW", "NDC1HWC0")](x.shape, None, x)
    assert dev.shape == (n, d, math.ceil(c / 16), h, w, 16)
    np.testing.assert_array_equal(LAYOUTS[("NDC1HWC0", "NCDHW")](dev.shape, x.shape, dev.ravel()), x)
    np.testing.assert_array_equal(LAYOUTS[("NDC1HWC0", "ND")](dev.shape, x.shape, dev), x)
    uncropped = LAYOUTS[("NDC1HWC0", "ND")](dev.shape, (n * c, d * h * w), dev)
    assert uncropped.shape[1] == math.ceil(c / 16) * 16


@FAST
@given(shape=st.tuples(dims, dims, dims, dims), pair=st.sampled_from(sorted(k for k in PERMUTATIONS if len(PERMUTATIONS[k]) == 4)))
def test_transposes(shape: tuple[int, ...], pair: tuple[str, str]) -> None:
    x = np.random.default_rng(5).standard_normal(shape)
    out = LAYOUTS[pair](shape, None, x.ravel())
    np.testing.assert_array_equal(out, x.transpose(PERMUTATIONS[pair]))
    back = PERMUTATIONS.get((pair[1], pair[0]))
    if back is not None:
        np.testing.assert_array_equal(out.transpose(back), x)
    # Letters move with the axes: the result's layout name is the source's letters permuted.
    assert "".join(pair[0][i] for i in PERMUTATIONS[pair]) == pair[1]


def test_every_required_pair_is_registered() -> None:
    required = [
        ("NC1HWC0", "NCHW"), ("NC1HWC0", "NHWC"), ("NC1HWC0", "HWCN"), ("FRACTAL_Z", "NCHW"),
        ("FRACTAL_Z", "HWCN"), ("FRACTAL_NZ", "ND"), ("FRACTAL_NZ", "NCHW"), ("FRACTAL_NZ", "NHWC"),
        ("NDC1HWC0", "NCDHW"), ("NDC1HWC0", "ND"), ("NCHW", "NHWC"), ("NHWC", "NCHW"), ("HWCN", "NCHW"),
        ("HWCN", "NHWC"), ("NHWC", "HWCN"), ("NCHW", "HWCN"), ("NCHW", "NC1HWC0"), ("NCHW", "FRACTAL_Z"),
        ("NHWC", "FRACTAL_Z"), ("HWCN", "FRACTAL_Z"), ("ND", "FRACTAL_NZ"), ("NCDHW", "NDC1HWC0"),
    ]
    assert not [p for p in required if p not in LAYOUTS]


# --------------------------------------------------------------------------- convert_layout dispatch


def test_format_names_are_case_insensitive_and_accept_codes() -> None:
    from convert.codecs.dtypes import Format
    from convert.layouts import format_key

    assert format_key("nc1hwc0") == format_key(3) == format_key(Format.NC1HWC0) == "NC1HWC0"
    assert format_key("FORMAT_FRACTAL_Z") == "FRACTAL_Z" and format_key(None) == ""
    x = _arange((1, 2, 2, 2))
    assert convert_layout(x, 0, "nhwc", x.shape).shape == (1, 2, 2, 2)



def test_dispatch_reshape_only_cases() -> None:
    flat = np.arange(24, dtype=np.float32)
    assert convert_layout(flat, "ND", "NCHW", (2, 12)).shape == (2, 12)
    assert convert_layout(flat, "nchw", "NHWC", (4, 6)).shape == (4, 6)  # not 4-D: reshape only
    assert convert_layout(flat, "NC1HWC0", "nc1hwc0", (1, 1, 2, 3, 4)).shape == (1, 1, 2, 3, 4)
    assert convert_layout(flat, "NCHW", "NHWC", (1, 2, 3, 4)).shape == (1, 3, 4, 2)
    assert convert_layout(np.array([], np.float32), "ND", "ND", (3, 4)).size == 0
    with pytest.raises(LayoutError, match="holds 25 elements but the data has 24"):
        convert_layout(flat, "ND", "NCHW", (5, 5))


def test_dispatch_missing_converter_lists_what_exists() -> None:
    with pytest.raises(LayoutError) as info:
        convert_layout(np.zeros(16), "NC1HWC0", "NDHWC", (1, 1, 1, 1, 16))
    message = str(info.value)
    assert message.startswith("no conversion from NC1HWC0 to NDHWC")
    assert "NC1HWC0->NCHW" in message and "custom: none" in message


def test_dispatch_validates_fractal_nz_targets() -> None:
    data = np.zeros(2 * 16 * 16)
    with pytest.raises(LayoutError, match=r"target shape \[40,20\].*recommended shape \[16,32\]"):
        convert_layout(data, "FRACTAL_NZ", "ND", (2, 1, 16, 16), (40, 20))
    with pytest.raises(LayoutError, match="recommended"):
        convert_layout(data, "FRACTAL_NZ", "ND", (2, 1, 16, 16), ())
    assert convert_layout(data, "FRACTAL_NZ", "NCHW", (2, 1, 16, 16), (16, 17)).shape == (16, 17)


def test_dispatch_fractal_nz_batch_mismatch_warns_and_reshapes() -> None:
    data = np.zeros(2 * 16 * 16)
    with pytest.warns(LayoutWarning, match="not converted"):
        out = convert_layout(data, "FRACTAL_NZ", "ND", (2, 1, 16, 16), (3, 16, 17))
    assert out.shape == (2, 1, 16, 16)


def test_dispatch_passes_group() -> None:
    x = _arange((8, 4, 1, 3), "float16")
    dev = LAYOUTS[("NCHW", "FRACTAL_Z")](x.shape, None, x, 2, reference_quirk=False)
    out = convert_layout(dev.ravel(), "FRACTAL_Z", "NCHW", dev.shape, x.shape, group=2)
    np.testing.assert_array_equal(out, x)


# --------------------------------------------------------------------------- plugins


def _plugin(folder: Path, name: str, body: str, mode: int = 0o644) -> Path:
    target = folder / "format_convert"
    target.mkdir(exist_ok=True)
    for trusted in (folder, target):  # plugin folders must not be group/world-writable (any umask)
        os.chmod(trusted, 0o755)
    path = target / name
    path.write_text(body)
    os.chmod(path, mode)
    return path


def test_plugins_load_and_override_a_built_in(tmp_path: Path) -> None:
    _plugin(tmp_path, "convert_NCHW_to_NHWC.py",
            "import numpy as np\ndef convert(shape_from, shape_to, array):\n    return np.full(3, 7.0)\n")
    _plugin(tmp_path, "convert_ND_to_FRACTAL_Z.py",
            "def convert(shape_from, shape_to, array, group):\n    return array\n")
    plugins = load_plugins(tmp_path)
    assert set(plugins) == {("NCHW", "NHWC"), ("ND", "FRACTAL_Z")} and not plugins.ignored
    out = convert_layout(np.arange(24.0), "NCHW", "NHWC", (1, 2, 3, 4), plugins=plugins)
    np.testing.assert_array_equal(out, [7.0, 7.0, 7.0])
    assert convert_layout(np.arange(24.0), "NCHW", "NHWC", (1, 2, 3, 4)).shape == (1, 3, 4, 2)


def test_plugin_gets_flat_data_and_list_shapes(tmp_path: Path) -> None:
    _plugin(tmp_path, "convert_C1HWNCoC0_to_NCHW.py",
            "import numpy as np\n"
            "def convert(shape_from, shape_to, array):\n"
            "    assert isinstance(shape_from, list) and array.ndim == 1\n"
            "    return array.reshape(shape_to)\n")
    plugins = load_plugins(tmp_path)
    out = convert_layout(np.zeros((2, 3)), "C1HWNCoC0", "NCHW", (2, 3), (1, 1, 2, 3), plugins=plugins)
    assert out.shape == (1, 1, 2, 3)


def test_plugin_with_wrong_parameter_count_is_skipped_with_a_warning(tmp_path: Path) -> None:
    _plugin(tmp_path, "convert_NCHW_to_NHWC.py", "def convert(a, b):\n    return a\n")
    _plugin(tmp_path, "convert_NCHW_to_FRACTAL_Z.py", "def convert(a, b, c):\n    return a\n")
    _plugin(tmp_path, "helpers.py", "X = 1\n")
    plugins = load_plugins(tmp_path)
    assert not plugins
    why = [reason for _, reason in plugins.ignored]
    assert len(why) == 3
    assert any("takes 2 parameters but must take 3" in w for w in why)
    assert any("must take 4" in w for w in why)


@pytest.mark.parametrize(("mode", "why"), [(0o646, "world-writable"), (0o664, "group-writable")])
def test_writable_plugin_is_refused_before_import(tmp_path: Path, mode: int, why: str) -> None:
    marker = tmp_path / "imported"
    _plugin(tmp_path, "convert_NCHW_to_NHWC.py",
            f"open({str(marker)!r}, 'w').close()\ndef convert(a, b, c):\n    return c\n", mode)
    with pytest.raises(LayoutError, match=why):
        load_plugins(tmp_path)
    assert not marker.exists()


def test_oversized_plugin_is_refused(tmp_path: Path) -> None:
    _plugin(tmp_path, "convert_NCHW_to_NHWC.py", "#" * (1 << 20) + "\ndef convert(a, b, c):\n    return c\n")
    with pytest.raises(LayoutError, match="bytes"):
        load_plugins(tmp_path)


def test_plugin_failures_name_the_file(tmp_path: Path) -> None:
    _plugin(tmp_path, "convert_NCHW_to_NHWC.py", "def convert(a, b, c):\n    raise RuntimeError('boom')\n")
    _plugin(tmp_path, "convert_NHWC_to_NCHW.py", "def convert(a, b, c):\n    return [1, 2]\n")
    plugins = load_plugins(tmp_path)
    with pytest.raises(LayoutError, match=r"convert_NCHW_to_NHWC\.py failed.*RuntimeError: boom"):
        convert_layout(np.zeros(4), "NCHW", "NHWC", (1, 1, 2, 2), plugins=plugins)
    with pytest.raises(LayoutError, match=r"convert_NHWC_to_NCHW\.py returned list"):
        convert_layout(np.zeros(4), "NHWC", "NCHW", (1, 1, 2, 2), plugins=plugins)
    with pytest.raises(LayoutError, match=r"custom: NCHW->NHWC, NHWC->NCHW"):
        convert_layout(np.zeros(4), "NC1HWC0", "NDHWC", (1, 1, 1, 1, 4), plugins=plugins)


def test_missing_plugin_folder_is_refused(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    with pytest.raises(LayoutError, match="no format_convert folder"):
        load_plugins(tmp_path)


def test_plugin_file_modes_are_real(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "convert_A_to_B.py", "def convert(a, b, c):\n    return c\n", 0o600)
    assert not os.stat(path).st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    assert ("A", "B") in load_plugins(tmp_path)


# --------------------------------------------------------------------------- prepare_pair


def test_prepare_removes_c0_padding_by_slicing() -> None:
    golden = np.random.default_rng(6).standard_normal((1, 20, 3, 3)).astype(np.float32)
    dev = LAYOUTS[("NCHW", "NC1HWC0")](golden.shape, None, golden.astype(np.float16))
    left, gold, shape = prepare_pair(dev.ravel(), "NC1HWC0", dev.shape, golden, "NCHW", target_shape=golden.shape)
    assert shape == (1, 20, 3, 3)
    np.testing.assert_array_equal(left, golden.astype(np.float16).ravel())
    np.testing.assert_array_equal(gold, golden.ravel())


def test_prepare_golden_label_fix_both_ways() -> None:
    nchw = _arange((1, 3, 4, 5))
    dev = LAYOUTS[("NCHW", "NC1HWC0")](nchw.shape, None, nchw)
    # Labelled NHWC, target is the NHWC shape, but the array is NCHW: label becomes NCHW.
    left, gold, shape = prepare_pair(dev, "NC1HWC0", dev.shape, nchw, "NHWC", target_shape=(1, 4, 5, 3))
    assert shape == (1, 3, 4, 5)
    np.testing.assert_array_equal(left, gold)
    # Labelled NCHW, target is the NCHW shape, but the array is NHWC: label becomes NHWC.
    nhwc = nchw.transpose(0, 2, 3, 1).copy()
    left, gold, shape = prepare_pair(dev, "NC1HWC0", dev.shape, nhwc, "NCHW", target_shape=(1, 3, 4, 5))
    assert shape == (1, 4, 5, 3)
    np.testing.assert_array_equal(left, gold)


def test_prepare_scalar_like_and_nd_are_not_converted() -> None:
    left, gold, shape = prepare_pair(np.ones(1, np.float16), "NC1HWC0", (1, 1, 1, 1, 1), np.ones((1,)), "NCHW")
    assert shape == (1,)
    x = _arange((10, 64))
    left, gold, shape = prepare_pair(x, "ND", x.shape, x, "ND")
    assert shape == (640,)  # the reference's Shape column for an unconverted ND tensor
    left, gold, shape = prepare_pair(x, "ND", x.shape, x, "")  # empty golden format -> left's
    assert shape == (640,)


def test_prepare_reserved_golden_format_means_left_format() -> None:
    x = _arange((1, 3, 2, 2))
    left, gold, shape = prepare_pair(x, "NCHW", x.shape, x, "RESERVED")
    assert shape == (1, 3, 2, 2)
    with pytest.raises(LayoutError, match="unknown golden format"):
        prepare_pair(x, "NCHW", x.shape, x, "NOT_A_FORMAT")


def test_prepare_mismatch_message_gives_counts_and_shapes() -> None:
    dev = np.zeros((1, 4, 8, 8, 16), np.float16)
    golden = np.zeros((1, 16, 12, 12), np.float32)
    with pytest.raises(LayoutError) as info:
        prepare_pair(dev, "NC1HWC0", dev.shape, golden, "NCHW", target_shape=(1, 16, 12, 12))
    message = str(info.value)
    assert "left has 4096 elements [1,64,8,8] after NC1HWC0->NCHW, golden has 2304 [1,16,12,12]" in message
    assert "dim 2" in message


def test_prepare_fewer_dims_must_match_without_ones() -> None:
    x = np.zeros(6)
    left, gold, shape = prepare_pair(x, "NCHW", (6,), np.zeros((1, 6, 1, 1)), "NCHW")
    assert shape == (6,)
    with pytest.raises(LayoutError, match="fewer dims"):
        prepare_pair(np.zeros(6), "NCHW", (6,), np.zeros((2, 3, 1, 1)), "NCHW")


def test_slice_to_golden_only_slices_rank_4_and_5() -> None:
    a = np.zeros((2, 3, 4, 5, 6, 7))
    assert slice_to_golden(a, (1, 3, 4, 5, 6, 7)).shape == a.shape
    assert slice_to_golden(np.zeros((2, 32, 4)), (2, 20, 4)).shape == (2, 20, 4, 1)
    assert slice_to_golden(np.zeros((1, 32, 1, 1)), (32,)).shape == (1, 32, 1, 1)


def test_prepare_detail_mode_converts_the_golden_too() -> None:
    nchw = _arange((1, 5, 2, 3))
    dev = LAYOUTS[("NCHW", "NC1HWC0")](nchw.shape, None, nchw)
    nhwc = nchw.transpose(0, 2, 3, 1).copy()
    left, gold, shape = prepare_pair(dev, "NC1HWC0", dev.shape, nhwc, "NHWC", target_shape=nhwc.shape, detail=True)
    assert shape == (1, 5, 2, 3)
    np.testing.assert_array_equal(left, nchw.ravel())
    np.testing.assert_array_equal(gold, nchw.ravel())
    # Network mode: the left goes to the golden's NHWC, the golden is only reshaped.
    left, gold, shape = prepare_pair(dev, "NC1HWC0", dev.shape, nhwc, "NHWC", target_shape=nhwc.shape)
    assert shape == (1, 2, 3, 5)
    np.testing.assert_array_equal(left, nhwc.ravel())


def test_prepare_fractal_z_with_sub_format_group() -> None:
    w = _arange((8, 4, 1, 3), "float16")
    dev = LAYOUTS[("NCHW", "FRACTAL_Z")](w.shape, None, w, 2, reference_quirk=False)
    left, gold, shape = prepare_pair(dev, "FRACTAL_Z", dev.shape, w.astype(np.float32), "NCHW",
                                     target_shape=w.shape, sub_format=2)
    assert shape == w.shape
    np.testing.assert_array_equal(left, w.ravel())


def test_prepare_fractal_nz_detail_mode_returns_reference_rank() -> None:
    x = _arange((3, 20))
    dev = LAYOUTS[("ND", "FRACTAL_NZ")](x.shape, None, x)
    left, gold, shape = prepare_pair(dev, "FRACTAL_NZ", dev.shape, x, "ND", target_shape=x.shape)
    assert shape == (3, 20)
    np.testing.assert_array_equal(left, gold)


# --------------------------------------------------------------------------- the layout decision


def test_decision_is_made_on_metadata_with_both_routes() -> None:
    decision = decide_layout("nc1hwc0", (1, 1, 2, 3, 16), "NHWC", golden_shape=(1, 5, 2, 3), target_shape=(1, 2, 3, 5))
    assert decision == LayoutDecision(
        left_format="NC1HWC0", left_shape=(1, 1, 2, 3, 16), golden_format="NCHW", golden_shape=(1, 5, 2, 3),
        target=(1, 2, 3, 5), group=1, network=Route("NCHW", True), detail=Route("NCHW", True))
    nz = decide_layout("FRACTAL_NZ", (2, 1, 16, 16), "", golden_shape=(3, 20), sub_format=1)
    assert nz.golden_format == "FRACTAL_NZ" and nz.target == (3, 20) and nz.network == Route("FRACTAL_NZ", True)
    assert decide_layout("ND", (4, 4), "ND", golden_shape=(16,)).network == Route("ND", False)
    assert decide_layout("NDHWC", (1, 2, 2, 2, 3), "NDHWC", golden_shape=(1, 2, 2, 2, 3)).detail == Route("NCDHW", True)
    assert decide_layout("FRACTAL_Z", (1, 1, 16, 16), "HWCN", golden_shape=(1, 1, 3, 8), sub_format=2).group == 2
    with pytest.raises(LayoutError, match="unknown golden format"):
        decide_layout("NCHW", (1, 3, 2, 2), "NOT_A_FORMAT", golden_shape=(1, 3, 2, 2))


def test_prepare_pair_is_its_decision_applied() -> None:
    """prepare_pair = decide_layout + prepare_decided, in network and in detail mode (one decision
    serves both modes)."""
    nchw = _arange((1, 5, 2, 3))
    dev = LAYOUTS[("NCHW", "NC1HWC0")](nchw.shape, None, nchw)
    nhwc = nchw.transpose(0, 2, 3, 1).copy()
    decision = decide_layout("NC1HWC0", dev.shape, "NHWC", golden_shape=nhwc.shape, target_shape=nhwc.shape)
    for detail in (False, True):
        want = prepare_pair(dev, "NC1HWC0", dev.shape, nhwc, "NHWC", target_shape=nhwc.shape, detail=detail)
        got = prepare_decided(decision, dev, nhwc, detail=detail)
        assert got[2] == want[2]
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


# --------------------------------------------------------------------------- the shared reference case


def _case(*parts: str) -> Path:
    from conftest import shared_path

    return shared_path("cases", "ascend_vs_caffe_npy", *parts)


def test_shared_single_op_outputs_match_the_reference_exactly() -> None:
    root = _case()
    runs = [
        ("Conv2D.res2a_branch2a.7.1.1700000000009351.output.0.npy", "res2a_branch2a_relu.0.1700000005014576.npy",
         "single_res2a_branch2a_o0/res2a_branch2a_output_0.npy"),
        ("SplitD.slice5.21.1.1700000000030804.output.1.npy", "slice5.1.1700000005056482.npy",
         "single_slice5_o1/slice5_output_1.npy"),
    ]
    for left_name, golden_name, oracle_name in runs:
        left = np.load(root / "oracle" / "convert_left" / left_name)
        golden = np.load(root / "right" / golden_name)
        oracle = np.load(root / "oracle" / oracle_name)
        x, _, shape = prepare_pair(left, "NC1HWC0", left.shape, golden, "NCHW", target_shape=golden.shape, detail=True)
        assert shape == oracle.shape
        assert x.dtype == oracle.dtype
        assert x.reshape(shape).tobytes() == oracle.tobytes()


def test_shared_fractal_z_weights_match_their_goldens() -> None:
    root = _case()
    pairs = [p for p in json.loads((root / "case.json").read_text())["pairs"] if p["left_format"] == "FRACTAL_Z"]
    assert pairs
    for pair in pairs:
        left = np.load(root / "oracle" / "convert_left" / f"{Path(pair['left_file']).name}.input.{pair['left_index']}.npy")
        golden = np.load(root / pair["right_file"])
        out = convert_layout(left, "FRACTAL_Z", "NCHW", left.shape, golden.shape)
        assert out.shape == golden.shape
        a, b = out.astype(np.float64).ravel(), golden.astype(np.float64).ravel()
        assert np.abs(a - b).max() < 1e-3
        assert a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.99999


def _golden_desc(ops: dict[str, dict], tensor_id: str) -> dict:
    """The output desc that holds a tensor's golden format and shape (the rule walk of §3.5)."""
    name, kind, index = tensor_id.rsplit(":", 2)
    op, k = name, int(index)
    if kind == "input":
        producer, _, out = ops[name]["input"][k].partition(":")
        op, k = producer, int(out or 0)
    while ops[op]["type"] in ("Cast", "TransData"):
        producer, _, out = ops[op]["input"][0].partition(":")
        op, k = producer, int(out or 0)
    descs = ops[op]["output_desc"]
    return descs[k] if k < len(descs) else descs[0]


def _attr(desc: dict, key: str) -> object:
    for item in desc.get("attr", []):
        if item["key"] == key:
            value = item["value"]
            return value["list"]["i"] if "list" in value else value.get("s")
    return None


def test_shared_network_shapes_and_max_errors_match_the_reference() -> None:
    root = _case()
    case = json.loads((root / "case.json").read_text())
    ops = {op["name"]: op for op in json.loads((root / "fusion.json").read_text())["graph"][0]["op"]}
    result = next((root / "oracle" / "network").glob("result_*.csv"))
    with result.open(newline="") as handle:
        rows = {row["TensorIndex"]: row for row in csv.DictReader(handle)}
    checked = 0
    for pair in case["pairs"]:
        if not pair.get("right_file"):
            continue
        desc = _golden_desc(ops, pair["tensor_id"])
        left = np.load(root / "oracle" / "convert_left"
                       / f"{Path(pair['left_file']).name}.{pair['left_kind']}.{pair['left_index']}.npy")
        golden = np.load(root / pair["right_file"])
        x, y, shape = prepare_pair(left, pair["left_format"], left.shape, golden, _attr(desc, "origin_format") or "",
                                   target_shape=_attr(desc, "origin_shape"))
        row = rows[pair["tensor_id"]]
        assert "[" + ",".join(map(str, shape)) + "]" == row["Shape"], pair["tensor_id"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            max_abs = np.max(np.abs(x.astype(np.float32) - y.astype(np.float32)))
        assert f"{max_abs:.6f}" == row["MaxAbsoluteError"], pair["tensor_id"]
        checked += 1
    assert checked >= 50


@pytest.mark.parametrize("name, c0", [
    ("int8", 32), ("uint8", 32), ("bool", 16), ("float16", 16), ("float32", 16), ("bfloat16", 16),
    ("float8_e4m3fn", 32), ("float8_e5m2", 32), ("float8_e8m0fnu", 32), ("float4_e2m1fn", 64), ("int4", 64),
])
def test_default_c0_is_a_32_byte_block_of_narrow_types(name: str, c0: int) -> None:
    """16 elements of 2-byte and wider types, 32 bytes of 1-byte and 4-bit ones (fp4 / int4: 64)."""
    import ml_dtypes

    from convert.layouts.nc1hwc0 import default_c0

    narrow = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
              "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu, "float4_e2m1fn": ml_dtypes.float4_e2m1fn, "int4": ml_dtypes.int4}
    dtype = np.dtype(narrow.get(name, name))
    assert default_c0(dtype) == c0
    x = np.zeros((1, 3, 2, 2), dtype)
    from convert.layouts.nc1hwc0 import nchw_to_nc1hwc0

    assert nchw_to_nc1hwc0(x.shape, None, x).shape[-1] == c0

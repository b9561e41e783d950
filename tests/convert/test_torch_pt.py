"""The safe ``.pt`` reader against files written by our own opcode-level writer (and torch's, when installed)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compare.testing.synthetic_msprobe import tensor_pickle, write_pt
from convert.codecs.torch_pt import (
    MAX_BYTEORDER_BYTES,
    MAX_EXPANDED_BYTES,
    TorchPtError,
    load_pt,
    pt_dtype_name,
    read_pt_header,
)
from convert.errors import DumpFormatError

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.int16, np.int8, np.uint8,
          np.bool_, np.complex64]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_storage_type(tmp_path: Path, dtype) -> None:
    rng = np.random.default_rng(3)
    array = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    path = write_pt(tmp_path / "t.pt", array)
    header = read_pt_header(path)
    assert header.shape == (3, 5)
    assert pt_dtype_name(header) == np.dtype(dtype).name
    loaded = load_pt(path, header)
    assert loaded.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(loaded, array)


def test_non_contiguous_stride_and_storage_offset(tmp_path: Path) -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    transposed = load_pt(write_pt(tmp_path / "t.pt", array, transpose=True))
    np.testing.assert_array_equal(transposed, array)
    shifted = load_pt(write_pt(tmp_path / "o.pt", array, offset=7))
    np.testing.assert_array_equal(shifted, array)
    assert read_pt_header(tmp_path / "o.pt").tensor.offset == 7


@pytest.mark.parametrize("dtype", [np.float32, np.int16, ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
def test_big_endian_archive(tmp_path: Path, dtype) -> None:
    array = np.linspace(-2, 2, 10).astype(dtype)
    loaded = load_pt(write_pt(tmp_path / "b.pt", array, byteorder="big"))
    np.testing.assert_array_equal(np.asarray(loaded, dtype=np.float64), np.asarray(array, dtype=np.float64))


def test_scalar_and_empty(tmp_path: Path) -> None:
    assert load_pt(write_pt(tmp_path / "s.pt", np.array(3.5, dtype=np.float32))).item() == 3.5
    assert load_pt(write_pt(tmp_path / "e.pt", np.zeros((0, 4), dtype=np.float32))).shape == (0, 4)


@given(shape=st.lists(st.integers(1, 5), min_size=0, max_size=4), offset=st.integers(0, 9),
       dtype=st.sampled_from(["float32", "float16", "int32", "uint8"]))
def test_property_round_trip(tmp_path_factory, shape, offset, dtype) -> None:
    folder = tmp_path_factory.mktemp("pt")
    array = (np.arange(int(np.prod(shape)), dtype=np.int64) % 200).astype(dtype).reshape(shape)
    np.testing.assert_array_equal(load_pt(write_pt(folder / "p.pt", array, offset=offset)), array)


def test_forbidden_global_is_refused_and_never_called(tmp_path: Path, monkeypatch) -> None:
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    path = write_pt(tmp_path / "evil.pt", np.zeros(4, np.float32), extra_global=("os", "system"))
    with pytest.raises(TorchPtError, match=r"not readable without torch: the pickle names os\.system"):
        read_pt_header(path)
    assert called == []


def test_parameter_wrapper(tmp_path: Path) -> None:
    path = tmp_path / "w.pt"
    array = np.arange(6, dtype=np.float32)
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("w/data.pkl", tensor_pickle("FloatStorage", 6, (2, 3), (3, 1), parameter=True))
        out.writestr("w/data/0", array.tobytes())
    np.testing.assert_array_equal(load_pt(path), array.reshape(2, 3))


def test_unlisted_storage_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.pt"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("q/data.pkl", tensor_pickle("QInt8Storage", 4, (4,), (1,)))
        out.writestr("q/data/0", bytes(4))
    with pytest.raises(TorchPtError, match="torch.QInt8Storage"):
        read_pt_header(path)


@pytest.mark.parametrize("case, message", [
    ("missing", "has no entry"),
    ("compressed", "compressed or encrypted"),
    ("too_far", "reaches element"),
    ("not_zip", "not a zip archive"),
    ("not_tensor", "not one tensor"),
    ("garbage_pickle", "does not describe a plain tensor"),
])
def test_broken_files_are_diagnosed(tmp_path: Path, case: str, message: str) -> None:
    path = tmp_path / f"{case}.pt"
    array = np.arange(6, dtype=np.float32)
    if case == "missing":
        write_pt(path, array, drop_storage=True)
    elif case == "compressed":
        write_pt(path, array, compress=True)
    elif case == "too_far":
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("x/data.pkl", tensor_pickle("FloatStorage", 6, (2, 4), (4, 1)))
            out.writestr("x/data/0", array.tobytes())
    elif case == "not_zip":
        path.write_bytes(b"\x80\x02legacy torch format")
    elif case == "not_tensor":
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("x/data.pkl", b"\x80\x02(J\x01\x00\x00\x00t.")  # the tuple (1,)
    else:
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("x/data.pkl", b"\x80\x02\xff\xfe")
    with pytest.raises(TorchPtError, match=message) as caught:
        load_pt(path)
    assert str(path) in str(caught.value)


def test_truncated_storage_bytes(tmp_path: Path) -> None:
    path = write_pt(tmp_path / "t.pt", np.arange(4096, dtype=np.float32))
    raw = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DumpFormatError):
        load_pt(cut)


def test_real_torch_save_output(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    cases = {"f32": torch.randn(3, 4), "bf16": torch.randn(2, 5).to(torch.bfloat16), "i64": torch.arange(7),
             "t": torch.randn(4, 3).t().contiguous(), "half": torch.randn(6).half()}
    for name, tensor in cases.items():
        path = tmp_path / f"{name}.pt"
        torch.save(tensor, path)
        loaded = load_pt(path)
        expected = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        np.testing.assert_array_equal(np.asarray(loaded, dtype=expected.dtype), expected)


# --------------------------------------------------------------------------------------------
# Trust: unpickler state, sizes, zip members (docs/msprobe.md, "Bounds of the .pt reader")
# --------------------------------------------------------------------------------------------

BUILD_TARGETS = [("torch", "FloatStorage"), ("torch._utils", "_rebuild_tensor_v2"), ("collections", "OrderedDict"),
                 ("torch", "Size"), "tensor"]


@pytest.mark.parametrize("slots", [False, True], ids=["dict-state", "slot-state"])
@pytest.mark.parametrize("target", BUILD_TARGETS, ids=lambda t: t if isinstance(t, str) else ".".join(t))
def test_build_is_refused_and_changes_nothing_for_later_files(tmp_path: Path, target, slots: bool) -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    evil = write_pt(tmp_path / "evil.pt", array, build_on=target, build_slots=slots)
    with pytest.raises(TorchPtError, match=r"not readable without torch: the pickle sets") as caught:
        load_pt(evil)
    assert str(evil) in str(caught.value)
    # every later file reads as before: the refused load changed nothing shared
    for dtype in (np.float32, np.float16, np.int64):
        good = write_pt(tmp_path / f"good_{np.dtype(dtype).name}.pt", array.astype(dtype))
        header = read_pt_header(good)
        assert header.dtype == np.dtype(dtype) and header.shape == (2, 3)
        np.testing.assert_array_equal(load_pt(good, header), array.astype(dtype))
    with pytest.raises(TorchPtError, match="the pickle sets"):  # and the same file is refused the same way again
        load_pt(evil)


def test_expanded_tensor_is_materialised_within_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "x.pt"
    row = np.arange(5, dtype=np.float32)
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("x/data.pkl", tensor_pickle("FloatStorage", 5, (1000, 5), (0, 1)))
        out.writestr("x/data/0", row.tobytes())
    np.testing.assert_array_equal(load_pt(path), np.broadcast_to(row, (1000, 5)))


@pytest.mark.parametrize("shape, stride, message", [
    ((100000, 100000), (0, 0), "expanded tensor"),          # 37 GiB asked of a 4-byte storage
    ((2 ** 35, 2 ** 35), (0, 0), "more than the"),          # 2**70 elements
    ((2 ** 70,), (0,), "more than the"),
    ((0, 2 ** 70), (1, 1), "more than the"),                # an empty tensor numpy could not even describe
    ((10 ** 5000,), (0,), r"~2\*\*16610"),                   # an integer Python will not print
    ((2, 2), (1, 2 ** 80), "reaches element"),
    ((1,) * 40, (0,) * 40, "40 dimensions"),
])
def test_sizes_beyond_the_storage_or_the_bounds_are_refused(tmp_path: Path, shape, stride, message) -> None:
    path = tmp_path / "h.pt"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("h/data.pkl", tensor_pickle("FloatStorage", 1, shape, stride))
        out.writestr("h/data/0", np.float32(1).tobytes())
    assert path.stat().st_size < 4096
    with pytest.raises(TorchPtError, match=message) as caught:
        load_pt(path)
    assert str(path) in str(caught.value) and len(str(caught.value)) < 600


def test_expanded_bound_is_exact(tmp_path: Path) -> None:
    elements = MAX_EXPANDED_BYTES // 4
    for count, ok in ((elements, True), (elements + 1, False)):
        path = tmp_path / f"b{count}.pt"
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("b/data.pkl", tensor_pickle("FloatStorage", 1, (count,), (0,)))
            out.writestr("b/data/0", np.float32(2).tobytes())
        if ok:
            assert read_pt_header(path).shape == (count,)
        else:
            with pytest.raises(TorchPtError, match="64 MiB"):
                read_pt_header(path)


def test_huge_stride_of_a_size_one_dimension_is_never_used(tmp_path: Path) -> None:
    path = tmp_path / "u.pt"
    array = np.arange(4, dtype=np.float32)
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("u/data.pkl", tensor_pickle("FloatStorage", 4, (1, 4), (2 ** 80, 1)))
        out.writestr("u/data/0", array.tobytes())
    np.testing.assert_array_equal(load_pt(path), array.reshape(1, 4))


def _patch_member(path: Path, member: str, *, crc: bool = False, method: int | None = None) -> None:
    """Corrupt one member of a stored zip: flip its CRC, or set its compression method (both headers)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    raw = bytearray(path.read_bytes())
    local = info.header_offset
    central = next(i for i in range(len(raw)) if raw[i:i + 4] == b"PK\x01\x02"
                   and raw[i + 46: i + 46 + len(member)] == member.encode())
    if crc:
        for at in (local + 14, central + 16):
            raw[at] ^= 0xFF
    if method is not None:
        for at in (local + 8, central + 10):
            raw[at: at + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("member", ["t/byteorder", "t/data.pkl"])
@pytest.mark.parametrize("damage", ["crc", "method"])
def test_unreadable_zip_member_is_named(tmp_path: Path, member: str, damage: str) -> None:
    path = write_pt(tmp_path / "t.pt", np.arange(4, dtype=np.float32))
    _patch_member(path, member, crc=damage == "crc", method=99 if damage == "method" else None)
    with pytest.raises(TorchPtError, match=f"cannot read zip member {member}") as caught:
        load_pt(path)
    assert str(path) in str(caught.value)


def test_oversized_byteorder_member_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "o.pt"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("o/data.pkl", tensor_pickle("FloatStorage", 1, (1,), (1,)))
        out.writestr("o/byteorder", "little" + " " * 10 ** 6, compress_type=zipfile.ZIP_DEFLATED)
        out.writestr("o/data/0", np.float32(1).tobytes())
    with pytest.raises(TorchPtError, match=f"more than {MAX_BYTEORDER_BYTES}"):
        load_pt(path)

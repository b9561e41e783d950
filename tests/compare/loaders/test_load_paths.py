"""The loading fast paths of many-small-tensor dumps: the cyclic GC around loading
(compare.heap), remembered .npy headers and the one-read version-2 dump header. Each one must
give exactly what the full path gives, and fall back to it for anything unusual."""

from __future__ import annotations

import gc
import struct

import numpy as np
import pytest
from conftest import ROOT

from compare.errors import DumpFormatError
from compare.heap import frozen_heap, paused_gc
from convert.codecs import dumpfile, npy
from convert.codecs.dumpfile import read_header
from convert.codecs.dumpwrite import write_dump
from convert.codecs.npy import read_npy_header

# ------------------------------------------------------------------------------- compare.heap


def test_paused_gc_restores_the_collector_also_on_error():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with paused_gc():
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # it was off before: stays off
    finally:
        gc.enable()


def test_frozen_heap_nests_and_unfreezes_once():
    assert gc.get_freeze_count() == 0
    keep = [[i] for i in range(1000)]
    with frozen_heap():
        outer = gc.get_freeze_count()
        assert outer >= len(keep)
        with frozen_heap():
            more = [[i] for i in range(1000)]
            with paused_gc():
                loaded = [[i] for i in range(1000)]
            # a paused block inside a frozen one freezes what it made
            assert gc.get_freeze_count() >= outer + len(loaded)
        assert gc.get_freeze_count() > 0  # the inner block leaves the outer's objects frozen
    assert gc.get_freeze_count() == 0
    assert len(keep) == len(more) == len(loaded) == 1000


def test_garbage_made_while_paused_is_collected_afterwards():
    class Node:
        pass

    with paused_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a reference cycle
        del a, b
    found = gc.collect()
    assert found >= 2


# ----------------------------------------------------------------------- remembered npy headers


def test_files_sharing_a_header_share_the_parse(tmp_path):
    npy._KNOWN_HEADERS.clear()
    first, second = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(first, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(second, np.ones((2, 3), dtype=np.float32))
    h1 = read_npy_header(first)
    assert len(npy._KNOWN_HEADERS) == 1
    h2 = read_npy_header(second)
    assert h2 is h1  # remembered, not parsed again
    assert (h1.shape, h1.dtype, h1.fortran_order) == ((2, 3), np.dtype(np.float32), False)
    assert np.array_equal(npy.load_npy(second, h2), np.ones((2, 3), dtype=np.float32))


def test_a_different_header_is_parsed_not_taken_from_memory(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.zeros((2, 3), dtype=np.float32))
    assert read_npy_header(path).shape == (2, 3)
    np.save(path, np.zeros((3, 2), dtype=np.float16))
    header = read_npy_header(path)
    assert (header.shape, header.dtype) == ((3, 2), np.dtype(np.float16))
    np.save(path, np.zeros((3, 2), dtype=np.float16), allow_pickle=True)
    np.save(path, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(DumpFormatError, match="never unpickles"):
        read_npy_header(path)  # a refused header is never remembered as accepted


def test_memory_is_bounded(tmp_path, monkeypatch):
    npy._KNOWN_HEADERS.clear()
    monkeypatch.setattr(npy, "_KNOWN_HEADERS_MAX", 3)
    for n in range(1, 8):
        path = tmp_path / f"{n}.npy"
        np.save(path, np.zeros((n,), dtype=np.float32))
        assert read_npy_header(path).shape == (n,)
    assert len(npy._KNOWN_HEADERS) == 3


def test_header_bytes_only_for_complete_v1_v2_headers():
    assert npy._header_bytes(b"not a npy file at all") is None
    v1 = b"\x93NUMPY\x01\x00" + struct.pack("<H", 4) + b"abc\n"
    assert npy._header_bytes(v1 + b"DATA") == v1
    assert npy._header_bytes(v1[:-1]) is None  # the header goes past what was read
    v3 = b"\x93NUMPY\x03\x00" + struct.pack("<I", 4) + b"abc\n"
    assert npy._header_bytes(v3) is None


# ----------------------------------------------------------------------- one-read dump headers


def _slow(path, version=None):
    """read_header with the one-read path turned off."""
    original = dumpfile._quick_v2
    dumpfile._quick_v2 = lambda *args: None
    try:
        return read_header(path, version=version)
    finally:
        dumpfile._quick_v2 = original


def test_quick_header_equals_the_full_reader(tmp_path):
    rng = np.random.default_rng(0)
    path = write_dump(tmp_path / "Conv.conv1.1.123", op_name="conv1",
                      inputs=[rng.random((2, 3), dtype=np.float32), np.arange(4, dtype=np.int8)],
                      outputs=[rng.random((5,), dtype=np.float32)])
    quick = dumpfile._quick_v2(path, open(path, "rb"), path.stat().st_size)
    assert quick is not None
    assert quick == _slow(path) == read_header(path)


@pytest.mark.parametrize("damage", ["truncate", "extra", "nano", "zero-length", "v1"])
def test_unusual_dumps_take_the_full_reader(tmp_path, damage):
    path = write_dump(tmp_path / "Add.add.1.5", op_name="add", version=1 if damage == "v1" else 2,
                      outputs=[np.arange(8, dtype=np.float32)])
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:-3]
    elif damage == "extra":
        data += b"xx"
    elif damage == "nano":
        data[8:12] = struct.pack("<I", dumpfile.NANO_MAGIC)
    elif damage == "zero-length":
        data[:8] = bytes(8)
    path.write_bytes(bytes(data))
    with open(path, "rb") as f:
        assert dumpfile._quick_v2(path, f, len(data)) is None
    try:
        expected = _slow(path)
    except DumpFormatError as exc:
        with pytest.raises(DumpFormatError) as got:
            read_header(path)
        assert str(got.value) == str(exc)
    else:
        assert read_header(path) == expected


# ------------------------------------------------------------------ quant filter, nothing flagged


def _rules():
    root = ROOT
    found = sorted(root.glob("fixtures/**/*.json"))
    shared = root.parent / "shared"
    found += sorted(shared.glob("real/**/*.json")) + sorted(shared.glob("cases/**/*.json"))
    return found


def test_quant_filter_without_flags_keeps_the_groups_a_rebuild_gives():
    """A float network (nothing to flag) keeps its groups instead of rebuilding them; they are the
    groups the rebuild gives, on every fusion rule at hand (fixtures; ../shared when present)."""
    from compare.errors import CompareError
    from compare.pairing import quant_rule
    from compare.pairing.fusion_groups import ops_in_group_order, rule_from_ops
    from compare.pairing.fusion_rule import load_fusion_rule

    checked = 0
    for path in _rules():
        try:
            rule = load_fusion_rule(path)
        except CompareError:
            continue  # not a fusion rule (a policy, params ...)
        filtered = quant_rule.apply_quant_filter(rule)
        assert filtered.quant_filter_applied and not rule.quant_filter_applied
        if any(op.quant_filtered for op in filtered.ops.values()):
            continue
        rebuilt = rule_from_ops(rule, ops_in_group_order(rule), warnings=filtered.warnings,
                                skip_reasons=filtered.skip_reasons)
        assert (filtered.groups, filtered.ops, filtered.group_of) == (rebuilt.groups, rebuilt.ops, rebuilt.group_of)
        checked += 1
    assert checked >= 1

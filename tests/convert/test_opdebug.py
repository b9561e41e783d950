"""convert.codecs.opdebug: both debug-struct layouts written by our writer and read back; malformed structs
diagnosed with the byte offset; Opdebug file names."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from convert.codecs.dumpwrite import write_dump
from convert.codecs.opdebug import (
    ACC_FIELDS,
    MAGIC,
    OLD_LAYOUT_SIZE,
    AccType,
    NewEntry,
    OpDebugLayout,
    decode_opdebug,
    encode_new,
    encode_old,
    parse_opdebug_name,
    read_opdebug_file,
    slice_ids,
    write_opdebug_file,
)
from convert.errors import DumpFormatError
from convert.names.ascend import parse_offline_name

U64 = st.integers(min_value=0, max_value=2**64 - 1)


@given(ai=st.lists(U64, min_size=6, max_size=6), dha=st.lists(U64, min_size=6, max_size=6),
       l2=st.lists(U64, min_size=6, max_size=6), tail=st.lists(U64, min_size=5, max_size=5))
def test_old_layout_round_trip(ai: list[int], dha: list[int], l2: list[int], tail: list[int]) -> None:
    kernel_code, block_idx, status, dha_status, l2_status = tail
    # the one ambiguous struct (module doc): the magic, then a valid new-layout entry head
    assume(not (dha[0] & 0xFFFFFFFF == 0x5A5A5A5A and dha[1] & 0xFFFFFFFF == 1 and dha[1] >> 32 < 4))
    blob = encode_old(ai, dha=dha, l2=l2, kernel_code=kernel_code, block_idx=block_idx, status=status,
                      dha_status=dha_status, l2_status=l2_status)
    assert len(blob) == OLD_LAYOUT_SIZE
    record = decode_opdebug(blob)
    assert record.layout is OpDebugLayout.OLD and record.version is None and record.notes == ()
    dha_e, l2_e, ai_e = record.entries
    assert [e.kind for e in record.entries] == ["DHA Atomic Add", "L2 Atomic Add", "AI Core"]
    names = ["model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base"]
    assert [(f.name, f.value) for f in dha_e.fields] == list(zip(names, dha)) + [("status", dha_status)]
    assert [(f.name, f.value) for f in l2_e.fields] == list(zip(names, l2)) + [("status", l2_status)]
    assert [(f.name, f.value) for f in ai_e.fields] == list(zip(names, ai)) + [
        ("kernel_code", kernel_code), ("block_idx", block_idx), ("status", status)]
    assert (ai_e.model_id, ai_e.stream_id, ai_e.task_id, ai_e.task_type, ai_e.status) == (*ai[:4], status)


def test_old_layout_byte_offsets() -> None:
    """The documented offsets, checked against hand-packed bytes (not the writer)."""
    buf = bytearray(OLD_LAYOUT_SIZE)
    struct.pack_into("<6Q", buf, 256, 11, 12, 13, 14, 15, 16)  # AI Core info
    struct.pack_into("<Q", buf, 128 + 16, 99)  # L2 task_id
    struct.pack_into("<Q", buf, 768, 7)  # L2 status
    struct.pack_into("<3Q", buf, 1024, 0xABC, 5, 6)  # kernel_code, block_idx, status
    dha, l2, ai = decode_opdebug(bytes(buf)).entries
    assert (ai.model_id, ai.stream_id, ai.task_id, ai.task_type, ai.status) == (11, 12, 13, 14, 6)
    assert dict(ai.fields)["kernel_code"] == 0xABC and dict(ai.fields)["block_idx"] == 5
    assert (l2.task_id, l2.status, dha.status) == (99, 7, 0)


def test_primary_entry_of_old_layout() -> None:
    assert decode_opdebug(encode_old((0, 1, 3, 0, 0, 0), status=4)).primary.kind == "AI Core"
    only_l2 = decode_opdebug(encode_old(l2=(0, 2, 9, 0, 0, 0), l2_status=1))
    assert only_l2.primary.kind == "L2 Atomic Add" and only_l2.primary.task_id == 9
    assert decode_opdebug(encode_old()).primary.kind == "AI Core"  # nothing set: AI Core


def test_primary_entry_of_old_layout_is_the_last_flagged_block() -> None:
    """The reference links the last block, in DHA, L2, AI Core order, with a non-zero status:
    with DHA and L2 flagged and AI Core not, L2's task."""
    both = decode_opdebug(encode_old(dha=(0, 2, 7, 0, 0, 0), dha_status=1, l2=(0, 2, 9, 0, 0, 0), l2_status=1))
    assert (both.primary.kind, both.primary.task_id) == ("L2 Atomic Add", 9)
    all_three = decode_opdebug(encode_old((0, 2, 8, 0, 0, 0), status=4, dha=(0, 2, 7, 0, 0, 0), dha_status=1,
                                          l2=(0, 2, 9, 0, 0, 0), l2_status=1))
    assert all_three.primary.kind == "AI Core"


@given(acc=st.sampled_from(list(AccType)), data=st.data(), version=st.integers(0, 2**32 - 1),
       padding=st.integers(0, 64))
def test_new_layout_round_trip(acc: AccType, data: st.DataObject, version: int, padding: int) -> None:
    values = {name: data.draw(U64, label=name) for name in ACC_FIELDS[acc]}
    record = decode_opdebug(encode_new([NewEntry(acc, values)], version=version, padding=padding))
    assert record.layout is OpDebugLayout.NEW and record.version == version and record.notes == ()
    (entry,) = record.entries
    assert entry.kind == acc.name
    assert [(f.name, f.value) for f in entry.fields] == [(n, values[n]) for n in ACC_FIELDS[acc]]
    assert (entry.task_id, entry.stream_id, entry.status) == (values["task_id"], values["stream_id"],
                                                              values["status"])
    for name, got in (("context_id", entry.context_id), ("thread_id", entry.thread_id)):
        assert got == (None if values[name] in (2**16 - 1, 2**32 - 1, 2**64 - 1) else values[name])


def test_new_layout_byte_offsets() -> None:
    """magic, version, the entry head and the AIC data at the documented offsets (hand-packed)."""
    blob = struct.pack("<IIIIII", MAGIC, 3, 1, 0, 0, 88) + struct.pack("<11Q", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    record = decode_opdebug(blob)
    (entry,) = record.entries
    assert record.version == 3 and entry.kind == "AIC"
    assert (entry.model_id, entry.stream_id, entry.task_id, entry.task_type, entry.context_id, entry.thread_id,
            entry.status) == (1, 2, 3, 4, 5, 6, 11)
    assert dict(entry.fields)["block_id"] == 10


def test_new_layout_several_entries_then_padding() -> None:
    blob = encode_new([NewEntry(AccType.AICPU, {"task_id": 1, "status": 2}),
                       NewEntry(AccType.SDMA, {"task_id": 2, "src_addr": 0x10})], padding=40)
    record = decode_opdebug(blob)
    assert [e.kind for e in record.entries] == ["AICPU", "SDMA"]
    assert record.primary.kind == "AICPU"  # the first with a non-zero status


def test_new_layout_odd_values_are_notes() -> None:
    record = decode_opdebug(encode_new([NewEntry(AccType.AIV, {"task_id": 5}, valid=0, data_len=12)]))
    assert record.entries[0].task_id == 5
    assert any("valid is 0" in n and "byte 8" in n for n in record.notes)
    assert any("data_len is 12" in n for n in record.notes)


@pytest.mark.parametrize("blob, offset, words", [
    (b"\x00" * 100, 7, "neither the new layout"),
    (struct.pack("<II", MAGIC, 1) + b"\x00" * 4, 7 + 12, "cut short"),
    (struct.pack("<IIIIII", MAGIC, 1, 1, 9, 0, 88) + b"\x00" * 88, 7 + 12, "acc_type 9"),
    (struct.pack("<IIIIII", MAGIC, 1, 1, 0, 0, 88) + b"\x00" * 80, 7 + 24 + 80, "need 88 bytes from byte 31"),
])
def test_malformed_structs_name_the_byte(blob: bytes, offset: int, words: str) -> None:
    with pytest.raises(DumpFormatError) as info:
        decode_opdebug(blob, "x.bin", base=7)
    assert info.value.offset == offset and words in str(info.value) and str(info.value).startswith("x.bin (byte")


@pytest.mark.parametrize("version", [1, 2])
def test_file_round_trip(tmp_path: Path, version: int) -> None:
    structs = [encode_old((0, 1, 3, 0, 0, 0), status=4), encode_new([NewEntry(AccType.AIC, {"task_id": 8})])]
    path = write_opdebug_file(tmp_path / "Opdebug.Node_OpDebug.9.1.1700000000000200", structs, version=version)
    read = read_opdebug_file(path)
    assert (read.name.task_id, read.name.stream_id, read.name.timestamp) == (9, 1, 1700000000000200)
    assert [r.layout for r in read.records] == [OpDebugLayout.OLD, OpDebugLayout.NEW]
    assert read.records[0].primary.task_id == 3 and read.records[1].primary.task_id == 8


def test_file_problems(tmp_path: Path) -> None:
    bad = write_opdebug_file(tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000000", [b"\x01\x02\x03"])
    with pytest.raises(DumpFormatError, match="3 bytes: neither") as info:
        read_opdebug_file(bad)
    assert info.value.offset is not None and info.value.offset > 8  # the struct's offset inside the dump
    empty = write_dump(tmp_path / "Opdebug.Node_OpDebug.2.1.1700000000000000", inputs=[np.zeros(2, np.uint8)])
    with pytest.raises(DumpFormatError, match="without output tensors"):
        read_opdebug_file(empty)
    with pytest.raises(DumpFormatError, match="not an overflow record name"):
        read_opdebug_file(bad, "Conv2D.conv1.1.1.1700000000000000")
    (tmp_path / "Opdebug.Node_OpDebug.3.1.1700000000000000").write_bytes(b"junk")
    with pytest.raises(DumpFormatError):
        read_opdebug_file(tmp_path / "Opdebug.Node_OpDebug.3.1.1700000000000000")


def test_names() -> None:
    assert parse_opdebug_name("Opdebug.Node_OpDebug.9.1.1700000000000200").task_id == 9
    assert parse_opdebug_name("Opdebug.Node_OpDebug.9.1700000000000200").stream_id is None
    assert parse_opdebug_name("Opdebug.Node_OpDebug.9.1.1700000000000200.output.0.json") is None
    assert parse_opdebug_name("Conv2D.conv1.9.1.1700000000000200") is None
    long = parse_offline_name("Add.add1.0.3.1673383728093446.4.1.2.0")
    assert long is not None and slice_ids(long) == (1, 2)
    short = parse_offline_name("Add.add1.0.3.1673383728093446")
    assert short is not None and slice_ids(short) == (None, None)


def test_oversized_output_is_refused_unread(tmp_path: Path) -> None:
    from convert.codecs.opdebug import MAX_STRUCT_BYTES

    path = write_opdebug_file(tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000000", [bytes(MAX_STRUCT_BYTES + 8)])
    with pytest.raises(DumpFormatError, match="more than any overflow debug struct"):
        read_opdebug_file(path)


OLD_JSON = {
    "DHA Atomic Add": {"model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0",
                       "para_base": "0x0", "status": 0},
    "L2 Atomic Add": {"model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0",
                      "para_base": "0x0", "status": 0},
    "AI Core": {"model_id": 1, "stream_id": 2, "task_id": 3, "task_type": 0, "pc_start": "0x1000",
                "para_base": "0x2000", "kernel_code": "0xab", "block_idx": 5, "status": 4},
}
NEW_JSON = {"magic": "0x5a5a5a5a", "version": 1,
            "acc_list": {"valid": 1, "acc_type": "AIV", "rsv": 0, "data_len": 88,
                         "data": {name: 0 for name in ACC_FIELDS[AccType.AIV]} | {"task_id": 8, "stream_id": 1,
                                                                                  "status": 2, "pc_start": "0x10"}}}


def test_json_copies_decode_like_the_structs() -> None:
    from convert.codecs.opdebug import decode_opdebug_json

    old = decode_opdebug_json(OLD_JSON)
    binary = decode_opdebug(encode_old((1, 2, 3, 0, 0x1000, 0x2000), kernel_code=0xAB, block_idx=5, status=4))
    assert old.entries == binary.entries and old.layout is OpDebugLayout.OLD
    new = decode_opdebug_json(NEW_JSON)
    assert new.layout is OpDebugLayout.NEW and new.version == 1
    assert (new.primary.kind, new.primary.task_id, new.primary.stream_id, dict(new.primary.fields)["pc_start"]) == (
        "AIV", 8, 1, 0x10)
    listed = decode_opdebug_json({**NEW_JSON, "acc_list": [NEW_JSON["acc_list"], NEW_JSON["acc_list"]]})
    assert len(listed.entries) == 2


@pytest.mark.parametrize("document, words", [
    ([], "expected an object"),
    ({"AI Core": {}}, "DHA Atomic Add: expected an object"),
    ({**OLD_JSON, "AI Core": {**OLD_JSON["AI Core"], "status": "bad"}}, "AI Core.status: 'bad' is not an unsigned"),
    ({**OLD_JSON, "L2 Atomic Add": {"status": 1}}, "L2 Atomic Add: no model_id"),
    ({**NEW_JSON, "magic": "0x1"}, "magic"),
    ({**NEW_JSON, "acc_list": {**NEW_JSON["acc_list"], "acc_type": "GPU"}}, "acc_list.acc_type: 'GPU'"),
    ({**NEW_JSON, "acc_list": []}, "acc_list: no entry"),
])
def test_malformed_json_copies_name_the_key(document: object, words: str) -> None:
    from convert.codecs.opdebug import decode_opdebug_json

    with pytest.raises(DumpFormatError, match="^c.json: ") as info:
        decode_opdebug_json(document, "c.json")
    assert words in str(info.value)


def test_json_copy_files(tmp_path: Path) -> None:
    import json

    from convert.codecs.opdebug import parse_opdebug_json_name

    name = "Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0.output.1.json"
    parsed = parse_opdebug_json_name(name)
    assert parsed is not None and parsed.output_index == 1 and parsed.name.task_id == 0
    assert parsed.dump_name == "Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0"
    assert parse_opdebug_json_name("Opdebug.Node_OpDebug.9.1.1700000000000200.output.0.npy") is None
    (tmp_path / name).write_text(json.dumps(OLD_JSON))
    read = read_opdebug_file(tmp_path / name)
    assert read.header is None and [r.output_index for r in read.records] == [1]
    assert read.records[0].primary.task_id == 3
    (tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000000.output.0.json").write_text("{not json")
    with pytest.raises(DumpFormatError, match="not valid JSON"):
        read_opdebug_file(tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000000.output.0.json")


@given(tail=st.binary(max_size=400), magic=st.booleans(), size=st.sampled_from([None, OLD_LAYOUT_SIZE]))
def test_any_bytes_decode_or_are_diagnosed(tail: bytes, magic: bool, size: int | None) -> None:
    """Hostile structs: a record or a DumpFormatError with an offset inside the struct, nothing else."""
    blob = (struct.pack("<I", MAGIC) if magic else b"") + tail
    if size is not None:
        blob = (blob + bytes(size))[:size]
    try:
        record = decode_opdebug(blob, "f")
    except DumpFormatError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(blob)
    else:
        assert record.entries and record.primary in record.entries


def test_a_2048_byte_struct_starting_with_the_magic_is_told_by_its_first_entry() -> None:
    """An old-layout struct whose DHA model_id begins with the magic's bytes stays old; a 2048-byte
    new-layout struct (its first entry valid, a known acc_type) stays new."""
    old = encode_old([0] * 6, dha=[0x5A5A5A5A, 0, 0, 0, 0, 0], l2=[0] * 6, kernel_code=0, block_idx=0, status=0,
                     dha_status=0, l2_status=0)
    assert decode_opdebug(old).layout is OpDebugLayout.OLD
    new = bytearray(old)
    new[8:24] = (1).to_bytes(4, "little") + (0).to_bytes(4, "little") + bytes(4) + (88).to_bytes(4, "little")
    assert decode_opdebug(bytes(new)).layout is OpDebugLayout.NEW

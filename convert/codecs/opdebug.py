"""``Opdebug.Node_OpDebug.*`` overflow records: the debug struct, decoded into frozen records, and
a writer of such files (for tests and synthetic dumps).

What an Opdebug file is. When overflow detection fires, the device dumps one extra file named
``Opdebug.Node_OpDebug.{task_id}[.{stream_id}].{timestamp}[.{task_type}.{context_id}.{thread_id}.{x}]``
in the dump folder. It is an ordinary operator dump (:mod:`convert.codecs.dumpfile`, version 2 or 1);
each of its *output* tensors holds one debug struct as raw bytes, in one of two layouts. The
``task_id`` / ``stream_id`` in the file name are those of the debug task itself; the ids of the
operator that overflowed are *inside* the struct, and that is what links it to an op dump.

The dump tools can also decode an Opdebug file into JSON copies, ``{Opdebug file name}.output.{i}.json``
(MindSpore's npy dumps hold only those); :func:`decode_opdebug_json` reads them into the same
records.

Byte layouts (every integer little-endian, unsigned):

Old layout -- exactly 2048 bytes, no magic::

    byte    0  DHA Atomic Add info  (128 bytes)  six uint64: model_id, stream_id, task_id,
    byte  128  L2 Atomic Add info   (128 bytes)      task_type, pc_start, para_base
    byte  256  AI Core info         (256 bytes)      (the rest of each block is padding)
    byte  512  DHA Atomic Add status (256 bytes): uint64 status at byte 512
    byte  768  L2 Atomic Add status  (256 bytes): uint64 status at byte 768
    byte 1024  AI Core status       (1024 bytes): uint64 kernel_code (1024), block_idx (1032),
                                                  status (1040)

New layout -- starts with the magic::

    byte  0  uint32 magic = 0x5A5A5A5A
    byte  4  uint32 version
    byte  8  acc_list: entries of
             +0  uint32 valid (1 = this entry holds data)
             +4  uint32 acc_type: 0 AIC, 1 AIV, 2 AICPU, 3 SDMA
             +8  uint32 rsv
             +12 uint32 data_len (bytes of data)
             +16 data: uint64 fields, by acc_type:
                 AIC / AIV (11): model_id, stream_id, task_id, task_type, context_id, thread_id,
                                 pc_start, para_base, core_id, block_id, status
                 AICPU     (8):  model_id, stream_id, task_id, task_type, context_id, cpu_id,
                                 thread_id, status
                 SDMA      (10): model_id, stream_id, task_id, task_type, context_id, thread_id,
                                 src_addr, dst_addr, channel_id, status

Established (from the public dump tools' documentation and sources, facts only): the file is an
operator dump whose outputs hold the struct; the old layout's block sizes and offsets and its
field order; the new layout's magic, header, entry head and the three field tables; the width of
every field (uint32 head, uint64 data); the acc_type codes. Assumed: little-endian byte order
(every Ascend host is little-endian and the tools unpack native-order); the reference tool
decodes only the *first* acc_list entry -- vcompare also decodes the entries after it while
whole entries remain and their ``valid`` field is 1 (the rest of the buffer is padding).

Edge-case policy (a record never crashes a run; a problem is a
:class:`~convert.errors.DumpFormatError` naming the file and the byte offset):

* a struct that neither starts with the magic nor is 2048 bytes long: error at byte 0;
* a struct of exactly 2048 bytes that starts with the magic is the new layout only when its first
  acc_list entry reads as one (``valid`` 1 and a known ``acc_type``); otherwise it is the old
  layout, whose DHA model_id happens to begin with the magic's bytes (the layouts are told apart
  by nothing else);
* a new-layout struct cut short (header, entry head or entry data): error at the byte where the
  missing part starts; an unknown ``acc_type``: error at that field;
* an output of more than :data:`MAX_STRUCT_BYTES` is refused before it is read;
* odd but readable values are kept and said in :attr:`OpDebugRecord.notes`: a first entry whose
  ``valid`` is not 1, a ``data_len`` that is not the field table's size (the fields are read by
  the table, as the reference does; the next entry starts after the larger of the two).

Why hand-written: the struct is a fixed C layout with no schema file and no library that knows it;
:mod:`struct` reads it directly.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import DumpFormatError
from ..jsonsafe import load_json
from ..names.ascend import OfflineName, parse_offline_name
from .dumpfile import DumpHeader, read_header
from .dumpwrite import TensorSpec, write_dump

#: The new layout's first uint32.
MAGIC = 0x5A5A5A5A
#: Size of an old-layout struct.
OLD_LAYOUT_SIZE = 2048
#: The file-name prefix of overflow records (op_type ``Opdebug``, op_name ``Node_OpDebug``).
OPDEBUG_PREFIX = "Opdebug.Node_OpDebug."

_INFO_FIELDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
#: Old layout: (block name, info offset, status offset), in file order.
_OLD_BLOCKS = (("DHA Atomic Add", 0, 512), ("L2 Atomic Add", 128, 768), ("AI Core", 256, 1024))
_ENTRY_HEAD = 16
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
#: The largest debug struct read (a real one is 2048 bytes or a few hundred): a larger output of
#: an Opdebug file is refused before it is read.
MAX_STRUCT_BYTES = 1 << 20
#: Values a context / thread id takes when the entry has none: 0xFFFF is what the device writes
#: for a task that is not an FFTS+ sub-task (the reference tool ignores it too), the wider ones
#: are the same marker in a uint32 / uint64.
NO_ID = frozenset({0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF})


class OpDebugLayout(str, Enum):
    """Which of the two struct layouts a record was read from."""

    OLD = "old"
    NEW = "new"


class AccType(Enum):
    """The accelerator of a new-layout entry (its ``acc_type`` code)."""

    AIC = 0
    AIV = 1
    AICPU = 2
    SDMA = 3


#: New layout: the uint64 fields of an entry's data, by accelerator.
#: The ``acc_type`` codes of :class:`AccType`.
_ACC_CODES = frozenset(acc.value for acc in AccType)
ACC_FIELDS: dict[AccType, tuple[str, ...]] = {
    AccType.AIC: ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "pc_start",
                  "para_base", "core_id", "block_id", "status"),
    AccType.AIV: ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "pc_start",
                  "para_base", "core_id", "block_id", "status"),
    AccType.AICPU: ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id", "thread_id", "status"),
    AccType.SDMA: ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "src_addr",
                   "dst_addr", "channel_id", "status"),
}
#: Fields that are addresses or code (reports print them in hex).
ADDRESS_FIELDS = frozenset({"pc_start", "para_base", "src_addr", "dst_addr", "kernel_code"})


class Field(NamedTuple):
    """One decoded field: its name and unsigned value."""

    name: str
    value: int


@dataclass(frozen=True)
class OpDebugEntry:
    """One unit of a debug struct: an old-layout block (``DHA Atomic Add``, ``L2 Atomic Add``,
    ``AI Core``) or a new-layout acc_list entry (``AIC``, ``AIV``, ``AICPU``, ``SDMA``).

    ``fields`` are every decoded field in layout order; the named attributes repeat the ones the
    linking and the reports use. ``context_id`` / ``thread_id`` are None when the layout has none
    or the value is a no-id marker (:data:`NO_ID`).
    """

    kind: str
    model_id: int
    stream_id: int
    task_id: int
    task_type: int
    status: int
    fields: tuple[Field, ...]
    context_id: int | None = None
    thread_id: int | None = None


@dataclass(frozen=True)
class OpDebugRecord:
    """One decoded debug struct (one output tensor of an Opdebug file).

    ``version`` is the new layout's version (None for the old layout); ``entries`` the old
    layout's three blocks (file order) or the new layout's valid acc_list entries; ``size`` the
    struct's bytes (0 for a decoded JSON copy); ``notes`` odd but readable values (module
    policy). :attr:`primary` is the entry that reports the overflow.
    """

    layout: OpDebugLayout
    version: int | None
    entries: tuple[OpDebugEntry, ...]
    size: int
    notes: tuple[str, ...] = ()
    #: Which output tensor of the Opdebug dump held it (the ``.output.{i}.json`` index of a decoded copy).
    output_index: int = 0

    @property
    def primary(self) -> OpDebugEntry:
        """The entry whose operator overflowed: the first entry with a non-zero status (old
        layout: AI Core, then L2 Atomic Add, then DHA Atomic Add -- the last block in struct
        order with a non-zero status, as the reference links it); when none has one, AI Core
        (old) or the first entry (new)."""
        order = list(self.entries)
        if self.layout is OpDebugLayout.OLD:
            order.reverse()
        for entry in order:
            if entry.status:
                return entry
        return order[0]


class SliceIds(NamedTuple):
    """The context and thread ids an op-dump or Opdebug file name carries (None when absent)."""

    context_id: int | None
    thread_id: int | None


def slice_ids(name: OfflineName) -> SliceIds:
    """Context / thread ids of a long dump name (``...{timestamp}.{task_type}.{context_id}.
    {thread_id}.{x}``, :func:`convert.names.ascend.parse_offline_name`); None for shorter names."""
    if name.task_type is None or len(name.extra) < 3:
        return SliceIds(None, None)
    return SliceIds(int(name.extra[-3]), int(name.extra[-2]))


def is_opdebug_name(name: str) -> bool:
    """Whether a file name is an overflow record's (``Opdebug.Node_OpDebug.*``)."""
    return name.startswith(OPDEBUG_PREFIX)


def parse_opdebug_name(name: str) -> OfflineName | None:
    """The fields of a clean Opdebug file name (no trailing text such as ``.output.0.json``),
    or None when the name is not one."""
    parsed = parse_offline_name(name)
    if parsed is None or parsed.op_type != "Opdebug" or parsed.op_name != "Node_OpDebug" or parsed.trailing:
        return None
    return parsed


# ------------------------------------------------------------------------------------ decoding


def _u32(data: bytes, at: int) -> int:
    return int(_U32.unpack_from(data, at)[0])


def _u64(data: bytes, at: int) -> int:
    return int(_U64.unpack_from(data, at)[0])


def _id(value: int) -> int | None:
    return None if value in NO_ID else value


def decode_opdebug(data: bytes, path: str | os.PathLike[str] = "<bytes>", *, base: int = 0) -> OpDebugRecord:
    """Decode one debug struct (module docstring: layouts and policy).

    ``path`` and ``base`` (the struct's byte offset in that file) only name where a problem is.
    Raises :class:`DumpFormatError` for a struct of neither layout or cut short.
    """
    data = bytes(data)
    if len(data) >= 4 and _u32(data, 0) == MAGIC and not (len(data) == OLD_LAYOUT_SIZE and not _new_entry(data)):
        return _decode_new(data, path, base)
    if len(data) == OLD_LAYOUT_SIZE:
        return _decode_old(data)
    raise DumpFormatError(path, f"overflow debug struct of {len(data)} bytes: neither the new layout (magic "
                                f"0x{MAGIC:08X} at byte 0) nor the old one (exactly {OLD_LAYOUT_SIZE} bytes)",
                          offset=base)


def _new_entry(data: bytes) -> bool:
    """Whether the struct's first acc_list entry reads as one of the new layout (``valid`` 1, a
    known ``acc_type``): what tells a new-layout struct of 2048 bytes from an old-layout one whose
    first field (DHA model_id) happens to begin with the magic's bytes."""
    if len(data) < 8 + _ENTRY_HEAD or _u32(data, 8) != 1:
        return False
    return _u32(data, 12) in _ACC_CODES


def _decode_old(data: bytes) -> OpDebugRecord:
    entries = []
    for kind, info, status_at in _OLD_BLOCKS:
        values = [Field(name, _u64(data, info + 8 * i)) for i, name in enumerate(_INFO_FIELDS)]
        if kind == "AI Core":
            values += [Field("kernel_code", _u64(data, status_at)), Field("block_idx", _u64(data, status_at + 8)),
                       Field("status", _u64(data, status_at + 16))]
        else:
            values.append(Field("status", _u64(data, status_at)))
        named = {f.name: f.value for f in values}
        entries.append(OpDebugEntry(kind=kind, model_id=named["model_id"], stream_id=named["stream_id"],
                                    task_id=named["task_id"], task_type=named["task_type"], status=named["status"],
                                    fields=tuple(values)))
    return OpDebugRecord(layout=OpDebugLayout.OLD, version=None, entries=tuple(entries), size=len(data))


def _decode_new(data: bytes, path: str | os.PathLike[str], base: int) -> OpDebugRecord:
    if len(data) < 8 + _ENTRY_HEAD:
        raise DumpFormatError(path, f"overflow debug struct (new layout) of {len(data)} bytes is cut short: the "
                                    f"header and the first acc_list entry need {8 + _ENTRY_HEAD}",
                              offset=base + len(data))
    version = _u32(data, 4)
    entries: list[OpDebugEntry] = []
    notes: list[str] = []
    at = 8
    while at + _ENTRY_HEAD <= len(data):
        valid, code, data_len = _u32(data, at), _u32(data, at + 4), _u32(data, at + 12)
        if entries and valid != 1:
            break  # padding after the last entry
        if not entries and valid != 1:
            notes.append(f"acc_list entry at byte {base + at}: valid is {valid}, not 1 (decoded anyway)")
        try:
            acc = AccType(code)
        except ValueError:
            raise DumpFormatError(path, f"overflow debug struct: acc_type {code} is not one of "
                                        f"{', '.join(f'{a.value} {a.name}' for a in AccType)}",
                                  offset=base + at + 4) from None
        names = ACC_FIELDS[acc]
        need = 8 * len(names)
        start = at + _ENTRY_HEAD
        if data_len != need:
            notes.append(f"{acc.name} entry at byte {base + at}: data_len is {data_len}, the {acc.name} fields "
                         f"take {need} bytes (read by the field table)")
        if start + need > len(data):
            raise DumpFormatError(path, f"overflow debug struct: the {acc.name} entry's {len(names)} fields need "
                                        f"{need} bytes from byte {base + start}, the struct ends at byte "
                                        f"{base + len(data)}", offset=base + len(data))
        values = tuple(Field(name, _u64(data, start + 8 * i)) for i, name in enumerate(names))
        named = {f.name: f.value for f in values}
        entries.append(OpDebugEntry(kind=acc.name, model_id=named["model_id"], stream_id=named["stream_id"],
                                    task_id=named["task_id"], task_type=named["task_type"], status=named["status"],
                                    fields=values, context_id=_id(named["context_id"]),
                                    thread_id=_id(named["thread_id"])))
        at = start + max(need, data_len)
    return OpDebugRecord(layout=OpDebugLayout.NEW, version=version, entries=tuple(entries), size=len(data),
                         notes=tuple(notes))


# ------------------------------------------------------------------ decoded JSON copies

_JSON_NAME_RE = re.compile(r"\.output\.([0-9]+)\.json")
#: A decoded JSON copy larger than this is not an overflow record (a real one is about 1 KiB).
MAX_JSON_BYTES = 1 << 20


class JsonName(NamedTuple):
    """The fields of a decoded copy's name, ``{Opdebug file name}.output.{i}.json``."""

    name: OfflineName
    output_index: int
    dump_name: str


def parse_opdebug_json_name(name: str) -> JsonName | None:
    """The fields of ``Opdebug.Node_OpDebug.{...}.output.{i}.json`` (the JSON copy the dump tools
    decode an Opdebug file into), or None."""
    parsed = parse_offline_name(name)
    if parsed is None or parsed.op_type != "Opdebug" or parsed.op_name != "Node_OpDebug":
        return None
    match = _JSON_NAME_RE.fullmatch(parsed.trailing)
    if match is None:
        return None
    return JsonName(replace(parsed, trailing=""), int(match.group(1)), name[: len(name) - len(parsed.trailing)])


def _json_int(path: str | os.PathLike[str], where: str, value: object) -> int:
    """An unsigned field of a JSON copy: an integer, or a ``0x..`` / decimal string."""
    if isinstance(value, bool):
        raise DumpFormatError(path, f"{where}: {value!r} is not an unsigned integer")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            number = int(value, 16) if value.lower().startswith("0x") else int(value)
        except ValueError:
            number = -1
        if number >= 0:
            return number
    raise DumpFormatError(path, f"{where}: {value!r} is not an unsigned integer")


def _json_entry(path: str | os.PathLike[str], where: str, kind: str, block: object,
                names: Sequence[str]) -> OpDebugEntry:
    if not isinstance(block, dict):
        raise DumpFormatError(path, f"{where}: expected an object, found {type(block).__name__}")
    missing = [n for n in names if n not in block]
    if missing:
        raise DumpFormatError(path, f"{where}: no {', '.join(missing)}")
    values = tuple(Field(n, _json_int(path, f"{where}.{n}", block[n])) for n in names)
    named = {f.name: f.value for f in values}
    return OpDebugEntry(kind=kind, model_id=named["model_id"], stream_id=named["stream_id"],
                        task_id=named["task_id"], task_type=named["task_type"], status=named["status"],
                        fields=values, context_id=_id(named["context_id"]) if "context_id" in named else None,
                        thread_id=_id(named["thread_id"]) if "thread_id" in named else None)


def decode_opdebug_json(document: object, path: str | os.PathLike[str] = "<json>") -> OpDebugRecord:
    """Decode a debug struct's JSON copy (what the dump tools write as ``...output.{i}.json``).

    Old layout: an object with ``"DHA Atomic Add"``, ``"L2 Atomic Add"`` and ``"AI Core"``, each
    holding the info fields and ``status`` (AI Core also ``kernel_code``, ``block_idx``). New
    layout: ``magic``, ``version`` and ``acc_list`` -- one entry object, or a list of them -- of
    ``valid``, ``acc_type`` (``"AIC"`` ... or its code), ``rsv``, ``data_len`` and ``data`` (the
    fields of :data:`ACC_FIELDS`). Numbers may be integers or ``0x..`` strings. Raises
    :class:`DumpFormatError` naming the JSON key of the problem.
    """
    if not isinstance(document, dict):
        raise DumpFormatError(path, f"overflow record JSON: expected an object, found {type(document).__name__}")
    if "acc_list" in document:
        if _json_int(path, "magic", document.get("magic")) != MAGIC:
            raise DumpFormatError(path, f"magic: {document.get('magic')!r} is not 0x{MAGIC:08X}")
        version = _json_int(path, "version", document.get("version"))
        raw = document["acc_list"]
        items = raw if isinstance(raw, list) else [raw]
        entries = []
        notes = []
        for i, item in enumerate(items):
            where = f"acc_list[{i}]" if isinstance(raw, list) else "acc_list"
            if not isinstance(item, dict):
                raise DumpFormatError(path, f"{where}: expected an object, found {type(item).__name__}")
            acc_value = item.get("acc_type")
            acc = next((a for a in AccType if acc_value in (a.name, a.value) and not isinstance(acc_value, bool)),
                       None)
            if acc is None:
                raise DumpFormatError(path, f"{where}.acc_type: {acc_value!r} is not one of "
                                            f"{', '.join(a.name for a in AccType)}")
            if item.get("valid") != 1:
                notes.append(f"{where}: valid is {item.get('valid')!r}, not 1 (decoded anyway)")
            entries.append(_json_entry(path, f"{where}.data", acc.name, item.get("data"), ACC_FIELDS[acc]))
        if not entries:
            raise DumpFormatError(path, "acc_list: no entry")
        return OpDebugRecord(layout=OpDebugLayout.NEW, version=version, entries=tuple(entries), size=0,
                             notes=tuple(notes))
    entries = []
    for kind, _, _ in _OLD_BLOCKS:
        extra = ("kernel_code", "block_idx", "status") if kind == "AI Core" else ("status",)
        entries.append(_json_entry(path, kind, kind, document.get(kind), _INFO_FIELDS + extra))
    return OpDebugRecord(layout=OpDebugLayout.OLD, version=None, entries=tuple(entries), size=0)


@dataclass(frozen=True)
class OpDebugFile:
    """An Opdebug file read whole: its (real) name's fields, the dump header, one record per
    output tensor, in output order."""

    path: Path
    name: OfflineName
    #: None for a decoded JSON copy (``...output.{i}.json``).
    header: DumpHeader | None
    records: tuple[OpDebugRecord, ...]


def read_opdebug_file(path: str | os.PathLike[str], real_name: str | None = None, *,
                      version: int | None = None) -> OpDebugFile:
    """Read an Opdebug dump file and decode the struct of each output tensor; a decoded JSON copy
    (``...output.{i}.json``, :func:`decode_opdebug_json`) gives its one record.

    ``real_name``: the file's real name when it is stored under a hashed name (``mapping.csv``).
    Raises :class:`DumpFormatError` (path, byte offset) for a name that is not an Opdebug name, a
    dump that does not decode, a file without outputs, or a struct that does not decode.
    """
    path = Path(path)
    name = real_name or path.name
    copy = parse_opdebug_json_name(name)
    if copy is not None:
        return _read_json_copy(path, copy)
    parsed = parse_opdebug_name(name)
    if parsed is None:
        raise DumpFormatError(path, f"{name!r} is not an overflow record name "
                                    f"({OPDEBUG_PREFIX}{{task_id}}[.{{stream_id}}].{{timestamp}})")
    header = read_header(path, version)
    if not header.outputs:
        raise DumpFormatError(path, "overflow record without output tensors: no debug struct to decode")
    records = []
    try:
        with open(path, "rb") as handle:
            for info in header.outputs:
                if info.size > MAX_STRUCT_BYTES:
                    raise DumpFormatError(path, f"output {info.index}: {info.size} bytes, more than any overflow "
                                                f"debug struct ({MAX_STRUCT_BYTES} bytes at most); not read",
                                          offset=info.offset)
                handle.seek(info.offset)
                data = handle.read(info.size)
                if len(data) != info.size:
                    raise DumpFormatError(path, f"output {info.index}: {info.size} bytes declared, the file ends "
                                                f"after {len(data)}", offset=info.offset + len(data))
                records.append(replace(decode_opdebug(data, path, base=info.offset), output_index=info.index))
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    return OpDebugFile(path=path, name=parsed, header=header, records=tuple(records))


def _read_json_copy(path: Path, copy: JsonName) -> OpDebugFile:
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise DumpFormatError(path, f"{size} bytes, more than an overflow record's JSON copy "
                                        f"({MAX_JSON_BYTES} at most); not read")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    document = load_json(text, path, finite=False)  # deep nesting / 4,300-digit numbers: DumpFormatError
    record = replace(decode_opdebug_json(document, path), output_index=copy.output_index)
    return OpDebugFile(path=path, name=copy.name, header=None, records=(record,))


# ------------------------------------------------------------------------------------ writing


def encode_old(ai_core: Sequence[int] = (0, 0, 0, 0, 0, 0), *, dha: Sequence[int] = (0,) * 6,
               l2: Sequence[int] = (0,) * 6, kernel_code: int = 0, block_idx: int = 0, status: int = 0,
               dha_status: int = 0, l2_status: int = 0) -> bytes:
    """An old-layout struct (2048 bytes). ``ai_core`` / ``dha`` / ``l2``: the six info values
    (model_id, stream_id, task_id, task_type, pc_start, para_base)."""
    buf = bytearray(OLD_LAYOUT_SIZE)
    for values, (_, info, _) in zip((dha, l2, ai_core), _OLD_BLOCKS):
        if len(values) != len(_INFO_FIELDS):
            raise ValueError(f"an info block has {len(_INFO_FIELDS)} values, not {len(values)}")
        for i, value in enumerate(values):
            _U64.pack_into(buf, info + 8 * i, value)
    _U64.pack_into(buf, 512, dha_status)
    _U64.pack_into(buf, 768, l2_status)
    for i, value in enumerate((kernel_code, block_idx, status)):
        _U64.pack_into(buf, 1024 + 8 * i, value)
    return bytes(buf)


class NewEntry(NamedTuple):
    """A new-layout acc_list entry to encode: the accelerator and its fields by name (missing
    fields are 0); ``valid`` and ``data_len`` (None: the table's size) as written."""

    acc: AccType
    values: dict[str, int]
    valid: int = 1
    data_len: int | None = None


def encode_new(entries: Sequence[NewEntry], *, version: int = 1, padding: int = 0) -> bytes:
    """A new-layout struct: the header, each entry, then ``padding`` zero bytes."""
    out = bytearray(_U32.pack(MAGIC) + _U32.pack(version))
    for entry in entries:
        names = ACC_FIELDS[entry.acc]
        unknown = set(entry.values) - set(names)
        if unknown:
            raise ValueError(f"{entry.acc.name} has no field(s) {sorted(unknown)}")
        size = 8 * len(names) if entry.data_len is None else entry.data_len
        out += struct.pack("<IIII", entry.valid, entry.acc.value, 0, size)
        out += b"".join(_U64.pack(entry.values.get(name, 0)) for name in names)
    return bytes(out + bytes(padding))


def write_opdebug_file(path: str | os.PathLike[str], structs: Sequence[bytes], *, version: int = 2,
                       dump_time: int = 0) -> Path:
    """Write an Opdebug dump file whose outputs are ``structs`` (uint8 tensors, format ND)."""
    outputs = [TensorSpec(np.frombuffer(blob, dtype=np.uint8).copy(), format="ND") for blob in structs]
    return write_dump(path, outputs=outputs, op_name="Node_OpDebug", version=version, dump_time=dump_time)


__all__ = [
    "ACC_FIELDS", "ADDRESS_FIELDS", "AccType", "Field", "MAGIC", "MAX_STRUCT_BYTES", "NO_ID", "NewEntry", "OLD_LAYOUT_SIZE",
    "JsonName", "MAX_JSON_BYTES", "OPDEBUG_PREFIX", "OpDebugEntry", "OpDebugFile", "OpDebugLayout", "OpDebugRecord",
    "SliceIds", "decode_opdebug", "decode_opdebug_json", "parse_opdebug_json_name",
    "encode_new", "encode_old", "is_opdebug_name", "parse_opdebug_name", "read_opdebug_file", "slice_ids",
    "write_opdebug_file",
]

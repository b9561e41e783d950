"""A safe reader of single-tensor PyTorch ``.pt`` files (``torch.save`` zip format), without torch.

Why a hand-written reader: torch is not a dependency of vcompare, and ``torch.load`` -- even
with ``weights_only=True`` -- needs torch; plain :mod:`pickle` would execute whatever the file
names. This module unpickles with a :class:`pickle.Unpickler` whose ``find_class`` admits only
an allow-list of names and maps each to an inert placeholder defined here (no torch or other
foreign code ever runs); ``persistent_load`` turns storage references into records. The
numbers then come straight from the storage bytes, as a numpy view.

File layout (``torch.save`` since torch 1.6; a zip archive, entries normally *stored*, not
compressed, with the storages aligned to 64 bytes)::

    {archive}/data.pkl         the pickle (protocol 2) of the saved object
    {archive}/data/{key}       one raw storage per key: little-endian elements, nothing else
    {archive}/byteorder        "little" or "big" (absent in old files: little)
    {archive}/version, {archive}/.data/serialization_id ...   not needed here

``{archive}`` is the first path part of ``data.pkl``'s entry (the saved file's stem, or
``archive``). The pickle of one tensor is ``torch._utils._rebuild_tensor_v2(storage,
storage_offset, size, stride, requires_grad, backward_hooks[, metadata])``, where ``storage``
is a persistent id ``("storage", torch.{Type}Storage, key, location, numel)`` and
``backward_hooks`` an empty ``collections.OrderedDict``. The element at index ``(i0, i1, ...)``
is element ``storage_offset + sum(i_k * stride_k)`` of the storage.

Allow-list (module, name -> placeholder): ``torch._utils._rebuild_tensor_v2`` and
``_rebuild_parameter`` (-> builders of a tensor placeholder), the typed storage classes
``torch.{Float,Double,Half,BFloat16,Long,Int,Short,Char,Byte,Bool,ComplexFloat,ComplexDouble}Storage``
(-> their numpy dtype), ``collections.OrderedDict`` and ``torch.Size`` (-> inert builders).

Unpickler state policy: nothing a file does outlives that file's load. Every placeholder
``find_class`` hands out is made afresh for each load (from :data:`_ALLOW_LIST`), is an instance
(never a class, so no class attribute is reachable), has no ``__dict__`` and refuses every
change: the ``BUILD`` opcode (``__setstate__``) and attribute assignment raise, so a pickle
that tries to set the state of an allow-listed name is refused with that reason. What the
pickle built is checked and copied into the public records (:class:`PtTensor` ...) only after
the load; those records never meet the unpickler.

Bounds (each refused with a reason naming the file and the field):

* ``data.pkl`` at most :data:`MAX_PICKLE_BYTES` (1 MiB); the ``byteorder`` entry at most
  :data:`MAX_BYTEORDER_BYTES` (16 bytes);
* at most :data:`MAX_DIMS` (32) dimensions; the product of the non-zero sizes at most
  :data:`MAX_ELEMENTS` (2**48) elements (an empty tensor of size ``[0, 2**70]`` included);
* every element the size / stride / offset reach lies inside the storage (Python integers:
  no overflow, whatever the numbers);
* a tensor with more elements than its storage holds (a stride 0 of ``expand``, overlapping
  strides) is materialised only when its array takes at most :data:`MAX_EXPANDED_BYTES`
  (64 MiB), else refused -- a 500-byte file never asks for gigabytes;
* a zip member that cannot be read (bad CRC, an unsupported compression method, a truncated
  entry) is a :class:`TorchPtError` naming the member. The storage entry is mapped in place
  (it must be *stored*); its CRC is not verified.

Edge-case policy: anything else -- another global (named in the message, never imported), a
storage type outside the list, a missing storage, a compressed or encrypted entry, a storage
too small for the size/stride/offset, negative strides, a pickle holding something other than
one tensor, a byte order other than little/big, a pickle larger than :data:`MAX_PICKLE_BYTES`
-- raises :class:`TorchPtError` (a :class:`~convert.errors.DumpFormatError`) whose message starts
``not readable without torch:`` and says why. Nothing is executed, nothing crashes.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from ..errors import DumpFormatError
from .fastread import map_bytes

#: The largest ``data.pkl`` read (a single-tensor pickle is a few hundred bytes).
MAX_PICKLE_BYTES = 1 << 20
#: The largest ``byteorder`` entry read (it holds ``little`` or ``big``).
MAX_BYTEORDER_BYTES = 16
#: The most dimensions of a tensor (numpy 1's limit; numpy 2 allows 64).
MAX_DIMS = 32
#: The largest product of a tensor's non-zero sizes (2**48 elements: beyond any real tensor, well
#: inside numpy's 2**63 bytes).
MAX_ELEMENTS = 1 << 48
#: The largest array materialised for a tensor with more elements than its storage (a stride 0
#: of ``expand``, overlapping strides): 64 MiB.
MAX_EXPANDED_BYTES = 1 << 26

#: ``torch.{Name}Storage`` -> the numpy dtype of its elements.
STORAGE_DTYPES: dict[str, np.dtype] = {
    "FloatStorage": np.dtype("<f4"),
    "DoubleStorage": np.dtype("<f8"),
    "HalfStorage": np.dtype("<f2"),
    "BFloat16Storage": np.dtype(ml_dtypes.bfloat16),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
    "ComplexFloatStorage": np.dtype("<c8"),
    "ComplexDoubleStorage": np.dtype("<c16"),
}


class TorchPtError(DumpFormatError):
    """A ``.pt`` file that this reader will not (or cannot) turn into an array without torch."""

    def __init__(self, path: object, why: str, *, offset: int | None = None) -> None:
        super().__init__(path, f"not readable without torch: {why}", offset=offset)


@dataclass(frozen=True)
class StorageType:
    """The placeholder of an allow-listed ``torch.{Name}Storage`` class."""

    name: str
    dtype: np.dtype


@dataclass(frozen=True)
class StorageRef:
    """A persistent id ``("storage", type, key, location, numel)`` of the pickle."""

    storage: StorageType
    key: str
    location: str


@dataclass(frozen=True)
class PtTensor:
    """What the pickle says of the tensor: its storage, offset (elements), size and stride (elements)."""

    storage: StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.storage.storage.dtype


@dataclass(frozen=True)
class PtHeader:
    """A ``.pt`` file opened and checked: the tensor and where its storage's bytes lie in the file.

    ``data_offset`` is the file offset of the storage's first byte, ``storage_bytes`` its length
    (the zip entry is stored uncompressed, so the bytes can be mapped in place).
    """

    path: Path
    tensor: PtTensor
    data_offset: int
    storage_bytes: int
    big_endian: bool

    @property
    def dtype(self) -> np.dtype:
        """The element type in the tensor's byte order (``byteorder`` says ``big``: big-endian)."""
        dtype = self.tensor.dtype
        return dtype.newbyteorder(">") if self.big_endian and dtype.itemsize > 1 and dtype.kind != "V" else dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.tensor.dtype.itemsize


# --------------------------------------------------------------------------------------------
# Inert placeholders of the allow-list (made afresh for each load)
# --------------------------------------------------------------------------------------------


def _num(value: int) -> str:
    """An integer of the file as text, safe whatever its size (Python refuses to print integers of
    more than 4300 digits): ``~2**N`` beyond 2**64."""
    return str(value) if -(1 << 64) < value < (1 << 64) else f"{'-' if value < 0 else ''}~2**{abs(value).bit_length()}"


def _nums(values: tuple[int, ...]) -> str:
    shown = ", ".join(_num(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
    return f"[{shown}]"


def _brief(value: object) -> str:
    """A value of the pickle in a message: ints safely, anything else by type (no ``repr`` of
    untrusted, possibly deep or huge, objects)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _num(value)
    if isinstance(value, str):
        return repr(value[:40])
    return f"a {type(value).__name__}"


class _Refused(Exception):
    """A global outside the allow-list, or a change to a placeholder (nothing was imported or changed)."""


class _Inert:
    """Base of the per-load placeholders: no ``__dict__``, no attribute assignment, no ``BUILD``."""

    __slots__ = ()
    label = "a placeholder"

    def __setattr__(self, name: str, value: object) -> None:
        raise _Refused(f"the pickle sets attribute {str(name)[:40]!r} of {self.label}: a plain tensor's pickle "
                       "never does (nothing was changed)")

    def __delattr__(self, name: str) -> None:
        raise _Refused(f"the pickle deletes attribute {str(name)[:40]!r} of {self.label} (nothing was changed)")

    def __setstate__(self, state: object) -> None:
        raise _Refused(f"the pickle sets the state of {self.label} (BUILD): a plain tensor's pickle never does "
                       "(nothing was changed)")


class _StorageClass(_Inert):
    """``torch.{Name}Storage`` of one load."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: np.dtype) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"torch.{self.name}"


class _Call(_Inert):
    """An allow-listed callable of one load (``REDUCE`` calls it)."""

    __slots__ = ("name", "function")

    def __init__(self, name: str, function: Callable[..., object]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "function", function)

    @property
    def label(self) -> str:  # type: ignore[override]
        return self.name

    def __call__(self, *args: object) -> object:
        return self.function(*args)


class _Ref(_Inert):
    """A persistent id ``("storage", type, key, location, numel)`` of one load."""

    __slots__ = ("storage", "key", "location")
    label = "a storage reference"

    def __init__(self, storage: _StorageClass, key: str, location: str) -> None:
        object.__setattr__(self, "storage", storage)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "location", location)


class _Tensor(_Inert):
    """What ``_rebuild_tensor_v2`` built during one load (checked; copied into :class:`PtTensor` after)."""

    __slots__ = ("ref", "offset", "shape", "stride")
    label = "a tensor"

    def __init__(self, ref: _Ref, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]) -> None:
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    def record(self) -> PtTensor:
        storage = StorageType(self.ref.storage.name, self.ref.storage.dtype)
        return PtTensor(StorageRef(storage, self.ref.key, self.ref.location), self.offset, self.shape, self.stride)


def _ints(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{what} is not a tuple of integers ({_brief(value)})")
    return tuple(value)


def _rebuild_tensor(storage: object, offset: object, size: object, stride: object, *_rest: object) -> _Tensor:
    if not isinstance(storage, _Ref):
        raise ValueError(f"the tensor's storage is not a storage reference ({_brief(storage)})")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"storage offset {_brief(offset)} is not a non-negative integer")
    return _Tensor(storage, offset, _ints(size, "size"), _ints(stride, "stride"))


def _rebuild_parameter(data: object, *_rest: object) -> _Tensor:
    if not isinstance(data, _Tensor):
        raise ValueError(f"a parameter whose data is not a tensor ({_brief(data)})")
    return data


def _ordered_dict(*args: object) -> dict:
    if args:
        raise ValueError("an OrderedDict built with arguments (backward hooks are not data)")
    return {}


def _size(*args: object) -> tuple[int, ...]:
    return _ints(args[0] if args else (), "torch.Size")


#: (module, name) -> what makes its placeholder (module doc). Read only; the placeholders
#: themselves are made afresh for each load, on first use (:meth:`_SafeUnpickler.find_class`).
_ALLOW_LIST: dict[tuple[str, str], tuple[type[_Inert], tuple[object, ...]]] = {
    ("torch._utils", "_rebuild_tensor_v2"): (_Call, ("torch._utils._rebuild_tensor_v2", _rebuild_tensor)),
    ("torch._utils", "_rebuild_parameter"): (_Call, ("torch._utils._rebuild_parameter", _rebuild_parameter)),
    ("collections", "OrderedDict"): (_Call, ("collections.OrderedDict", _ordered_dict)),
    ("torch", "Size"): (_Call, ("torch.Size", _size)),
    **{("torch", name): (_StorageClass, (name, dtype)) for name, dtype in STORAGE_DTYPES.items()},
}


class _SafeUnpickler(pickle.Unpickler):
    """``find_class`` answers only from :data:`_ALLOW_LIST`, with placeholders of this load alone
    (made on first use, the same one for a name used twice); ``persistent_load`` builds this
    load's storage references."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self._made: dict[tuple[str, str], _Inert] = {}

    def find_class(self, module: str, name: str) -> object:
        key = (module, name)
        found = self._made.get(key)
        if found is not None:
            return found
        recipe = _ALLOW_LIST.get(key)
        if recipe is None:
            raise _Refused(f"the pickle names {str(module)[:80]}.{str(name)[:80]}, which is not on the allow-list "
                           "of a plain tensor (nothing was imported or executed)")
        kind, args = recipe
        found = self._made[key] = kind(*args)
        return found

    def persistent_load(self, pid: object) -> _Ref:
        if (not isinstance(pid, tuple) or len(pid) < 4 or pid[0] != "storage" or not isinstance(pid[1], _StorageClass)
                or not isinstance(pid[2], str) or not isinstance(pid[3], str)):
            raise ValueError(f"persistent id ({_brief(pid)}) is not a typed storage reference")
        return _Ref(pid[1], pid[2][:200], pid[3][:200])


# --------------------------------------------------------------------------------------------
# The archive
# --------------------------------------------------------------------------------------------


def _entry_data_offset(handle, info: zipfile.ZipInfo, path: Path) -> int:
    """File offset of an entry's data: after its local header (30 bytes + name + extra field)."""
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise TorchPtError(path, f"no zip local header for {info.filename}", offset=info.header_offset)
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _unpickle(raw: bytes, path: Path) -> PtTensor:
    """The one tensor of ``data.pkl`` (module doc), or :class:`TorchPtError` saying why not."""
    try:
        loaded = _SafeUnpickler(io.BytesIO(raw)).load()
    except _Refused as exc:
        raise TorchPtError(path, str(exc)) from None
    except RecursionError:
        raise TorchPtError(path, "data.pkl nests too deeply") from None
    except Exception as exc:  # noqa: BLE001 - any failure of untrusted pickle data is a diagnosis
        raise TorchPtError(path, f"data.pkl does not describe a plain tensor ({type(exc).__name__}: "
                                 f"{str(exc)[:200]})") from None
    if not isinstance(loaded, _Tensor):
        raise TorchPtError(path, f"the pickle holds {_brief(loaded)}, not one tensor")
    return loaded.record()


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """The bytes of one zip member; :class:`TorchPtError` naming the member when they cannot be
    read (a bad CRC, an unsupported compression method, an encrypted or truncated entry)."""
    try:
        return archive.read(info)
    except Exception as exc:  # noqa: BLE001 - any failure of an untrusted archive is a diagnosis
        raise TorchPtError(path, f"cannot read zip member {info.filename}: {type(exc).__name__}: "
                                 f"{str(exc)[:200]}", offset=info.header_offset) from None


def read_pt_header(path: str | os.PathLike) -> PtHeader:
    """Open a ``.pt`` file, unpickle its ``data.pkl`` safely and check its one tensor against the storage.

    Raises :class:`TorchPtError` (module doc) for anything that is not a plain tensor readable
    from the file's bytes; :class:`DumpFormatError` when the file cannot be read at all.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            try:
                archive = zipfile.ZipFile(handle)
            except Exception as exc:  # noqa: BLE001 - any failure of an untrusted archive is a diagnosis
                raise TorchPtError(path, f"not a zip archive (torch.save's format since torch 1.6; the legacy "
                                         f"format is not read): {exc}") from None
            with archive:
                return _header(archive, handle, path)
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None


def _header(archive: zipfile.ZipFile, handle, path: Path) -> PtHeader:
    entries = {info.filename: info for info in archive.infolist()}
    pickles = [name for name in entries if name.endswith("/data.pkl") and name.count("/") == 1]
    if len(pickles) != 1:
        raise TorchPtError(path, f"expected one {{archive}}/data.pkl entry, found {len(pickles)}")
    prefix = pickles[0][: -len("data.pkl")]
    info = entries[pickles[0]]
    if info.file_size > MAX_PICKLE_BYTES:
        raise TorchPtError(path, f"data.pkl holds {info.file_size} bytes (more than {MAX_PICKLE_BYTES}: not one "
                                 "tensor)")
    tensor = _unpickle(_read_member(archive, info, path), path)
    big_endian = False
    order = entries.get(prefix + "byteorder")
    if order is not None:
        if order.file_size > MAX_BYTEORDER_BYTES:
            raise TorchPtError(path, f"byteorder entry holds {order.file_size} bytes (more than "
                                     f"{MAX_BYTEORDER_BYTES}: not little or big)")
        text = _read_member(archive, order, path)[:MAX_BYTEORDER_BYTES].decode("ascii", "replace").strip()
        if text not in ("little", "big"):
            raise TorchPtError(path, f"byteorder entry says {text!r} (expected little or big)")
        big_endian = text == "big"
    storage_name = f"{prefix}data/{tensor.storage.key}"
    stored = entries.get(storage_name)
    if stored is None or "/" in tensor.storage.key or tensor.storage.key in ("", ".", ".."):
        raise TorchPtError(path, f"storage {tensor.storage.key!r} has no entry {storage_name}")
    if stored.compress_type != zipfile.ZIP_STORED or stored.flag_bits & 0x1:
        raise TorchPtError(path, f"storage entry {storage_name} is compressed or encrypted (torch.save stores it)")
    if stored.compress_size != stored.file_size:
        raise TorchPtError(path, f"storage entry {storage_name}: sizes disagree ({stored.compress_size} stored, "
                                 f"{stored.file_size} declared)")
    _check_extent(tensor, stored.file_size, path)
    offset = _entry_data_offset(handle, stored, path)
    return PtHeader(path=path, tensor=tensor, data_offset=offset, storage_bytes=stored.file_size,
                    big_endian=big_endian)


def _check_extent(tensor: PtTensor, storage_bytes: int, path: Path) -> None:
    """The tensor's size / stride / offset against the bounds of the module doc: every element
    they reach inside the storage (strides non-negative), sizes bounded, and an expanded tensor
    (more elements than its storage) no larger than :data:`MAX_EXPANDED_BYTES` once materialised.
    Python integers throughout: no overflow whatever the file says."""
    shape, stride = tensor.shape, tensor.stride

    def described() -> str:
        return f"size {_nums(shape)}, stride {_nums(stride)}"

    if len(shape) > MAX_DIMS:
        raise TorchPtError(path, f"size has {len(shape)} dimensions (more than {MAX_DIMS})")
    if len(shape) != len(stride):
        raise TorchPtError(path, f"{described()}: size and stride differ in length")
    if any(d < 0 for d in shape) or any(s < 0 for s in stride):
        raise TorchPtError(path, f"negative size or stride ({described()})")
    nonzero = math.prod(d for d in shape if d)
    if nonzero > MAX_ELEMENTS:
        raise TorchPtError(path, f"{described()}: {_num(nonzero)} elements, more than the {_num(MAX_ELEMENTS)} "
                                 "(2**48) a tensor is read up to")
    itemsize = tensor.dtype.itemsize
    elements = storage_bytes // itemsize
    count = math.prod(shape)
    if count == 0:
        return
    last = tensor.offset + sum((d - 1) * s for d, s in zip(shape, stride))
    if last >= elements:
        raise TorchPtError(path, f"storage {tensor.storage.key} holds {elements} element(s) of "
                                 f"{tensor.storage.storage.name}, the tensor (offset {_num(tensor.offset)}, "
                                 f"{described()}) reaches element {_num(last)}")
    if count > elements and count * itemsize > MAX_EXPANDED_BYTES:
        raise TorchPtError(path, f"an expanded tensor (stride 0 or overlapping strides: {described()}) of "
                                 f"{_num(count)} elements from a storage of {elements}: its array would take "
                                 f"{_num(count * itemsize)} bytes, more than the {MAX_EXPANDED_BYTES} (64 MiB) "
                                 "materialised for an expanded tensor")


def _effective_strides(shape: tuple[int, ...], stride: tuple[int, ...]) -> tuple[int, ...]:
    """The strides with those of size-1 dimensions set to 0 (never used to step, whatever the
    file says: a huge one must not reach numpy)."""
    return tuple(0 if d == 1 else s for d, s in zip(shape, stride))


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def load_pt(path: str | os.PathLike, header: PtHeader | None = None) -> np.ndarray:
    """The tensor of a ``.pt`` file as a read-only numpy array (its own dtype and shape).

    A contiguous tensor is a view of the mapped storage bytes; any other stride is gathered into
    a new array (after :func:`read_pt_header` checked that every element lies in the storage, and
    that an expanded tensor's array takes at most :data:`MAX_EXPANDED_BYTES`).
    """
    header = header if header is not None else read_pt_header(path)
    tensor = header.tensor
    dtype = header.dtype
    if math.prod(tensor.shape) == 0:
        return np.empty(tensor.shape, dtype=dtype)
    raw = map_bytes(header.path, header.data_offset, header.storage_bytes)
    if raw is None:
        raise DumpFormatError(header.path, f"the file is shorter than its storage entry says "
                                           f"({header.storage_bytes} bytes at byte {header.data_offset})")
    whole = raw[: header.storage_bytes - header.storage_bytes % dtype.itemsize]
    if header.big_endian and dtype.kind == "V":  # bfloat16 has no big-endian numpy type: swap into a copy
        storage = whole.view(">u2").astype("<u2").view(dtype)
    else:
        storage = whole.view(dtype)
    stride = _effective_strides(tensor.shape, tensor.stride)
    if stride == _effective_strides(tensor.shape, _contiguous_strides(tensor.shape)) or len(tensor.shape) == 0:
        count = math.prod(tensor.shape)
        return storage[tensor.offset: tensor.offset + count].reshape(tensor.shape)
    # read_pt_header checked the extent, and that an expanded tensor's array is at most MAX_EXPANDED_BYTES
    view = np.lib.stride_tricks.as_strided(storage[tensor.offset:], shape=tensor.shape,
                                           strides=tuple(s * dtype.itemsize for s in stride), writeable=False)
    return np.ascontiguousarray(view)


def pt_dtype_name(header: PtHeader) -> str:
    """The numpy-style name of the tensor's type (``float32``, ``bfloat16``, ``bool`` ...)."""
    return header.tensor.dtype.name


__all__ = ["MAX_BYTEORDER_BYTES", "MAX_DIMS", "MAX_ELEMENTS", "MAX_EXPANDED_BYTES", "MAX_PICKLE_BYTES", "PtHeader",
           "PtTensor", "STORAGE_DTYPES", "TorchPtError", "load_pt", "pt_dtype_name", "read_pt_header"]

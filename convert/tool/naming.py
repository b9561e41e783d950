"""Names of the files ``vconvert`` writes, and the 255-byte file-name limit.

Naming rules (``{dumpfile}`` is the dump file's name, or its real name from ``mapping.csv``):

=================  ========================================================================
what               name
=================  ========================================================================
npy                ``{dumpfile}.{input|output}.{i}.npy``
npy, with ``-f``   ``{dumpfile}.{input|output}.{i}.{d0}x{d1}x....npy`` (the written shape;
                   a 0-d array is written ``scalar``)
bin                ``{dumpfile}.{input|output}.{i}.{shape}.{dtype}.{FORMAT}.bin``: ``shape`` is
                   the written array's shape joined by ``_`` (without ``-f`` the array is flat,
                   so it is the element count), ``dtype`` its numpy name, ``FORMAT`` the dump
                   format (or the ``-f`` target)
msnpy              ``{name}.{input|output}.{i}.{FORMAT}.npy``: ``name`` is ``{dumpfile}``, except
                   that for a 5-field dump name whose DumpData has an ``op_name``, field 1 is
                   replaced by the last ``/`` component of that op name (the MindSpore layout),
                   made plain by :func:`plain_name_part`
buffer             ``{dumpfile}.buffer.{i}.bin``
workspace          ``{dumpfile}.space.{i}.bin``
text               ``{dumpfile}.{input|output}.{i}.txt`` (a ``.npy`` source: its stem + ``.txt``)
=================  ========================================================================

**Text from a dump header** (the op name of an msnpy name) is untrusted: every control character
(U+0000-U+001F, U+007F-U+009F: NUL, CR, LF, ESC of a terminal sequence ...) and path separator
(``/``, ``\\``) in it becomes ``%XX``, its code in hex (``a\\nb`` -> ``a%0Ab``), so an output name is
one plain file name in the output folder that a terminal, a shell loop or a line-based list shows
as it is. Names from the file system or from ``mapping.csv`` (checked when it is read) are used
as they are.

**Long names.** A name of 255 bytes or more (UTF-8) cannot be created on common file systems. It
is replaced by a deterministic decimal hash of the full name -- the 128-bit integer of
``uuid3(NAMESPACE_DNS, name)`` -- followed by the name's extension (``.npy``, ``.bin``,
``.txt``), and the row ``hashed,real`` goes to ``mapping.csv`` in the output folder. The hash is
all digits so that ``vcompare`` reads such ``.npy`` files back through ``mapping.csv`` like the
dump tools' own hashed names.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence


#: Names of this many UTF-8 bytes or more are hashed.
MAX_NAME_BYTES = 255

MAPPING_FILE = "mapping.csv"
FAILED_LIST_FILE = "convert_failed_file_list.txt"

_EXTENSIONS = (".npy", ".bin", ".txt", ".pb", ".quant")


def shape_x(shape: Sequence[int]) -> str:
    """``1x3x224x224`` (``scalar`` for a 0-d shape)."""
    return "x".join(str(int(d)) for d in shape) if len(shape) else "scalar"


def shape_underscore(shape: Sequence[int]) -> str:
    """``1_3_224_224`` (``scalar`` for a 0-d shape)."""
    return "_".join(str(int(d)) for d in shape) if len(shape) else "scalar"


def tensor_npy_name(dumpfile: str, kind: str, index: int) -> str:
    """``{dump}.{input|output}.{index}.npy``."""
    return f"{dumpfile}.{kind}.{index}.npy"


def shaped_npy_name(dumpfile: str, kind: str, index: int, shape: Sequence[int]) -> str:
    """``{dump}.{kind}.{index}.{d0xd1x...}.npy``."""
    return f"{dumpfile}.{kind}.{index}.{shape_x(shape)}.npy"


def bin_name(dumpfile: str, kind: str, index: int, shape: Sequence[int], dtype: str, fmt: str) -> str:
    """``{dump}.{kind}.{index}.{d0_d1_...}.{dtype}.{format}.bin``."""
    return f"{dumpfile}.{kind}.{index}.{shape_underscore(shape)}.{dtype}.{fmt}.bin"


#: What :func:`plain_name_part` replaces: C0 and C1 control characters, DEL, path separators.
_NOT_PLAIN = re.compile(r"[\x00-\x1f\x7f-\x9f/\\]")


def plain_name_part(text: str) -> str:
    """``text`` from a dump header made safe as part of a file name: each control character
    (U+0000-U+001F, U+007F-U+009F) and path separator (``/``, ``\\``) becomes ``%XX``, its code
    in hex (``\\r\\n`` -> ``%0D%0A``, ``\\x1b[31m`` -> ``%1B[31m``). Dots are kept: the part is
    always inside a longer name, so ``..`` cannot name a parent folder."""
    return _NOT_PLAIN.sub(lambda match: f"%{ord(match.group()):02X}", text)


def msnpy_base(dumpfile: str, op_name: str) -> str:
    """The ``name`` of an msnpy file: field 1 of a 5-field name becomes the op name's last ``/``
    part, made plain (:func:`plain_name_part`)."""
    fields = dumpfile.split(".")
    if len(fields) == 5 and op_name:
        fields[1] = plain_name_part(op_name.rsplit("/", 1)[-1])
        return ".".join(fields)
    return dumpfile


def msnpy_name(dumpfile: str, op_name: str, kind: str, index: int, fmt: str) -> str:
    """The MindSpore-style ``.npy`` name of one tensor of a dump."""
    return f"{msnpy_base(dumpfile, op_name)}.{kind}.{index}.{fmt}.npy"


def buffer_name(dumpfile: str, index: int) -> str:
    """``{dump}.buffer.{index}.bin``."""
    return f"{dumpfile}.buffer.{index}.bin"


def space_name(dumpfile: str, index: int) -> str:
    """``{dump}.space.{index}.bin``."""
    return f"{dumpfile}.space.{index}.bin"


def text_name(dumpfile: str, kind: str, index: int) -> str:
    """``{dump}.{kind}.{index}.txt``."""
    return f"{dumpfile}.{kind}.{index}.txt"


def hashed_name(name: str) -> str:
    """The short, all-digit replacement of a too-long ``name``, keeping its extension."""
    digits = str(uuid.uuid3(uuid.NAMESPACE_DNS, name).int)
    suffix = next((ext for ext in _EXTENSIONS if name.endswith(ext)), "")
    return digits + suffix


def physical_name(name: str) -> str:
    """``name`` itself, or :func:`hashed_name` when it has :data:`MAX_NAME_BYTES` bytes or more."""
    return hashed_name(name) if len(name.encode("utf-8")) >= MAX_NAME_BYTES else name

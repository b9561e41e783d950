"""Build the ahead-of-time kernel objects (run as ``python -m compare.kernels.native.entry_points OUT``).

Compiles the two kernel passes of :mod:`compare.kernels.fused` as C-callable entry points
(numba ``cfunc``) and writes each one's machine code as an ELF object next to ``OUT`` (``OUT``
names the JSON index, written last: ``{"version": 2, "key": KEY, "objects": {"side": {"file", "symbol", "size",
"sha256"}, "pair": {...}}}``; the loader checks every object against its size and hash).
:mod:`compare.kernels.native` loads them with llvmlite alone, without importing numba.

The entry points take raw pointers and sizes (see :data:`SIDE_ARGS` / :data:`PAIR_ARGS`, which
:mod:`compare.kernels.native` mirrors) and write their float64 results to ``out``; all memory is
the caller's (the kernels allocate nothing, so the objects need no numba runtime).

This module imports numba: it runs in its own process (started by
:func:`compare.kernels.native.build`), so that its CPU feature settings (``NUMBA_CPU_FEATURES``)
never touch the caller's numba. :func:`_emit` reads numba's private attributes (the numba and
llvmlite versions this was tested with are in :mod:`compare.kernels.native`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numba import carray, cfunc, types

from .. import fused as F
from .._abi import NDIM, PAIR_OUT, SCRATCH, SIDE_OUT
from .jit import FASTMATH

_I64 = types.int64
_PTR = types.voidptr

#: side(buf, code, nbytes, dims, strides, offsets, nboxes, tile, out[SIDE_OUT])
SIDE_ARGS = (_PTR, _I64, _I64, _PTR, _PTR, _PTR, _I64, _PTR, _PTR)
#: pair(xbuf, xcode, xbytes, ybuf, ycode, ybytes, dims, sx, sy, ox, oy, nboxes, prm[5], flags,
#: xtile, ytile, out[PAIR_OUT]); flags (``_abi.FLAG_*``): 1 = relative errors, 2 = KL, 4 = msprobe's
#: terms, 8 = those in float32
PAIR_ARGS = (_PTR, _I64, _I64, _PTR, _I64, _I64, _PTR, _PTR, _PTR, _PTR, _PTR, _I64, _PTR, _I64, _PTR, _PTR, _PTR)

_OPTIONS = dict(nopython=True, fastmath=set(FASTMATH), error_model="numpy")


@cfunc(types.void(*SIDE_ARGS), **_OPTIONS)
def side_entry(buf, code, nbytes, dims, strides, offs, nb, tile, out):  # pragma: no cover - native
    res = F._side_boxes(
        carray(buf, (nbytes,), np.uint8),
        code,
        carray(dims, (nb, NDIM), np.int64),
        carray(strides, (nb, NDIM), np.int64),
        carray(offs, (nb,), np.int64),
        carray(tile, (SCRATCH,), np.float64),
    )
    o = carray(out, (SIDE_OUT,), np.float64)
    for i in range(SIDE_OUT):
        o[i] = res[i]


@cfunc(types.void(*PAIR_ARGS), **_OPTIONS)
def pair_entry(xbuf, xcode, xbytes, ybuf, ycode, ybytes, dims, sx, sy, ox, oy, nb, prm, flags, xtile, ytile,
               out):  # pragma: no cover - native
    p = carray(prm, (5,), np.float64)
    res = F._pair_boxes(
        carray(xbuf, (xbytes,), np.uint8),
        xcode,
        carray(ybuf, (ybytes,), np.uint8),
        ycode,
        carray(dims, (nb, NDIM), np.int64),
        carray(sx, (nb, NDIM), np.int64),
        carray(sy, (nb, NDIM), np.int64),
        carray(ox, (nb,), np.int64),
        carray(oy, (nb,), np.int64),
        (p[0], p[1], p[2], p[3], p[4]),
        (flags & 1) != 0,
        (flags & 2) != 0,
        (flags & 4) != 0,
        (flags & 8) != 0,
        carray(xtile, (SCRATCH,), np.float64),
        carray(ytile, (SCRATCH,), np.float64),
    )
    o = carray(out, (PAIR_OUT,), np.float64)
    for i in range(PAIR_OUT):
        o[i] = res[i]


def _emit(entry: Any, path: Path) -> dict[str, Any]:
    """Write ``entry``'s machine code (with everything it calls) to ``path`` (a temporary file
    renamed into place); its index entry: file name, symbol, size and SHA-256. ``entry`` is a
    numba ``cfunc``; its ``_library``, ``codegen._tm`` and ``_final_module`` are numba internals."""
    library = entry._library
    obj = bytes(library.codegen._tm.emit_object(library._final_module))
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(obj)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return {"file": path.name, "symbol": entry.native_name, "size": len(obj),
            "sha256": hashlib.sha256(obj).hexdigest()}


def main(argv: list[str]) -> int:
    """``OUT`` (argv[0]): the index path, ``.../vcompare-kernels-<key>.json``; the objects go
    beside it, the index is written last (see :mod:`compare.kernels.native` for its format)."""
    index = Path(argv[0])
    stem = index.name[: -len(".json")] if index.name.endswith(".json") else index.name
    key = stem[len("vcompare-kernels-"):] if stem.startswith("vcompare-kernels-") else stem
    index.parent.mkdir(parents=True, exist_ok=True)
    objects = {}
    for name, entry in (("side", side_entry), ("pair", pair_entry)):
        objects[name] = _emit(entry, index.with_name(f"{stem}.{name}.o"))
    tmp = index.with_name(index.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"version": 2, "key": key, "objects": objects}))
    os.chmod(tmp, 0o644)
    os.replace(tmp, index)
    return 0


if __name__ == "__main__":  # pragma: no cover - run by compare.kernels.native.build()
    sys.exit(main(sys.argv[1:]))

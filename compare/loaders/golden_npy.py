"""Golden folders: ``{op_name}.{output_index}.{timestamp}.npy`` (Caffe / TF tfdbg) and DumpData
``.pb`` / ``.quant`` files.

Naming rules (§2.7, §2.8 of the reference-tool spec; the folder's top level only):

* ``.npy``: ``{op_name}.{output_index}.{timestamp}.npy``. ``op_name`` may hold letters, digits,
  ``_``, ``-`` and ``.``; it runs greedily up to the last ``.<digits>.<digits>.npy``.
* ``.pb`` (standard) and ``.quant`` (quantized Caffe): the same form, ``op_name`` without dots.
  These are DumpData files, read with ``convert.codecs.dumpfile.read_header``; the output
  ``output_index`` of the op is the file's *first* output, as the reference tool reads it.

The dumping tools have already replaced ``/`` and ``.`` in op names by ``_`` (tfdbg also turns
``:`` into ``.``); :meth:`compare.records.Run.find` normalises a lookup the same way, so the key
is the op name exactly as it is in the file name.

Of several files for one ``(op, output_index)`` the latest 16-digit timestamp wins (others sort
as 0; ties by file name). A ``.npy`` folder whose op names carry a quantization marker
(``_quant``, ``AscendQuant``, ...) is a QUANT run with ``quantized=True``; otherwise NUMPY.
``.pb`` folders are STANDARD and ``.quant`` folders QUANT.

Mixed folders: the reference tool refuses a folder that mixes kinds (error 18). vcompare uses the
kind most files have and lists the others in ``Run.skipped`` with the reason.

The ``.npy`` codec (header read and check, lazy mapping, never unpickling) is :mod:`convert.codecs.npy`.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

from convert.codecs.dtypes import dtype_name, format_name
from convert.codecs.npy import load_npy, logical_dtype_name, read_npy_header
from convert.names.golden import GoldenName

from ..errors import CompareError, DumpFormatError
from ..records import OpDump, Run, RunKind, TensorKind, TensorRef
from .ascend import is_quantized_name, no_valid_files_error, read_dump_tensor
from .listing import cached_listing, list_folder, majority_kind
from .reader import OpenRequest, Reader

#: Format name of golden tensors (no layout information), as the reference tool.
GOLDEN_FORMAT = "RESERVED"


# --------------------------------------------------------------------------------------------
# One golden file
# --------------------------------------------------------------------------------------------


def npy_ref(op_name: str, index: int, path: Path) -> TensorRef:
    """Output ``index`` of ``op_name`` held by one ``.npy`` file: its header read now (format
    :data:`GOLDEN_FORMAT`), its data when compared. Raises :class:`DumpFormatError` for a file
    that is not a readable ``.npy`` (object arrays included)."""
    header = read_npy_header(path)
    return TensorRef(
        op_name=op_name,
        kind=TensorKind.OUTPUT,
        index=index,
        dtype=logical_dtype_name(header.dtype),
        format=GOLDEN_FORMAT,
        shape=header.shape,
        path=path,
        nbytes=math.prod(header.shape) * header.dtype.itemsize,
        reader=functools.partial(load_npy, path, header),
    )


def _npy_ref(op_name: str, index: int, path: Path) -> tuple[TensorRef | None, str | None]:
    try:
        return npy_ref(op_name, index, path), None
    except DumpFormatError as exc:
        return None, str(exc)


def _dumpdata_ref(op_name: str, index: int, path: Path, version: int | None) -> tuple[TensorRef | None, str | None]:
    """Output ``index`` of a golden op from a DumpData ``.pb``/``.quant`` file: its first output."""
    from convert.codecs import dumpfile  # here, not at the top: protobuf costs ~22 ms, .npy goldens never need it

    try:
        header = dumpfile.read_header(path, version=version)
    except CompareError as exc:
        return None, str(exc)
    except OSError as exc:
        return None, str(DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}"))
    if not header.outputs:
        return None, str(DumpFormatError(path, "the dump has no output tensor (a golden file needs one)"))
    info = header.outputs[0]
    ref = TensorRef(
        op_name=op_name,
        kind=TensorKind.OUTPUT,
        index=index,
        dtype=dtype_name(info.data_type),
        format=format_name(info.format),
        shape=tuple(int(d) for d in info.shape),
        path=path,
        original_shape=tuple(int(d) for d in info.original_shape),
        address=0,
        sub_format=int(info.sub_format),
        nbytes=int(info.size),
        reader=functools.partial(read_dump_tensor, header, info),
    )
    return ref, None


# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------


def _build_op(
    op_name: str,
    by_index: dict[int, list[tuple[Path, GoldenName]]],
    version: int | None,
) -> tuple[OpDump, list[tuple[Path, str]]]:
    """One golden OpDump (for each output index the latest file; all files in ``files``), and the
    ``(file, diagnosis)`` of every output file that cannot be used.

    Policy for an unreadable file: when *no* output of the op can be used, ``error`` is the
    diagnosis (joined for several files) and every row of the op says it. When only some
    outputs are broken, the op keeps the good ones (their rows are compared as usual) and the
    broken files are returned for ``Run.skipped``, where the row of the missing output finds
    its diagnosis.
    """
    outputs: list[TensorRef] = []
    problems: list[tuple[Path, str]] = []
    all_files: list[tuple[Path, GoldenName]] = []
    chosen: list[tuple[Path, GoldenName]] = []
    for index in sorted(by_index):
        files = sorted(by_index[index], key=lambda f: (f[1].sort_key, f[0].name))
        all_files.extend(files)
        path, parsed = files[-1]
        chosen.append((path, parsed))
        if parsed.kind == "npy":
            ref, error = _npy_ref(op_name, index, path)
        else:
            ref, error = _dumpdata_ref(op_name, index, path, version)
        if ref is not None:
            outputs.append(ref)
        if error is not None:
            problems.append((path, error))
    all_files.sort(key=lambda f: (f[1].sort_key, f[0].name))
    path, parsed = chosen[0]
    error = "; ".join(message for _, message in problems) if problems and not outputs else None
    op = OpDump(
        name=op_name,
        op_type=None,
        path=path,
        files=tuple(p for p, _ in all_files),
        outputs=tuple(outputs),
        error=error,
        timestamp=parsed.timestamp,
    )
    return op, (problems if outputs else [])


def scan_golden(
    folder: str | os.PathLike,
    *,
    version: int | None = None,
    root: str | os.PathLike | None = None,
    listing=None,
) -> Run:
    """Scan a golden folder (``.npy``, ``.pb`` or ``.quant`` files) into a :class:`Run`.

    Ops are keyed by the op name of the file names; each op's outputs are TensorRefs with
    ``index`` = output index. For ``.npy`` only the header is parsed now (dtype and shape from it,
    format ``RESERVED``); data is memory-mapped when loaded, object arrays are refused. ``.pb`` /
    ``.quant`` headers are read with ``convert.codecs.dumpfile.read_header(version=version)``.

    The kind used is the golden kind most files have; files of other kinds (other golden suffixes
    or Ascend offline dumps) and files matching no naming rule go to ``run.skipped`` with the
    reason. Raises :class:`CompareError` (naming the folder and the files) when no golden file is
    usable.
    """
    folder = Path(folder)
    listing = listing if listing is not None else list_folder(folder)
    counts = listing.counts()
    golden_kinds = ("npy", "pb", "quant")
    kind = max(golden_kinds, key=lambda k: (counts[k], -golden_kinds.index(k)))
    skipped = list(listing.skipped) + listing.other_kinds_skipped(kind)
    if counts[kind] == 0:
        raise no_valid_files_error(folder, skipped)
    groups: dict[str, dict[int, list[tuple[Path, GoldenName]]]] = {}
    for item in listing.of_kind(kind):
        parsed = item.parsed
        assert isinstance(parsed, GoldenName)
        groups.setdefault(parsed.op_name, {}).setdefault(parsed.output_index, []).append((item.entry.path, parsed))
# duplicates: built like scan_offline's Run (ascend_offline.py): the fields differ per folder kind; a helper would
# take as many arguments
    run = Run(
        root=Path(root) if root is not None else folder,
        path=folder,
        kind=RunKind.NUMPY,
        skipped=skipped,
        notes=list(listing.notes),
    )
    for name in sorted(groups):
        run.ops[name], unusable = _build_op(name, groups[name], version)
        run.skipped.extend(unusable)
    if kind == "npy":
        run.quantized = any(is_quantized_name(name) for name in run.ops)
        run.kind = RunKind.QUANT if run.quantized else RunKind.NUMPY
    elif kind == "pb":
        run.kind = RunKind.STANDARD
    else:
        run.kind = RunKind.QUANT
        run.quantized = True
    return run


class GoldenReader(Reader):
    """The ``golden-npy`` reader: a folder most of whose files are golden ``.npy`` / ``.pb`` / ``.quant``."""

    name = "golden-npy"
    kinds = (RunKind.NUMPY, RunKind.STANDARD, RunKind.QUANT)

    def guess_can_open(self, folder: Path) -> bool:
        return majority_kind(folder) in ("npy", "pb", "quant")

    def explain(self, folder: Path) -> str:
        return "no file named {op_name}.{output_index}.{timestamp}.npy / .pb / .quant"

    def open(self, folder: Path, request: OpenRequest) -> Run:
        return scan_golden(folder, version=request.version, root=request.root, listing=cached_listing(folder))

    def kind_of(self, folder: Path) -> RunKind:
        """NUMPY (QUANT when an op name carries a quantization marker), STANDARD or QUANT, by the
        kind most files have."""
        listing = cached_listing(folder)
        majority = listing.majority()
        if majority == "npy":
            quantized = any(is_quantized_name(item.parsed.op_name) for item in listing.of_kind("npy"))
            return RunKind.QUANT if quantized else RunKind.NUMPY
        return RunKind.STANDARD if majority == "pb" else RunKind.QUANT


#: The golden-folder reader (:data:`compare.loaders.READERS`).
READER = GoldenReader()

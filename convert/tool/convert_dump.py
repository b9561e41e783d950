"""Dump files -> ``.npy`` / ``.bin`` files, optionally converted to another layout.

This is the reference tool's ``convert -d`` and the manual's ``shape_conversion`` in one:

* :func:`convert_dumps` -- every input and output tensor of every dump file (a file, a folder or a
  comma-separated list, see :mod:`convert.tool.batch`) to files named as in :mod:`convert.tool.naming`;
  buffers and workspaces to ``.bin`` files.
* :func:`convert_shape` -- one dump file, the outputs (or inputs) converted to a layout.

Tensor policy:

* Without a target format, each tensor is written in its dump shape and dtype (what the dump
  holds, byte for byte). bf16 is written as float32 (exact; ``.npy`` has no bf16 type, and the
  reference does the same); UINT1 as uint8 0/1 values.
* With a target format FMT: the source format is the dump's (ND for an NCHW/NHWC/HWCN tensor
  that is not 4-D). A source already in FMT is only reshaped. An ND source goes through an
  ``ND -> FMT`` converter when one exists (a plugin, or the built-in ND -> FRACTAL_NZ) and is
  otherwise only reshaped -- ND data has no layout to undo (the reference fails such tensors).
  Anything else goes through the converter (a ``-custom`` plugin first, then the built-in; group
  convolution when the tensor's ``sub_format`` is 2 or more). The target shape T is the given
  shape, else the tensor's ``original_shape`` (none: no cropping). For a plain target (NCHW,
  NHWC, HWCN, ND, NCDHW ...) the converted result is cut to T as in the comparison (the C0 / cube
  padding is removed); when it cannot be cut (T does not fit) the uncut array is written and a
  note says why (e.g. an NCHW ``original_shape`` for an NHWC target: give ``-s``). A result with
  fewer dims than T holding exactly ``prod(T)`` elements (FRACTAL_NZ gives ``(prod(T[:-2]), rows,
  cols)``) is reshaped to T. Device targets (NC1HWC0, FRACTAL_Z, FRACTAL_NZ ...) keep
  their padded shape.
* A tensor that cannot be read or converted makes its file "failed" (listed with the reason) and
  nothing is written for it -- except in ``msnpy`` mode, where it is written unconverted and
  labelled with its own format, with a note (as the reference does).
* Tensor selection (``kind``/``index``): only that tensor kind (and index). For a single input
  file a selection that matches nothing is a failure; for several files such files are noted.
  Buffers and workspaces are written only when nothing is selected.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable

import numpy as np

from ..codecs.dtypes import format_code, format_name, widened
from ..codecs.dumpfile import DumpHeader, TensorInfo, read_header, read_tensor
from ..errors import DumpFormatError, OptionError
from ..layouts import LAYOUTS, LayoutError, LayoutWarning, PluginConverter, convert_layout, format_key
from ..layouts.formats import AXIS_FORMATS, PLAIN_4D, PLAIN_TARGETS
from ..layouts.prepare import paddable_axes, slice_to_golden
from ..layouts.shapes import shape_text
from .batch import (
    ConvertReport,
    FileOutcome,
    SourceFile,
    Sources,
    finish,
    problem_of,
    run_files,
    start,
)
from .naming import bin_name, buffer_name, msnpy_name, shaped_npy_name, space_name, tensor_npy_name

#: ``-t`` values.
OUTPUT_TYPES = ("npy", "bin", "msnpy")
TENSOR_KINDS = ("input", "output")

_STRICT_SHAPE = re.compile(r"([0-9]+,)+[0-9]+")
_LENIENT_SHAPE = re.compile(r"[0-9]+(,[0-9]+)*")


# duplicates: the option checks resemble tool/data_conversion.py's: two commands with their own options and
# messages
def parse_shape(text: str, *, strict: bool = True) -> tuple[int, ...]:
    """``"1,3,224,224"`` -> ``(1, 3, 224, 224)``; every number must be greater than 0.

    ``strict`` is the manual's ``([0-9]+,)+[0-9]+`` (two dims or more); otherwise one dim is fine.
    Spaces are ignored. Raises :class:`OptionError`.
    """
    cleaned = str(text).replace(" ", "")
    pattern = _STRICT_SHAPE if strict else _LENIENT_SHAPE
    form = "d0,d1[,d2...]" if strict else "d0[,d1...]"
    if not pattern.fullmatch(cleaned):
        raise OptionError(f"shape {text!r} is not of the form {form} (numbers separated by commas)")
    dims = tuple(int(d) for d in cleaned.split(","))
    if any(d <= 0 for d in dims):
        raise OptionError(f"shape {text!r}: every dimension must be greater than 0")
    return dims


def canonical_format(name: str) -> str:
    """The format's name as dumps spell it (``fractal_z`` -> ``FRACTAL_Z``); OptionError if unknown."""
    try:
        return format_name(format_code(name))
    except ValueError:
        raise OptionError(
            f"unknown format {name!r} (e.g. NCHW, NHWC, ND, NC1HWC0, FRACTAL_Z, FRACTAL_NZ, HWCN, NCDHW)"
        ) from None


class Spelling(Enum):
    """The command whose option names a message suggests (``vconvert dump`` / ``convert``, or
    ``vconvert shape``)."""

    DUMP = "dump"
    SHAPE = "shape"

    def shape_hint(self, info: TensorInfo, target_format: str) -> str:
        """What to type when ``info`` cannot be converted to ``target_format`` because the dump
        records no original shape for it: the target-shape option, and the selection of this
        tensor alone (one ``-s`` applies to every selected tensor)."""
        axes = ",".join(target_format) if target_format in AXIS_FORMATS | {"CHWN"} else "d0,d1,..."
        if self is Spelling.SHAPE:
            shape, alone = f"-shape {axes}", f"-tensor {info.kind} -index {info.index}"
        else:
            shape, alone = f"-s {axes}", f"-{info.kind[0]} {info.index}"
        return (f"the dump records no original shape for {info.label}: give its {target_format} shape with "
                f"{shape} (and {alone} to convert this tensor alone)")


@dataclass(frozen=True)
class DumpConvertOptions:
    """How :func:`convert_dumps` writes tensors (see the module doc for the policies).

    ``output_type``: ``npy``, ``bin`` or ``msnpy``. ``target_format``: a format name (any case) or
    None. ``target_shape`` needs ``target_format``. ``kind``/``index`` select tensors (``index``
    needs ``kind``). ``version``: 1 or 2 forces the dump layout, None detects it per file.
    ``plugins``: converters from :func:`convert.layouts.load_plugins`. ``workers``: parallel
    workers (None or 0: one per CPU; see :func:`convert.tool.batch.run_files`). ``spelling``: the
    command whose options the messages suggest.
    """

    output_type: str = "npy"
    target_format: str | None = None
    target_shape: tuple[int, ...] | None = None
    kind: str | None = None
    index: int | None = None
    version: int | None = None
    plugins: Mapping | None = field(default=None, compare=False)
    workers: int | None = None
    spelling: Spelling = Spelling.DUMP

    def __post_init__(self) -> None:
        if self.output_type not in OUTPUT_TYPES:
            raise OptionError(f"output type {self.output_type!r} is not one of {', '.join(OUTPUT_TYPES)}")
        if self.target_format is not None:
            object.__setattr__(self, "target_format", canonical_format(self.target_format))
        if self.target_shape is not None:
            if self.target_format is None:
                raise OptionError("a target shape needs a target format (-s needs -f)")
            if any(int(d) <= 0 for d in self.target_shape):
                raise OptionError(f"target shape {list(self.target_shape)}: every dimension must be greater than 0")
            object.__setattr__(self, "target_shape", tuple(int(d) for d in self.target_shape))
        if self.kind is not None and self.kind not in TENSOR_KINDS:
            raise OptionError(f"tensor kind {self.kind!r} is not input or output")
        if self.index is not None:
            if self.kind is None:
                raise OptionError("a tensor index needs a tensor kind (input or output)")
            if self.index < 0:
                raise OptionError(f"tensor index {self.index} is negative")
        if self.version not in (None, 1, 2):
            raise OptionError(f"dump version {self.version!r} is not 1 or 2")


# ------------------------------------------------------------------------------ one tensor


@dataclass
class Converted:
    """A tensor ready to be written: the array, the format it is labelled with, notes."""

    array: np.ndarray
    format: str
    converted: bool
    notes: list[str] = field(default_factory=list)


def writable(array: np.ndarray) -> np.ndarray:
    """bf16 and the other ml_dtypes types widened exactly (:func:`convert.codecs.dtypes.widened`); everything else unchanged."""
    return widened(array)


def _nd_converter(dst: str, plugins: Mapping | None) -> Callable[..., np.ndarray] | None:
    """A converter from ND to ``dst``: a plugin, else a built-in (ND -> FRACTAL_NZ), else None."""
    for (src, to), converter in (plugins or {}).items():
        if format_key(src) == "ND" and format_key(to) == dst:
            return converter
    return LAYOUTS.get(("ND", dst))


def _call(converter: Callable[..., np.ndarray], shape: tuple[int, ...], target: tuple[int, ...],
          array: np.ndarray, group: int) -> np.ndarray:
    """Run an ND-source converter the way :func:`convert.layouts.convert_layout` runs the others."""
    if not isinstance(converter, PluginConverter):
        return converter(shape, target or None, array, group) if group >= 2 else converter(shape, target or None, array)
    return converter(list(shape), list(target), array.reshape(-1), group)  # guarded: failures are LayoutErrors


def convert_tensor(array: np.ndarray, info: TensorInfo, target_format: str | None,
                   target_shape: tuple[int, ...] | None = None, *, plugins: Mapping | None = None) -> Converted:
    """Bring one dump tensor (``info``: a :class:`convert.codecs.dumpfile.TensorInfo`) to ``target_format``.

    Dispatch (convert mode): an NCHW/NHWC/HWCN source that is not 4-D counts as ND; a source in
    the target format is reshaped; an ND source goes through an ND converter when there is one
    (a plugin, or the built-in ND -> FRACTAL_NZ) and is otherwise only reshaped (ND data has no
    layout to change); every other source goes through :func:`convert.layouts.convert_layout`.
    The result is cut to the target shape only for plain targets (NCHW, NHWC, HWCN, ND, ...); a
    device target (NC1HWC0, FRACTAL_Z, FRACTAL_NZ ...) keeps its padded shape.

    Raises ``LayoutError`` (or ``ValueError``) when the conversion itself fails.
    """
    if target_format is None:
        return Converted(array, info.format_name, False)
    label = canonical_format(target_format)
    dst = format_key(label)
    shape = tuple(int(d) for d in info.shape)
    target = tuple(target_shape) if target_shape else tuple(int(d) for d in info.original_shape)
    source = format_key(info.format)
    if source in PLAIN_4D and len(shape) != 4:
        source = "ND"
    group = int(info.sub_format) if int(info.sub_format) >= 2 else 1
    notes: list[str] = []
    converted = source != dst
    if source == "ND" and dst != "ND":
        converter = _nd_converter(dst, plugins)
        if converter is None:
            converted = False
            out = convert_layout(array, "ND", dst, shape)
        else:
            out = _call(converter, shape, target, np.asarray(array), group)
    elif (source == "FRACTAL_NZ" and dst == "ND" and len(target) > 2 and len(shape) >= 4
            and array.size != math.prod(target[:-2]) * math.prod(shape[-4:])):
        notes.append(f"{info.label}: FRACTAL_NZ data {shape_text(shape)} does not hold {math.prod(target[:-2])} "
                     f"matrices of the target {shape_text(target)}: written in its dump shape, not converted")
        converted, label = False, info.format_name
        out = convert_layout(array, "FRACTAL_NZ", "FRACTAL_NZ", shape)
    else:
        out = convert_layout(array, source, dst, shape, target or None, group=group, plugins=plugins)
    if converted and target and dst in PLAIN_TARGETS and tuple(out.shape) != target:
        if out.ndim < len(target) and out.size == math.prod(target):
            out = out.reshape(target)  # FRACTAL_NZ gives (prod(T[:-2]), rows, cols)
        else:
            try:
                out = slice_to_golden(out, target, paddable=paddable_axes(source, dst, out.ndim),
                                      context=f"{source}->{dst}")
            except LayoutError as exc:
                notes.append(f"{info.label}: not cut to the target shape {shape_text(target)} ({exc}); "
                             f"written as converted, {shape_text(out.shape)}")
    return Converted(out, label, converted, notes)


# ------------------------------------------------------------------------------ one file


def c_order(array: np.ndarray) -> np.ndarray:
    """``array`` as a C-contiguous array, keeping 0-d arrays 0-d (``ascontiguousarray`` does not)."""
    return array if array.flags.c_contiguous else np.array(array, order="C")


def save_npy(array: np.ndarray) -> Callable[[Path], None]:
    """A writer of ``array`` as a C-order ``.npy`` file (no pickles), byte for byte what
    ``np.save`` writes. The data goes through the file object's ``write`` (not numpy's
    ``tofile``, whose error on a full disk is "N requested and M written", without the errno)."""

    def write(path: Path) -> None:
        data = c_order(array)
        header = np.lib.format.header_data_from_array_1_0(data)
        with open(path, "wb") as handle:
            try:
                np.lib.format.write_array_header_1_0(handle, header)
            except ValueError:  # a header of more than 65535 bytes: format 2.0, as np.save does
                np.lib.format.write_array_header_2_0(handle, header)
            handle.write(_bytes_of(data))

    return write


def _bytes_of(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, without a copy."""
    return memoryview(array.reshape(-1).view(np.uint8))


def _save_raw(data: np.ndarray) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with open(path, "wb") as handle:
            handle.write(_bytes_of(c_order(data)))

    return write


#: Bytes copied at once from a dump to a buffer / workspace ``.bin`` file.
COPY_CHUNK = 1 << 20


def _copy_span(source: Path, offset: int, size: int) -> Callable[[Path], None]:
    """A writer of the ``size`` bytes of ``source`` at ``offset``, copied :data:`COPY_CHUNK` bytes
    at a time: a buffer of any size costs 1 MiB of memory. A source that ends sooner, or cannot
    be read, raises DumpFormatError (a problem of the dump, not of the output)."""

    def write(path: Path) -> None:
        with open(path, "wb") as handle:
            fd = os.open(source, os.O_RDONLY)
            try:
                done = 0
                while done < size:
                    try:
                        chunk = os.pread(fd, min(COPY_CHUNK, size - done), offset + done)
                    except OSError as exc:
                        raise DumpFormatError(source, f"cannot be read ({exc.strerror or exc})",
                                              offset=offset + done) from None
                    if not chunk:
                        problem = f"file ends after {done} of the {size} bytes at byte {offset}"
                        raise DumpFormatError(source, problem, offset=offset + done)
                    handle.write(chunk)
                    done += len(chunk)
            finally:
                os.close(fd)

    return write


def _selected(header: DumpHeader, options: DumpConvertOptions) -> list[TensorInfo]:
    tensors = list(header.inputs) + list(header.outputs)
    if options.kind is not None:
        tensors = [t for t in tensors if t.kind == options.kind]
    if options.index is not None:
        tensors = [t for t in tensors if t.index == options.index]
    return tensors


def _output_name(source: SourceFile, header: DumpHeader, info: TensorInfo, conv: Converted,
                 options: DumpConvertOptions) -> str:
    array = conv.array
    if options.output_type == "bin":
        return bin_name(source.name, info.kind, info.index, array.shape, array.dtype.name, conv.format)
    if options.output_type == "msnpy":
        return msnpy_name(source.name, header.op_name, info.kind, info.index, conv.format)
    if options.target_format is not None:
        return shaped_npy_name(source.name, info.kind, info.index, array.shape)
    return tensor_npy_name(source.name, info.kind, info.index)


def _write_tensor(outcome: FileOutcome, out_dir: Path, header: DumpHeader, info: TensorInfo,
                  options: DumpConvertOptions) -> None:
    try:
        data = read_tensor(header, info)
    except Exception as exc:  # noqa: BLE001 - every failure of one tensor is reported, the rest go on
        outcome.errors.append(f"{info.label}: {problem_of(exc)}")
        return
    try:
        conv = convert_tensor(data, info, options.target_format, options.target_shape, plugins=options.plugins)
    except Exception as exc:  # noqa: BLE001
        reason = f"{info.label} ({info.format_name} {list(info.shape)}) -> {options.target_format}: {problem_of(exc)}"
        if isinstance(exc, LayoutError) and options.target_shape is None and not info.original_shape:
            reason += f"; {options.spelling.shape_hint(info, options.target_format or '')}"
        if options.output_type != "msnpy":
            outcome.errors.append(reason)
            return
        outcome.notes.append(f"{outcome.source.path}: {reason}; written unconverted as {info.format_name}")
        conv = Converted(data, info.format_name, False)
    outcome.notes.extend(f"{outcome.source.path}: {note}" for note in conv.notes)
    conv.array = writable(conv.array)
    if options.output_type == "bin" and options.target_format is None:
        conv.array = conv.array.reshape(-1)
    name = _output_name(outcome.source, header, info, conv, options)
    writer = _save_raw(conv.array) if options.output_type == "bin" else save_npy(conv.array)
    outcome.save(out_dir, name, writer)


def convert_dump_file(source: SourceFile, out_dir: Path, options: DumpConvertOptions, *,
                      strict_selection: bool = True) -> FileOutcome:
    """Write the selected tensors (and buffers) of one dump file; never raises for the file's data."""
    outcome = FileOutcome(source)
    try:
        header = read_header(source.path, version=options.version)
    except Exception as exc:  # noqa: BLE001 - an unreadable file is listed, the others go on
        outcome.errors.append(problem_of(exc))
        return outcome
    tensors = _selected(header, options)
    if not tensors and options.kind is not None:
        wanted = options.kind if options.index is None else f"{options.kind} {options.index}"
        have = f"{len(header.inputs)} input(s) and {len(header.outputs)} output(s)"
        message = f"has no {wanted} (it has {have})"
        if strict_selection:
            outcome.errors.append(message)
        else:
            outcome.notes.append(f"{source.path}: skipped, {message}")
        return outcome
    for info in tensors:
        _write_tensor(outcome, out_dir, header, info, options)
    if options.kind is None:
        for what, name_of, spans in (("buffer", buffer_name, header.buffers), ("space", space_name, header.spaces)):
            for i, (offset, size) in enumerate(spans):
                try:
                    outcome.save(out_dir, name_of(source.name, i), _copy_span(source.path, offset, size))
                except DumpFormatError as exc:
                    outcome.errors.append(f"{what} {i}: {problem_of(exc)}")
    return outcome


# ------------------------------------------------------------------------------ batches


def convert_dumps(paths: Sources, out_dir: str | Path, options: DumpConvertOptions | None = None) -> ConvertReport:
    """Convert every dump file of ``paths`` into ``out_dir``; see the module doc.

    Raises :class:`OptionError` when nothing can run (no input file, output folder unusable).
    Per-file problems are in the returned report (and in ``convert_failed_file_list.txt``).
    """
    options = options or DumpConvertOptions()
    report, sources = start(paths, out_dir)
    out = report.out_dir
    if options.plugins is not None:
        report.notes.extend(getattr(options.plugins, "notes", []))
    strict = len(sources) == 1

    def job(source: SourceFile) -> FileOutcome:
        return convert_dump_file(source, out, options, strict_selection=strict)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LayoutWarning)  # the degraded cases are notes (see convert_tensor)
        outcomes = run_files(sources, job, options.workers)
    for outcome in outcomes:
        report.add(outcome)
    return finish(report)


def convert_shape(dump_file: str | Path, out_dir: str | Path, target_format: str, *,
                  shape: tuple[int, ...] | None = None, tensor: str = "output", index: int | None = None,
                  plugins: Mapping | None = None, version: int | None = None) -> ConvertReport:
    """The manual's ``shape_conversion``: one dump file's outputs (or inputs) to ``target_format``.

    Writes ``{file}.{output|input}.{index}.{d0}x{d1}x....npy``; ``index`` None: every tensor of
    that kind. ``dump_file`` must be a file.
    """
    path = Path(dump_file)
    if not path.is_file():
        why = "no such file" if not path.exists() else "not a file (give one dump file)"
        raise OptionError(f"{path}: {why}")
    options = DumpConvertOptions(target_format=target_format, target_shape=shape, kind=tensor, index=index,
                                 plugins=plugins, version=version, spelling=Spelling.SHAPE)
    return convert_dumps([path], out_dir, options)


__all__ = [
    "OUTPUT_TYPES",
    "Converted",
    "DumpConvertOptions",
    "Spelling",
    "canonical_format",
    "convert_dump_file",
    "convert_dumps",
    "convert_shape",
    "convert_tensor",
    "parse_shape",
]

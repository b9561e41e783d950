"""FFTS+ sliced ops: one op cut into several slice files, merged when a tensor is loaded.

An op run under FFTS+ (task type 4) may write one dump file per slice (§2.9 of the reference-tool
spec); :func:`ffts_mode` tells such a group of files apart, :func:`build_ffts_op` makes the one
:class:`OpDump` whose outputs are concatenated from the slices (:mod:`convert.codecs.ffts`) when
they are loaded. The policy (nothing silent, the op is never dropped) is in
:func:`build_ffts_op`'s doc. The Ascend offline reader (:mod:`compare.loaders.ascend_offline`)
calls it for every such group unless ``-ffts`` keeps the slices apart.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from convert.codecs.ffts import FftsMode, SliceAttr, merge_pieces, merged_path, merged_shape, slice_attr_of
from convert.names.ascend import OfflineName

from ..errors import DumpFormatError
from ..records import OpDump, TensorRef
from .ascend import read_dump_tensor, read_header, tensor_refs

if TYPE_CHECKING:
    from convert.codecs.dumpfile import DumpHeader, TensorInfo

_SLICE_NUMBER_RE = re.compile(r"lxslice([0-9]+)")


def ffts_mode(files: Sequence[tuple[Path, OfflineName]]) -> FftsMode | None:
    """The FFTS+ mode of an op's files (§2.8): None unless there are several and every one has
    task type 4 (FFTSPLUS); then manual when a raw op name holds ``_lxslice``, else automatic."""
    if len(files) < 2 or not all(parsed.ffts for _, parsed in files):
        return None
    return FftsMode.MANUAL if any("_lxslice" in parsed.op_name for _, parsed in files) else FftsMode.AUTOMATIC


def slice_number(parsed: OfflineName) -> int:
    """A manual-mode file's slice number: the digits of the last ``lxslice<digits>`` of its raw op
    name (0 when there is none). The reference reads only the last character of the name, so slice
    10 would sort before slice 2 there."""
    found = _SLICE_NUMBER_RE.findall(parsed.op_name)
    return int(found[-1]) if found else 0


def slice_order(files: Sequence[tuple[Path, OfflineName]], mode: FftsMode) -> list[tuple[Path, OfflineName]]:
    """The slice files in merge order: by thread id (automatic) or slice number (manual), then by
    16-digit timestamp, then by file name. A piece's thread index is its position in this list."""

    def key(item: tuple[Path, OfflineName]) -> tuple[int, int, str]:
        path, parsed = item
        first = slice_number(parsed) if mode is FftsMode.MANUAL else (parsed.thread_id or 0)
        return (first, parsed.sort_key, path.name)

    return sorted(files, key=key)


def _refuse(path: str, problem: str) -> np.ndarray:
    """The reader of a tensor that cannot be loaded: raises the diagnosis found at scan time."""
    raise DumpFormatError(path, problem)


def _refused(ref: TensorRef, exc: DumpFormatError, remark: str = "") -> TensorRef:
    return replace(ref, reader=functools.partial(_refuse, exc.path, exc.problem), remark=remark)


def _read_merged(headers: "tuple[DumpHeader, ...]", infos: "tuple[TensorInfo, ...]",
                 shapes: tuple[tuple[int, ...], ...], axis: int | None) -> np.ndarray:
    """Read the slices of one output and merge them (:func:`convert.codecs.ffts.merge_pieces`)."""
    count = 1 if axis is None else len(infos)
    arrays = [read_dump_tensor(header, info) for header, info in zip(headers[:count], infos[:count])]
    return merge_pieces(arrays, shapes[:count], axis, [h.path for h in headers[:count]])


def _piece_shapes(attr: SliceAttr, mode: FftsMode, index: int,
                  headers: "Sequence[DumpHeader]") -> tuple[tuple[int, ...], ...]:
    """The shape of each slice file's piece of output ``index`` (§2.9): the thread shape of
    ``output_tensor_slice`` (automatic) or the file's own dump shape (manual)."""
    if mode is FftsMode.AUTOMATIC:
        return tuple(attr.thread_shape(t, index, h.path) for t, h in enumerate(headers))
    return tuple(tuple(int(d) for d in h.outputs[index].shape) for h in headers)


def _merged_output(base: TensorRef, headers: "Sequence[DumpHeader]", attr: SliceAttr, mode: FftsMode,
                   count_remark: str) -> TensorRef:
    """The TensorRef of an FFTS+ op's output (``base``: the first slice file's ref of it): the
    merged tensor's metadata and a reader that merges the slices when it is loaded. A slice that
    does not fit (no such output, another dtype, a shape that does not concatenate) gives a ref
    whose reader raises the diagnosis."""
    first, index = headers[0], base.index
    axis = attr.merge_axis(index)
    remarks = [count_remark] if count_remark else []
    if axis is None:
        remarks.append(f"FFTS+ output {index} has no cut axis in outputCutList: the first slice file's "
                       f"({first.path.name}) data is compared")
    remark = "; ".join(remarks)
    paths = [h.path for h in headers]
    try:
        for header in headers[1:]:
            if index >= len(header.outputs):
                raise DumpFormatError(header.path, f"FFTS+ slice file has {len(header.outputs)} output(s), the first "
                                                   f"slice file {first.path.name} has output {index}")
            if int(header.outputs[index].data_type) != int(first.outputs[index].data_type):
                raise DumpFormatError(header.path, f"FFTS+ slice output {index} is {header.outputs[index].dtype_name}, "
                                                   f"the first slice file's is {first.outputs[index].dtype_name}")
        shapes = _piece_shapes(attr, mode, index, headers)
        shape = merged_shape(shapes, axis, paths)
    except DumpFormatError as exc:
        return _refused(base, exc, remark)
    infos = tuple(h.outputs[index] for h in headers)
    try:
        original = merged_shape([tuple(int(d) for d in i.original_shape) for i in infos], axis, paths)
    except DumpFormatError:
        original = ()  # slices without (or with disagreeing) framework shapes: none for the merged tensor
    used = infos if axis is not None else infos[:1]
    return replace(base, shape=shape, original_shape=original if all(i.original_shape for i in infos) else (),
                   nbytes=sum(int(i.size) for i in used), remark=remark,
                   reader=functools.partial(_read_merged, tuple(headers), infos, shapes, axis))


def build_ffts_op(name: str, files: list[tuple[Path, OfflineName]], mode: FftsMode, *,
                  version: int | None = None) -> OpDump:
    """One OpDump for an FFTS+ op cut into several slice files (§2.9 of the reference-tool spec).

    Every slice file's header is read now (metadata); the data are read and merged when an
    output is loaded. Policy (nothing silent, the op is never dropped):

    * the slice-attribute JSON is the first slice file's ``DumpData.attr[0]``; when it is missing
      or malformed, every tensor of the op is listed (first slice file's metadata) with a reader
      that raises that diagnosis, so each row says why;
    * a slice count other than ``slice_instance_num``: the tensors are still merged and each row
      carries that remark (the reference warns and flags the row too);
    * no output with a cut axis: the latest file (16-digit timestamp, then name) is compared, as
      the reference does, and each row says so;
    * outputs: concatenated along their first cut axis (:mod:`convert.codecs.ffts`); inputs: the first
      slice file's (they are not merged), each input row says so;
    * a header that cannot be read: ``OpDump.error`` names the file.

    ``OpDump.path`` is the first slice file (in merge order), ``files`` all of them.
    """
    ordered = slice_order(files, mode)
    headers = []
    for path, _ in ordered:
        header, error = read_header(path, version)
        if header is None:
            return OpDump(name=name, op_type=ordered[0][1].op_type, path=path, files=tuple(p for p, _ in files),
                          error=f"FFTS+ slice file of {name} cannot be read: {error}", timestamp=ordered[0][1].timestamp)
        headers.append(header)
    first_path, first = ordered[0]
    shown = merged_path(first_path)

    def op(inputs: tuple[TensorRef, ...], outputs: tuple[TensorRef, ...], path: Path, parsed: OfflineName) -> OpDump:
        return OpDump(name=name, op_type=parsed.op_type, path=path, files=tuple(p for p, _ in files),
                      inputs=inputs, outputs=outputs, timestamp=parsed.timestamp)

    inputs, outputs = tensor_refs(name, headers[0], first_path)
    try:
        attr = slice_attr_of(headers[0].attrs, first_path)
    except DumpFormatError as exc:
        why = f"FFTS+ op {name} ({len(files)} {mode.value}-mode slice files {shown}) cannot be merged"
        return op(tuple(_refused(r, exc, why) for r in inputs), tuple(_refused(r, exc, why) for r in outputs),
                  first_path, first)
    count_remark = ""
    if len(files) != attr.slice_instance_num:
        count_remark = (f"FFTS+ op {name}: {len(files)} slice file(s) ({shown}) but slice_instance_num is "
                        f"{attr.slice_instance_num}")
    if not attr.has_cut:
        path, parsed = files[-1]
        header = headers[[p for p, _ in ordered].index(path)]
        remark = "; ".join(filter(None, [count_remark, (
            f"FFTS+ op {name} has {len(files)} slice files and no cut axis in outputCutList: the latest, "
            f"{path.name}, is compared")]))
        ins, outs = tensor_refs(name, header, path)
        return op(tuple(replace(r, remark=remark) for r in ins), tuple(replace(r, remark=remark) for r in outs),
                  path, parsed)
    input_remark = "; ".join(filter(None, [count_remark, (
        f"FFTS+ op input: the first of {len(files)} slice files ({first_path.name}); inputs are not merged")]))
    merged = tuple(_merged_output(ref, headers, attr, mode, count_remark) for ref in outputs)
    return op(tuple(replace(r, remark=input_remark) for r in inputs), merged, first_path, first)


__all__ = ["build_ffts_op", "ffts_mode", "slice_number", "slice_order"]

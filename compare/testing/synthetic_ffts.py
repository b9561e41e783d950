"""Synthetic FFTS+ sliced dumps: one op's output cut into slice files with the slice-attribute JSON.

:func:`write_sliced_op` splits a full tensor along one axis and writes one Ascend dump file per
slice through :func:`convert.codecs.dumpwrite.write_dump` (``attrs``), named as the device does:

* automatic mode: ``{type}.{name}.{task}.{stream}.{timestamp}.4.0.{thread}.0`` -- one raw op name,
  the thread id at field -2;
* manual mode: ``{type}.{name}_lxslice{k}.{task}.{stream}.{timestamp}.4.0.0.0``.

``output_tensor_slice`` gets each thread's ``[lower, higher)`` per dim; ``outputCutList`` the
slice count on ``axis`` (1 elsewhere). Timestamps are 16 digits, increasing with the slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import write_dump
from convert.codecs.ffts import DimRange, FftsMode, SliceAttr

#: The first slice file's timestamp (16 digits); slice ``k`` gets ``BASE_TIMESTAMP + k``.
BASE_TIMESTAMP = 1700000000000000


@dataclass(frozen=True)
class SlicedOp:
    """What :func:`write_sliced_op` wrote: the files (in slice order) and the attribute record."""

    files: tuple[Path, ...]
    attr: SliceAttr


def slice_bounds(length: int, counts: Sequence[int]) -> list[tuple[int, int]]:
    """``[lower, higher)`` of consecutive pieces of the given sizes (they must add up to ``length``)."""
    if sum(counts) != length:
        raise ValueError(f"slice sizes {list(counts)} do not add up to {length}")
    bounds, lower = [], 0
    for count in counts:
        bounds.append((lower, lower + count))
        lower += count
    return bounds


def write_sliced_op(folder: Path, full: np.ndarray, sizes: Sequence[int], axis: int, *,
                    mode: FftsMode = FftsMode.AUTOMATIC, op_type: str = "MatMul", name: str = "op",
                    inputs: Sequence[np.ndarray] = (), declared: int | None = None, cut_list: Sequence[int] | None = None,
                    attr_text: str | None = None, timestamps: Sequence[int] | None = None) -> SlicedOp:
    """Write ``full`` cut along ``axis`` in pieces of ``sizes`` as FFTS+ slice files in ``folder``.

    ``declared``: the ``slice_instance_num`` written (default: the number of pieces);
    ``cut_list``: the output's ``outputCutList`` entry (default: ``len(sizes)`` on ``axis``, 1
    elsewhere); ``attr_text``: write this text as the attribute instead of the JSON;
    ``timestamps``: per slice (default ``BASE_TIMESTAMP + k``). ``inputs`` go to every slice file.
    """
    bounds = slice_bounds(full.shape[axis], sizes)
    cuts = tuple(cut_list) if cut_list is not None else tuple(len(sizes) if d == axis else 1 for d in range(full.ndim))
    threads = tuple(
        (tuple(DimRange(lo, hi) if d == axis else DimRange(0, full.shape[d]) for d in range(full.ndim)),)
        for lo, hi in bounds)
    attr = SliceAttr(thread_mode=mode is FftsMode.AUTOMATIC, slice_instance_num=declared if declared is not None
                     else len(sizes), output_cut_list=(cuts,), output_tensor_slice=threads)
    text = attr.to_json() if attr_text is None else attr_text
    files = []
    for k, (lo, hi) in enumerate(bounds):
        piece = np.take(full, np.arange(lo, hi), axis=axis)
        stamp = timestamps[k] if timestamps is not None else BASE_TIMESTAMP + k
        if mode is FftsMode.AUTOMATIC:
            file_name = f"{op_type}.{name}.3.2.{stamp}.4.0.{k}.0"
        else:
            file_name = f"{op_type}.{name}_lxslice{k}.3.2.{stamp}.4.0.0.0"
        files.append(write_dump(folder / file_name, inputs=list(inputs), outputs=[piece], attrs=[("ffts", text)]))
    return SlicedOp(tuple(files), attr)


__all__ = ["BASE_TIMESTAMP", "SlicedOp", "slice_bounds", "write_sliced_op"]

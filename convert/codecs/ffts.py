"""FFTS+ sliced dumps: the slice-attribute JSON of ``DumpData.attr`` and the merge of the slices.

An FFTS+ operator (task-type field 4 of the long dump names, §2.8 of the reference-tool spec) is
run as several slices; each slice writes its own dump file, and ``DumpData.attr[0].value`` holds
a JSON object describing the cut (§2.6)::

    {"threadMode": 1,                      # truthy: automatic mode (else manual)
     "slice_instance_num": 2,              # how many slices the op was cut into
     "outputCutList": [[2, 1]],            # per output, per dim: how many pieces that dim is cut in
     "input_tensor_slice":  [[[{"lower": 0, "higher": 4}, ...], ...], ...],   # [thread][tensor][dim]
     "output_tensor_slice": [[[{"lower": 0, "higher": 4}, ...], ...], ...]}

Merging (§2.9), pure numpy, done here so that ``vconvert`` and ``vcompare`` share it:

* the **cut axes** of output ``i`` are the dims whose ``outputCutList[i]`` entry is not 1; an op
  whose outputs have no cut axis at all is not merged (its latest file is used);
* **automatic mode**: thread ``t``'s piece of output ``i`` has the shape
  ``[higher - lower for each dim of output_tensor_slice[t][i]]``;
  **manual mode**: each piece keeps its own dump shape;
* the pieces are concatenated along the **first** cut axis (``np.concatenate``); an output without
  a cut axis is the first piece.

A hand-written reader is needed because the JSON is a private GE structure no library models;
``json`` parses it and :func:`parse_slice_attr` checks every field it uses. Errors are
:class:`~convert.errors.DumpFormatError` naming the file (and, for a merge, the slice file and the
dims that do not fit).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from ..errors import DumpFormatError

#: The ``DumpData.attr`` keys of the slice-attribute JSON.
THREAD_MODE, SLICE_COUNT, CUT_LIST = "threadMode", "slice_instance_num", "outputCutList"
INPUT_SLICES, OUTPUT_SLICES = "input_tensor_slice", "output_tensor_slice"


class FftsMode(str, Enum):
    """How an FFTS+ op was sliced: the file name says it (``_lxslice`` in the op name: manual)."""

    AUTOMATIC = "automatic"
    MANUAL = "manual"


@dataclass(frozen=True)
class DimRange:
    """The part ``[lower, higher)`` of one dim that one thread computes."""

    lower: int
    higher: int

    @property
    def extent(self) -> int:
        """``higher - lower``: the thread's size along this dim."""
        return self.higher - self.lower


#: One tensor of one thread: a :class:`DimRange` per dim.
TensorSlice = tuple[DimRange, ...]


@dataclass(frozen=True)
class SliceAttr:
    """The slice-attribute JSON of an FFTS+ dump (module doc). ``*_tensor_slice[thread][tensor]``
    is a :data:`TensorSlice`; both are ``()`` when the JSON has none (manual mode needs none)."""

    thread_mode: bool
    slice_instance_num: int
    output_cut_list: tuple[tuple[int, ...], ...]
    input_tensor_slice: tuple[tuple[TensorSlice, ...], ...] = ()
    output_tensor_slice: tuple[tuple[TensorSlice, ...], ...] = ()

    def cut_axes(self, output: int) -> tuple[int, ...]:
        """The dims of output ``output`` whose cut count is not 1 (``()``: not cut, or not listed)."""
        if output >= len(self.output_cut_list):
            return ()
        return tuple(dim for dim, count in enumerate(self.output_cut_list[output]) if count != 1)

    def merge_axis(self, output: int) -> int | None:
        """The axis output ``output`` is merged along: its first cut axis, None when it has none."""
        axes = self.cut_axes(output)
        return axes[0] if axes else None

    @property
    def has_cut(self) -> bool:
        """Whether any output has a cut axis (else the op is not merged)."""
        return any(self.cut_axes(i) for i in range(len(self.output_cut_list)))

    def thread_shape(self, thread: int, output: int, path: object = "") -> tuple[int, ...]:
        """Automatic mode: the shape of thread ``thread``'s piece of output ``output``.

        Raises :class:`DumpFormatError` when ``output_tensor_slice`` has no such thread or output,
        or a range is negative.
        """
        if thread >= len(self.output_tensor_slice):
            raise DumpFormatError(path, f"{OUTPUT_SLICES} lists {len(self.output_tensor_slice)} thread(s), no "
                                        f"thread {thread} (the slice file's position in the sorted slice files)")
        tensors = self.output_tensor_slice[thread]
        if output >= len(tensors):
            raise DumpFormatError(path, f"{OUTPUT_SLICES}[{thread}] lists {len(tensors)} output(s), no output {output}")
        shape = tuple(r.extent for r in tensors[output])
        if any(d < 0 for d in shape):
            raise DumpFormatError(path, f"{OUTPUT_SLICES}[{thread}][{output}] has a range with higher < lower: "
                                        f"{[(r.lower, r.higher) for r in tensors[output]]}")
        return shape

    def to_json(self) -> str:
        """The JSON text of this record (what a dump's ``attr[0].value`` holds); parses back equal."""

        def slices(table: tuple[tuple[TensorSlice, ...], ...]) -> list:
            return [[[{"lower": r.lower, "higher": r.higher} for r in tensor] for tensor in thread] for thread in table]

        body: dict = {THREAD_MODE: int(self.thread_mode), SLICE_COUNT: self.slice_instance_num,
                      CUT_LIST: [list(cuts) for cuts in self.output_cut_list]}
        if self.input_tensor_slice:
            body[INPUT_SLICES] = slices(self.input_tensor_slice)
        if self.output_tensor_slice:
            body[OUTPUT_SLICES] = slices(self.output_tensor_slice)
        return json.dumps(body)


def _int(value: object, where: str, path: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DumpFormatError(path, f"FFTS+ slice attribute {where} is {value!r}, not an integer")
    return value


def _list(value: object, where: str, path: object) -> list:
    if not isinstance(value, list):
        raise DumpFormatError(path, f"FFTS+ slice attribute {where} is {type(value).__name__}, not a list")
    return value


def _slices(value: object, key: str, path: object) -> tuple[tuple[TensorSlice, ...], ...]:
    threads = []
    for t, thread in enumerate(_list(value, key, path)):
        tensors = []
        for i, tensor in enumerate(_list(thread, f"{key}[{t}]", path)):
            dims = []
            for d, rng in enumerate(_list(tensor, f"{key}[{t}][{i}]", path)):
                where = f"{key}[{t}][{i}][{d}]"
                if not isinstance(rng, dict) or "lower" not in rng or "higher" not in rng:
                    raise DumpFormatError(path, f"FFTS+ slice attribute {where} is {rng!r}, not "
                                                '{"lower": ..., "higher": ...}')
                dims.append(DimRange(_int(rng["lower"], where + ".lower", path),
                                     _int(rng["higher"], where + ".higher", path)))
            tensors.append(tuple(dims))
        threads.append(tuple(tensors))
    return tuple(threads)


def parse_slice_attr(text: str, path: object = "") -> SliceAttr:
    """Parse the slice-attribute JSON (module doc) of the dump ``path``.

    Required: ``slice_instance_num`` (an integer) and ``outputCutList`` (a list of integer
    lists). ``threadMode`` is read for its truth value (absent: false); the two tensor-slice
    tables are optional, and checked when present. Raises :class:`DumpFormatError` saying which
    key is missing or malformed.
    """
    try:
        body = json.loads(text)
    except RecursionError:
        raise DumpFormatError(path, "FFTS+ slice attribute (DumpData.attr[0].value) is not JSON: nested deeper "
                                    f"than the JSON reader follows (Python's recursion limit, "
                                    f"{sys.getrecursionlimit()})") from None
    except (ValueError, TypeError) as exc:  # ValueError: also a whole number of more than 4,300 digits
        raise DumpFormatError(path, f"FFTS+ slice attribute (DumpData.attr[0].value) is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise DumpFormatError(path, f"FFTS+ slice attribute (DumpData.attr[0].value) is a JSON "
                                    f"{type(body).__name__}, not an object")
    for key in (SLICE_COUNT, CUT_LIST):
        if key not in body:
            raise DumpFormatError(path, f"FFTS+ slice attribute has no {key!r} (keys: {', '.join(sorted(body)) or 'none'})")
    cuts = tuple(tuple(_int(c, f"{CUT_LIST}[{i}][{d}]", path) for d, c in enumerate(_list(row, f"{CUT_LIST}[{i}]", path)))
                 for i, row in enumerate(_list(body[CUT_LIST], CUT_LIST, path)))
    return SliceAttr(
        thread_mode=bool(body.get(THREAD_MODE)),
        slice_instance_num=_int(body[SLICE_COUNT], SLICE_COUNT, path),
        output_cut_list=cuts,
        input_tensor_slice=_slices(body.get(INPUT_SLICES, []), INPUT_SLICES, path),
        output_tensor_slice=_slices(body.get(OUTPUT_SLICES, []), OUTPUT_SLICES, path),
    )


def slice_attr_of(attrs: Sequence[tuple[str, str]], path: object = "") -> SliceAttr:
    """The slice attribute of a dump's ``DumpData.attr`` ``(name, value)`` pairs: ``attr[0]``'s
    value (the reference reads the first attr whatever its name). Raises :class:`DumpFormatError`
    when there is no attr or it does not parse."""
    if not attrs:
        raise DumpFormatError(path, "FFTS+ slice file has no DumpData.attr (the slice-attribute JSON): the op's "
                                    "slices cannot be merged")
    return parse_slice_attr(attrs[0][1], path)


def merged_shape(shapes: Sequence[tuple[int, ...]], axis: int | None, paths: Sequence[object]) -> tuple[int, ...]:
    """The shape of the pieces ``shapes`` concatenated along ``axis`` (None: the first piece's).

    Raises :class:`DumpFormatError` naming the first slice file whose piece does not fit: another
    rank, ``axis`` beyond its dims, or another size on a dim that is not ``axis``.
    """
    first = tuple(shapes[0])
    if axis is None:
        return first
    if axis >= len(first):
        raise DumpFormatError(paths[0], f"FFTS+ cut axis {axis} is beyond the {len(first)} dim(s) of the slice "
                                        f"shape {list(first)}")
    total = 0
    for shape, path in zip(shapes, paths):
        shape = tuple(shape)
        same = len(shape) == len(first) and all(a == b for d, (a, b) in enumerate(zip(shape, first)) if d != axis)
        if not same:
            raise DumpFormatError(path, f"FFTS+ slice of shape {list(shape)} does not fit the first slice "
                                        f"{list(first)} along cut axis {axis} (every other dim must agree)")
        total += shape[axis]
    return first[:axis] + (total,) + first[axis + 1:]


def merge_pieces(arrays: Sequence[np.ndarray], shapes: Sequence[tuple[int, ...]], axis: int | None,
                 paths: Sequence[object]) -> np.ndarray:
    """The merged tensor: each array reshaped to its piece shape, then concatenated along ``axis``
    (None: the first piece alone). Raises :class:`DumpFormatError` naming the slice file whose
    element count is not its piece shape's, or whose piece does not fit (:func:`merged_shape`)."""
    merged_shape(shapes, axis, paths)
    pieces = []
    for array, shape, path in zip(arrays, shapes, paths):
        if array.size != math.prod(shape):
            raise DumpFormatError(path, f"FFTS+ slice holds {array.size} element(s), its piece shape {list(shape)} "
                                        f"needs {math.prod(shape)}")
        pieces.append(np.asarray(array).reshape(shape))
        if axis is None:
            break
    return pieces[0] if axis is None else np.concatenate(pieces, axis=axis)


def merged_path(path: Path) -> str:
    """How a merged op's file is shown: the first slice file's first four dot fields, then ``.*``."""
    return ".".join(path.name.split(".")[:4]) + ".*"


__all__ = ["DimRange", "FftsMode", "SliceAttr", "TensorSlice", "merge_pieces", "merged_path", "merged_shape",
           "parse_slice_attr", "slice_attr_of"]

"""Shared pieces of the layout converters: the error type, format names and shape helpers.

Format names are compared case-insensitively: :func:`format_key` turns ``"nc1hwc0"``,
``"FORMAT_NC1HWC0"``, the integer code ``3`` or an ``IntEnum`` member into ``"NC1HWC0"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from ..codecs.dtypes import Format, format_name

Shape = tuple[int, ...]



class LayoutError(ValueError):
    """A tensor cannot be brought to the requested layout or shape.

    The message is the diagnosis: the formats, the shapes and why they do not fit.
    """


class LayoutWarning(UserWarning):
    """A conversion went ahead in a degraded way (e.g. FRACTAL_NZ data reshaped, not converted)."""


def as_shape(shape: Iterable[int] | None) -> Shape:
    """``shape`` as a tuple of Python ints; ``None`` gives ``()``."""
    if shape is None:
        return ()
    return tuple(int(d) for d in shape)


def shape_text(shape: Iterable[int]) -> str:
    """``[d0,d1,...]`` with no spaces, as the reports write shapes."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def is_scalar_like(shape: Iterable[int]) -> bool:
    """``sum(shape) == len(shape)``: all-1 shapes and ``()`` (and oddities such as ``[0,2]``)."""
    dims = as_shape(shape)
    return sum(dims) == len(dims)


def format_key(fmt: object) -> str:
    """Canonical (upper-case) name of a format given as a name, an integer code or an enum member.

    An empty name or ``None`` gives ``""``. A ``FORMAT_`` prefix is dropped. Integer codes are
    named through :func:`convert.codecs.dtypes.format_name`.
    """
    if fmt is None:
        return ""
    if isinstance(fmt, (int, np.integer)) and not isinstance(fmt, bool):
        return format_name(int(fmt)).upper()
    name = getattr(fmt, "name", fmt) if not isinstance(fmt, str) else fmt
    key = str(name).strip().upper()
    if key.startswith("FORMAT_") and not key[len("FORMAT_"):].isdigit():
        key = key[len("FORMAT_"):]
    return key


def format_spelling(fmt: object) -> str:
    """A format's name for a message, as devices and the manuals write it: the dump format's own
    name when :func:`format_key` names one (``C1HWNCoC0``, which the key upper-cases), else the
    key. Lookups compare keys; only messages spell."""
    key = format_key(fmt)
    return _spellings().get(key, key)


@lru_cache(maxsize=1)
def _spellings() -> dict[str, str]:
    return {name.upper(): name for name in Format.__members__}


@lru_cache(maxsize=1)
def _known_formats() -> frozenset[str]:
    return frozenset(name.upper() for name in Format.__members__)


def is_known_format(name: str) -> bool:
    """Whether ``name`` (canonical) is one of the dump formats (``OutputFormat`` names)."""
    return format_key(name) in _known_formats()


def shaped(array: np.ndarray, shape: Shape, fmt: str, rank: int | None = None) -> np.ndarray:
    """``array`` (flat or shaped) viewed as ``shape``; a LayoutError says why when it cannot be.

    ``rank`` (when given) is the number of dims the ``fmt`` layout needs.
    """
    data = np.asarray(array)
    if rank is not None and len(shape) != rank:
        raise LayoutError(f"{fmt} data needs a {rank}-D source shape, got {shape_text(shape)}")
    if math.prod(shape) != data.size:
        raise LayoutError(
            f"{fmt} source shape {shape_text(shape)} holds {math.prod(shape)} elements "
            f"but the data has {data.size}"
        )
    return data.reshape(shape)


def reshape_checked(array: np.ndarray, shape: Shape, what: str) -> np.ndarray:
    """Reshape as the reference's "no conversion" path does: ``prod(shape)`` must equal the size.

    Empty data is returned as it is (the reference skips the check for it).
    """
    data = np.asarray(array)
    if data.size == 0:
        return data
    if math.prod(shape) != data.size:
        raise LayoutError(
            f"cannot reshape {what}: shape {shape_text(shape)} holds {math.prod(shape)} elements "
            f"but the data has {data.size}"
        )
    return data.reshape(shape)


def crop_length(padded: int, target: int, axis: str, fmt: str) -> int:
    """How many leading elements of a padded axis to keep (the §6.1 crop rule).

    The reference keeps everything when ``padded == target`` and otherwise slices with the
    negative end ``target - padded``, i.e. keeps the first ``target``. A target larger than the
    padded axis (where the reference's positive slice end would silently keep the wrong count)
    is a LayoutError here.
    """
    if target < 0 or target > padded:
        raise LayoutError(
            f"{fmt}: target {axis}={target} does not fit the padded {axis} of {padded} in the source"
        )
    return target

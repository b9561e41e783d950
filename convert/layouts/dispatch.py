"""``convert_layout``: choose and run the converter for one tensor (§4 step 5 of the spec).

Dispatch, in order:

1. Source ND, a source NCHW / HWCN / NHWC whose shape is not 4-D, or source == destination:
   the data is only reshaped to the source shape (``prod(shape)`` must equal the size, except
   for empty data). So ND sources never reach a converter here; call ``LAYOUTS[("ND",
   "FRACTAL_NZ")]`` directly to produce NZ data.
2. FRACTAL_NZ -> ND with a target of more than 2 dims whose batch does not match the data
   (``len(data) != prod(T[:-2]) * C1*No*Ni*C0``): a :class:`LayoutWarning`, then the reshape of 1.
3. Any other FRACTAL_NZ source: the target shape is validated (``fractal.check_nz_target``).
4. The converter: a plugin for ``(src, dst)`` if there is one, else the built-in. None at all
   is a LayoutError listing what exists. ``group >= 2`` is passed as a 4th argument to a
   built-in; a plugin gets the flat data and list shapes (and the group when it is a
   ``to_FRACTAL_Z`` plugin); a plugin that raises (``sys.exit()`` included) or returns something
   other than an ndarray gives a LayoutError naming its file (:class:`PluginConverter`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .formats import PLAIN_4D
from .fractal import check_nz_target
from .plugins import PluginConverter
from .registry import LAYOUTS, Converter
from .shapes import LayoutError, LayoutWarning, as_shape, format_key, format_spelling, reshape_checked, shape_text


# duplicates: the format lookup resembles lazy.py's: dispatch converts arrays, lazy plans views; both read the
# same LAYOUTS table
def _find_converter(
    src: str, dst: str, plugins: Mapping[tuple[str, str], Converter] | None
) -> Converter | None:
    for (p_src, p_dst), converter in (plugins or {}).items():
        if format_key(p_src) == src and format_key(p_dst) == dst:
            return converter
    return LAYOUTS.get((src, dst))


def _missing(src: str, dst: str, plugins: Mapping[tuple[str, str], Converter] | None) -> LayoutError:
    """The error for ``src`` -> ``dst`` (keys) without a converter, the formats spelled as dumps write them."""
    from_src = [f"{format_spelling(a)}->{format_spelling(b)}" for a, b in LAYOUTS if a == src]
    built_in = ", ".join(from_src) if from_src else f"none from {format_spelling(src)}"
    custom = ", ".join(f"{format_spelling(a)}->{format_spelling(b)}" for a, b in (plugins or {})) or "none"
    return LayoutError(f"no conversion from {format_spelling(src)} to {format_spelling(dst)} "
                       f"(built-ins: {built_in}; custom: {custom})")


def convert_layout(
    array: np.ndarray,
    src_format: object,
    dst_format: object,
    src_shape: Sequence[int],
    dst_shape: Sequence[int] | None = None,
    *,
    group: int = 1,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
) -> np.ndarray:
    """Convert ``array`` (flat or shaped) from ``src_format``/``src_shape`` to ``dst_format``.

    ``dst_shape`` is the target shape used for cropping (``None``/empty: no crop). Formats are
    case-insensitive names (or integer codes). Returns the converted array (possibly a view).
    """
    src, dst = format_key(src_format), format_key(dst_format)
    shape_from, shape_to = as_shape(src_shape), as_shape(dst_shape)
    data = np.asarray(array)
    if src == "ND" or (src in PLAIN_4D and len(shape_from) != 4) or src == dst:
        return reshape_checked(data, shape_from, f"{src or 'unformatted'} data")
    if src == "FRACTAL_NZ":
        if (
            dst == "ND"
            and len(shape_to) > 2
            and len(shape_from) >= 4
            and data.size != math.prod(shape_to[:-2]) * math.prod(shape_from[-4:])
        ):
            warnings.warn(
                LayoutWarning(
                    f"FRACTAL_NZ data of shape {shape_text(shape_from)} does not hold "
                    f"{math.prod(shape_to[:-2])} matrices for the target {shape_text(shape_to)}: "
                    "reshaped to the source shape, not converted"
                ),
                stacklevel=2,
            )
            return reshape_checked(data, shape_from, "FRACTAL_NZ data")
        check_nz_target(shape_from, shape_to)
    converter = _find_converter(src, dst, plugins)
    if converter is None:
        raise _missing(src, dst, plugins)
    if isinstance(converter, PluginConverter):  # guarded: any failure is a LayoutError naming the file
        return converter(list(shape_from), list(shape_to), data.reshape(-1), int(group))
    if group >= 2:
        return converter(shape_from, shape_to, data, int(group))
    return converter(shape_from, shape_to, data)

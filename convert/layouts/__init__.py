"""Pure-numpy layout transforms between device layouts (NC1HWC0, FRACTAL_Z, FRACTAL_NZ...) and
framework layouts (NCHW, NHWC, HWCN, ND...), the converter registry, user plugins, and the
preparation of a (left, golden) pair for comparison.

- :data:`LAYOUTS` -- ``{(FROM, TO): convert(shape_from, shape_to, array, group=1)}``.
- :func:`convert_layout` -- dispatch one tensor as the reference tool does (reshape-only cases,
  FRACTAL_NZ validation, plugins before built-ins).
- :func:`load_plugins` -- ``<dir>/format_convert/convert_<FROM>_to_<TO>.py`` with security checks.
- :func:`decide_layout` -- a pair's :class:`LayoutDecision` (golden-format fix, destinations), made
  once on metadata; :func:`prepare_decided` applies it (conversion, slicing to the golden shape,
  flattening), :func:`convert.layouts.lazy.plan_decided` is its zero-copy twin;
  :func:`prepare_pair` -- both steps in one call.

Vectorised throughout (reshape / transpose / fancy indexing, no per-element Python loops).
Nothing here imports from ``compare``.
"""

from __future__ import annotations

from .dispatch import convert_layout
from .fractal import check_nz_target, group_geometry, nz_padded_shape
from .plugins import MAX_PLUGIN_BYTES, PluginConverter, PluginSet, check_plugin_file, load_plugins
from .prepare import (
    LayoutDecision,
    Route,
    assumed_golden_format,
    decide_layout,
    prepare_decided,
    prepare_pair,
    resolve_golden_format,
    slice_to_golden,
)
from .registry import LAYOUTS, Converter
from .shapes import LayoutError, LayoutWarning, format_key, is_scalar_like

__all__ = [
    "LAYOUTS",
    "LayoutDecision",
    "MAX_PLUGIN_BYTES",
    "Converter",
    "LayoutError",
    "LayoutWarning",
    "PluginConverter",
    "PluginSet",
    "Route",
    "check_nz_target",
    "check_plugin_file",
    "convert_layout",
    "decide_layout",
    "format_key",
    "group_geometry",
    "is_scalar_like",
    "load_plugins",
    "nz_padded_shape",
    "assumed_golden_format",
    "prepare_decided",
    "prepare_pair",
    "resolve_golden_format",
    "slice_to_golden",
]

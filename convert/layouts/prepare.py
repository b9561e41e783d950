"""``prepare_pair``: bring a left (device) tensor and its golden tensor to comparable flat arrays.

This is §4 of the spec (tensor preparation in fusion mode), steps 1 and 3-7:

1. **Golden format.** Empty or ``RESERVED`` (a golden ``.npy`` carries no layout) means the left
   format; any other name must be a known format. A 4-D ``NHWC`` label whose data is really NCHW
   (target ``T == (S[0], S[2], S[3], S[1])`` for golden shape S) becomes ``NCHW``, and a 4-D
   ``NCHW`` label with ``T == (S[0], S[3], S[1], S[2])`` becomes ``NHWC``.
3. **Destinations.** Network mode: the left side goes to the golden format; the golden side is
   only reshaped. Detail (single-op) mode: both sides go to NCDHW when the left format is NDHWC,
   NCDHW, DHWCN or NDC1HWC0; to the golden format when it is FRACTAL_Z; else to NCHW.
4. **No conversion** (both sides used flat) when the left destination is ND and the left format
   is neither FRACTAL_NZ nor NDC1HWC0, or when the left shape is scalar-like
   (``sum(S) == len(S)``).
5. **Conversion** with :func:`convert_layout` -- left: ``(F_L -> dest, S_L, T)`` with
   ``group = sub_format`` when it is 2 or more; golden: ``(F_G -> dest, S_G, S_G)``.
6. **Slicing** (:func:`slice_to_golden`) when the left format is not ND, or when the left shape is
   not scalar-like and the element counts differ. Only axes that hold the padding of the device
   layout just converted (:func:`paddable_axes`) are ever cropped; a conversion whose padding axes
   are unknown (a plugin, a conversion *to* a device layout) crops nothing.
7. Both flattened in C order; different lengths are a LayoutError giving both counts and shapes.

**No silent crop** (vcompare policy, docs/differences.md): after "no conversion" the left data
keeps no layout padding to remove, so any element-count difference is a LayoutError naming both
shapes -- the reference cuts the flat left array to the golden's length (a 640-element weight
against a 600-element golden then compares its first 600 values and looks perfect).

Policy where the reference has no useful answer: ``target_shape`` ``None`` or empty means the
golden shape (the reference passes ``[]`` and then fails for FRACTAL_Z / FRACTAL_NZ).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .dispatch import convert_layout
from .formats import AXIS_FORMATS, PLAIN_AXES
from .registry import Converter
from .shapes import LayoutError, Shape, as_shape, format_key, format_spelling, is_known_format, is_scalar_like, shape_text

#: Left formats whose single-op destination is NCDHW.
_DEPTH_FORMATS = frozenset({"NDHWC", "NCDHW", "DHWCN", "NDC1HWC0"})
#: Left formats that are still converted when the destination is ND.
_ND_CONVERTED = frozenset({"FRACTAL_NZ", "NDC1HWC0"})


def resolve_golden_format(golden_fmt: object, left_fmt: str, target: Shape, golden_shape: Shape) -> str:
    """The golden format after the empty/RESERVED default and the NCHW/NHWC label fix (step 1)."""
    fmt = format_key(golden_fmt)
    if not fmt or fmt == "RESERVED":
        return left_fmt
    if not is_known_format(fmt):
        raise LayoutError(f"unknown golden format {golden_fmt!r}")
    if fmt in ("NCHW", "NHWC") and len(target) == 4 and len(golden_shape) == 4 and target != golden_shape:
        s = golden_shape
        if fmt == "NHWC" and target == (s[0], s[2], s[3], s[1]):
            return "NCHW"
        if fmt == "NCHW" and target == (s[0], s[3], s[1], s[2]):
            return "NHWC"
    return fmt


def _strip_ones(shape: Shape) -> Shape:
    return tuple(d for d in shape if d != 1)


_C0_PADDED = {"NC1HWC0", "NDC1HWC0", "NC1HWC0_C04"}
_TRANSPOSES = AXIS_FORMATS | {"ND"}




def assumed_golden_format(left_format: object, golden_rank: int) -> str:
    """The golden layout to assume when no rule says it (by-name pairs against a .npy folder).

    Framework goldens are in the framework's plain layout: the left format itself when it is a
    plain axis format (NCHW, NHWC, ND, ...), otherwise NCHW for 4-D goldens, NCDHW for 5-D ones
    and ND for any other rank. (vcompare policy; the reference refuses such folder pairs.)
    """
    fmt = format_key(left_format)
    if fmt in PLAIN_AXES:
        return fmt
    return {4: "NCHW", 5: "NCDHW"}.get(int(golden_rank), "ND")


def paddable_axes(src_fmt: str, dst_fmt: str, ndim: int) -> frozenset[int] | None:
    """Axes of the converted array that may hold layout padding, or None if unknown.

    NC1HWC0/NDC1HWC0 pad only C (to a multiple of C0), FRACTAL_Z pads N and C (to 16),
    FRACTAL_NZ the last two dims; a transpose or a same-format reshape pads nothing. Cropping any
    other axis would hide a real shape mismatch, so :func:`slice_to_golden` refuses it (the
    reference crops whatever is larger). ``None``: not known (plugins, conversions to a device
    layout); :func:`prepare_pair` then crops nothing, :func:`slice_to_golden` called without
    ``paddable`` keeps the reference rule.
    """
    if src_fmt == "NDC1HWC0" and dst_fmt == "ND":
        return frozenset({1})  # the NCDHW result: C at axis 1
    if dst_fmt in AXIS_FORMATS:
        if src_fmt in _C0_PADDED:
            return frozenset({dst_fmt.index("C")})
        if src_fmt.startswith("FRACTAL_Z"):
            return frozenset({dst_fmt.index("N"), dst_fmt.index("C")})
        if src_fmt in _TRANSPOSES:
            return frozenset()
    if src_fmt == "FRACTAL_NZ":
        return frozenset({max(ndim, 4) - 1, max(ndim, 4) - 2, ndim - 1, ndim - 2})
    if src_fmt == dst_fmt:
        return frozenset()
    return None


def slice_to_golden(array: np.ndarray, golden_shape: Sequence[int], *, context: str = "",
                    paddable: frozenset[int] | None = None) -> np.ndarray:
    """Cut the converted left array down to the golden shape (§4 step 6); removes C0/N padding.

    - Fewer dims than the golden: the shapes without their 1s must be equal; returned unchanged.
    - Otherwise both shapes are padded with trailing 1s (the array's to at least 4 dims). Equal
      element counts with at most one non-1 dim in the array: unchanged. Walking the dims, one
      smaller than the golden's is an error; if one is larger the leading block
      ``[:g0, :g1, ...]`` is taken -- **only for 4 and 5 dims**; other ranks come back unchanged.
      (The reference stops checking at the first larger dim, slices, and then fails on the element
      count; every dim is checked first here so the error shows the unsliced shape. Same outcome.)

    ``context`` prefixes error messages (e.g. "left has ... after NC1HWC0->NCHW").
    """
    a_shape, g_shape = tuple(array.shape), as_shape(golden_shape)
    prefix = f"{context}: " if context else ""
    if len(a_shape) < len(g_shape):
        if _strip_ones(a_shape) != _strip_ones(g_shape):
            raise LayoutError(
                f"{prefix}the converted shape {shape_text(a_shape)} has fewer dims than the golden "
                f"{shape_text(g_shape)} and they differ in more than 1s"
            )
        return array
    padded_a = a_shape + (1,) * (max(4, len(a_shape)) - len(a_shape))
    padded_g = g_shape + (1,) * (len(padded_a) - len(g_shape))
    ones = sum(1 for d in a_shape if d == 1)
    if array.size == math.prod(g_shape) and ones >= len(a_shape) - 1:
        return array
    for axis, (a_dim, g_dim) in enumerate(zip(padded_a, padded_g)):
        if a_dim < g_dim:
            raise LayoutError(
                f"{prefix}dim {axis} of the converted shape {shape_text(a_shape)} is {a_dim}, "
                f"smaller than the golden's {g_dim} in {shape_text(g_shape)}"
            )
    if padded_a == padded_g:
        return array
    if paddable is not None:
        for axis, (a_dim, g_dim) in enumerate(zip(padded_a, padded_g)):
            if a_dim != g_dim and axis not in paddable:
                raise LayoutError(
                    f"{prefix}dim {axis} of the converted shape {shape_text(a_shape)} is {a_dim}, but the "
                    f"golden's is {g_dim} in {shape_text(g_shape)}: that axis holds no layout padding, "
                    "so the shapes really differ (not cropped)"
                )
    if len(padded_a) not in (4, 5):
        return array
    return array.reshape(padded_a)[tuple(slice(0, d) for d in padded_g)]


@dataclass(frozen=True)
class Route:
    """Where one mode sends a pair (steps 3-4): ``destination``, the format both sides go to, and
    ``converted``, whether the left data is converted to it (step 5) rather than used flat (step 4)."""

    destination: str
    converted: bool


@dataclass(frozen=True)
class LayoutDecision:
    """The layout decision for one pair, made once on metadata (:func:`decide_layout`) and applied
    by both the eager path (:func:`prepare_decided`) and the zero-copy one
    (:func:`convert.layouts.lazy.plan_decided`), so the two can never decide differently.

    ``left_format`` / ``golden_format``: format keys, the golden one after step 1 (default and
    NCHW/NHWC label fix); ``target``: T (the golden shape when none is given); ``group``: the
    FRACTAL_Z group of the left data (1 when ungrouped); ``network`` / ``detail``: the routes of
    network mode and of detail (single-op) mode.
    """

    left_format: str
    left_shape: Shape
    golden_format: str
    golden_shape: Shape
    target: Shape
    group: int
    network: Route
    detail: Route


def decide_layout(
    left_format: object,
    left_shape: Sequence[int],
    golden_format: object,
    *,
    golden_shape: Sequence[int],
    target_shape: Sequence[int] | None = None,
    sub_format: int = 0,
) -> LayoutDecision:
    """The :class:`LayoutDecision` of a pair (steps 1, 3 and 4), from metadata only.

    Arguments as :func:`prepare_pair`'s (``golden_shape`` required here). Raises what
    :func:`resolve_golden_format` raises (LayoutError for an unknown golden format).
    """
    left_fmt = format_key(left_format)
    s_left = as_shape(left_shape)
    s_gold = as_shape(golden_shape)
    target = as_shape(target_shape) or s_gold
    gold_fmt = resolve_golden_format(golden_format, left_fmt, target, s_gold)
    group = int(sub_format) if sub_format and int(sub_format) >= 2 else 1
    return LayoutDecision(
        left_format=left_fmt, left_shape=s_left, golden_format=gold_fmt, golden_shape=s_gold, target=target,
        group=group, network=_route(left_fmt, gold_fmt, s_left, detail=False),
        detail=_route(left_fmt, gold_fmt, s_left, detail=True),
    )


def prepare_pair(
    left: np.ndarray,
    left_format: object,
    left_shape: Sequence[int],
    golden: np.ndarray,
    golden_format: object,
    *,
    target_shape: Sequence[int] | None = None,
    golden_shape: Sequence[int] | None = None,
    sub_format: int = 0,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
    detail: bool = False,
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Return ``(left_flat, golden_flat, left_shape_after)`` ready for the metrics.

    ``left`` is the left data (flat or shaped) in ``left_format`` with dump shape ``left_shape``;
    ``golden`` the golden data labelled ``golden_format`` (from the rule; empty or RESERVED means
    the left format). ``target_shape`` is T (the rule's ``origin_shape``, or the left tensor's
    ``original_shape``); ``golden_shape`` defaults to ``golden.shape``. ``detail=True`` is
    single-op mode (both sides converted). The third item is the final left shape (the reference's
    Shape column): the converted-and-sliced shape, or ``(n,)`` when nothing was converted
    (:attr:`Route.converted` says which; vcompare's Shape column: ``compare.engine._shape_column``).

    :func:`decide_layout` then :func:`prepare_decided`; :func:`convert.layouts.lazy.plan_pair` is
    the zero-copy twin (the same decision, lazy views).
    """
    golden = np.asarray(golden)
    decision = decide_layout(left_format, left_shape, golden_format,
                             golden_shape=golden.shape if golden_shape is None else golden_shape,
                             target_shape=target_shape, sub_format=sub_format)
    return prepare_decided(decision, left, golden, plugins=plugins, detail=detail)


def prepare_decided(
    decision: LayoutDecision,
    left: np.ndarray,
    golden: np.ndarray,
    *,
    plugins: Mapping[tuple[str, str], Converter] | None = None,
    detail: bool = False,
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """:func:`prepare_pair` for a pair whose :class:`LayoutDecision` is already made."""
    a, g, shape = apply_decision(decision, np.asarray(left), np.asarray(golden), plugins=plugins, detail=detail,
                                 convert=convert_layout)
    return a.reshape(-1), g.reshape(-1), shape


def apply_decision(decision: LayoutDecision, x, y, *, plugins, detail: bool, convert):
    """Steps 4-7 of ``decision`` on arrays or lazy views: ``(left, golden, shape)`` unflattened.

    ``x``/``y`` support ``shape``, ``size``, ``ndim``, ``reshape``, ``transpose`` and
    leading-block slicing; ``convert`` is :func:`convert_layout` or its lazy twin.
    """
    left_fmt, s_left, s_gold = decision.left_format, decision.left_shape, decision.golden_shape
    route = decision.detail if detail else decision.network
    scalar = is_scalar_like(s_left)
    if not route.converted:
        why = "scalar-like shape" if scalar else f"{format_spelling(left_fmt) or 'unformatted'} data, ND destination"
        how = f"unconverted ({why})"
        a = x.reshape(-1)
        g = y.reshape(-1)
        if a.size != g.size:
            raise LayoutError(
                f"element counts differ: left has {a.size} elements {shape_text(s_left)}, golden has "
                f"{g.size} {shape_text(s_gold)}; the left data is used {how}, so it holds no layout "
                "padding that could be removed (not cropped)"
            )
        slice_shape = s_gold
        paddable: frozenset[int] = frozenset()
    else:
        left_dst = route.destination
        how = f"after {left_fmt}->{left_dst}"
        a = convert(x, left_fmt, left_dst, s_left, decision.target, group=decision.group, plugins=plugins)
        g = convert(y, decision.golden_format, route.destination, s_gold, s_gold, plugins=plugins)
        slice_shape = tuple(g.shape)
        known = paddable_axes(left_fmt, left_dst, a.ndim)
        if known is None:
            how += " (no axis of this conversion is known to hold layout padding)"
        paddable = known or frozenset()

    def context(arr) -> str:
        return (
            f"left has {arr.size} elements {shape_text(arr.shape)} {how}, "
            f"golden has {g.size} {shape_text(slice_shape)}"
        )

    if left_fmt != "ND" or (not scalar and a.size != g.size):
        a = slice_to_golden(a, slice_shape, context=context(a), paddable=paddable)
    if a.size != g.size:
        raise LayoutError(context(a))
    return a, g, tuple(int(d) for d in a.shape)


def _route(left_fmt: str, gold_fmt: str, left_shape: Shape, *, detail: bool) -> Route:
    """The destination (step 3) and whether the left data is converted (step 5) or used flat (step 4)."""
    if not detail or left_fmt == "FRACTAL_Z":
        destination = gold_fmt
    elif left_fmt in _DEPTH_FORMATS:
        destination = "NCDHW"
    else:
        destination = "NCHW"
    flat = (destination == "ND" and left_fmt not in _ND_CONVERTED) or is_scalar_like(left_shape)
    return Route(destination=destination, converted=not flat)

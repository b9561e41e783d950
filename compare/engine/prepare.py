"""Bringing the two tensors of a pair to one layout: the decisions shared by the network engine
(:func:`compare.engine.compare_pair`) and single-operator mode
(:func:`compare.runs.single_op.prepare_operator`), so that a row of the network report and the
element-wise detail of the same tensor always compare the same elements.

Policy, in order:

1. **No conversion** (``pair.convert`` False: NPU vs NPU without a rule, MindSpore or TF-NPU
   pairs): both tensors are used flat, in their own order; different element counts are a
   :class:`~compare.errors.ShapeError` (``element counts differ: ...``).
2. **The golden layout.** The fusion rule's golden format when it gives one. A device dump paired
   by name with a framework golden (``RESERVED``, a ``.npy`` without layout information) assumes
   the framework's plain layout (:func:`convert.layouts.assumed_golden_format`: the left format
   when it is a plain axis format, else NCHW / NCDHW / ND by the golden rank) and says so
   (:attr:`LayoutRequest.assumed`). Otherwise no golden format (the left one is kept).
3. **Conversion** by the pair's :class:`~convert.layouts.LayoutDecision`: the network engine
   converts to the golden layout (its ``network`` route); single-op (``detail=True``, its
   ``detail`` route) to the layout its coordinates are printed in (NCDHW / the golden format for
   FRACTAL_Z / NCHW).

A :class:`LayoutRequest` is a closed record of :func:`prepare_pair`'s arguments for one pair. Its
:attr:`LayoutRequest.decision` (:func:`convert.layouts.decide_layout`: the golden-format fix and
the destinations) is made once, on first use, and the eager preparation
(:meth:`LayoutRequest.prepare`), the engine's zero-copy plan (:meth:`LayoutRequest.plan`), the
Shape column and single-op's coordinates all read that one decision;
:meth:`LayoutRequest.plan_key` says what a cached plan (and the decision it was made with)
depends on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from convert.layouts import LayoutDecision, assumed_golden_format, decide_layout, prepare_decided
from convert.layouts.lazy import LazyView, plan_decided

from ..errors import ShapeError
from ..records import Pair

#: The golden-file format that carries no layout information (framework ``.npy``).
NO_LAYOUT = "RESERVED"


@dataclass(frozen=True)
class PreparedPair:
    """Both tensors of a pair, flat and aligned element for element.

    ``shape``: the shape the elements index (the prepared shape of the conversion, the left
    shape when used flat); ``golden_format``: the golden layout after defaults (``""`` when
    used flat); ``converted``: whether the pair went through the layout step (policy steps 2-3)
    rather than being used flat (step 1).
    """

    x: np.ndarray
    y: np.ndarray
    shape: tuple[int, ...]
    golden_format: str
    converted: bool


@dataclass(frozen=True)
class LayoutRequest:
    """The arguments of :func:`convert.layouts.prepare_pair` for one pair (policy step 2 applied).

    ``assumed``: the golden format is vcompare's assumption, not the rule's (a note for the user).
    """

    left: np.ndarray
    left_format: str
    left_shape: tuple[int, ...]
    right: np.ndarray
    golden_format: str
    target_shape: tuple[int, ...] | None
    golden_shape: tuple[int, ...]
    sub_format: int
    plugins: Mapping[tuple[str, str], Any] | None
    assumed: bool

    @cached_property
    def decision(self) -> LayoutDecision:
        """The pair's layout decision, made on first use and then reused (raises its LayoutError /
        ValueError each time it is asked for while it cannot be made)."""
        return decide_layout(self.left_format, self.left_shape, self.golden_format, golden_shape=self.golden_shape,
                             target_shape=self.target_shape, sub_format=self.sub_format)

    def prepare(self, *, detail: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        """:func:`convert.layouts.prepare_decided` on this request's decision: ``(left flat,
        golden flat, shape)``; raises LayoutError / ValueError."""
        return prepare_decided(self.decision, self.left, self.right, plugins=self.plugins, detail=detail)

    def plan(self) -> tuple[LazyView, LazyView, tuple[int, ...]]:
        """:func:`convert.layouts.lazy.plan_decided` on this request's decision: ``(left view,
        right view, shape)``; raises LayoutError / ValueError, or ``Unsupported`` when no zero-copy
        plan applies."""
        return plan_decided(self.decision, self.left, self.right, plugins=self.plugins)

    def plan_key(self) -> tuple | None:
        """What a zero-copy plan depends on -- shapes, formats and layout options, never the
        data -- or None when it must not be cached (custom converters, arrays that are not
        C-contiguous ndarrays)."""
        left, right = self.left, self.right
        if self.plugins:
            return None
        if not (isinstance(left, np.ndarray) and isinstance(right, np.ndarray)):
            return None
        if not (left.flags.c_contiguous and right.flags.c_contiguous):
            return None
        return (left.shape, left.dtype.itemsize, self.left_format, self.left_shape, right.shape,
                right.dtype.itemsize, self.golden_format, self.target_shape, self.golden_shape, self.sub_format)


def layout_request(pair: Pair, left: np.ndarray, right: np.ndarray, *,
                   plugins: Mapping[tuple[str, str], Any] | None = None) -> LayoutRequest:
    """The layout request of a converted-mode pair whose tensors are ``left`` / ``right``."""
    assert pair.left is not None and pair.right is not None
    golden_format = pair.golden_format or ""
    assumed = False
    if not golden_format and pair.right.format == NO_LAYOUT != pair.left.format:  # dump vs .npy by name
        golden_format = assumed_golden_format(pair.left.format, np.ndim(right))
        assumed = True
    target = tuple(int(d) for d in pair.target_shape) if pair.target_shape is not None else None
    return LayoutRequest(left=left, left_format=str(pair.left.format), left_shape=tuple(pair.left.shape),
                         right=right, golden_format=golden_format, target_shape=target,
                         golden_shape=tuple(np.shape(right)), sub_format=pair.left.sub_format, plugins=plugins,
                         assumed=assumed)


def prepare_flat(pair: Pair, left: np.ndarray, right: np.ndarray) -> PreparedPair:
    """Policy step 1: both tensors flat; raises ShapeError when their element counts differ."""
    assert pair.left is not None and pair.right is not None
    x, y = np.ravel(left), np.ravel(right)
    if x.size != y.size:
        raise ShapeError(f"element counts differ: left {x.size} {list(pair.left.shape)}, "
                         f"right {y.size} {list(pair.right.shape)}")
    return PreparedPair(x=x, y=y, shape=tuple(int(d) for d in pair.left.shape), golden_format="", converted=False)


def prepare(pair: Pair, left: np.ndarray, right: np.ndarray, *,
            plugins: Mapping[tuple[str, str], Any] | None = None, detail: bool = False) -> PreparedPair:
    """Both tensors of ``pair`` prepared by the module's policy.

    Raises ShapeError (flat counts differ), LayoutError / ValueError (no conversion between the
    two layouts) -- the engine turns them into the row's reason, single-op into its error.
    """
    if not pair.convert:
        return prepare_flat(pair, left, right)
    request = layout_request(pair, left, right, plugins=plugins)
    x, y, shape = request.prepare(detail=detail)
    return PreparedPair(x=x, y=y, shape=tuple(int(d) for d in shape),
                        golden_format=request.decision.golden_format, converted=True)


__all__ = ["LayoutRequest", "NO_LAYOUT", "PreparedPair", "layout_request", "prepare", "prepare_flat"]

"""The plots of the HTML report (:mod:`compare.reports.html`), drawn with matplotlib as inline SVG.

Every function takes arrays that the report already holds (metrics the engine computed, element
errors the caller sampled) and returns the text of one ``<svg>`` element; nothing here computes
a metric. Plots only place numbers: log axes cannot show 0, so exact zeros are drawn on a *floor*
one decade below the smallest positive value and labelled there; NaN / infinity are counted and
marked, never dropped silently.

Matplotlib is used through :class:`matplotlib.figure.Figure` (no pyplot: no global figure list,
no GUI backend); the SVG is made reproducible (a fixed ``svg.hashsalt`` per figure, no date),
its text kept as text (``svg.fonttype = none``: small, crisp, searchable) and stripped of the XML
prolog, metadata and ``<g id>`` names so several figures can sit in one HTML document.

Colours are the Okabe-Ito palette (safe for colour-blind readers and readable in print); every
coloured mark also has its own marker shape or hatch and a legend entry.
"""

from __future__ import annotations

import io
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Okabe-Ito colours.
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
ORANGE = "#E69F00"
SKY = "#56B4E9"
BLACK = "#000000"
GREY = "#777777"

#: Above this many operators the trend lines are thinned (see :func:`envelope`).
TREND_POINTS = 2000
#: At most this many highlighted operators get their own marker.
HIGHLIGHT_MARKERS = 2000
#: Operators drawn with a marker on every point below this count.
DOTTED_BELOW = 300

_RC = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9.0,
    "axes.grid": True,
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.5,
    "path.simplify": True,
}

#: The SVG writer reads ``svg.hashsalt`` / ``svg.fonttype`` from matplotlib's global settings:
#: figures are drawn one at a time so that threads of one process never mix their settings.
_DRAWING = threading.Lock()

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_GROUP_ID = re.compile(r'<g id="[^"]*"')


@dataclass(frozen=True)
class Trend:
    """The per-operator series of the trend plot, one entry per operator in graph order.

    ``cosine`` / ``error``: worst CosineSimilarity and RelativeEuclideanDistance, NaN where not
    computed; ``cosine_bad`` / ``error_bad``: True where the value was computed and is NaN or
    infinite; ``origin`` / ``input_differs``: the operators to highlight; ``first_divergence``:
    the x of the first divergence (None: nothing diverges, or no localisation).
    """

    positions: np.ndarray
    cosine: np.ndarray
    error: np.ndarray
    cosine_bad: np.ndarray
    error_bad: np.ndarray
    origin: np.ndarray
    input_differs: np.ndarray
    first_divergence: int | None = None
    #: A statistics comparison: ``error`` is each call's statistics error (the largest of
    #: MaxRelDiff, MinRelDiff, L2NormRelDiff) and the plot has that panel only (no cosine).
    statistics: bool = False


@dataclass(frozen=True)
class Sample:
    """One tensor's sampled elements: absolute errors, golden magnitudes, and the unit roundoff
    of its lower-precision data type (None when not a float type)."""

    abs_error: np.ndarray
    golden: np.ndarray
    roundoff: float | None = None
    roundoff_dtype: str = ""


# ------------------------------------------------------------------------------ SVG plumbing


@contextmanager
def _style(salt: str) -> Iterator[None]:
    import matplotlib  # here: matplotlib is an optional extra (html), loaded only to draw

    # errstate: log axes over data near the float64 limits overflow their margins, harmlessly
    with _DRAWING, matplotlib.rc_context({**_RC, "svg.hashsalt": salt}), np.errstate(all="ignore"):
        yield


def _figure(width: float, height: float, rows: int = 1, right: float = 0.25) -> tuple[Any, list[Any]]:
    """A figure of ``rows`` axes sharing x, with fixed margins in inches (``right``: room for a
    colour bar). Fixed margins, not a layout engine: that halves the drawing time."""
    from matplotlib.figure import Figure  # here: an optional extra (html), loaded only to draw

    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(left=0.8 / width, right=1.0 - right / width, bottom=0.5 / height, top=1.0 - 0.3 / height,
                           hspace=0.1)
    axes = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return figure, list(axes)


def _svg(figure: Any) -> str:
    """The figure as an inline ``<svg>`` element (no prolog, metadata or group ids); the figure
    is cleared afterwards."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None}, dpi=100)
    figure.clear()
    text = _PROLOG.sub("", buffer.getvalue(), count=1)
    text = _METADATA.sub("", text, count=1)
    return _GROUP_ID.sub("<g", text).strip()


# ------------------------------------------------------------------------------ log floors


#: Log axes draw positive values within these bounds (beyond, at the bound): the axis margins of
#: data near the float64 limits would overflow, and a floor below a subnormal would be 0.
LOG_LOW, LOG_HIGH = 1e-200, 1e200


def log_clip(values: np.ndarray) -> np.ndarray:
    """Positive values held within ``[LOG_LOW, LOG_HIGH]``; zeros, negatives and NaN unchanged."""
    return np.where(values > 0, np.clip(values, LOG_LOW, LOG_HIGH), values)


def log_floor(values: np.ndarray) -> float:
    """Where exact zeros are drawn on a log axis: a decade below the smallest positive value's
    decade (``1e-12`` when nothing is positive)."""
    positive = values[np.isfinite(values) & (values > 0)]
    if positive.size == 0:
        return 1e-12
    return float(10.0 ** (math.floor(math.log10(float(positive.min()))) - 1))


def _mark_floor(axis: Any, floor: float, text: str, *, vertical: bool = False) -> None:
    """A dotted line at the floor, labelled (e.g. ``error = 0``)."""
    box = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
    if vertical:
        axis.axvline(floor, color=GREY, linestyle=":", linewidth=0.8)
        axis.annotate(text, (floor, 0.5), xycoords=("data", "axes fraction"), rotation=90, ha="center",
                      va="center", fontsize=7, color="#333333", bbox=box)
    else:
        axis.axhline(floor, color=GREY, linestyle=":", linewidth=0.8)
        axis.annotate(text, (1.0, floor), xycoords=("axes fraction", "data"), xytext=(-2, 0),
                      textcoords="offset points", ha="right", va="center", fontsize=7, color="#333333", bbox=box)


# ------------------------------------------------------------------------------ trend


def envelope(values: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the finite ``values`` to draw: all of them up to ``limit``, else the lowest and
    the highest of each of ``limit // 2`` consecutive buckets (so no spike disappears)."""
    finite = np.flatnonzero(np.isfinite(values))
    if finite.size <= limit:
        return finite
    keep: list[int] = []
    for bucket in np.array_split(finite, max(1, limit // 2)):
        chunk = values[bucket]
        keep.extend((int(bucket[int(np.argmin(chunk))]), int(bucket[int(np.argmax(chunk))])))
    return np.unique(np.asarray(keep, dtype=np.int64))


def thin(indices: np.ndarray, limit: int) -> np.ndarray:
    """At most ``limit`` of ``indices``, evenly spread."""
    if indices.size <= limit:
        return indices
    return np.unique(indices[np.linspace(0, indices.size - 1, limit).astype(np.int64)])


def _plot_series(axis: Any, x: np.ndarray, y: np.ndarray, label: str) -> None:
    keep = envelope(y, TREND_POINTS)
    marker = "." if x.size < DOTTED_BELOW else None
    axis.plot(x[keep], y[keep], color=BLUE, linewidth=0.9, marker=marker, markersize=3, label=label)


def _highlight(axis: Any, trend: Trend, y: np.ndarray) -> None:
    for mask, colour, marker, label in ((trend.origin, VERMILLION, "^", "origin"),
                                        (trend.input_differs, PURPLE, "D", "input-differs")):
        chosen = thin(np.flatnonzero(mask & np.isfinite(y)), HIGHLIGHT_MARKERS)
        if chosen.size:
            axis.scatter(trend.positions[chosen], y[chosen], s=22, marker=marker, facecolors=colour,
                         edgecolors=BLACK, linewidths=0.5, zorder=3, label=label)


def _bad_marks(axis: Any, x: np.ndarray, bad: np.ndarray, at_top: bool) -> None:
    chosen = thin(np.flatnonzero(bad), HIGHLIGHT_MARKERS)
    if chosen.size:
        y = np.full(chosen.size, 0.97 if at_top else 0.03)
        axis.scatter(x[chosen], y, transform=axis.get_xaxis_transform(), marker="x", s=20, color=BLACK,
                     zorder=3, label="nan / inf (computed)")


def _legend(figure: Any, axes: list[Any]) -> None:
    """One legend above the plots, each label once."""
    entries: dict[str, Any] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        figure.legend(list(entries.values()), list(entries), loc="upper center", ncol=len(entries), fontsize=7,
                      frameon=False, bbox_to_anchor=(0.5, 1.0))


def _divergence_line(axes: list[Any], position: int | None) -> None:
    if position is None:
        return
    for axis in axes:
        axis.axvline(position, color=BLACK, linestyle="--", linewidth=1.0)
    axes[0].annotate(f"first divergence (#{position})", (position, 1.0), xycoords=("data", "axes fraction"),
                     xytext=(3, -3), textcoords="offset points", ha="left", va="top", fontsize=8,
                     bbox={"boxstyle": "square,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def _cosine_axis(axis: Any, trend: Trend, x: np.ndarray) -> None:
    _plot_series(axis, x, trend.cosine, "worst output of each operator")
    _highlight(axis, trend, trend.cosine)
    _bad_marks(axis, x, trend.cosine_bad, at_top=False)
    axis.set_ylabel("CosineSimilarity")
    if not np.any(np.isfinite(trend.cosine)):
        _nothing(axis, "no finite CosineSimilarity")


#: The y label of a statistics comparison's error panel (the largest of MaxRelDiff, MinRelDiff, L2NormRelDiff).
STATISTICS_ERROR = "statistics error"


def _error_axis(axis: Any, trend: Trend, x: np.ndarray, label: str = "RelativeEuclideanDistance") -> None:
    """The error (RelativeEuclideanDistance, or ``label``) on a log scale, exact zeros on the
    floor (negatives not drawn)."""
    clipped = log_clip(trend.error)
    floor = log_floor(clipped)
    error = np.where(clipped > 0, clipped, np.where(clipped == 0, floor, np.nan))
    _plot_series(axis, x, error, "worst output of each operator")
    _highlight(axis, trend, error)
    _bad_marks(axis, x, trend.error_bad, at_top=True)
    axis.set_ylabel(label)
    if not np.any(np.isfinite(error)):
        _nothing(axis, f"no finite {label}")
        return
    axis.set_yscale("log")
    if np.any(clipped == 0):
        _mark_floor(axis, floor, "error = 0")


def trend_svg(trend: Trend, salt: str = "vcompare-trend") -> str:
    """CosineSimilarity (top) and RelativeEuclideanDistance (bottom, log) along graph order; for a
    statistics comparison (``trend.statistics``) the statistics error (log) alone."""
    if trend.statistics:
        with _style(salt):
            figure, (axis,) = _figure(10.0, 3.2)
            _error_axis(axis, trend, trend.positions.astype(np.float64), STATISTICS_ERROR)
            axis.set_xlabel("call position (graph order)")
            _divergence_line([axis], trend.first_divergence)
            _legend(figure, [axis])
            return _svg(figure)
    with _style(salt):
        figure, (top, bottom) = _figure(10.0, 5.2, rows=2)
        x = trend.positions.astype(np.float64)
        _cosine_axis(top, trend, x)
        _error_axis(bottom, trend, x)
        bottom.set_xlabel("operator position (graph order)")
        _divergence_line([top, bottom], trend.first_divergence)
        _legend(figure, [top, bottom])
        return _svg(figure)


# ------------------------------------------------------------------------------ element errors


def _log_edges(values: np.ndarray, bins: int) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low / 10.0, high * 10.0
    return np.logspace(math.log10(low), math.log10(high), bins + 1)


def histogram_svg(abs_error: np.ndarray, salt: str, bins: int = 60) -> str:
    """Histogram of the absolute errors on log-x bins; exact zeros get their own hatched bar one
    decade left of the smallest positive error, NaN / infinity are counted in the legend."""
    errors = np.abs(np.asarray(abs_error, dtype=np.float64).ravel())
    finite = log_clip(errors[np.isfinite(errors)])
    positive, zeros = finite[finite > 0], int(np.count_nonzero(finite == 0))
    with _style(salt):
        figure, (axis,) = _figure(6.0, 3.0)
        if positive.size:
            axis.hist(positive, bins=_log_edges(positive, bins), log=True, histtype="stepfilled", color=SKY,
                      edgecolor=BLUE, linewidth=0.8, label=f"error > 0 ({positive.size})")
        if zeros:
            floor = log_floor(finite)
            axis.bar([floor], [zeros], width=[floor * 0.6], log=True, color="white", edgecolor=BLACK, hatch="///",
                     label=f"error = 0 ({zeros}), drawn at {floor:.0e}")
        axis.set_xscale("log")
        axis.set_xlabel("absolute error |x - y|")
        axis.set_ylabel("elements")
        nonfinite = errors.size - finite.size
        if finite.size:
            axis.legend(title=f"nan / inf: {nonfinite}" if nonfinite else None, fontsize=7, title_fontsize=7,
                        loc="upper right")
        else:
            _nothing(axis, f"no finite error to draw ({nonfinite} nan / inf)")
        return _svg(figure)


def _nothing(axis: Any, text: str) -> None:
    """Say in the plot why it is empty."""
    axis.text(0.5, 0.5, text, transform=axis.transAxes, ha="center", va="center", fontsize=9)


def _floored(values: np.ndarray) -> tuple[np.ndarray, float, bool]:
    floor = log_floor(values)
    zero = values == 0
    return np.where(zero, floor, values), floor, bool(zero.any())


def magnitude_svg(sample: Sample, salt: str, gridsize: int = 50) -> str:
    """Absolute error against golden magnitude ``|y|``, log-log, as a hexbin density (rasterised
    cells, vector axes). Zeros sit on labelled floors; the unit-roundoff line ``u * |y|`` of the
    data type shows what rounding alone would give."""
    golden = np.abs(np.asarray(sample.golden, dtype=np.float64).ravel())
    errors = np.abs(np.asarray(sample.abs_error, dtype=np.float64).ravel())
    usable = np.isfinite(golden) & np.isfinite(errors)
    golden, errors = log_clip(golden[usable]), log_clip(errors[usable])
    with _style(salt):
        figure, (axis,) = _figure(6.0, 4.0, right=0.9)
        if golden.size:
            x, x_floor, x_zero = _floored(golden)
            y, y_floor, y_zero = _floored(errors)
            cells = axis.hexbin(x, y, xscale="log", yscale="log", bins="log", gridsize=gridsize, mincnt=1,
                                cmap="viridis", linewidths=0.0, rasterized=True)
            figure.colorbar(cells, ax=axis, label="elements per cell (log scale)")
            if x_zero:
                _mark_floor(axis, x_floor, "|golden| = 0", vertical=True)
            if y_zero:
                _mark_floor(axis, y_floor, "error = 0")
            _roundoff_line(axis, sample, x)
        else:
            _nothing(axis, "no element with a finite error and golden value")
        axis.set_xlabel("golden magnitude |y|")
        axis.set_ylabel("absolute error |x - y|")
        skipped = int(np.count_nonzero(~usable))
        if skipped:
            axis.set_title(f"{skipped} element{'' if skipped == 1 else 's'} with nan / inf not drawn", fontsize=8)
        return _svg(figure)


def _roundoff_line(axis: Any, sample: Sample, x: np.ndarray) -> None:
    if sample.roundoff is None:
        return
    span = np.array([float(x.min()), float(x.max())])
    axis.plot(span, span * sample.roundoff, color=VERMILLION, linestyle="--", linewidth=1.0,
              label=f"u·|y|, u = {sample.roundoff:.3g} ({sample.roundoff_dtype})")
    axis.legend(loc="upper left", fontsize=7)


__all__ = ["LOG_HIGH", "LOG_LOW", "Sample", "Trend", "envelope", "histogram_svg", "log_clip", "log_floor",
           "magnitude_svg", "thin", "trend_svg"]

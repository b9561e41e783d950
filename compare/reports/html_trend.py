"""The trend section of the HTML report (:mod:`compare.reports.html`): each operator's worst
output along graph order (CosineSimilarity and RelativeEuclideanDistance, or a statistics
comparison's statistics error), drawn by :func:`compare.reports.html_figures.trend_svg`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..diverge.records import Localisation, Verdict
from .html_figures import Trend, trend_svg
from .html_operators import OpLine
from .html_text import esc


def _series(values: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """Values as floats (NaN where not computed or not finite) and where they were computed and
    came out NaN / infinite."""
    array = np.asarray([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    computed = np.asarray([v is not None for v in values], dtype=bool)
    finite = np.isfinite(array)
    return np.where(finite, array, np.nan), computed & ~finite


def trend(lines: Sequence[OpLine], localisation: Localisation | None, statistics: bool = False) -> Trend:
    cosine, cosine_bad = _series([line.cosine for line in lines])
    error, error_bad = _series([line.worst_relative for line in lines])
    first = localisation.first_divergence if localisation is not None else None
    return Trend(
        positions=np.asarray([line.position for line in lines], dtype=np.int64),
        cosine=cosine, error=error, cosine_bad=cosine_bad, error_bad=error_bad,
        origin=np.asarray([line.verdict is Verdict.ORIGIN for line in lines], dtype=bool),
        input_differs=np.asarray([line.verdict is Verdict.INPUT_DIFFERS for line in lines], dtype=bool),
        first_divergence=None if first is None else first.position, statistics=statistics,
    )


def trend_section(lines: Sequence[OpLine], localisation: Localisation | None, statistics: bool = False) -> str:
    order = "graph order" if localisation is not None else "row order"
    if not lines:
        return '<section id="trend"><h2>Along the graph</h2><p>No operators.</p></section>'
    first = localisation.first_divergence if localisation is not None else None
    marked = (f" The dashed line marks the first divergence, <span class=\"op\">{esc(first.op)}</span> "
              f"(#{first.position}).") if first is not None else ""
    what = ("Statistics error (the largest of MaxRelDiff, MinRelDiff and L2NormRelDiff; log scale) of the worst "
            "output" if statistics else
            "Worst output CosineSimilarity (top) and RelativeEuclideanDistance (bottom, log scale)")
    return (f'<section id="trend"><h2>Along the graph</h2><figure class="fig">'
            f"{trend_svg(trend(lines, localisation, statistics))}"
            f"<figcaption>{what} "
            f"of each operator, x = position in {order}; ▲ origin, ◆ input-differs, × nan/inf, exact zeros on the "
            f"dotted floor; long runs are thinned to each bucket's lowest and highest value.{marked}"
            "</figcaption></figure></section>")


__all__ = ["trend", "trend_section"]

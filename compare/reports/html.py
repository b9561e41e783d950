"""``report.html``: one self-contained static HTML page of a run (needs matplotlib: ``vcompare[html]``).

The page has no server and loads nothing at view time: plots are inline SVG, the CSS and the few
lines of JavaScript (table sorting, nothing else) are inline. It shows, top to bottom:

- a header: the inputs and options as the user gave them, the tool version, the creation time;
- a summary (:mod:`.html_summary`): rows per status, operators per verdict, the first divergence
  (its worst output, the bounds it broke, its inputs' metrics, the source line that wrote it) and
  the first NaN/Inf tensor;
- a trend plot (:mod:`.html_trend`, drawn by :mod:`.html_figures`): worst CosineSimilarity and
  RelativeEuclideanDistance (log) of each operator along graph order, the first divergence
  marked, ``origin`` and ``input-differs`` operators highlighted; for a statistics comparison
  (statistics rows, ``MetricRow.kind``) the statistics error of each call's worst output instead
  (the localisation's error: the largest of MaxRelDiff, MinRelDiff, L2NormRelDiff), and the first
  divergence's tensors with their relative statistics differences;
- a sortable table with one row per operator (:mod:`.html_operators` groups the rows) and a
  collapsible table with one row per tensor (:mod:`.html_tables`);
- for each tensor whose element errors the caller sampled: a histogram of the absolute errors and
  a density of the error against the golden magnitude.

Every number printed here is one the engine or the localisation computed (nothing is computed);
every string from the data is HTML-escaped, control characters shown as escapes (``\\r``).
The same :class:`HtmlReport` always gives the same bytes but for its ``created`` text.

Size: a 10,000-operator run (one row each, 88-character op names) makes a 4.6 MB page; the trend
plot thins long runs to each bucket's lowest and highest value (~130 KB of SVG for 10,000
operators). Longer tables keep a window starting just before the first divergence
(:data:`.html_tables.OP_TABLE_LIMIT` operators; the tensor table what :data:`PAGE_BUDGET` leaves,
at least :data:`TENSOR_TABLE_MIN` characters), and say so; the CSV / JSON results hold every row.
Each tensor of ``element_errors`` adds ~130 KB (100,000 elements).

Numbers print as: CosineSimilarity with 9 significant digits (``0.999998231``), other metrics with
4 (``1.235e-05``); ``nan`` / ``inf`` for computed non-finite values; ``—`` for not computed
(:mod:`.html_text`, which escapes the strings too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from convert.signals import check_interrupted

from ..diverge.records import Localisation
from ..errors import OptionError
from ..records import MetricRow
from .files import atomic_write_text
from .html_figures import Sample, histogram_svg, magnitude_svg
from .html_operators import is_statistics, op_lines
from .html_summary import summary
from .html_tables import op_table, tensor_table
from .html_text import dtype_badge, esc
from .html_trend import trend_section

INSTALL_HINT = "pip install 'vcompare[html]'"
#: The page's size target (characters): the tensor table gets what the other parts leave, but at
#: least ``TENSOR_TABLE_MIN`` (a 10,000-row run with 80-character names fits whole, ~4.6 MB).
PAGE_BUDGET = 4_800_000
TENSOR_TABLE_MIN = 1_000_000


@dataclass(frozen=True)
class ElementErrors:
    """The sampled elements of one tensor (the caller keeps at most ~100k per tensor).

    ``abs_error``: ``|x - y|`` per element; ``golden``: the golden magnitudes ``|y|`` of the same
    elements (same length); ``elements``: the tensor's element count before sampling (None: not
    sampled, or unknown).
    """

    tensor_id: str
    op: str
    abs_error: np.ndarray = field(compare=False, repr=False)
    golden: np.ndarray = field(compare=False, repr=False)
    left_dtype: str | None = None
    right_dtype: str | None = None
    elements: int | None = None

    def __post_init__(self) -> None:
        if np.size(self.abs_error) != np.size(self.golden):
            raise ValueError(f"{self.tensor_id}: {np.size(self.abs_error)} errors but {np.size(self.golden)} "
                             "golden magnitudes")


@dataclass(frozen=True)
class HtmlReport:
    """Everything the HTML report shows (see the module docstring).

    ``rows``: the comparison rows; ``localisation``: the verdicts (None: a plain report in row
    order, no verdicts); ``element_errors``: sampled elements of the tensors to plot;
    ``inputs`` / ``options``: as the user gave them; ``created``: an ISO 8601 time.
    """

    rows: Sequence[MetricRow]
    localisation: Localisation | None = None
    element_errors: Sequence[ElementErrors] = ()
    inputs: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    title: str = "vcompare report"
    tool_version: str = ""
    created: str = ""


# ------------------------------------------------------------------------------ the page


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or :class:`OptionError` saying how to install it."""
    try:
        import matplotlib  # here: matplotlib is an optional extra (html)
        import matplotlib.figure  # noqa: F401  (the Figure class the plots use)
    except ImportError as exc:
        # a signal that arrived while a compiled module of matplotlib was initialising comes out
        # as an ImportError ("initialization failed"): the run stops for the signal, not for want of matplotlib
        check_interrupted()
        raise OptionError(f"the HTML report needs matplotlib ({exc}); {INSTALL_HINT}") from None
    return matplotlib


def key_value_table(items: Mapping[str, object], css: str = "kv") -> str:
    if not items:
        return "<p>—</p>"
    body = "".join(f"<tr><th>{esc(k)}<td>{esc(v)}" for k, v in items.items())
    return f'<table class="{css}">{body}</table>'


def header(data: HtmlReport) -> str:
    version = f"vcompare {esc(data.tool_version)}" if data.tool_version else "vcompare"
    return (f"<header><h1>{esc(data.title)}</h1>"
            f'<p class="meta">{version} · created <time>{esc(data.created)}</time></p>'
            f'<div class="cols"><section><h2>Inputs</h2>{key_value_table(data.inputs)}</section>'
            f"<section><h2>Options</h2>{key_value_table(data.options)}</section></div></header>")


# ------------------------------------------------------------------------------ element errors


def roundoff(*dtypes: str | None) -> tuple[float | None, str]:
    """The unit roundoff ``eps / 2`` of the lower-precision float type among ``dtypes``."""
    best: tuple[float | None, str] = (None, "")
    for name in dtypes:
        if not name:
            continue
        try:
            unit = float(ml_dtypes.finfo(getattr(ml_dtypes, name, None) or np.dtype(name)).eps) / 2.0
        except (TypeError, ValueError, AttributeError):
            continue
        if best[0] is None or unit > best[0]:
            best = (unit, name)
    return best


def _element_caption(entry: ElementErrors) -> str:
    drawn = np.size(entry.abs_error)
    of = f" of {entry.elements}" if entry.elements is not None and entry.elements != drawn else ""
    return (f'<span class="op">{esc(entry.tensor_id)}</span> (operator <span class="op">{esc(entry.op)}</span>) · '
            f"{dtype_badge(entry.left_dtype, entry.right_dtype)} · {drawn}{of} elements")


def element_section(entries: Sequence[ElementErrors]) -> str:
    if not entries:
        return ""
    parts = ['<section id="elements"><h2>Element errors</h2>']
    for k, entry in enumerate(entries):
        unit, unit_dtype = roundoff(entry.left_dtype, entry.right_dtype)
        sample = Sample(abs_error=entry.abs_error, golden=entry.golden, roundoff=unit, roundoff_dtype=unit_dtype)
        parts.append(f'<div class="el"><h3>{_element_caption(entry)}</h3><div class="cols">'
                     f'<figure class="fig hist">{histogram_svg(entry.abs_error, f"vcompare-hist-{k}")}'
                     "<figcaption>Absolute errors, log-x bins; the hatched bar counts exact zeros."
                     "</figcaption></figure>"
                     f'<figure class="fig mag">{magnitude_svg(sample, f"vcompare-mag-{k}")}'
                     "<figcaption>Error against golden magnitude (log-log density); dashed: the error rounding "
                     "alone gives.</figcaption></figure></div></div>")
    parts.append("</section>")
    return "".join(parts)


# ------------------------------------------------------------------------------ style and script

CSS = """
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111;background:#fff;margin:1em auto;
max-width:1500px;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:1px solid #bbb;margin:1.4em 0 .5em}
h3{font-size:1.05em}summary h2{display:inline;border:0}summary{cursor:pointer}
.meta,.hint,figcaption{color:#444;font-size:.9em}
.cols{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
table{border-collapse:collapse;font-size:12px;margin:.4em 0}caption{text-align:left;font-weight:600}
th,td{border:1px solid #c8c8c8;padding:2px 6px;text-align:left;vertical-align:top}
thead th{background:#eee;position:sticky;top:0}
.sort thead th{cursor:pointer}.sort th[aria-sort=ascending]::after{content:" ▲"}
.sort th[aria-sort=descending]::after{content:" ▼"}
.kv th{background:#f6f6f6;font-weight:600}.kv td{font-family:ui-monospace,monospace;word-break:break-all}
.op,.sort td:nth-child(2){font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
.ops td:nth-child(1),.ops td:nth-child(5),.ops td:nth-child(6),.ops td:nth-child(7){text-align:right;
font-variant-numeric:tabular-nums}
b.ok,b.or,b.in,b.id,b.nc,.d,.dx{display:inline-block;border:1px solid;border-radius:3px;padding:0 4px;
font-size:11px;font-weight:400;font-style:normal;white-space:nowrap}
.d,.dx{border-color:#999;background:#f4f4f4;font-family:ui-monospace,monospace}.dx{border-style:dashed}
.ok{border-color:#009E73;background:#e0f3ec;color:#00573f}.or{border-color:#D55E00;background:#fbe3d3;color:#8a3a00}
.in{border-color:#E69F00;background:#fcf0d6;color:#6b4a00}.id{border-color:#CC79A7;background:#f6e6ef;color:#7a2f5a}
.nc{border-color:#888;background:#eee;color:#444}
.fd{border-left:4px solid #D55E00;padding:.2em .8em;background:#fdf6f1}
pre{background:#f4f4f4;padding:.4em;overflow-x:auto}
.fig{margin:.5em 0}.fig svg{max-width:100%;height:auto}.el{break-inside:avoid}
@page{size:A4 landscape;margin:10mm}
@media print{body{font-size:9pt;max-width:none;margin:0}thead th{position:static}
.fig svg{width:100%;height:auto}.hist svg,.mag svg{width:12cm}tr,.fig,.fd{break-inside:avoid}
.hint{display:none}table{font-size:7.5pt}}
"""

#: Table sorting, the page's only script: click a header (again: reverse); numeric columns sort as
#: numbers, a computed ``nan`` first and a not-computed ``—`` last in either direction.
SCRIPT = """
(function(){
function key(s,n){if(!n)return s.toLowerCase();if(s==="nan")return NaN;
var v=s==="inf"?Infinity:s==="-inf"?-Infinity:parseFloat(s);return isNaN(v)?null:v}
function cmp(a,b,d){if(a===b||(a!==a&&b!==b))return 0;if(a===null)return 1;if(b===null)return -1;
if(a!==a)return -1;if(b!==b)return 1;return(a<b?-1:1)*d}
document.querySelectorAll("table.sort").forEach(function(t){t.tHead.addEventListener("click",function(e){
var th=e.target.closest("th");if(!th)return;var i=th.cellIndex,n=th.dataset.t==="n",
d=th.getAttribute("aria-sort")==="ascending"?-1:1,b=t.tBodies[0];
t.tHead.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort")});
th.setAttribute("aria-sort",d>0?"ascending":"descending");
var r=Array.prototype.map.call(b.rows,function(row,k){var c=row.cells[i];return[key(c?c.textContent:"",n),k,row]});
r.sort(function(x,y){return cmp(x[0],y[0],d)||x[1]-y[1]});var f=document.createDocumentFragment();
r.forEach(function(x){f.appendChild(x[2])});b.appendChild(f)})})})();
"""


def render_html(data: HtmlReport) -> str:
    """The page as text (matplotlib must be importable: :func:`require_matplotlib`)."""
    require_matplotlib()
    localisation = data.localisation
    lines = op_lines(data.rows, localisation)
    before = "".join((header(data), summary(data.rows, localisation),
                      trend_section(lines, localisation, is_statistics(data.rows)), op_table(lines, localisation)))
    after = element_section(data.element_errors)
    budget = max(TENSOR_TABLE_MIN, PAGE_BUDGET - len(before) - len(after))
    body = before + tensor_table(data.rows, localisation, budget) + after
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<meta name="generator" content="vcompare {esc(data.tool_version)}">'
            f"<title>{esc(data.title)}</title><style>{CSS}</style></head>\n<body>{body}\n"
            f"<script>{SCRIPT}</script></body></html>\n")


def write_html(path: str | PathLike[str], data: HtmlReport) -> None:
    """Write the report to ``path`` atomically.

    Raises :class:`OptionError` (``pip install 'vcompare[html]'``) when matplotlib is missing,
    before anything is written; :class:`~compare.errors.OutputError` when the file cannot be.
    """
    atomic_write_text(Path(path), render_html(data))


__all__ = ["ElementErrors", "HtmlReport", "INSTALL_HINT", "render_html", "require_matplotlib", "write_html"]

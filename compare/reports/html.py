"""``report.html``: one self-contained static HTML page of a run (needs matplotlib: ``vcompare[html]``).

The page has no server and loads nothing at view time: plots are inline SVG, the CSS and the few
lines of JavaScript (table sorting, nothing else) are inline. It shows, top to bottom:

- a header: the inputs and options as the user gave them, the tool version, the creation time;
- a summary: rows per status, operators per verdict, the first divergence (its worst output, the
  bounds it broke, its inputs' metrics, the source line that wrote it) and the first NaN/Inf tensor;
- a trend plot: worst CosineSimilarity and RelativeEuclideanDistance (log) of each operator along
  graph order, the first divergence marked, ``origin`` and ``input-differs`` operators highlighted;
  for a statistics comparison (statistics rows, ``MetricRow.kind``)
  the statistics error of each call's worst output instead (the localisation's error: the largest
  of MaxRelDiff, MinRelDiff, L2NormRelDiff), and the first divergence's tensors with their
  relative statistics differences;
- a sortable table with one row per operator and a collapsible table with one row per tensor;
- for each tensor whose element errors the caller sampled: a histogram of the absolute errors and
  a density of the error against the golden magnitude.

Every number printed here is one the engine or the localisation computed (nothing is computed);
every string from the data is HTML-escaped, control characters shown as escapes (``\\r``).
The same :class:`HtmlReport` always gives the same bytes but for its ``created`` text.

Size: a 10,000-operator run (one row each, 88-character op names) makes a 4.6 MB page; the trend
plot thins long runs to each bucket's lowest and highest value (~130 KB of SVG for 10,000
operators). Longer tables keep a window starting just before the first divergence
(:data:`OP_TABLE_LIMIT` operators; the tensor table what :data:`PAGE_BUDGET` leaves, at least
:data:`TENSOR_TABLE_MIN` characters), and say so; the CSV / JSON results hold every row. Each
tensor of ``element_errors`` adds ~130 KB (100,000 elements).

Numbers print as: CosineSimilarity with 9 significant digits (``0.999998231``), other metrics with
4 (``1.235e-05``); ``nan`` / ``inf`` for computed non-finite values; ``—`` for not computed.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import OptionError
from ..diverge.records import Localisation, OpVerdict, TensorCheck, Verdict
from ..records import MetricRow, RowKind, count_by_status
from .cells import encodable, shape_cell
from .files import atomic_write_text
from .html_figures import Sample, Trend, histogram_svg, magnitude_svg, trend_svg
from .stats import CHECKSUM_METRIC

INSTALL_HINT = "pip install 'vcompare[html]'"
COSINE = "CosineSimilarity"
RELATIVE = "RelativeEuclideanDistance"
NOT_COMPUTED = "—"
#: The metrics the evidence table of a statistics comparison shows (instead of cosine and RED).
STATS_EVIDENCE = ("MaxRelDiff", "MinRelDiff", "AvgRelDiff", "L2NormRelDiff")
#: The longest tables the page holds (about 230 bytes a line with 80-character op names): beyond,
#: a window of the lines from just before the first divergence (the CSV / JSON results hold every row).
OP_TABLE_LIMIT = 10_000
TENSOR_TABLE_LIMIT = 20_000
#: The page's size target (characters): the tensor table gets what the other parts leave, but at
#: least ``TENSOR_TABLE_MIN`` (a 10,000-row run with 80-character names fits whole, ~4.6 MB).
PAGE_BUDGET = 4_800_000
TENSOR_TABLE_MIN = 1_000_000

#: The badge of each verdict: its CSS class and a symbol (the marker of the trend plot).
VERDICT_MARKS = {
    Verdict.OK: ("ok", "✓"),
    Verdict.ORIGIN: ("or", "▲"),
    Verdict.INHERITED: ("in", "↓"),
    Verdict.INPUT_DIFFERS: ("id", "◆"),
    Verdict.NOT_COMPARED: ("nc", "○"),
}


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


@dataclass(frozen=True)
class OpLine:
    """One operator as the report shows it (a line of the operator table, a point of the plot)."""

    position: int
    op: str
    op_type: str | None
    verdict: Verdict | None
    error: float | None
    amplification: float | None
    cosine: float | None
    worst_relative: float | None
    left_dtype: str | None
    right_dtype: str | None
    shape: tuple[int, ...] | None
    source: str


# ------------------------------------------------------------------------------ text


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or :class:`OptionError` saying how to install it."""
    try:
        import matplotlib  # here: matplotlib is an optional extra (html)
        import matplotlib.figure  # noqa: F401  (the Figure class the plots use)
    except ImportError as exc:
        raise OptionError(f"the HTML report needs matplotlib ({exc}); {INSTALL_HINT}") from None
    return matplotlib


_CONTROL = {ord("\r"): "\\r", ord("\n"): "\\n", ord("\t"): "\\t"}


def _visible_char(ch: str) -> str:
    if ch.isprintable():
        return ch
    code = ord(ch)
    return _CONTROL.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str) -> str:
    """``text`` with control and other invisible characters written as escapes (``\\r``,
    ``\\x01``, ``\\u2028``) and unpaired surrogates as ``\\xNN`` (:func:`encodable`)."""
    text = encodable(text)
    return text if text.isprintable() else "".join(_visible_char(ch) for ch in text)


def esc(value: object) -> str:
    """Any value from the data, as HTML text (escaped, quotes included; None: ``—``)."""
    if value is None:
        return NOT_COMPUTED
    return html.escape(visible(str(value)), quote=True)


def number(value: float | None, digits: int = 4) -> str:
    """A metric as text: ``digits`` significant digits, ``nan`` / ``inf``, ``—`` when None."""
    if value is None:
        return NOT_COMPUTED
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format(value, f".{digits}g")


def metric_text(name: str, value: float | None) -> str:
    """CosineSimilarity with 9 significant digits (it lives near 1), any other metric with 4."""
    return number(value, 9 if name == COSINE else 4)


def badge(verdict: Verdict | None) -> str:
    if verdict is None:
        return NOT_COMPUTED
    css, mark = VERDICT_MARKS[verdict]
    return f"<b class={css}>{mark} {verdict.value}</b>"


def dtype_badge(left: str | None, right: str | None) -> str:
    if left is None and right is None:
        return NOT_COMPUTED
    css = "d" if left == right else "dx"
    return f"<i class={css}>{esc(left)}/{esc(right)}</i>"


def shape_badge(shape: Sequence[int] | None) -> str:
    return NOT_COMPUTED if shape is None else f"<i class=d>{shape_cell(shape)}</i>"


# ------------------------------------------------------------------------------ operators


def tensor_kind(row: MetricRow) -> str:
    """``input`` / ``output`` from the tensor id ``{op}:{kind}:{index}``; ``""`` for op rows."""
    if row.tensor_id is None:
        return ""
    parts = row.tensor_id.rsplit(":", 2)
    return parts[1] if len(parts) == 3 else ""


def row_op(row: MetricRow) -> str:
    """The operator a row belongs to: its left op, its right op when it has no left side."""
    return row.right_op if row.left_op == "*" else row.left_op


OpKey = tuple[str, int | None, int | None]


def _key(row: MetricRow) -> OpKey:
    return row_op(row), row.rank, row.iteration


def rows_by_op(rows: Iterable[MetricRow]) -> dict[OpKey, list[MetricRow]]:
    """The rows of each operator (keyed by op, rank, iteration), operators in row order."""
    grouped: dict[OpKey, list[MetricRow]] = {}
    for row in rows:
        grouped.setdefault(_key(row), []).append(row)
    return grouped


def _worst(values: Iterable[float | None], *, highest: bool) -> float | None:
    """The worst of values already computed (a NaN is the worst); None when none is."""
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    if any(math.isnan(v) for v in known):
        return math.nan
    return max(known) if highest else min(known)


def _outputs(rows: Sequence[MetricRow]) -> list[MetricRow]:
    outputs = [row for row in rows if tensor_kind(row) == "output"]
    return outputs or list(rows)


def is_statistics(rows: Iterable[MetricRow]) -> bool:
    """Whether the rows are a statistics comparison's (``MetricRow.kind``; a missing part's row
    among them is a tensor-kind row)."""
    return any(row.kind is RowKind.STATISTICS for row in rows)


def _line(position: int, op: str, rows: Sequence[MetricRow], verdict: OpVerdict | None,
          statistics: bool = False) -> OpLine:
    """One operator; ``statistics``: its plotted error is the localisation's (the statistics error)."""
    outputs = _outputs(rows)
    first = outputs[0] if outputs else None
    relative = _worst((row.metrics.get(RELATIVE) for row in outputs), highest=True)
    if statistics and verdict is not None:
        relative = verdict.error
    source = verdict.source if verdict is not None else None
    row_type = first.op_type if first else None
    return OpLine(
        position=position, op=op,
        op_type=(verdict.op_type or row_type) if verdict is not None else row_type,
        verdict=verdict.verdict if verdict is not None else None,
        error=verdict.error if verdict is not None else relative,
        amplification=verdict.amplification if verdict is not None else None,
        cosine=_worst((row.metrics.get(COSINE) for row in outputs), highest=False),
        worst_relative=relative,
        left_dtype=first.left_dtype if first else None, right_dtype=first.right_dtype if first else None,
        shape=first.shape if first else None,
        source="" if source is None else str(source),
    )


def op_lines(data: HtmlReport) -> list[OpLine]:
    """The operators in graph order (the localisation's verdicts), or in row order without one."""
    grouped = rows_by_op(data.rows)
    if data.localisation is None:
        return [_line(i, key[0], rows, None) for i, (key, rows) in enumerate(grouped.items())]
    statistics = is_statistics(data.rows)
    return [_line(v.position, v.op, grouped.get((v.op, v.rank, v.iteration), []), v, statistics)
            for v in data.localisation.verdicts]


# ------------------------------------------------------------------------------ page parts


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


def verdict_counts(localisation: Localisation) -> dict[Verdict, int]:
    """Operators per verdict, every verdict present (zeros included), in the enum's order."""
    counts = Counter(v.verdict for v in localisation.verdicts)
    return {verdict: counts.get(verdict, 0) for verdict in Verdict}


def _counts_table(rows: Sequence[MetricRow], localisation: Localisation | None) -> str:
    status = "".join(f"<tr><th>{esc(name)}<td>{count}" for name, count in count_by_status(rows).items())
    parts = [f'<table class="kv"><caption>Rows by status</caption>{status}<tr><th>total<td>{len(rows)}</table>']
    if localisation is not None:
        verdicts = "".join(f"<tr><th>{badge(v)}<td>{n}" for v, n in verdict_counts(localisation).items())
        parts.append(f'<table class="kv"><caption>Operators by verdict</caption>{verdicts}</table>')
    return f'<div class="cols">{"".join(parts)}</div>'


def _worst_output(verdict: OpVerdict) -> TensorCheck | None:
    checks = [c for c in verdict.outputs if c.passed is False] or list(verdict.outputs)
    if not checks:
        return None
    return max(checks, key=lambda c: -math.inf if c.error is None else (math.inf if math.isnan(c.error) else c.error))


def _broken(check: TensorCheck) -> str:
    return ", ".join(f"{esc(metric)} = {metric_text(metric, value)}" for metric, value in check.failed) or "none"


def _check_state(check: TensorCheck) -> str:
    return {True: "passed", False: "failed", None: "not compared"}[check.passed]


def _evidence(verdict: OpVerdict, tensors: Mapping[tuple[str, int | None, int | None], MetricRow],
              statistics: bool = False) -> str:
    """The first divergence's tensors: check, error, metrics (cosine and RED; for statistics
    rows the relative statistics differences, and ChecksumDiff when a row has it), bounds broken."""
    shown: tuple[str, ...] = (COSINE, RELATIVE)
    if statistics:
        with_checksum = any(CHECKSUM_METRIC in row.metrics for row in tensors.values())
        shown = STATS_EVIDENCE + ((CHECKSUM_METRIC,) if with_checksum else ())
    lines = []
    for kind, checks in (("output", verdict.outputs), ("input", verdict.inputs)):
        for check in checks:
            row = tensors.get((check.tensor_id, verdict.rank, verdict.iteration))
            metrics = row.metrics if row is not None else {}
            producer = None if check.producer is None else (check.producer.name or check.producer.producer)
            values = "".join(f"<td>{metric_text(name, metrics.get(name))}" for name in shown)
            lines.append(f"<tr><td>{kind}<td>{esc(check.tensor_id)}<td>{_check_state(check)}"
                         f"<td>{number(check.error)}{values}<td>{_broken(check)}<td>{esc(producer)}")
    if not lines:
        return ""
    head = ("<tr><th>kind<th>tensor<th>check<th>error" + "".join(f"<th>{name}" for name in shown)
            + "<th>bounds broken<th>fed by")
    return f'<table class="grid"><thead>{head}</thead><tbody>{"".join(lines)}</tbody></table>'


def _source_block(verdict: OpVerdict) -> str:
    if verdict.source is None:
        return "<p>Source line: — (the graph gives none)</p>"
    code = f"<pre><code>{esc(verdict.source.code)}</code></pre>" if verdict.source.code else ""
    return f"<p>Source line: <code>{esc(str(verdict.source))}</code></p>{code}"


def first_divergence(localisation: Localisation, rows: Sequence[MetricRow]) -> str:
    """The first divergence: where, its verdict, its worst output and what it broke, the metrics
    of its tensors and inputs, the source line."""
    verdict = localisation.first_divergence
    if verdict is None:
        return ('<p class="fd">First divergence: none — no operator is <code>origin</code> or '
                "<code>input-differs</code>.</p>")
    tensors = {(r.tensor_id, r.rank, r.iteration): r for r in rows if r.tensor_id is not None}
    worst = _worst_output(verdict)
    worst_text = ("—" if worst is None else
                  f"{esc(worst.tensor_id)}: error {number(worst.error)}; bounds broken: {_broken(worst)}")
    blame = f"<p>Blamed inputs: {', '.join(esc(b) for b in verdict.blame)}</p>" if verdict.blame else ""
    return (f'<div class="fd"><h3>First divergence: <span class="op">{esc(verdict.op)}</span> '
            f"{badge(verdict.verdict)}</h3>"
            f"<p>Type {esc(verdict.op_type)} · position {verdict.position} · worst output error "
            f"{number(verdict.error)} · worst input error {number(verdict.input_error)} · amplification "
            f"{number(verdict.amplification)}</p><p>Worst output: {worst_text}</p>{blame}"
            f"{_evidence(verdict, tensors, is_statistics(rows))}{_source_block(verdict)}</div>")


def _localisation_notes(localisation: Localisation) -> str:
    notes = [f"graph from: {localisation.graph.source.value}"]
    if localisation.bounds:
        notes.append(f"bounds: {localisation.bounds}")
    notes += list(localisation.graph.notes) + list(localisation.notes)
    return "<ul class=\"notes\">" + "".join(f"<li>{esc(n)}" for n in notes) + "</ul>"


def summary(data: HtmlReport) -> str:
    parts = ['<section id="summary"><h2>Summary</h2>', _counts_table(data.rows, data.localisation)]
    localisation = data.localisation
    if localisation is None:
        parts.append("<p>No localisation: operators are listed in row order, without verdicts; the first "
                     "divergence and the first NaN/Inf tensor are not known.</p>")
    else:
        parts.append(first_divergence(localisation, data.rows))
        nonfinite = localisation.first_nonfinite
        text = f'<code>{esc(nonfinite)}</code>' if nonfinite else "none"
        parts.append(f'<p class="nf">First tensor with NaN/Inf (left side): {text}</p>')
        parts.append(_localisation_notes(localisation))
    parts.append("</section>")
    return "".join(parts)


# ------------------------------------------------------------------------------ plots


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


# ------------------------------------------------------------------------------ tables


def _op_row(line: OpLine) -> str:
    return (f"<tr><td>{line.position}<td>{esc(line.op)}<td>{esc(line.op_type)}<td>{badge(line.verdict)}"
            f"<td>{number(line.error)}<td>{number(line.amplification)}<td>{metric_text(COSINE, line.cosine)}"
            f"<td>{dtype_badge(line.left_dtype, line.right_dtype)}<td>{shape_badge(line.shape)}<td>{esc(line.source)}")


def _head(columns: Sequence[tuple[str, bool]]) -> str:
    cells = "".join(f'<th{" data-t=n" if numeric else ""}>{esc(name)}' for name, numeric in columns)
    return f"<thead><tr>{cells}</thead>"


OP_COLUMNS = (("#", True), ("operator", False), ("type", False), ("verdict", False), ("worst output error", True),
              ("amplification", True), ("worst CosineSimilarity", True), ("dtype left/right", False),
              ("shape", False), ("source", False))


def window(total: int, anchor: int | None, limit: int) -> range:
    """The items a table shows: all of them up to ``limit``; else ``limit`` consecutive ones
    starting a tenth of the limit before ``anchor`` (the first divergence), or at the start."""
    if total <= limit:
        return range(total)
    start = min(max(0, (anchor or 0) - limit // 10), total - limit)
    return range(start, start + limit)


def _shown(kept: range, total: int, what: str) -> str:
    """The note of a cut table, or nothing when it holds everything."""
    if len(kept) == total:
        return ""
    return (f'<p class="cut">Showing {what} {kept.start + 1}–{kept.stop} of {total} (from just before the first '
            "divergence when there is one), to keep the page small; every row is in the CSV / JSON result.</p>")


def _first_divergence_index(items: Sequence[str], localisation: Localisation | None) -> int | None:
    first = localisation.first_divergence if localisation is not None else None
    if first is None:
        return None
    return next((i for i, name in enumerate(items) if name == first.op), None)


OP_HINT = ('<p class="hint">Click a column header to sort (again to reverse). <i>worst output error</i>: the '
           "relative error of the operator's worst output as the localisation measured it (RelativeEuclideanDistance,"
           " or 1 − CosineSimilarity when that is all there is); without localisation, the worst output "
           "RelativeEuclideanDistance. <i>amplification</i>: worst output error / worst input error. "
           "— not computed; nan / inf: computed and not finite.</p>")


def op_table(lines: Sequence[OpLine], localisation: Localisation | None) -> str:
    kept = window(len(lines), _first_divergence_index([line.op for line in lines], localisation), OP_TABLE_LIMIT)
    body = "".join(_op_row(lines[i]) for i in kept)
    return (f'<section id="operators"><h2>Operators ({len(lines)})</h2>{_shown(kept, len(lines), "operators")}'
            f"{OP_HINT}"
            f'<table class="grid sort ops">{_head(OP_COLUMNS)}<tbody>{body}</tbody></table></section>')


def metric_names(rows: Iterable[MetricRow]) -> list[str]:
    """Every metric name of the rows, in first-seen order."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row.metrics))
    return list(names)


def _where_columns(rows: Sequence[MetricRow]) -> list[str]:
    return [name for name in ("rank", "iteration", "graph") if any(getattr(r, name) is not None for r in rows)]


def _tensor_cell(row: MetricRow) -> str:
    """The tensor id without its operator prefix (the operator has its own column)."""
    tensor = row.tensor_id
    if tensor is None:
        return NOT_COMPUTED
    prefix = row_op(row) + ":"
    return esc(tensor[len(prefix):] if tensor.startswith(prefix) else tensor)


def _tensor_row(row: MetricRow, where: Sequence[str], metrics: Sequence[str]) -> str:
    """One line of the tensor table (plain text cells: the table may hold 10,000 lines)."""
    place = "".join(f"<td>{esc(getattr(row, name))}" for name in where)
    values = "".join(f"<td>{metric_text(name, row.metrics.get(name))}" for name in metrics)
    shape = NOT_COMPUTED if row.shape is None else shape_cell(row.shape)
    reasons = esc("; ".join(row.reasons)) if row.reasons else ""
    return (f"<tr><td>{row.index}<td>{esc(row_op(row))}{place}<td>{_tensor_cell(row)}<td>{esc(row.op_type)}"
            f"<td>{esc(row.status.value)}<td>{esc(row.left_dtype)}/{esc(row.right_dtype)}<td>{shape}{values}"
            f"<td>{reasons}")


def _within(lines: Iterable[str], budget: int) -> list[str]:
    """The first ``lines`` whose total length stays within ``budget`` (at least one)."""
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line)
        if used > budget and kept:
            break
        kept.append(line)
    return kept


def tensor_table(rows: Sequence[MetricRow], localisation: Localisation | None, budget: int) -> str:
    """The rows (a window of them, see :data:`TENSOR_TABLE_LIMIT`) within ``budget`` characters."""
    window_ = window(len(rows), _first_divergence_index([row_op(row) for row in rows], localisation),
                     TENSOR_TABLE_LIMIT)
    where, metrics = _where_columns(rows), metric_names(rows)
    columns = ([("Index", True), ("operator", False)] + [(name, True) for name in where]
               + [("tensor", False), ("type", False), ("status", False),
                  ("dtype left/right", False), ("shape", False)]
               + [(name, True) for name in metrics] + [("reasons", False)])
    body = _within((_tensor_row(rows[i], where, metrics) for i in window_), budget)
    kept = range(window_.start, window_.start + len(body))
    return (f'<section id="tensors"><details><summary><h2>Tensors ({len(rows)})</h2></summary>'
            f'{_shown(kept, len(rows), "rows")}<table class="grid sort">{_head(columns)}<tbody>{"".join(body)}</tbody>'
            "</table></details></section>")


# ------------------------------------------------------------------------------ the page

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
    lines = op_lines(data)
    localisation = data.localisation
    before = "".join((header(data), summary(data), trend_section(lines, localisation, is_statistics(data.rows)),
                      op_table(lines, localisation)))
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


__all__ = ["ElementErrors", "HtmlReport", "INSTALL_HINT", "OpLine", "op_lines", "render_html", "require_matplotlib",
           "write_html"]

"""The summary section of the HTML report (:mod:`compare.reports.html`): rows per status,
operators per verdict, the first divergence (its worst output, the bounds it broke, its tensors'
metrics, the source line that wrote it), the first NaN/Inf tensor and the localisation's notes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from ..diverge.records import Localisation, OpVerdict, TensorCheck, Verdict
from ..records import MetricRow, count_by_status
from ..stats_table import RowColumns
from .html_operators import is_statistics
from .html_text import COSINE, RELATIVE, badge, esc, metric_text, number
from .stats import CHECKSUM_METRIC

#: The metrics the evidence table of a statistics comparison shows (instead of cosine and RED).
STATS_EVIDENCE = ("MaxRelDiff", "MinRelDiff", "AvgRelDiff", "L2NormRelDiff")


def verdict_counts(localisation: Localisation) -> dict[Verdict, int]:
    """Operators per verdict, every verdict present (zeros included), in the enum's order."""
    counts = Counter(v.verdict for v in localisation.verdicts)
    return {verdict: counts.get(verdict, 0) for verdict in Verdict}


def _counts_table(rows: Sequence[MetricRow], localisation: Localisation | None) -> str:
    status = "".join(f"<tr><th>{esc(name)}<td>{count}" for name, count in count_by_status(RowColumns(rows).status).items())
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
    uncertain = "" if localisation.uncertain is None else f" (uncertain: {esc(localisation.uncertain)})"
    # an infinite amplification (exact inputs, inexact output) is said in words, as --explain says it
    amplification = ("— inputs exact: the error starts here"
                     if verdict.amplification is not None and math.isinf(verdict.amplification)
                     else number(verdict.amplification))
    return (f'<div class="fd"><h3>First divergence{uncertain}: <span class="op">{esc(verdict.op)}</span> '
            f"{badge(verdict.verdict)}</h3>"
            f"<p>Type {esc(verdict.op_type)} · position {verdict.position} · worst output error "
            f"{number(verdict.error)} · worst input error {number(verdict.input_error)} · amplification "
            f"{amplification}</p><p>Worst output: {worst_text}</p>{blame}"
            f"{_evidence(verdict, tensors, is_statistics(rows))}{_source_block(verdict)}</div>")


def _localisation_notes(localisation: Localisation) -> str:
    notes = [f"graph from: {localisation.graph.source.value}"]
    if localisation.bounds:
        notes.append(f"bounds: {localisation.bounds}")
    notes += list(localisation.graph.notes) + list(localisation.notes)
    return "<ul class=\"notes\">" + "".join(f"<li>{esc(n)}" for n in notes) + "</ul>"



def summary(rows: Sequence[MetricRow], localisation: Localisation | None) -> str:
    parts = ['<section id="summary"><h2>Summary</h2>', _counts_table(rows, localisation)]
    if localisation is None:
        parts.append("<p>No localisation: operators are listed in row order, without verdicts; the first "
                     "divergence and the first NaN/Inf tensor are not known.</p>")
    else:
        parts.append(first_divergence(localisation, rows))
        nonfinite = localisation.first_nonfinite
        text = f'<code>{esc(nonfinite)}</code>' if nonfinite else "none"
        parts.append(f'<p class="nf">First tensor with NaN/Inf (left side): {text}</p>')
        parts.append(_localisation_notes(localisation))
    parts.append("</section>")
    return "".join(parts)


__all__ = ["STATS_EVIDENCE", "first_divergence", "summary", "verdict_counts"]

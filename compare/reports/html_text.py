"""The text of the HTML report's cells (:mod:`compare.reports.html`): data escaped, numbers
printed, verdicts, data types and shapes as badges.

Every string from the data goes through :func:`esc`: HTML-escaped, control characters shown as
escapes (``\\r``). Numbers print as CosineSimilarity with 9 significant digits
(``0.999998231``), other metrics with 4 (``1.235e-05``); ``nan`` / ``inf`` for computed
non-finite values; ``—`` for not computed.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from ..diverge.records import Verdict
from .cells import encodable, shape_cell

COSINE = "CosineSimilarity"
RELATIVE = "RelativeEuclideanDistance"
NOT_COMPUTED = "—"

#: The badge of each verdict: its CSS class and a symbol (the marker of the trend plot).
VERDICT_MARKS = {
    Verdict.OK: ("ok", "✓"),
    Verdict.ORIGIN: ("or", "▲"),
    Verdict.INHERITED: ("in", "↓"),
    Verdict.INPUT_DIFFERS: ("id", "◆"),
    Verdict.NOT_COMPARED: ("nc", "○"),
}


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


__all__ = ["COSINE", "NOT_COMPUTED", "RELATIVE", "VERDICT_MARKS", "badge", "dtype_badge", "esc", "metric_text",
           "number", "shape_badge", "visible"]

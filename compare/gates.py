"""Accuracy gates: ``--gate "CosineSimilarity>=0.99"`` turns a comparison into a CI check.

A gate is ``<metric><op><number>`` with ``op`` one of ``>= <= > < ==``; the metric may be any
name or alias of :data:`compare.kernels.METRICS` except StandardDeviation (not a single number).

Policy, per row that was compared:

- a value that satisfies the bound passes;
- a value that violates it, or a computed NaN (NaN in the data), fails;
- a metric that was not computed for that row (e.g. cosine of an all-zero left tensor) does not
  count either way; rows that were not compared (missing counterpart, unreadable dump) are
  counted in the run summary, not by gates.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .errors import OptionError
from .records import MetricRow

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
_GATE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*|[0-9])\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+|inf|-inf)\s*$")


@dataclass(frozen=True)
class Gate:
    metric: str
    op: str
    bound: float
    text: str

    def check(self, value: float | None) -> bool | None:
        """True (passes), False (fails) or None (not computed, not counted)."""
        if value is None:
            return None
        if math.isnan(value):
            return False
        return _OPS[self.op](value, self.bound)


@dataclass(frozen=True)
class GateFailure:
    gate: Gate
    row: MetricRow
    value: float


def parse_gate(text: str) -> Gate:
    """Parse ``Metric>=number``; raise :class:`OptionError` with the accepted form on failure."""
    from .kernels import resolve_algorithms

    match = _GATE_RE.match(text)
    if not match:
        raise OptionError(f"bad --gate {text!r}: expected METRIC>=NUMBER (ops: >= <= > < ==), e.g. CosineSimilarity>=0.99")
    name, op, number = match.groups()
    try:
        (metric,) = resolve_algorithms(name)
    except (OptionError, ValueError) as exc:
        raise OptionError(f"bad --gate {text!r}: {exc}") from None
    if metric == "StandardDeviation":
        raise OptionError(f"bad --gate {text!r}: StandardDeviation is not a single number and cannot be gated")
    try:
        bound = float(number)
    except ValueError:
        raise OptionError(f"bad --gate {text!r}: {number!r} is not a number") from None
    return Gate(metric=metric, op=op, bound=bound, text=text.strip())


def evaluate(gates: Sequence[Gate], rows: Sequence[MetricRow]) -> list[GateFailure]:
    """Every (gate, row) that fails, in row order."""
    failures = []
    for row in rows:
        if not row:
            continue
        for gate in gates:
            value = row.metrics.get(gate.metric)
            if gate.check(value) is False:
                failures.append(GateFailure(gate, row, float(value)))
    return failures

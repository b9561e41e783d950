"""``--junit report.xml``: the run as JUnit XML, for GitLab / Jenkins / GitHub test reporters.

Layout (validated in the tests against ``tests/junit.xsd``)::

    <testsuites name=SUITE tests failures errors skipped time>
      <testsuite name=OPERATOR tests failures errors skipped time="0">      one per operator
        <testcase name=TENSOR classname=OPERATOR time="0">                  one per report row
          <failure message=... type=METRIC>...</failure>                    a value broke a bound
          <error message=... type="incomplete">...</error>                  not compared under a gate
          <skipped message="waived by WAIVER: ..."/>                        covered by a waiver
          <system-out>every metric in full precision, reasons</system-out>
      <testsuite name="vcompare policy">                                    only with policy errors
        <testcase name="policy error N"><error type="policy" .../></testcase>

Choices, and why:

- **A testsuite per operator and ``classname`` = the operator**: GitHub reporters group by
  testsuite, Jenkins by classname, GitLab lists classname next to the name, so the operator shows
  in all three. The operator is the left (NPU) op name, or the right one when the left is ``*``;
  ``OpType`` is added in front (``Conv2D conv1``) when known.
- **Testcase name** = the tensor id (``conv1:output:0``), or the op name for a row without one,
  prefixed ``rank R graph G iteration I:`` when those are set, so names are unique per suite.
- **Value failures are ``<failure>``** (``type`` = the metric, ``message`` = the gate's message
  with the full-precision ``repr`` value and the bound); several failures of one row give one
  element whose message joins them and whose text lists them one per line.
- **Incomplete rows are ``<error type="incomplete">``**: the check could not be made (no data),
  which is what JUnit's ``error`` means; reporters show them apart from real accuracy failures,
  as exit code 3 is apart from 1.
- **Waived** failures are ``<skipped message="waived by WAIVER: MESSAGE">``; rows that were not
  compared and that no check failed (no gate, or a structural gap the gates do not fail:
  ``MetricRow.expected_gap``) are ``<skipped message="not compared...: REASON">`` (nothing was
  checked on them); compared rows without failures pass.
- Text is XML-escaped by the serializer; characters XML 1.0 cannot hold (control characters, lone
  surrogates, U+FFFE/U+FFFF) are replaced by visible ``\\xNN`` / ``\\uNNNN`` escapes, never dropped.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..records import CheckFailure, MetricRow, Outcome, RowKind, Verdict
from .files import atomic_write_bytes

STD_NAME = "StandardDeviation"
POLICY_SUITE = "vcompare policy"
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: object) -> str:
    """``text`` with every character XML 1.0 cannot hold replaced by a visible escape."""
    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable file-name byte (surrogate escape)
            return f"\\x{code - 0xDC00:02x}"
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _INVALID_XML.sub(escape, str(text))


@dataclass
class _Case:
    name: str
    row: MetricRow
    failures: list[CheckFailure] = field(default_factory=list)
    waived: list[CheckFailure] = field(default_factory=list)


def operator_name(row: MetricRow) -> str:
    """The group a row belongs to: ``OpType op`` (the left op, or the right one when the left is ``*``)."""
    op = row.right_op if row.left_op in ("*", "") else row.left_op
    return f"{row.op_type} {op}" if row.op_type else op


def case_name(row: MetricRow) -> str:
    """A JUnit testcase name: the tensor (or operator), prefixed with its rank / graph / iteration."""
    name = row.tensor_id or (row.right_op if row.left_op in ("*", "") else row.left_op)
    if row.msprobe is not None and (row.msprobe.left_name or row.msprobe.right_name):
        name = row.msprobe.left_name or row.msprobe.right_name  # msprobe's own name (docs/msprobe.md)
    where = [f"{label} {value}" for label, value in (("rank", row.rank), ("graph", row.graph),
                                                     ("iteration", row.iteration)) if value is not None]
    return f"{' '.join(where)}: {name}" if where else name


def _metrics_text(row: MetricRow) -> str:
    """Every metric of the row, full precision (``repr``), then status and reasons."""
    lines = [f"{name} = {'not computed' if value is None else repr(float(value))}"
             for name, value in row.metrics.items()
             if name != STD_NAME and not (row.kind is RowKind.ARGUMENT and name in row.undefined)]
    if row.std is not None:
        lm, ls, rm, rs = (repr(float(v)) for v in row.std)
        lines.append(f"{STD_NAME} = left mean {lm}, left std {ls}; right mean {rm}, right std {rs}")
    lines.append(f"status: {row.status.value}")
    lines += [f"reason: {reason}" for reason in row.reasons]
    lines.append(f"left: {row.left_op} ({row.left_dtype or 'no data'}), right: {row.right_op} "
                 f"({row.right_dtype or 'no data'})")
    if row.argument is not None:
        lines.append(f"argument: left {row.argument.left}, right {row.argument.right}")
    if row.msprobe is not None and row.msprobe.source:
        lines.append(f"stack: {row.msprobe.source}")
    return "\n".join(lines)


def _outcome_element(case: _Case, gated: bool) -> ET.Element | None:
    """The failure / error / skipped child of a testcase, or None when it passed."""
    real = [f for f in case.failures if not f.incomplete]
    incomplete = [f for f in case.failures if f.incomplete]
    if real or incomplete:
        chosen = real or incomplete
        tag, kind = ("failure", real[0].metric or "gate") if real else ("error", "incomplete")
        element = ET.Element(tag, {"message": xml_text("; ".join(f.message for f in chosen)), "type": xml_text(kind)})
        element.text = xml_text("\n".join(f.message for f in case.failures))
        return element
    if case.waived:
        reasons = "; ".join(f"{f.waived_by}: {f.message}" for f in case.waived)
        return ET.Element("skipped", {"message": xml_text(f"waived by {reasons}")})
    if not case.row:
        label = "not compared under the gate" if gated else "not compared"
        if case.row.expected_gap:
            label = f"not compared, as expected ({case.row.expected_gap})"
        why = "; ".join(case.row.reasons) or case.row.status.value
        return ET.Element("skipped", {"message": xml_text(f"{label}: {why}")})
    return None


def _counts(elements: Sequence[ET.Element | None]) -> dict[str, str]:
    tags = [e.tag if e is not None else "" for e in elements]
    return {"tests": str(len(elements)), "failures": str(tags.count("failure")), "errors": str(tags.count("error")),
            "skipped": str(tags.count("skipped"))}


def render_junit(rows: Sequence[MetricRow], verdict: Verdict | None, *, suite_name: str,
                 time_seconds: float = 0.0) -> str:
    """The JUnit XML text of a run (see the module docstring for the layout and choices).

    ``verdict`` None (or not gated): compared rows pass, the others are skipped with their reason.
    ``time_seconds`` goes on the root element (per-case time is not measured: ``0``).
    """
    gated = verdict is not None and verdict.outcome is not Outcome.NOT_GATED
    cases = [_Case(case_name(row), row) for row in rows]
    if verdict is not None:
        for failure in verdict.failures:
            if 0 <= failure.row < len(cases):
                cases[failure.row].failures.append(failure)
        for failure in verdict.waived:
            if 0 <= failure.row < len(cases):
                cases[failure.row].waived.append(failure)
    groups: dict[str, list[_Case]] = {}
    for case in cases:
        groups.setdefault(operator_name(case.row), []).append(case)
    root = ET.Element("testsuites", {"name": xml_text(suite_name)})
    every: list[ET.Element | None] = []
    for operator, members in groups.items():
        outcomes = [_outcome_element(case, gated) for case in members]
        every += outcomes
        suite = ET.SubElement(root, "testsuite", {"name": xml_text(operator), **_counts(outcomes), "time": "0"})
        for case, outcome in zip(members, outcomes):
            element = ET.SubElement(suite, "testcase", {"name": xml_text(case.name), "classname": xml_text(operator),
                                                        "time": "0"})
            if outcome is not None:
                element.append(outcome)
            ET.SubElement(element, "system-out").text = xml_text(_metrics_text(case.row))
    unplaced = [f for f in (verdict.failures if verdict else []) if not 0 <= f.row < len(cases)]
    policy_errors = list(verdict.errors if verdict else []) + [f.message for f in unplaced]
    if policy_errors:
        errors = [ET.Element("error", {"message": xml_text(text), "type": "policy"}) for text in policy_errors]
        every += errors
        suite = ET.SubElement(root, "testsuite", {"name": POLICY_SUITE, **_counts(errors), "time": "0"})
        for number, error in enumerate(errors, 1):
            case = ET.SubElement(suite, "testcase", {"name": f"policy error {number}", "classname": POLICY_SUITE,
                                                     "time": "0"})
            case.append(error)
    seconds = time_seconds if time_seconds >= 0 and time_seconds != float("inf") else 0.0
    root.attrib.update({**_counts(every), "time": f"{seconds:.3f}"})  # xs:decimal: no exponent
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(text: str, path: str | os.PathLike[str]) -> Path:
    """Write the JUnit text atomically (umask honoured); :class:`OutputError` when it cannot be."""
    return atomic_write_bytes(Path(path), text.encode("utf-8"))

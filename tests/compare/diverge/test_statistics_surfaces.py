"""The localisation of a statistics comparison on its surfaces: the Verdict column of the
statistics report (last, only when asked), ``--explain`` (each call's outputs and inputs, pass or
fail with the failing statistics), the JSON ``localisation`` block and the HTML report (the
statistics error along call order). Built on a synthetic msprobe pair with one weight changed."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from stats_rows import compare_statistics

from compare.api import ComparisonResult
from compare.diverge.verdicts import chain
from compare.reports.divergence import divergence_lines, explain_lines, localisation_document, verdict_map
from compare.reports.result_json import dumps
from compare.reports.stats import render_stats_csv, write_stats_report
from compare.testing.synthetic_msprobe import write_msprobe_dump

FC = "Module.fc.Linear.forward.0"


@pytest.fixture
def result(tmp_path: Path) -> ComparisonResult:
    left = write_msprobe_dump(tmp_path / "left", task="statistics").folders[(0, 0)]
    right = write_msprobe_dump(tmp_path / "right", task="statistics").folders[(0, 0)]
    document = json.loads((left / "dump.json").read_text())
    weight = document["data"][FC]["parameters"]["weight"]
    weight["Max"] *= 1.01
    (left / "dump.json").write_text(json.dumps(document))
    return compare_statistics(left, right)


def test_stats_report_verdict_column_last_and_only_when_asked(result: ComparisonResult, tmp_path: Path) -> None:
    stats = result.network.stats
    plain = list(csv.reader(io.StringIO(render_stats_csv(stats))))
    assert "Verdict" not in plain[0]
    written = write_stats_report(stats, tmp_path / "out.csv", verdict_map(result.localisation))
    header, *lines = list(csv.reader(io.StringIO(written.read_text())))
    assert header[-1] == "Verdict" and header[-2] == "FailReason"
    by_op = {line[2]: line[-1] for line in lines}
    assert by_op[FC] == "input-differs" and by_op["Torch.matmul.0.forward"] == "ok"
    assert all(len(line) == len(header) for line in lines)


def test_divergence_and_explain_lines(result: ComparisonResult) -> None:
    lines = divergence_lines(result.localisation)
    assert lines[0].startswith(f"first divergence: {FC} [Linear]") and "msprobe dump.json order" in lines[0]
    assert any("<- fc.weight (parameter) FAILS: MaxRelDiff = 0.0" in line for line in lines)
    assert "differing data: fc.weight" in "\n".join(lines)
    explained = explain_lines(FC, chain(result.localisation, FC))
    assert explained[0] == f"explain {FC}: 1 operator(s) back to the origin"
    assert explained[1].startswith(f"1. {FC} [Linear]: input-differs")
    assert f"   output {FC}:output:0 passes: error 0.0" in explained
    assert f"   input {FC}:input:0 passes: error 0.0" in explained
    assert any(line.startswith(f"   input {FC}:input:1 <- fc.weight (parameter) FAILS: MaxRelDiff = ")
               for line in explained)


def test_json_localisation_block(result: ComparisonResult) -> None:
    block = localisation_document(result.localisation)
    assert block is not None and block["graph_source"] == "msprobe dump.json" and block["graph_edges"] is False
    first = block["first_divergence"]
    assert first["op"] == FC and first["verdict"] == "input-differs" and first["blame"] == ["fc.weight"]
    weight = first["inputs"][1]
    assert weight["passed"] is False and weight["failed"][0]["metric"] == "MaxRelDiff"
    assert weight["producer"] == {"producer": None, "output": 0, "role": "parameter", "name": "fc.weight"}
    json.loads(dumps({"localisation": block, "rows": []}))  # encodable as the result document is


def test_html_plots_the_statistics_error(result: ComparisonResult, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from compare.reports.html import HtmlReport, write_html
    from compare.runs.html import sample_errors

    sampled, notes = sample_errors(result.network, result.localisation)
    assert sampled == [] and notes == ["element errors not plotted: a statistics comparison has no tensor data"]
    write_html(tmp_path / "r.html", HtmlReport(rows=result.rows, localisation=result.localisation))
    page = (tmp_path / "r.html").read_text()
    assert "<svg" in page and "Statistics error (the largest of MaxRelDiff, MinRelDiff and L2NormRelDiff" in page
    assert ">statistics error<" in page or "statistics error" in page.split("<figcaption>")[0]  # the plot's axis
    assert "<th>MaxRelDiff<th>MinRelDiff<th>AvgRelDiff<th>L2NormRelDiff<th>bounds broken" in page
    assert f"First divergence: <span class=\"op\">{FC}</span>" in page

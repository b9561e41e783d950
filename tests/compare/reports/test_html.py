"""The static HTML report (compare/reports/html.py and its html_* modules): self-contained,
escaped, deterministic, bounded in size; rows and a localisation built by hand."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="matplotlib is part of the test extra: pip install -e '.[test]'")

from compare.diverge.records import (
    GraphSource,
    InputEdge,
    Localisation,
    OpGraph,
    OpNode,
    OpVerdict,
    SourceLine,
    TensorCheck,
    Verdict,
)
from compare.errors import OptionError
from compare.records import MetricRow
from compare.reports import html_tables
from compare.reports.html import ElementErrors, HtmlReport, render_html, write_html

HOSTILE = ("<script>alert(1)</script>", 'a&b"c', "x\r=1+1")
CREATED = "2026-01-02T03:04:05Z"


class Page(HTMLParser):
    """The parts of a page the tests look at: tags, attributes, text, table rows."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.section: str | None = None
        self.rows: dict[str, int] = {}
        self.section_text: dict[str, list[str]] = {}
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "section" and attributes.get("id"):
            self.section = attributes["id"]
        if tag == "tr" and self.section is not None and "tbody" in self.stack:
            self.rows[self.section] = self.rows.get(self.section, 0) + 1
        if tag in ("tbody", "thead", "table"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("tbody", "thead", "table") and tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.section is not None:
            self.section_text.setdefault(self.section, []).append(data)

    def in_section(self, section: str) -> str:
        return "".join(self.section_text.get(section, []))

    def classes(self) -> list[str]:
        return [c for _, attrs in self.tags for c in (attrs.get("class") or "").split()]


def _row(i: int, op: str, kind: str = "output", cos: float | None = 0.9999, red: float | None = 1e-4,
         **extra: object) -> MetricRow:
    return MetricRow(index=i, op_type="Conv2D", left_op=op, right_op=op, tensor_id=f"{op}:{kind}:0",
                     left_dtype="float16", right_dtype="float32", shape=(1, 8, 4, 4),
                     metrics={"CosineSimilarity": cos, "RelativeEuclideanDistance": red, "MaxAbsoluteError": 0.5},
                     **extra)


def _check(op: str, kind: str, passed: bool | None, error: float | None, **extra: object) -> TensorCheck:
    return TensorCheck(tensor_id=f"{op}:{kind}:0", passed=passed, error=error, **extra)


def _verdict(position: int, op: str, verdict: Verdict, error: float | None = 1e-4, **extra: object) -> OpVerdict:
    return OpVerdict(op=op, op_type="Conv2D", position=position, verdict=verdict,
                     outputs=(_check(op, "output", verdict is Verdict.OK, error),), error=error, **extra)


def _network(names: list[str]) -> tuple[list[MetricRow], Localisation]:
    """Ops in graph order; the third one is the origin (with an input, a source line and broken
    bounds), the ones after it inherit, the last input-differs."""
    rows: list[MetricRow] = []
    verdicts: list[OpVerdict] = []
    origin = names[2]
    for i, name in enumerate(names):
        bad = i >= 2
        rows.append(_row(len(rows), name, cos=0.7 if bad else 0.99999, red=0.3 if bad else 0.0))
        if i == 2:
            rows.append(_row(len(rows), name, kind="input", cos=0.999999, red=2e-5))
            out = _check(name, "output", False, 0.3, failed=(("CosineSimilarity", 0.7),
                                                             ("RelativeEuclideanDistance", 0.3)))
            inp = _check(name, "input", True, 2e-5, producer=InputEdge(0, names[1]))
            verdicts.append(OpVerdict(op=name, op_type="MatMul", position=i, verdict=Verdict.ORIGIN, outputs=(out,),
                                      inputs=(inp,), error=0.3, input_error=2e-5, amplification=15000.0,
                                      source=SourceLine("model.py", 42, "y = self.fc(x)")))
        elif i == len(names) - 1 and i > 3:
            verdicts.append(_verdict(i, name, Verdict.INPUT_DIFFERS, 0.3))
        else:
            verdicts.append(_verdict(i, name, Verdict.INHERITED if bad else Verdict.OK, 0.3 if bad else 0.0))
    graph = OpGraph(nodes={n: OpNode(n, "Conv2D") for n in names}, source=GraphSource.MINDSPORE_IR)
    first = next(v for v in verdicts if v.op == origin)
    return rows, Localisation(verdicts=tuple(verdicts), graph=graph, first_divergence=first,
                              first_nonfinite=f"{names[3]}:output:0", bounds="CosineSimilarity>=0.99")


def _elements(op: str, n: int = 2000) -> ElementErrors:
    rng = np.random.default_rng(7)
    golden = np.abs(rng.standard_normal(n))
    golden[:10] = 0.0
    errors = golden * 1e-3 * rng.random(n)
    errors[10:30] = 0.0
    errors[30] = np.nan
    return ElementErrors(tensor_id=f"{op}:output:0", op=op, abs_error=errors, golden=golden, left_dtype="float16",
                         right_dtype="float32", elements=10 * n)


def _report(names: list[str], *, localised: bool = True, elements: bool = True) -> HtmlReport:
    rows, localisation = _network(names)
    return HtmlReport(rows=rows, localisation=localisation if localised else None,
                      element_errors=[_elements(names[2])] if elements else (),
                      inputs={"left": "/dumps/npu", "right": "/dumps/golden", "fusion rule": "rule.json"},
                      options={"gate": "CosineSimilarity>=0.99"}, title="run 7", tool_version="0.1.0",
                      created=CREATED)


NAMES = ["Default/conv1-Conv2d/Conv2D-op1", "Default/relu/ReLU-op2", "Default/fc/MatMul-op3", "Default/add/Add-op4",
         "Default/out/Softmax-op5"]


@pytest.fixture(scope="module")
def page() -> tuple[str, Page]:
    text = render_html(_report(NAMES))
    return text, Page(text)


def test_self_contained(page: tuple[str, Page]) -> None:
    text, parsed = page
    lowered = text.lower()
    assert 'src="http' not in lowered and "href=\"http" not in lowered and "<link" not in lowered
    assert "@import" not in lowered and re.findall(r"url\((?!#)", lowered) == []  # only in-page references
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert scripts == [{}]  # one inline script, no src
    assert not [attrs for tag, attrs in parsed.tags if tag in ("img", "iframe", "object", "embed")]
    assert sum(tag == "svg" for tag, _ in parsed.tags) == 3  # trend, histogram, magnitude
    assert "@media print" in text  # sizes for print


def test_summary_names_first_divergence(page: tuple[str, Page]) -> None:
    _, parsed = page
    summary = parsed.in_section("summary")
    assert "First divergence: " + NAMES[2] in summary
    assert "model.py:42" in summary and "y = self.fc(x)" in summary
    assert "RelativeEuclideanDistance = 0.3" in summary  # the bound it broke
    assert f"{NAMES[2]}:input:0" in summary and "0.999999" in summary  # its input and the input's cosine
    assert f"{NAMES[3]}:output:0" in summary  # first NaN/Inf tensor
    assert "compared" in summary and "origin" in summary


def test_one_table_row_per_operator_and_badges(page: tuple[str, Page]) -> None:
    _, parsed = page
    assert parsed.rows["operators"] == len(NAMES)
    assert parsed.rows["tensors"] == len(NAMES) + 1
    classes = parsed.classes()
    for css in ("ok", "or", "in", "id"):
        assert css in classes
    operators = parsed.in_section("operators")
    assert "▲ origin" in operators and "◆ input-differs" in operators and "float16/float32" in operators
    assert "[1,8,4,4]" in operators and "1.5e+04" in operators


def test_histograms_present(page: tuple[str, Page]) -> None:
    text, parsed = page
    assert parsed.rows.get("elements") is None
    assert "element errors" in parsed.in_section("elements").lower()
    assert "20000 elements" in parsed.in_section("elements")  # 2000 of 20000
    assert text.count('class="fig hist"') == 1 and text.count('class="fig mag"') == 1


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    names = [*HOSTILE, "plain-op", "last-op"]
    path = tmp_path / "r.html"
    report = _report(names)
    write_html(path, HtmlReport(**{**report.__dict__, "title": HOSTILE[0], "inputs": {HOSTILE[1]: HOSTILE[2]}}))
    text = path.read_text(encoding="utf-8")
    assert "<script>alert" not in text and 'a&b"c' not in text and "x\r=" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "a&amp;b&quot;c" in text and "x\\r=1+1" in text
    parsed = Page(text)
    assert [tag for tag, _ in parsed.tags].count("script") == 1
    data = "".join(parsed.text)
    assert "<script>alert(1)</script>" in data and 'a&b"c' in data and "x\\r=1+1" in data
    assert parsed.rows["operators"] == len(names)


def test_report_without_localisation(tmp_path: Path) -> None:
    path = tmp_path / "plain.html"
    write_html(path, _report(NAMES, localised=False, elements=False))
    parsed = Page(path.read_text(encoding="utf-8"))
    assert parsed.rows["operators"] == len(NAMES)  # row order, one line per operator
    assert "No localisation" in parsed.in_section("summary")
    assert not {"or", "ok", "in", "id"} & set(parsed.classes())
    assert sum(tag == "svg" for tag, _ in parsed.tags) == 1


def test_empty_report(tmp_path: Path) -> None:
    write_html(tmp_path / "empty.html", HtmlReport(rows=[]))
    assert "No operators" in (tmp_path / "empty.html").read_text(encoding="utf-8")


def test_missing_matplotlib_raises_option_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # None in sys.modules: the import fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(OptionError, match=re.escape("pip install 'vcompare[html]'")):
        write_html(tmp_path / "r.html", _report(NAMES, elements=False))
    assert not (tmp_path / "r.html").exists()


def test_deterministic_but_for_created(tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    write_html(first, _report(NAMES))
    report = _report(NAMES)
    write_html(second, HtmlReport(**{**report.__dict__, "created": "2030-12-31T23:59:59Z"}))
    a, b = first.read_bytes(), second.read_bytes()
    assert a != b
    assert a.replace(CREATED.encode(), b"") == b.replace(b"2030-12-31T23:59:59Z", b"")


def test_ten_thousand_operators_stay_small(tmp_path: Path) -> None:
    names = [f"Default/network-WithLossCell/_backbone-Net/layer{i // 50}-Block/conv{i}-Conv2d/Conv2D-op{i}"
             for i in range(10_000)]
    rows, localisation = _network(names)
    path = tmp_path / "big.html"
    write_html(path, HtmlReport(rows=rows, localisation=localisation, created=CREATED))
    size = path.stat().st_size
    assert size < 5_000_000, size
    text = path.read_text(encoding="utf-8")  # counted, not parsed: html.parser takes 2 s on 4.6 MB
    operators, tensors = text.split('<section id="operators">')[1].split('<section id="tensors">')
    assert operators.count("<tr>") == 10_000 + 1 and tensors.count("<tr>") == 10_001 + 1  # + the header rows
    assert text.count("<svg") == 1


def test_long_tables_keep_a_window_from_the_first_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_tables, "OP_TABLE_LIMIT", 20)
    monkeypatch.setattr(html_tables, "TENSOR_TABLE_LIMIT", 20)
    names = [f"op{i}" for i in range(60)]
    rows, localisation = _network(names)
    localisation = dataclasses.replace(localisation, first_divergence=localisation.verdicts[25])
    parsed = Page(render_html(HtmlReport(rows=rows, localisation=localisation)))
    assert parsed.rows["operators"] == 20 and parsed.rows["tensors"] == 20
    operators = parsed.in_section("operators")
    assert "Showing operators 24–43 of 60" in operators  # two lines before op25, the first divergence
    assert "op22" not in operators and "op23" in operators and "op42" in operators and "op43" not in operators
    assert "Showing rows 25–44 of 61" in parsed.in_section("tensors")


def test_degenerate_numbers_still_make_a_page() -> None:
    """Nothing computed, NaN everywhere, zeros only, values near the float64 limits: plots say so."""
    names = ["a", "b", "c", "d"]
    rows, localisation = _network(names)
    for row, (cos, red) in zip(rows, [(None, None), (math.nan, math.inf), (1.0, 0.0), (-1.0, 1e300), (0.5, 5e-324)]):
        row.metrics.update({"CosineSimilarity": cos, "RelativeEuclideanDistance": red})
    elements = [ElementErrors("a:output:0", "a", np.full(4, np.nan), np.ones(4)),
                ElementErrors("b:output:0", "b", np.zeros(4), np.zeros(4), "bfloat16", "int8"),
                ElementErrors("c:output:0", "c", np.array([1e300, 5e-324, 0.0]), np.array([1e-300, 1e300, 0.0]))]
    text = render_html(HtmlReport(rows=rows, localisation=localisation, element_errors=elements))
    parsed = Page(text)
    assert sum(tag == "svg" for tag, _ in parsed.tags) == 7
    assert "no finite error to draw" in text
    assert "(bfloat16)" in text  # the unit roundoff line of the lower-precision float type
    operators = parsed.in_section("operators")
    assert "nan" in operators and "—" in operators

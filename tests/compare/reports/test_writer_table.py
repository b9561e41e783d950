"""The writer table (issue 29): every output kind has one writer of one signature; the output plan
checks its targets before a run with the messages of before; writing goes on past a failure; the
files written through the table are the report writers' own, byte for byte; ``-o`` / ``--json`` /
``--junit`` of a network run and of ``vcompare gate`` all go through it."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import get_type_hints

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from compare.api import ComparisonResult, compare_network, regate
from compare.cli import app, gate_app
from compare.errors import OptionError, OutputError
from compare.reports.cells import FloatFormat, parse_float_format
from compare.reports.divergence import verdict_map
from compare.reports.network import Layout, TableFormat, render_csv, render_txt
from compare.runs import outputs
from compare.runs.outputs import WRITERS, OutputKind, OutputPlan, Target, WriteOptions, Written

DEMO = ROOT / "fixtures" / "demo"
runner = CliRunner()


@pytest.fixture(scope="module")
def demo() -> ComparisonResult:
    return compare_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json", gates=["CosineSimilarity>=0.99"])


def test_every_kind_has_one_writer_of_one_signature() -> None:
    assert set(WRITERS) == set(OutputKind)
    for kind, writer in WRITERS.items():
        assert list(inspect.signature(writer).parameters) == ["result", "target", "options"], kind
        hints = get_type_hints(writer, {**vars(outputs), "ComparisonResult": ComparisonResult})
        assert hints["result"] is ComparisonResult and hints["target"] is Target and hints["options"] is WriteOptions and hints["return"] is Path, kind
    assert {k for k in OutputKind if k.is_table} == {OutputKind.CSV, OutputKind.TXT, OutputKind.PARQUET, OutputKind.XLSX}
    assert {k.value for k in OutputKind if k.is_table} == {f.value for f in TableFormat}  # every -o form has a writer


def test_the_plan_lists_its_targets_in_option_order(tmp_path: Path) -> None:
    plan = OutputPlan.plan(str(tmp_path / "r.txt"), json=tmp_path / "j" / "r.json", junit=tmp_path / "r.xml")
    assert plan.targets == (Target(OutputKind.TXT, tmp_path / "r.txt", str(tmp_path / "r.txt")),
                            Target(OutputKind.JSON, tmp_path / "j" / "r.json"),
                            Target(OutputKind.JUNIT, tmp_path / "r.xml"))
    assert [t.label for t in plan.targets] == ["result", "json", "junit"]
    assert plan.table == plan.targets[0] and plan.folders() == [tmp_path, tmp_path / "j"]
    assert OutputPlan.plan(str(tmp_path / "r.txt"), csv_flag=True).targets[0].kind is OutputKind.CSV
    stamped = OutputPlan.plan(None).targets[0]
    assert stamped.kind is OutputKind.CSV and stamped.path.parent == Path.cwd() and stamped.given is None
    saved = OutputPlan.saved(json=tmp_path / "g.json")
    assert saved.table is None and saved.targets == (Target(OutputKind.JSON, tmp_path / "g.json"),)


def test_the_plan_refuses_before_the_run_with_the_messages_of_before(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"vcompare does not write '\.xls' files; -o writes \.csv, \.txt, "
                                          r"\.parquet, \.xlsx or a folder"):
        OutputPlan.plan(str(tmp_path / "r.xls"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=f"cannot write {blocker / 'r.json'}: {blocker} is a file, not a folder"):
        OutputPlan.plan(str(tmp_path / "r.csv"), json=blocker / "r.json")
    with pytest.raises(OutputError, match=f"cannot write {tmp_path}: is a directory \\(give a file name\\)"):
        OutputPlan.saved(junit=tmp_path)
    if os.geteuid() != 0:  # root writes into read-only folders
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OutputError, match=f"permission denied: folder {locked} is not writable"):
            OutputPlan.plan(str(locked / "r.csv"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] + (["locked"] if os.geteuid() != 0 else [])


def test_the_tables_are_the_report_writers_own(demo: ComparisonResult, tmp_path: Path) -> None:
    digits = parse_float_format(8)
    assert isinstance(digits, FloatFormat)
    plan = OutputPlan.plan(str(tmp_path / "r.csv"))
    options = WriteOptions(layout=Layout.MSACCUCMP, float_format=digits, verdicts=True)
    outcome = plan.write(demo, options)
    assert outcome.written == (Written("result", tmp_path / "r.csv"),) and outcome.failed == ()
    left_npy, right_npy = demo.network.has_npy
    expected = render_csv(demo.rows, demo.metrics, Layout.MSACCUCMP, float_format=digits,
                          verdicts=verdict_map(demo.localisation), left_address=not left_npy,
                          right_address=not right_npy, op_sequence=False)
    assert (tmp_path / "r.csv").read_bytes() == expected.encode()
    OutputPlan.plan(str(tmp_path / "r.txt")).write(demo)
    assert (tmp_path / "r.txt").read_text() == render_txt(demo.rows, demo.metrics, left_address=not left_npy,
                                                           right_address=not right_npy)


def test_json_and_junit_through_the_table(demo: ComparisonResult, tmp_path: Path) -> None:
    OutputPlan.saved(json=tmp_path / "t.json", junit=tmp_path / "t.xml").write(demo)
    direct = demo.write_json(tmp_path / "d.json")
    table, before = json.loads((tmp_path / "t.json").read_text()), json.loads(direct.read_text())
    table.pop("created"), before.pop("created")
    assert table == before
    assert (tmp_path / "t.xml").read_text() == demo.to_junit()


def test_a_failed_output_is_collected_and_the_others_written(demo: ComparisonResult, tmp_path: Path) -> None:
    saved = regate(demo.write_json(tmp_path / "saved.json"), gates=["CosineSimilarity>=0.99"])
    plan = OutputPlan((Target(OutputKind.HTML, tmp_path / "r.html"), Target(OutputKind.JUNIT, tmp_path / "r.xml")))
    outcome = plan.write(saved)
    assert outcome.written == (Written("junit", tmp_path / "r.xml"),)
    assert len(outcome.failed) == 1 and "an HTML report needs a live comparison" in str(outcome.failed[0])
    assert not (tmp_path / "r.html").exists()


def test_network_and_gate_outputs_go_through_the_table(demo: ComparisonResult, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[OutputKind, str]] = []

    def spy(kind: OutputKind):
        real = WRITERS[kind]

        def writer(result: ComparisonResult, target: Target, options: WriteOptions) -> Path:
            seen.append((kind, target.path.name))
            return real(result, target, options)
        return writer

    for kind in list(WRITERS):
        monkeypatch.setitem(WRITERS, kind, spy(kind))
    live = runner.invoke(app, ["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                               "-o", str(tmp_path / "r.txt"), "--json", str(tmp_path / "r.json"),
                               "--junit", str(tmp_path / "r.xml")])
    assert live.exit_code == 0, live.output
    assert seen == [(OutputKind.TXT, "r.txt"), (OutputKind.JSON, "r.json"), (OutputKind.JUNIT, "r.xml")]
    seen.clear()
    gate = runner.invoke(gate_app, [str(tmp_path / "r.json"), "--gate", "CosineSimilarity>=0.5",
                               "--json", str(tmp_path / "g.json"), "--junit", str(tmp_path / "g.xml")])
    assert gate.exit_code == 0, gate.output
    assert seen == [(OutputKind.JSON, "g.json"), (OutputKind.JUNIT, "g.xml")]
    assert f"json: {tmp_path / 'g.json'}" in gate.stdout


def test_a_statistics_run_names_its_table_from_o_as_given(tmp_path: Path) -> None:
    stats = ROOT / "fixtures" / "mindspore" / "stats"
    result = compare_network(stats, stats)
    assert result.network is not None and result.network.stats is not None
    outcome = OutputPlan.plan(str(tmp_path / "r.txt")).write(result, WriteOptions(verdicts=True))
    assert outcome.written == (Written("result", tmp_path / "r_stats.csv"),) and outcome.failed == ()
    assert (tmp_path / "r_stats.csv").read_text().splitlines()[0].endswith(",Verdict")
    assert not (tmp_path / "r.txt").exists()

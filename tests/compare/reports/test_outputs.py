"""Machine-readable outputs and safe writing (issue 13): float formats, -o kinds, parquet,
OutputError and the umask, the JSON result and its schema, JUnit XML, reading results back."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, TESTS

from compare.errors import CompareError, DumpFormatError, OptionError, OutputError
from compare.records import Bound, CheckFailure, MetricRow, Outcome, PairStatus, Verdict
from compare.reports.cells import (
    DEFAULT_FLOAT_FORMAT,
    REPR_FLOAT_FORMAT,
    FloatFormat,
    metric_cell,
    parse_float_format,
    std_cell,
)
from compare.reports.files import atomic_write, atomic_write_text, current_umask
from compare.reports.junit import render_junit, write_junit, xml_text
from compare.reports.network import Layout, TableFormat, render_csv, render_txt, resolve_output, write_report
from compare.reports.json_rows import full_document
from compare.reports.result_json import SCHEMA_VERSION, decode_float, dumps, encode_float, result_document, write_json
from compare.reports.saved import load_result
from compare.reports.saved_csv import split_reasons
from compare.reports.saved_result import SavedKind
from compare.runs.folders import run_network

DEMO = ROOT / "fixtures" / "demo"
BAD = ROOT / "fixtures" / "bad"
SCHEMA = ROOT / "docs" / "result-schema.json"
JUNIT_XSD = TESTS / "junit.xsd"
METRICS = ["CosineSimilarity", "MaxAbsoluteError", "StandardDeviation", "KullbackLeiblerDivergence"]


def _rows() -> list[MetricRow]:
    """Every kind of row: missing, compared, computed NaN/inf, tiny values, odd names, selection."""
    return [
        MetricRow(0, "Data", "data", "*", None, status=PairStatus.MISSING_RIGHT,
                  metrics={m: None for m in METRICS if m != "StandardDeviation"}, reasons=["no golden tensor"]),
        MetricRow(1, "Conv2D", "conv1", "conv1,bn1", "conv1:output:0", "float16", "float32", (1, 16, 32, 32),
                  {"CosineSimilarity": 0.9999999999999998, "MaxAbsoluteError": 2.98e-07,
                   "KullbackLeiblerDivergence": -1e-12},
                  (0.40812, 0.00041, 0.4080, 1e-9), left_address=20619064705024, right_address=7),
        MetricRow(2, "Conv2D", "res2b", "res2b", "res2b:output:0", "float16", "float32", (1, 32),
                  {"CosineSimilarity": math.nan, "MaxAbsoluteError": math.inf, "KullbackLeiblerDivergence": None},
                  (math.nan, -math.inf, 0.464, 0.674), reasons=["first, with a comma", "shape [1,2] vs [2]"]),
        MetricRow(3, "TransData", "=cmd", "-x", "=cmd:output:0", "float16", "float16", (),
                  {"CosineSimilarity": 1.0, "MaxAbsoluteError": 0.0, "KullbackLeiblerDivergence": 0.0},
                  (0.0, 0.0, 0.0, 0.0)),
        MetricRow(4, "Add", "add\x01<&>\"'", "add", "add:output:0", None, "float32", None,
                  {m: None for m in METRICS if m != "StandardDeviation"}, status=PairStatus.MISSING_LEFT,
                  reasons=["no dump of 'add'"], expected_gap="an operator the fusion rule gives no golden"),
    ]


def _selection_rows() -> list[MetricRow]:
    rows = _rows()[1:3]
    for i, row in enumerate(rows):
        row.rank, row.graph, row.iteration = 0, 3, i + 1
    return rows


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


def _assert_rows_equal(got: list[MetricRow], want: list[MetricRow], *, exact_std: bool = True) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for name in ("index", "op_type", "left_op", "right_op", "tensor_id", "left_dtype", "right_dtype", "shape",
                     "reasons", "status", "rank", "graph", "iteration", "expected_gap"):
            assert getattr(g, name) == getattr(w, name), (name, g, w)
        for name, value in w.metrics.items():
            assert _same(g.metrics.get(name), value), (name, g.metrics, w.metrics)
        if exact_std:
            assert (g.std is None) == (w.std is None)
            if w.std is not None and g.std is not None:
                assert all(_same(x, y) for x, y in zip(g.std, w.std))


def _verdict(rows: list[MetricRow]) -> Verdict:
    """A verdict as compare.verdict.gates makes it: one value failure, one incomplete, one waived, one error."""
    bound = Bound("CosineSimilarity", ">=", 0.9999999999999999, "--gate CosineSimilarity>=0.9999999999999999")
    compared = next(i for i, r in enumerate(rows) if r and r.metrics.get("CosineSimilarity") is not None)
    missing = [i for i, r in enumerate(rows) if not r]
    row = rows[compared]
    value = row.metrics["CosineSimilarity"]
    failures = [CheckFailure(compared, row.tensor_id, row.op_type, row.left_op, row.right_op, "CosineSimilarity",
                             value, bound, f"CosineSimilarity = {value!r} violates {bound.text}")]
    waived = []
    if missing:
        r = rows[missing[0]]
        failures.append(CheckFailure(missing[0], r.tensor_id, r.op_type, r.left_op, r.right_op, None, None, None,
                                     f"not compared: {'; '.join(r.reasons)}", incomplete=True))
    if len(missing) > 1:
        r = rows[missing[1]]
        waived.append(CheckFailure(missing[1], r.tensor_id, r.op_type, r.left_op, r.right_op, None, None, None,
                                   "not compared", incomplete=True, waived_by="known gap (until 2099-01-01)"))
    return Verdict(Outcome.FAILED, failures, waived, ["waiver 'old' expired on 2020-01-01"], len(rows), [bound])


# ------------------------------------------------------------------------------------------------
# Float formats
# ------------------------------------------------------------------------------------------------


def test_parse_float_format() -> None:
    assert parse_float_format(None, None) == DEFAULT_FLOAT_FORMAT == FloatFormat(6)
    assert parse_float_format(9, None) == FloatFormat(9)
    assert parse_float_format(9, "fixed") == FloatFormat(9)
    assert parse_float_format(None, "repr") == REPR_FLOAT_FORMAT
    for digits, style in ((-1, None), (41, None), (3, "repr"), (None, "scientific"), (True, None), ("6", None)):
        with pytest.raises(OptionError):
            parse_float_format(digits, style)  # type: ignore[arg-type]


def test_tiny_errors_are_not_printed_as_zero_in_full_precision() -> None:
    assert metric_cell(2.98e-07) == "0.000000"  # the reference layout, unchanged
    assert metric_cell(2.98e-07, FloatFormat(9)) == "0.000000298"
    assert metric_cell(2.98e-07, REPR_FLOAT_FORMAT) == "2.98e-07"
    assert metric_cell(0.9999999999999998, REPR_FLOAT_FORMAT) == "0.9999999999999998"
    assert [metric_cell(v, REPR_FLOAT_FORMAT) for v in (None, math.nan, math.inf, -math.inf)] == \
        ["NaN", "nan", "inf", "-inf"]
    assert std_cell((0.40812, 0.00041, 0.408, 1e-9)) == "(0.408;0.000),(0.408;0.000)"
    assert std_cell((0.40812, 0.00041, 0.408, 1e-9), REPR_FLOAT_FORMAT) == "(0.40812;0.00041),(0.408;1e-09)"
    assert std_cell((0.40812, 0.00041, 0.408, 1e-9), FloatFormat(5)) == "(0.40812;0.00041),(0.40800;0.00000)"


def test_render_with_float_format() -> None:
    rows = _rows()
    default = render_csv(rows, METRICS)
    assert default == render_csv(rows, METRICS, float_format=DEFAULT_FLOAT_FORMAT)
    full = render_csv(rows, METRICS, float_format=REPR_FLOAT_FORMAT)
    assert "2.98e-07" in full and "2.98e-07" not in default
    assert "0.9999999999999998" in render_txt(rows, METRICS, float_format=REPR_FLOAT_FORMAT)
    assert "0.000000298" in render_csv(rows, METRICS, Layout.MSACCUCMP, float_format=FloatFormat(9))


# ------------------------------------------------------------------------------------------------
# Output kinds and parquet
# ------------------------------------------------------------------------------------------------


def test_resolve_output_kinds(tmp_path: Path) -> None:
    assert resolve_output(tmp_path / "r.parquet") == (tmp_path / "r.parquet", TableFormat.PARQUET)
    assert resolve_output(tmp_path / "R.CSV") == (tmp_path / "R.CSV", TableFormat.CSV)
    for name in ("r.json", "r.xls", "r.xml", "result.v2"):
        with pytest.raises(OptionError) as info:
            resolve_output(tmp_path / name)
        message = str(info.value)
        assert ".csv" in message and ".txt" in message and ".parquet" in message and "--json" in message
        assert "\n" not in message
    assert not list(tmp_path.iterdir())


def test_parquet_without_pyarrow_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(OptionError, match=r"pip install 'vcompare\[parquet\]'"):
        resolve_output(tmp_path / "r.parquet")


def test_parquet_round_trips_through_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = write_report(_rows(), tmp_path / "r.parquet", METRICS, table_format=TableFormat.PARQUET)
    frame = pd.read_parquet(path, dtype_backend="pyarrow")
    assert list(frame["Index"]) == [0, 1, 2, 3, 4]
    cos = frame["CosineSimilarity"]
    assert cos.isna().tolist()[0] and cos.isna().tolist()[4]  # null = not computed
    assert cos[1] == 0.9999999999999998 and math.isnan(cos[2])  # NaN stays a computed NaN
    assert frame["MaxAbsoluteError"][2] == math.inf and frame["MaxAbsoluteError"][1] == 2.98e-07
    assert frame["StandardDeviation.RightStd"][1] == 1e-9
    assert list(frame["Status"]) == [r.status.value for r in _rows()]
    assert list(frame["FailReason"][2]) == ["first, with a comma", "shape [1,2] vs [2]"]
    saved = load_result(path)
    assert saved.kind is SavedKind.PARQUET and saved.metrics == METRICS
    _assert_rows_equal(saved.rows, _rows())
    assert saved.rows[1].left_address == 20619064705024


# ------------------------------------------------------------------------------------------------
# Writing safely
# ------------------------------------------------------------------------------------------------


def _one_line_naming(exc: BaseException, path: Path) -> None:
    message = str(exc)
    assert "\n" not in message and str(path) in message
    assert isinstance(exc, CompareError)


def test_output_is_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    target.mkdir()
    with pytest.raises(OutputError) as info:
        write_report(_rows(), target, METRICS)
    _one_line_naming(info.value, target)
    assert "directory" in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"] and not list(target.iterdir())


def test_output_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "sub" / "r.csv"
    with pytest.raises(OutputError) as info:
        write_report(_rows(), target, METRICS)
    _one_line_naming(info.value, target)
    assert (tmp_path / "file").read_text() == "x"


def test_disk_full_keeps_the_previous_result(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("previous")

    def full(handle: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OutputError) as info:
        atomic_write(target, full)
    _one_line_naming(info.value, target)
    assert os.strerror(errno.ENOSPC) in str(info.value)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left


def test_dev_full_is_enospc_with_one_line(tmp_path: Path) -> None:
    """A real ENOSPC from the kernel: the writer copies into /dev/full, as a full disk would fail."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    target = tmp_path / "r.csv"
    target.write_text("previous")

    def to_full(handle: object) -> None:
        with open("/dev/full", "wb", buffering=0) as full:
            full.write(b"x" * 4096)

    with pytest.raises(OutputError, match="No space left on device") as info:
        atomic_write(target, to_full)
    _one_line_naming(info.value, target)
    assert target.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["r.csv"]


def _write_as_nobody(path: Path) -> str:
    """As root: fork, drop to uid/gid 65534 in the child, try the write there; return its message."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                atomic_write_text(path, "new")
                message = "written"
            except OutputError as exc:
                message, code = str(exc), 2
            os.write(write, message.encode("utf-8", "replace"))
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 2:
        pytest.skip(f"could not check as an unprivileged user (child said {message!r})")
    return message


def test_read_only_folder(tmp_path: Path) -> None:
    """Read-only folder: as a normal user directly; as root (which ignores modes), in a child
    process that dropped to an unprivileged user."""
    base = Path(tempfile.mkdtemp(prefix="vcmp-ro-"))
    folder = base / "ro"
    try:
        base.chmod(0o755)
        folder.mkdir()
        (folder / "r.csv").write_text("previous")
        folder.chmod(0o555)
        if os.geteuid() != 0:
            with pytest.raises(OutputError) as info:
                atomic_write_text(folder / "r.csv", "new")
            message = str(info.value)
        elif hasattr(os, "fork") and hasattr(os, "setuid"):
            message = _write_as_nobody(folder / "r.csv")
        else:
            pytest.skip("running as root without fork/setuid: a read-only folder cannot be simulated")
        assert "\n" not in message and str(folder / "r.csv") in message and "Permission denied" in message
        assert (folder / "r.csv").read_text() == "previous"
        assert [p.name for p in folder.iterdir()] == ["r.csv"]
    finally:
        if folder.exists():
            folder.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_result_files_honour_the_umask(tmp_path: Path, mask: int, mode: int) -> None:
    old = os.umask(mask)
    try:
        assert current_umask() == mask
        paths = [write_report(_rows(), tmp_path / "r.csv", METRICS),
                 write_report(_rows(), tmp_path / "r.parquet", METRICS, table_format=TableFormat.PARQUET),
                 write_json(_document(_rows()), tmp_path / "r.json"),
                 write_junit(render_junit(_rows(), None, suite_name="s"), tmp_path / "r.xml")]
    finally:
        os.umask(old)
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


# ------------------------------------------------------------------------------------------------
# JSON result
# ------------------------------------------------------------------------------------------------


def _document(rows: list[MetricRow], metrics: list[str] = METRICS, verdict: Verdict | None = None) -> dict:
    """A whole document: the head of ``result_document`` with its rows from the row encoder (as ``to_dict``)."""
    head = result_document(rows, metrics, inputs={"left": Path("/l"), "right": Path("/r"), "fusion_rule": None},
                           options={"algorithms": ("CosineSimilarity",), "max_elements": 0, "layout": Layout.VCOMPARE},
                           notes=["a note"], verdict=verdict, timing={"total": 1.25, "compare": 0.5},
                           tool_version="1.2.3", created=0.0)
    assert head["rows"] == []
    return full_document(head, rows, metrics)


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_non_finite_encoding_round_trips() -> None:
    for value in (None, 0.0, -0.0, 1e-300, 2.98e-07, 0.9999999999999998, math.inf, -math.inf):
        assert decode_float(json.loads(json.dumps(encode_float(value)))) == value
    assert math.isnan(decode_float(encode_float(math.nan)))  # type: ignore[arg-type]
    for bad in ("NaN", True, [], "1.0"):
        with pytest.raises(ValueError):
            decode_float(bad)


def test_json_document_shape_and_exact_round_trip(tmp_path: Path) -> None:
    rows = _rows()
    verdict = _verdict(rows)
    document = _document(rows, verdict=verdict)
    text = dumps(document)
    assert "NaN" not in text and "Infinity" not in text  # JSON has no NaN: encoded as strings
    assert document["schema"] == "vcompare-result" and document["version"] == SCHEMA_VERSION == 2
    assert document["created"] == "1970-01-01T00:00:00Z" and document["tool"]["version"] == "1.2.3"
    assert document["inputs"] == {"left": "/l", "right": "/r", "fusion_rule": None}
    assert document["options"]["algorithms"] == ["CosineSimilarity"] and document["options"]["layout"] == "vcompare"
    assert document["counts"] == {"compared": 3, "not comparable": 0, "missing on left": 1, "missing on right": 1,
                                  "total": 5}
    assert document["rows"][1]["metrics"]["MaxAbsoluteError"] == 2.98e-07
    assert document["rows"][2]["metrics"]["MaxAbsoluteError"] == "inf"
    assert document["verdict"]["outcome"] == "failed" and document["verdict"]["exit_code"] == 1
    assert document["verdict"]["failures"][0]["bound"]["value"] == 0.9999999999999999
    _validator().validate(json.loads(text))
    path = write_json(document, tmp_path / "r.json")
    saved = load_result(path)
    assert saved.kind is SavedKind.JSON and saved.metrics == METRICS and saved.document is not None
    assert saved.document["verdict"] == json.loads(text)["verdict"]
    _assert_rows_equal(saved.rows, rows)
    assert saved.rows[1].left_address == 20619064705024 and saved.rows[1].right_address == 7


def test_undecodable_names_survive_json(tmp_path: Path) -> None:
    row = MetricRow(0, "Op", "bad\udcffname", "x", "t", "float32", "float32", (1,), {"CosineSimilarity": 1.0})
    saved = load_result(write_json(_document([row], ["CosineSimilarity"]), tmp_path / "r.json"))
    assert saved.rows[0].left_op == "bad\udcffname"


def _real_runs() -> list[tuple[str, list[MetricRow], list[str]]]:
    runs = []
    demo = run_network(DEMO / "npu", DEMO / "golden", DEMO / "model.json")
    runs.append(("demo", demo.rows, demo.metrics))
    manifest = json.loads((BAD / "MANIFEST.json").read_text())
    for name in ("dumps_a", "goldens"):
        case = manifest["cases"][name]
        result = run_network(BAD / case["left"], BAD / case["right"], BAD / case["rule"])
        runs.append((name, result.rows, result.metrics))
    return runs


@pytest.fixture(scope="module")
def real_runs() -> list[tuple[str, list[MetricRow], list[str]]]:
    return _real_runs()


def test_real_run_documents_validate_and_reload(tmp_path: Path, real_runs) -> None:
    validator = _validator()
    for name, rows, metrics in real_runs:
        assert any(not r for r in rows) or name == "demo"
        document = _document(rows, metrics, verdict=_verdict(rows))
        path = write_json(document, tmp_path / f"{name}.json")
        validator.validate(json.loads(path.read_text()))
        _assert_rows_equal(load_result(path).rows, rows)
        # CSV keeps the values it prints: with repr, every metric comes back exactly
        csv_path = write_report(rows, tmp_path / f"{name}.csv", metrics, float_format=REPR_FLOAT_FORMAT)
        saved = load_result(csv_path)
        assert saved.metrics == metrics
        for got, want in zip(saved.rows, rows):
            assert bool(got) == bool(want), (got, want)
            for metric, value in want.metrics.items():
                if metric in metrics:
                    assert _same(got.metrics.get(metric), value)


def test_newer_or_foreign_json_is_refused_with_the_file_named(tmp_path: Path) -> None:
    document = _document(_rows())
    document["version"] = SCHEMA_VERSION + 1
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(document))
    with pytest.raises(DumpFormatError, match="newer"):
        load_result(newer)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n "schema": "vcompare-result",\n oops\n}')
    with pytest.raises(DumpFormatError, match=r"broken.json: line 3"):
        load_result(broken)
    document = _document(_rows())
    document["rows"][3]["status"] = "fine"
    bad_row = tmp_path / "bad_row.json"
    write_json(document, bad_row)
    lines = bad_row.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if '"fine"' in text)
    with pytest.raises(DumpFormatError, match=rf"bad_row.json: line {line}: rows\[3\]: status"):
        load_result(bad_row)
    for name, text in (("other.json", "[1, 2]"), ("r.xlsx", "x")):
        (tmp_path / name).write_text(text)
    with pytest.raises(DumpFormatError, match="not a vcompare result"):
        load_result(tmp_path / "other.json")
    with pytest.raises(OptionError, match="xlsx"):
        load_result(tmp_path / "r.xlsx")
    with pytest.raises(OptionError, match="no such file"):
        load_result(tmp_path / "absent.json")


def test_loading_a_large_json_result(tmp_path: Path) -> None:
    """20 000 rows, 20 times the 1.8 GB benchmark case (~1 000), read back whole: every row, in
    order, the last one's metrics intact (its load time is printed, not asserted; the time of
    larger results is scripts/bench.py's to measure)."""
    base = _rows()[1]
    count = 20_000
    rows = [MetricRow(i, "Conv2D", f"op{i}", f"op{i}", f"op{i}:output:0", "float16", "float32", (1, 16),
                      dict(base.metrics), base.std) for i in range(count)]
    path = write_json(_document(rows), tmp_path / "big.json")
    start = time.perf_counter()
    saved = load_result(path)
    elapsed = time.perf_counter() - start
    print(f"\nload_result: {count}-row JSON ({path.stat().st_size / 1e6:.1f} MB) read in {elapsed:.3f} s")
    assert len(saved.rows) == count and saved.rows[-1].metrics == base.metrics
    assert [r.left_op for r in saved.rows[::997]] == [f"op{i}" for i in range(0, count, 997)]


# ------------------------------------------------------------------------------------------------
# CSV read-back
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [Layout.VCOMPARE, Layout.MSACCUCMP])
@pytest.mark.parametrize("float_format", [DEFAULT_FLOAT_FORMAT, FloatFormat(12), REPR_FLOAT_FORMAT])
def test_csv_read_back(tmp_path: Path, layout: Layout, float_format: FloatFormat) -> None:
    rows = _rows()
    path = write_report(rows, tmp_path / "r.csv", METRICS, layout=layout, float_format=float_format)
    saved = load_result(path)
    assert saved.kind is SavedKind.CSV and saved.metrics == METRICS and saved.document is None
    assert [r.status for r in saved.rows] == [r.status for r in rows]
    assert [r.left_op for r in saved.rows] == [r.left_op for r in rows]  # '=cmd read back as =cmd
    assert [r.right_op for r in saved.rows] == [r.right_op for r in rows]
    assert [r.shape for r in saved.rows] == [r.shape if r.tensor_id else None for r in rows]
    if layout is Layout.VCOMPARE:
        assert saved.rows[2].reasons == rows[2].reasons
    else:  # msaccucmp joins reasons with bare commas: a comma outside brackets splits (documented)
        assert saved.rows[2].reasons == ["first", "with a comma", "shape [1,2] vs [2]"]
    mae = saved.rows[1].metrics["MaxAbsoluteError"]
    assert mae == (0.0 if float_format.is_default else 2.98e-07)
    assert math.isnan(saved.rows[2].metrics["CosineSimilarity"]) and saved.rows[2].metrics["MaxAbsoluteError"] == math.inf
    assert saved.rows[2].metrics["KullbackLeiblerDivergence"] is None
    if float_format is REPR_FLOAT_FORMAT and layout is Layout.VCOMPARE:  # CSV has no expected_gap
        _assert_rows_equal(saved.rows, [dataclasses.replace(r, expected_gap=None) for r in rows])
    if layout is Layout.MSACCUCMP:
        assert saved.rows[1].left_address == 20619064705024 and saved.rows[1].right_address == 7


def test_csv_read_back_with_rank_graph_iteration(tmp_path: Path) -> None:
    rows = _selection_rows()
    for layout in Layout:
        saved = load_result(write_report(rows, tmp_path / f"{layout.value}.csv", METRICS, layout=layout))
        assert [(r.rank, r.graph, r.iteration) for r in saved.rows] == [(0, 3, 1), (0, 3, 2)]


def test_split_reasons() -> None:
    assert split_reasons("a; b, c", msaccucmp=False) == ["a", "b, c"]
    assert split_reasons("a,shape [1,2] vs (3,4),'x,y'", msaccucmp=True) == ["a", "shape [1,2] vs (3,4)", "'x,y'"]
    assert split_reasons("", msaccucmp=True) == []


def test_malformed_csv_names_file_and_line(tmp_path: Path) -> None:
    good = render_csv(_rows(), METRICS).splitlines()
    cases = {
        "header.csv": "a,b,c\n1,2,3\n",
        "cells.csv": "\n".join(good[:3] + ["1,2,3"]) + "\n",
        "number.csv": "\n".join(good[:2] + [good[2].replace("2.98e-07", "x").replace("0.000000", "abc", 1)]) + "\n",
        "empty.csv": "",
    }
    expected = {"header.csv": "line 1", "cells.csv": "line 4", "number.csv": "line 3", "empty.csv": "line 1"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(DumpFormatError, match=f"{name}: {expected[name]}"):
            load_result(tmp_path / name)


# ------------------------------------------------------------------------------------------------
# JUnit
# ------------------------------------------------------------------------------------------------


def _xsd():
    xmlschema = pytest.importorskip("xmlschema")
    return xmlschema.XMLSchema(str(JUNIT_XSD))


def test_junit_valid_counts_and_messages(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    rows = _rows()
    verdict = _verdict(rows)
    text = render_junit(rows, verdict, suite_name="vcompare \x02demo", time_seconds=1e-5)
    path = write_junit(text, tmp_path / "report.xml")
    _xsd().validate(str(path))
    root = ET.parse(path).getroot()
    assert root.get("name") == "vcompare \\x02demo"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("6", "1", "2", "1")
    failure = root.find(".//failure")
    assert failure is not None and failure.get("type") == "CosineSimilarity"
    assert "0.9999999999999998" in failure.get("message", "") and "0.9999999999999999" in failure.get("message", "")
    assert root.find(".//error[@type='incomplete']") is not None
    skipped = root.find(".//skipped")
    assert skipped is not None and "known gap" in skipped.get("message", "")
    assert root.find(".//testsuite[@name='vcompare policy']//error[@type='policy']") is not None
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases))
        assert suite.get("failures") == str(sum(c.find("failure") is not None for c in cases))
        assert all(c.get("classname") == suite.get("name") for c in cases)
    names = [c.get("classname") for c in root.iter("testcase")]
    assert "Add add\\x01<&>\"'" in names  # control character made visible, the rest escaped by XML


def test_junit_without_gate_and_for_real_runs(tmp_path: Path, real_runs) -> None:
    import xml.etree.ElementTree as ET

    schema = _xsd()
    for name, rows, _metrics in real_runs:
        for verdict in (None, _verdict(rows)):
            text = render_junit(rows, verdict, suite_name=name)
            schema.validate(text)
            root = ET.fromstring(text.encode())
            assert int(root.get("tests", "0")) == len(rows) + (len(verdict.errors) if verdict else 0)
            if verdict is None:
                assert root.get("failures") == "0" and root.get("errors") == "0"
                assert int(root.get("skipped", "0")) == sum(1 for r in rows if not r)


def test_xml_text_keeps_what_xml_cannot_hold_visible() -> None:
    assert xml_text("a\x00b\x1fc\ud800d\udcffe\ufffe") == "a\\x00b\\x1fc\\ud800d\\xffe\\ufffe"
    assert xml_text("tab\tnew\nline") == "tab\tnew\nline"


def test_empty_and_not_gated_junit_is_valid() -> None:
    schema = _xsd()
    schema.validate(render_junit([], None, suite_name="empty"))
    text = render_junit(_rows(), Verdict(Outcome.NOT_GATED), suite_name="not gated")
    schema.validate(text)
    assert 'failures="0" errors="0" skipped="2"' in text.splitlines()[1]


def test_options_records_and_sets_become_json() -> None:
    bound = Bound("CosineSimilarity", ">=", 0.99, "--gate CosineSimilarity>=0.99")
    document = result_document([], [], inputs={"left": Path("a")}, options={"gates": [bound], "ranks": {1, 0},
                                                                             "tolerance": math.inf},
                               notes=[], verdict=None, timing={}, tool_version="0")
    assert document["options"] == {"gates": [{"metric": "CosineSimilarity", "op": ">=", "value": 0.99,
                                              "source": "--gate CosineSimilarity>=0.99", "if_present": False}],
                                   "ranks": [0, 1], "tolerance": "inf"}
    assert document["counts"]["total"] == 0 and document["rows"] == []
    _validator().validate(json.loads(dumps(document)))

"""Issue 17: formula injection through a bare CR, a LF, a TAB or leading blanks, in every CSV (and
text table) vcompare and vconvert write.

Python's ``csv.writer`` with ``lineterminator="\\n"`` leaves a cell holding a bare CR unquoted, and
``csv.reader``, ``pandas.read_csv`` and spreadsheets split the row there: a cell ``\\r=1+1`` turned
into a row whose first cell is ``=1+1``. Every writer is fed names holding the payloads below,
through real input files where the input format allows them (op types and original names in a
fusion rule JSON, op names in a MindSpore ``statistic.csv``, dump file names for vconvert), and
the file is read back with ``csv.reader`` and ``pandas.read_csv``: as many rows and columns as were
written, one row per line, and no cell that a spreadsheet would take for a formula
(``= + - @`` first, also after leading blanks) unless it is guarded by a ``'``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.reports.single_op import _record_mapping
from compare.testing.synthetic import make_network
from compare.testing.synthetic_mindspore import BASE_TS, STATS_HEADER, Op, _stats_row, tensor_value
from convert.cli import app as vconvert_app
from convert.names.hashed import read_mapping

runner = CliRunner()

PAYLOADS = ("\r=1+1", "\n=1+1", "\r\n@SUM(A1)", "\t=cmd", " =1+1")
#: What a spreadsheet may skip before it looks for a formula (every Unicode space, BOM, zero width).
_BLANKS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u2029\u3000\ufeff\u200b"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan|NaN)")


def _formula_cells(rows: list[list[str]]) -> list[str]:
    """Cells a spreadsheet could evaluate: ``= + - @`` first (after blanks), not a number the
    report computed (``-0.5``, ``-inf``) nor the single-op report's ``-`` token."""
    found = []
    for row in rows:
        for cell in row:
            head = cell.lstrip(_BLANKS)
            if head.startswith(("=", "+", "-", "@")) and not _NUMBER.fullmatch(cell) and cell.strip() != "-":
                found.append(cell)
    return found


def _check_csv(path: Path, rows: int, *, header: bool = True) -> list[list[str]]:
    """``path`` reads back as ``rows`` records of one width with csv.reader and pandas, one per
    line, with no formula cell; returns the csv.reader rows (header first)."""
    text = path.read_text(encoding="utf-8")
    read = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    width = len(read[0])
    assert [len(r) for r in read] == [width] * len(read), f"{path.name}: rows of different widths"
    assert len(read) == rows + header, f"{path.name}: {len(read) - header} rows read back, {rows} written"
    assert len(text.splitlines()) == rows + header, f"{path.name}: a row spans several lines"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, header=0 if header else None)
    assert frame.shape == (rows, width), f"{path.name}: pandas reads {frame.shape}, {(rows, width)} written"
    cells = [list(frame.columns)] if header else []
    cells += frame.astype(str).values.tolist()
    assert _formula_cells(read) == [] and _formula_cells(cells) == []
    return read


@pytest.fixture(scope="module")
def hostile_net(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthetic network whose fusion rule gives five ops a payload as their type and prob two
    payloads among its original names; pool1's dump file has a CR in its name (the row's reason
    names it)."""
    paths = make_network(tmp_path_factory.mktemp("csv") / "net", channels=4, size=8)
    pool = next(paths["leaf"].glob("Pooling.pool1.*"))
    pool.rename(pool.with_name(pool.name.replace(".pool1.", ".pool1\r@SUM(A1).")))
    rule = json.loads(paths["fusion_rule"].read_text())
    types = iter(PAYLOADS)
    for op in rule["graph"][0]["op"]:
        if op["name"] in ("trans_TransData_0", "conv1", "pool1", "fc1", "prob"):
            op["type"] = next(types)
        if op["name"] == "prob":
            op["attr"][0]["value"]["list"]["s"] = ["\n=1+1", "\r\n@SUM(A1)", "prob"]
    paths["fusion_rule"].write_text(json.dumps(rule))
    return paths


def _network_args(paths: dict[str, Path]) -> list[str]:
    return ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"])]


@pytest.mark.parametrize("layout", ["vcompare", "msaccucmp"])
def test_network_csv_keeps_rows_whole(hostile_net: dict[str, Path], tmp_path: Path, layout: str) -> None:
    out, saved = tmp_path / "r.csv", tmp_path / "r.json"
    result = runner.invoke(app, [*_network_args(hostile_net), "-o", str(out), "--json", str(saved),
                                 "--layout", layout])
    assert result.exit_code == 0, result.output
    rows = json.loads(saved.read_text())["rows"]
    read = _check_csv(out, len(rows))
    types = {row[read[0].index("OpType")] for row in read[1:]}
    assert {"'\\r=1+1", "'\\n=1+1", "'\\r\\n@SUM(A1)", "'\t=cmd", "' =1+1"} <= types
    assert any("pool1\\r@SUM(A1)" in cell for row in read for cell in row)  # the reason naming the file


def test_network_txt_keeps_one_row_per_line(hostile_net: dict[str, Path], tmp_path: Path) -> None:
    out, saved = tmp_path / "r.txt", tmp_path / "r.json"
    result = runner.invoke(app, [*_network_args(hostile_net), "-o", str(out), "--json", str(saved)])
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(json.loads(saved.read_text())["rows"]) + 1
    assert all(re.match(r"\d+ ", line) for line in lines[1:]), [line[:20] for line in lines]


def _statistic_csv(leaf: Path, shift: float) -> int:
    """A MindSpore ``statistic.csv`` whose op types are the payloads and whose op names start
    with them (quoted, as any CSV writer must); returns its number of tensors."""
    ops = [Op(payload, f"{payload}/Add-op{i}", ((2, 3),), ((2, 3),)) for i, payload in enumerate(PAYLOADS)]
    rows = [STATS_HEADER]
    for task, op in enumerate(ops, start=1):
        for kind in ("input", "output"):
            data = tensor_value(op.name, kind, 0, (2, 3)) + shift
            rows.append(_stats_row(op, task, BASE_TS + task, kind, 0, data, "float32"))
    leaf.mkdir(parents=True)
    with open(leaf / "statistic.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return len(rows) - 1


def test_statistics_csv_keeps_rows_whole(tmp_path: Path) -> None:
    tensors = _statistic_csv(tmp_path / "left" / "rank_0" / "Net" / "0" / "0", 0.0)
    _statistic_csv(tmp_path / "right" / "rank_0" / "Net" / "0" / "0", 0.5)
    result = runner.invoke(app, ["-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"),
                                 "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (report,) = (tmp_path / "out").glob("stats_result_*.csv")
    read = _check_csv(report, tensors)
    names = {row[read[0].index("LeftOp")] for row in read[1:]}
    assert "'\\r=1+1/Add-op0" in names and "' =1+1/Add-op4" in names


@pytest.mark.parametrize("layout", ["vcompare", "msaccucmp"])
def test_single_op_files_keep_rows_whole(hostile_net: dict[str, Path], tmp_path: Path, layout: str) -> None:
    out = tmp_path / "single"
    result = runner.invoke(app, [*_network_args(hostile_net), "-d", "prob", "-o", str(out), "--layout", layout])
    assert result.exit_code == 0, result.output
    summary = (out / "prob_output_0_summary.txt").read_text(encoding="utf-8")
    keys = [line.split(":", 1)[0] for line in summary.splitlines()]
    assert all(re.fullmatch(r"[A-Za-z]+", key) for key in keys), keys  # one key per line
    assert ("\\n=1+1" in summary) and "\\r\\n@SUM(A1)" in summary
    elements = 10  # prob: (1, 10)
    for name in ("prob_output_0_0.csv", "prob_output_0_absolute_error_topn.csv",
                 "prob_output_0_relative_error_topn.csv"):
        _check_csv(out / name, elements)


def test_single_op_name_mapping_keeps_rows_whole(tmp_path: Path) -> None:
    """``simple_op_mapping.csv`` (long op names): no dump name grammar lets a CR into an op name
    of 223+ bytes, so its writer is fed the payloads directly."""
    for payload in PAYLOADS:
        path = _record_mapping(tmp_path, payload + "x" * 240, payload + "y" * 240, "output", 0)
    _check_csv(path, len(PAYLOADS))


def test_vconvert_mapping_and_failed_list_keep_rows_whole(tmp_path: Path) -> None:
    """Dump files whose names start with a payload and are long enough for their outputs to be
    hashed: ``mapping.csv`` keeps one row per output; names without a control character read back
    exactly; the failed-file list keeps one line per failed file."""
    dump = next(Path(__file__).resolve().parents[2].joinpath("fixtures", "demo", "npu").rglob("Pooling.pool1.*"))
    folder = tmp_path / "dumps"
    folder.mkdir()
    names = [*PAYLOADS, "=1+1", "-x"]
    for i, payload in enumerate(names):
        shutil.copy(dump, folder / f"{payload}{'q' * 240}.{i}")
    (folder / "\n=1+1 broken").write_bytes(b"garbage")
    out = tmp_path / "npy"
    result = runner.invoke(vconvert_app, ["dump", "-d", str(folder), "-out", str(out), "--workers", "1"])
    assert result.exit_code == 1, result.output  # the broken file failed, the others were written
    _check_csv(out / "mapping.csv", 2 * len(names), header=False)  # input 0 and output 0 of each
    real = set(read_mapping(out)[0].values())
    for i, name in enumerate([" =1+1", "=1+1", "-x"], start=len(PAYLOADS) - 1):
        assert f"{name}{'q' * 240}.{i}.output.0.npy" in real
    failed = (out / "convert_failed_file_list.txt").read_text(encoding="utf-8").splitlines()
    assert len(failed) == 1 and "\\n=1+1 broken" in failed[0]

"""The file_result_<ts>.txt layout of file_compare (golden file: the reference's verified run) and
the mapping table's header, cells and path rule."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from conftest import TESTS

from compare.errors import OptionError
from compare.reports.file_compare import file_result_path, file_result_text, write_file_result
from compare.reports.mapping_table import MappingRow, mapping_header, mapping_path, render_mapping

GOLDEN = TESTS / "golden" / "file_result.txt"

#: the unrounded values vcompare computes for spec §7.5's my.npy vs golden.npy
VALUES = {"CosineSimilarity": 0.8610820765083986, "MaxAbsoluteError": 5.0,
          "AccumulatedRelativeError": 0.130952337701843, "RelativeEuclideanDistance": 0.6167369009215136,
          "MeanAbsoluteError": 0.9333333174387614, "RootMeanSquareError": 2.051828452093665,
          "MaxRelativeError": 0.08333333333333326, "MeanRelativeError": 0.021825389616973834}
NOW = time.strptime("20261121 234543", "%Y%m%d %H%M%S")


def test_file_result_golden(tmp_path: Path) -> None:
    written = write_file_result(tmp_path / "out", VALUES, now=NOW)
    assert written == tmp_path / "out" / "file_result_20261121234543.txt"
    assert written.read_bytes() == GOLDEN.read_bytes()


def test_file_result_special_values() -> None:
    assert file_result_text({"CosineSimilarity": None, "KullbackLeiblerDivergence": math.inf,
                             "MaxRelativeError": math.nan}) == (
        "CosineSimilarity: NaN\nKullbackLeiblerDivergence: inf\nMaxRelativeError: nan\n")
    assert file_result_path(Path("d"), NOW) == Path("d/file_result_20261121234543.txt")


def test_mapping_header_and_cells() -> None:
    assert mapping_header(False) == ["Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "NPUDumpPath",
                                     "GroundTruthPath"]
    assert mapping_header(True)[:3] == ["Index", "OpSequence", "OpType"]
    rows = [MappingRow(3, 7, "Conv2D", "conv1_relu1", "conv1,relu1", "conv1_relu1:input:0", Path("n/Conv2D.x"),
                       Path("g/conv1.0.1.npy")),
            MappingRow(4, 8, None, "=evil", "*", None, None, None)]
    assert render_mapping(rows, op_sequence=True) == (
        "Index,OpSequence,OpType,NPUDump,GroundTruth,TensorIndex,NPUDumpPath,GroundTruthPath\r\n"
        '3,7,Conv2D,conv1_relu1,"conv1,relu1",conv1_relu1:input:0,n/Conv2D.x,g/conv1.0.1.npy\r\n'
        "4,8,NaN,'=evil,*,NaN,NaN,NaN\r\n")


def test_mapping_path(tmp_path: Path) -> None:
    assert mapping_path(str(tmp_path), NOW) == tmp_path / "mapping_20261121234543.csv"
    assert mapping_path(str(tmp_path / "m.csv"), NOW) == tmp_path / "m.csv"
    assert mapping_path(str(tmp_path / "new") + "/", NOW) == tmp_path / "new" / "mapping_20261121234543.csv"
    with pytest.raises(OptionError, match="written as .csv"):
        mapping_path(str(tmp_path / "m.json"))

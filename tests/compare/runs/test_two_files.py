"""Two files compared as they are (compare.runs.two_files): the three file kinds, which tensors meet,
the identical-shape rule, and file_compare's eight metrics against the reference's verified run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from compare.errors import DumpFormatError, OptionError, ShapeError
from compare.records import PairStatus, TensorKind
from compare.runs.two_files import FileKind, TensorChoice, compare_files, compare_npy_files, read_side, read_text_tensor
from convert.codecs.dumpwrite import write_dump

MY = np.array([[1, 2, 3], [4, 5, 6.5]], np.float32)
GOLDEN = np.array([[1, 2.1, 3], [4, 0, 6]], np.float32)

#: spec §7.5, the reference's file_compare on MY vs GOLDEN (printed %.6f)
VERIFIED = {"CosineSimilarity": 0.861082, "MaxAbsoluteError": 5.0, "AccumulatedRelativeError": 0.130952,
            "RelativeEuclideanDistance": 0.616737, "MeanAbsoluteError": 0.933333, "RootMeanSquareError": 2.051828,
            "MaxRelativeError": 0.083333, "MeanRelativeError": 0.021825}


def _npy(tmp_path: Path, name: str, array: np.ndarray) -> Path:
    path = tmp_path / name
    np.save(path, array)
    return path


def test_file_compare_matches_the_verified_run(tmp_path: Path) -> None:
    result = compare_npy_files(_npy(tmp_path, "my.npy", MY), _npy(tmp_path, "golden.npy", GOLDEN))
    (row,) = result.rows
    assert result.metrics == list(VERIFIED)
    assert {name: f"{row.metrics[name]:.6f}" for name in result.metrics} == {
        name: f"{value:.6f}" for name, value in VERIFIED.items()}


def test_file_compare_refusals(tmp_path: Path) -> None:
    my = _npy(tmp_path, "my.npy", MY)
    text = tmp_path / "golden.txt"
    text.write_text("1 2 3\n4 5 6\n")
    with pytest.raises(OptionError, match=r"-g .*golden.txt: file_compare compares two .npy files"):
        compare_npy_files(my, text)
    with pytest.raises(ShapeError, match=r"left \[2,3\] .* right \[3,2\] .*both hold 6 elements"):
        compare_npy_files(my, _npy(tmp_path, "t.npy", GOLDEN.reshape(3, 2)))


def test_text_files(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("# my output\n1 2 3\n4 5 6.5\n")
    assert read_text_tensor(path).tolist() == MY.astype(np.float64).tolist()
    path.write_text("7\n")
    assert read_text_tensor(path).shape == (1,)
    path.write_text("1 2 x\n")
    with pytest.raises(DumpFormatError, match="a.txt: not a text file of whitespace-separated numbers"):
        read_text_tensor(path)
    path.write_text("1 2 3\n4 5\n")
    with pytest.raises(DumpFormatError, match="a.txt"):
        read_text_tensor(path)
    path.write_text("# nothing\n")
    with pytest.raises(DumpFormatError, match="holds no number"):
        read_text_tensor(path)


def test_text_against_npy(tmp_path: Path) -> None:
    text = tmp_path / "my.txt"
    text.write_text("1 2 3\n4 5 6.5\n")
    result = compare_files(text, _npy(tmp_path, "golden.npy", GOLDEN), algorithms="0,1")
    (row,) = result.rows
    assert (result.left.kind, result.right.kind) == (FileKind.TEXT, FileKind.NPY)
    assert row.shape == (2, 3) and row.left_dtype == "float64" and row.right_dtype == "float32"
    assert f"{row.metrics['CosineSimilarity']:.6f}" == "0.861082" and row.metrics["MaxAbsoluteError"] == 5.0


def test_same_count_different_shape_is_a_row_with_its_reason(tmp_path: Path) -> None:
    result = compare_files(_npy(tmp_path, "a.npy", MY), _npy(tmp_path, "b.npy", GOLDEN.reshape(3, 2)))
    (row,) = result.rows
    assert row.status is PairStatus.NOT_COMPARABLE and result.compared == 0
    assert row.reasons == ["shapes differ: left [2,3] (a.npy) vs right [3,2] (b.npy); both hold 6 elements, but a "
                           "two-file comparison needs identical shapes: reshape one first"]
    assert all(value is None for value in row.metrics.values())


def _dump(path: Path, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> Path:
    return write_dump(path, inputs=inputs, outputs=outputs, op_name="x")


def test_dump_against_dump_pairs_every_input_and_output(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    left = _dump(tmp_path / "Add.add1.3.1.1700000000000001", [a, a + 1], [a * 2, a])
    right = _dump(tmp_path / "any_name.bin", [a, a + 1], [a * 2])
    result = compare_files(left, right, algorithms="0,1")
    assert (result.left.kind, result.right.kind) == (FileKind.DUMP, FileKind.DUMP)
    assert result.left.op.name == "add1" and result.left.op.op_type == "Add"
    ids = [row.tensor_id for row in result.rows]
    assert ids == ["add1:input:0", "add1:input:1", "add1:output:0", "add1:output:1"]
    assert [row.index for row in result.rows] == [0, 1, 2, 3]
    assert [row.metrics["MaxAbsoluteError"] for row in result.rows[:3]] == [0.0, 0.0, 0.0]
    one_sided = result.rows[3]
    assert one_sided.status is PairStatus.MISSING_RIGHT and one_sided.right_op == "*"
    assert "no output 1" in one_sided.reasons[0]
    chosen = compare_files(left, right, algorithms="0", choice=TensorChoice(TensorKind.INPUT, 1))
    assert [row.tensor_id for row in chosen.rows] == ["add1:input:1"]


def test_dump_against_npy_takes_output_zero_or_the_choice(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    dump = _dump(tmp_path / "d.dump", [a + 10], [a, a + 1])
    npy = _npy(tmp_path, "g.npy", a + 1)
    default = compare_files(dump, npy, algorithms="MaxAbsoluteError")
    assert [row.tensor_id for row in default.rows] == ["d.dump:output:0"]
    assert default.rows[0].metrics["MaxAbsoluteError"] == 1.0
    second = compare_files(dump, npy, algorithms="MaxAbsoluteError", choice=TensorChoice(TensorKind.OUTPUT, 1))
    assert second.rows[0].metrics["MaxAbsoluteError"] == 0.0
    backwards = compare_files(npy, dump, algorithms="MaxAbsoluteError", choice=TensorChoice(TensorKind.INPUT, 0))
    assert backwards.rows[0].metrics["MaxAbsoluteError"] == 9.0
    with pytest.raises(OptionError, match=r"d.dump: the dump has no input 3 \(it holds input 0, output 0, output 1\)"):
        compare_files(dump, npy, choice=TensorChoice(TensorKind.INPUT, 3))


def test_a_file_that_is_no_known_kind(tmp_path: Path) -> None:
    junk = tmp_path / "notes.md"
    junk.write_bytes(b"\x00\x01 not a dump")
    with pytest.raises(DumpFormatError, match="neither .npy, .txt nor a readable dump file"):
        read_side(junk)


@settings(max_examples=25, deadline=None)
@given(arrays(np.float32, st.integers(1, 40), elements=st.floats(-1e3, 1e3, width=32)))
def test_a_file_against_itself_has_no_error(tmp_path_factory: pytest.TempPathFactory, array: np.ndarray) -> None:
    folder = tmp_path_factory.mktemp("same")
    path = _npy(folder, "a.npy", array)
    (row,) = compare_files(path, path, algorithms="MaxAbsoluteError,MeanAbsoluteError").rows
    assert row.metrics == {"MaxAbsoluteError": 0.0, "MeanAbsoluteError": 0.0}

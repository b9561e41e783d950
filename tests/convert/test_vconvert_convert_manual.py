"""``vconvert convert`` in the MindSpore manuals' spelling, through typer's runner (issue 32).

The manuals (seeds 000, 001, 002: "parse the Dump data") give
``msaccucmp.py convert -d {file path of dump} -out {file path of output}`` and the example
``... convert -d FILE -out ./output -f NCHW -t npy``, which writes every input and output of the
operator as ``{file}.{input|output}.{i}.{d0}x{d1}x....npy`` in NCHW; ``-d`` may be one dump file or
a folder of them. One test per option the manuals name (``-d`` file and folder, ``-out``, ``-f``,
``-t``), then the manual's whole command line.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import Result
from typer.testing import CliRunner

from convert.cli import app
from convert.codecs.dumpwrite import TensorSpec, write_dump

#: The manual's example file name (seed 000), shortened: a BNTrainingUpdate with NC1HWC0 tensors.
MANUAL_NAME = "BNTrainingUpdate.Default_network-BatchNorm2d_BNTrainingUpdate-op5489.137.1608983934774491"


def _nc1hwc0(nchw: np.ndarray) -> np.ndarray:
    n, c, h, w = nchw.shape
    c1 = math.ceil(c / 16)
    padded = np.pad(nchw, [(0, 0), (0, c1 * 16 - c), (0, 0), (0, 0)])
    return padded.reshape(n, c1, 16, h, w).transpose(0, 1, 3, 4, 2).copy()


def _dump(folder: Path, name: str = MANUAL_NAME, seed: int = 0) -> tuple[Path, np.ndarray, np.ndarray]:
    """A dump file with one NC1HWC0 input (2x3x4x5) and one NC1HWC0 output (2x3x4x5)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = (x * 2).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    path = write_dump(folder / name,
                      inputs=[TensorSpec(_nc1hwc0(x), format="NC1HWC0", original_shape=x.shape)],
                      outputs=[TensorSpec(_nc1hwc0(y), format="NC1HWC0", original_shape=y.shape)])
    return path, x, y


def _invoke(*args: object) -> Result:
    """``vconvert convert ARGS`` through typer's runner."""
    return CliRunner().invoke(app, ["convert", *(str(a) for a in args)])


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_d_takes_one_dump_file(tmp_path: Path) -> None:
    """``-d FILE``: that file's inputs and outputs, as the dump holds them (no ``-f``: its own layout)."""
    dump, _, _ = _dump(tmp_path / "dump")
    result = _invoke("-d", dump, "-out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert _names(tmp_path / "out") == [f"{dump.name}.input.0.npy", f"{dump.name}.output.0.npy"]
    assert np.load(tmp_path / "out" / f"{dump.name}.input.0.npy").shape == (2, 1, 4, 5, 16)  # NC1HWC0


def test_d_takes_a_folder_of_dump_files(tmp_path: Path) -> None:
    """``-d FOLDER`` (seed 001: "a single .bin file, or the folder that include the .bin files")."""
    first, _, _ = _dump(tmp_path / "dump", "Conv2D.conv1.1.1608983934774491", seed=1)
    second, _, _ = _dump(tmp_path / "dump", "Relu.relu1.2.1608983934774492", seed=2)
    result = _invoke("-d", tmp_path / "dump", "-out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "2 file(s) read, 4 file(s) written" in result.output
    assert _names(tmp_path / "out") == sorted(f"{d.name}.{kind}.0.npy" for d in (first, second)
                                              for kind in ("input", "output"))


def test_out_is_created_with_its_parents(tmp_path: Path) -> None:
    dump, _, _ = _dump(tmp_path / "dump")
    out = tmp_path / "a" / "b" / "output"
    result = _invoke("-d", dump, "-out", out)
    assert result.exit_code == 0, result.output
    assert out.is_dir() and len(_names(out)) == 2


def test_f_converts_to_the_format_and_names_the_shape(tmp_path: Path) -> None:
    """``-f NCHW``: each tensor in NCHW at its original shape, the shape in the file name."""
    dump, x, y = _dump(tmp_path / "dump")
    result = _invoke("-d", dump, "-out", tmp_path / "out", "-f", "NCHW")
    assert result.exit_code == 0, result.output
    assert _names(tmp_path / "out") == [f"{dump.name}.input.0.2x3x4x5.npy", f"{dump.name}.output.0.2x3x4x5.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{dump.name}.input.0.2x3x4x5.npy"), x)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{dump.name}.output.0.2x3x4x5.npy"), y)


@pytest.mark.parametrize("out_type, suffix", [("npy", ".npy"), ("bin", ".bin")])
def test_t_chooses_the_output_type(tmp_path: Path, out_type: str, suffix: str) -> None:
    """``-t npy`` (the manuals' example; also the default) writes .npy files, ``-t bin`` raw data."""
    dump, x, _ = _dump(tmp_path / "dump")
    result = _invoke("-d", dump, "-out", tmp_path / "out", "-f", "NCHW", "-t", out_type)
    assert result.exit_code == 0, result.output
    names = _names(tmp_path / "out")
    assert len(names) == 2 and all(n.endswith(suffix) for n in names)
    first = tmp_path / "out" / names[0]
    data = np.load(first) if suffix == ".npy" else np.fromfile(first, np.float32).reshape(x.shape)
    np.testing.assert_array_equal(data, x)


def test_the_manuals_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``msaccucmp.py convert -d FILE -out ./output -f NCHW -t npy`` with the script name replaced:
    "all input and output data of the operator ... under ./output ... with the suffix of .npy, and
    the data format is NCHW", named ``{file}.{input|output}.{i}.{shape}.npy``."""
    dump, x, y = _dump(tmp_path / "dump")
    monkeypatch.chdir(tmp_path)
    result = _invoke("-d", dump, "-out", "./output", "-f", "NCHW", "-t", "npy")
    assert result.exit_code == 0, result.output
    assert "1 file(s) read, 2 file(s) written" in result.output
    assert _names(tmp_path / "output") == [f"{MANUAL_NAME}.input.0.2x3x4x5.npy", f"{MANUAL_NAME}.output.0.2x3x4x5.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "output" / f"{MANUAL_NAME}.input.0.2x3x4x5.npy"), x)
    np.testing.assert_array_equal(np.load(tmp_path / "output" / f"{MANUAL_NAME}.output.0.2x3x4x5.npy"), y)

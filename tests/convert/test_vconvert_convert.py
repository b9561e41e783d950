"""``vconvert --version``, ``vconvert convert`` (the MindSpore manuals' ``msaccucmp.py convert``
spelling of ``vconvert dump``) and the message for a device tensor whose dump records no
original shape (issue 30)."""

from __future__ import annotations

import math
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

from convert.cli import run
from convert.codecs.dumpwrite import TensorSpec, write_dump

DEMO = ROOT / "fixtures" / "demo"
#: The demo's Conv2D dump: input 0 NC1HWC0, input 1 (the weight) FRACTAL_Z [9, 1, 16, 16] with
#: no original shape recorded, output 0 NC1HWC0.
CONV = DEMO / "npu" / "20240101120000" / "0" / "demo_net" / "1" / "0" / "Conv2D.conv1.3.1.1704110400003000"
WEIGHT_GOLDEN = DEMO / "golden" / "conv1_weight.0.1704110405000001.npy"
NO_SHAPE_HINT = ("FRACTAL_Z->NCHW needs the 4-D target shape (N, C, H, W) to know the kernel size; got []; "
                 "the dump records no original shape for input 1: give its NCHW shape with ")


def _vconvert(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """Same form as ``vcompare --version``: the tool's name and the distribution's version."""
    code, out, err = _vconvert(capsys, "--version")
    assert (code, out, err) == (0, f"vconvert {version('vcompare')}\n", "")


def test_help_lists_convert_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _vconvert(capsys, "--help")
    assert code == 0 and "--version" in out and "\n  convert " in out


def _nc1hwc0(nchw: np.ndarray) -> np.ndarray:
    n, c, h, w = nchw.shape
    c1 = math.ceil(c / 16)
    padded = np.pad(nchw, [(0, 0), (0, c1 * 16 - c), (0, 0), (0, 0)])
    return padded.reshape(n, c1, 16, h, w).transpose(0, 1, 3, 4, 2).copy()


def test_manual_spelling_does_what_dump_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``msaccucmp.py convert -d FILE -out DIR -f NCHW -t npy`` as ``vconvert convert``: the same
    files, byte for byte, as ``vconvert dump`` with the same options, named as the manual shows
    (``{file}.{input|output}.{i}.{shape}.npy``)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5)).astype(np.float32)
    dump = write_dump(tmp_path / "BNTrainingUpdate.op5489.137.1608983934774491",
                      inputs=[TensorSpec(_nc1hwc0(x), format="NC1HWC0", original_shape=x.shape)],
                      outputs=[TensorSpec(_nc1hwc0(x * 2), format="NC1HWC0", original_shape=x.shape)])
    code, out, err = _vconvert(capsys, "convert", "-d", dump, "-out", tmp_path / "c", "-f", "NCHW", "-t", "npy")
    assert code == 0, err
    assert "1 file(s) read, 2 file(s) written" in out
    assert _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "d", "-f", "NCHW", "-t", "npy")[0] == 0
    written = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert written == [f"{dump.name}.input.0.2x3x4x5.npy", f"{dump.name}.output.0.2x3x4x5.npy"]
    assert written == sorted(p.name for p in (tmp_path / "d").iterdir())
    for name in written:
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "d" / name).read_bytes()
    np.testing.assert_array_equal(np.load(tmp_path / "c" / written[0]), x)


def test_convert_takes_dump_options_and_refuses_bad_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its options are dump's: a wrong ``-t`` is a usage error naming ``vconvert convert``, exit 2."""
    code, out, err = _vconvert(capsys, "convert", "-d", CONV, "-out", tmp_path, "-t", "png")
    assert code == 2 and out == ""
    assert "output type 'png' is not one of npy, bin, msnpy" in err
    code, _, err = _vconvert(capsys, "convert", "-d", CONV, "-out", tmp_path, "--no-such-option")
    assert code == 2 and "(see vconvert convert --help)" in err


@pytest.mark.parametrize("command", ["dump", "convert"])
def test_fractal_z_without_original_shape_says_how_to_give_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              command: str) -> None:
    """README's ``vconvert dump -d DUMP_FILE -out npy/ -f NCHW`` on the demo's Conv2D file: the
    weight (FRACTAL_Z, no original shape in the dump) fails with the way out in the message (exit
    1, the other tensors written); following it converts the weight to the golden's values."""
    code, out, err = _vconvert(capsys, command, "-d", CONV, "-out", tmp_path / "all", "-f", "NCHW")
    assert code == 1 and "2 file(s) written" in out and "1 file(s) failed" in out
    assert NO_SHAPE_HINT + "-s N,C,H,W (and -i 1 to convert this tensor alone)" in err
    assert NO_SHAPE_HINT + "-s N,C,H,W" in (tmp_path / "all" / "convert_failed_file_list.txt").read_text()

    code, out, err = _vconvert(capsys, command, "-d", CONV, "-out", tmp_path / "w", "-f", "NCHW", "-i", "1",
                               "-s", "8,3,3,3")
    assert (code, err) == (0, ""), err
    weight = np.load(tmp_path / "w" / f"{CONV.name}.input.1.8x3x3x3.npy")
    np.testing.assert_allclose(weight.astype(np.float32), np.load(WEIGHT_GOLDEN), atol=1e-3)  # fp16 of the golden


def test_shape_command_names_its_own_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _vconvert(capsys, "shape", "-i", CONV, "-format", "NCHW", "-o", tmp_path, "-tensor", "input")
    assert code == 1
    assert NO_SHAPE_HINT + "-shape N,C,H,W (and -tensor input -index 1 to convert this tensor alone)" in err


def test_hint_only_when_the_shape_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wrong ``-s`` fails on its own message: no advice to give a shape that was given."""
    code, _, err = _vconvert(capsys, "dump", "-d", CONV, "-out", tmp_path, "-f", "NCHW", "-i", "1", "-s", "8,3,5")
    assert code == 1 and "failed" in err and "records no original shape" not in err

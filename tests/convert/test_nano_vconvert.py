"""``vconvert dump`` / ``vconvert txt`` on nano dumps: they go through convert.codecs.dumpfile, so nano
files convert like any dump (whatever ``-v`` says), and a broken one is listed with its reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from convert.cli import run
from convert.codecs.nano_write import NanoTensorSpec, write_nano

NAME = "Conv2D.conv1.3.1.1700000000000123"


def _vconvert(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("version", [None, "1", "2"])
def test_dump_to_npy(tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str | None) -> None:
    src = tmp_path / "dump"
    src.mkdir()
    x = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    y = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    write_nano(src / NAME, inputs=[x], outputs=[NanoTensorSpec(y, format="NCHW", origin_name="conv1")])
    out = tmp_path / "npy"
    code, stdout, err = _vconvert(capsys, "dump", "-d", src, "-out", out, *(["-v", version] if version else []))
    assert code == 0, err
    got_x = np.load(out / f"{NAME}.input.0.npy")
    got_y = np.load(out / f"{NAME}.output.0.npy")
    assert got_x.dtype == x.dtype and np.array_equal(got_x, x)
    assert got_y.dtype == y.dtype and np.array_equal(got_y, y)
    assert "1 file(s) read, 2 file(s) written" in stdout


def test_broken_nano_file_is_listed_and_the_others_converted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "dump"
    src.mkdir()
    write_nano(src / NAME, outputs=[np.ones(4, np.float32)])
    broken = write_nano(src / "Add.add1.4.1.1700000000000124", outputs=[np.ones(4, np.float32)])
    broken.write_bytes(broken.read_bytes() + b"junk")
    out = tmp_path / "npy"
    code, _, err = _vconvert(capsys, "dump", "-d", src, "-out", out)
    assert code == 1
    assert np.array_equal(np.load(out / f"{NAME}.output.0.npy"), np.ones(4, np.float32))
    failed = (out / "convert_failed_file_list.txt").read_text()
    assert "Add.add1.4.1.1700000000000124" in failed and "nano dump: 4 unexpected extra bytes" in failed
    assert "Traceback" not in err


def test_txt_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_nano(tmp_path / NAME, outputs=[np.array([1.5, -2.0, 3.25], np.float32)])
    out = tmp_path / "txt"
    code, _, err = _vconvert(capsys, "txt", "-i", path, "-out", out)
    assert code == 0, err
    text = (out / f"{NAME}.output.0.txt").read_text()
    assert "1.5" in text and "-2" in text and "3.25" in text

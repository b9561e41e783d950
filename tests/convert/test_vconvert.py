"""``vconvert``: dump -> npy/bin/msnpy (+ layouts), npy <-> dump, shape conversion, text, plugins."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import ROOT, SHARED, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compare.errors import OptionError
from convert.cli import run
from convert.codecs.dumpfile import read_header, read_tensor
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.tool.convert_dump import DumpConvertOptions, convert_dumps, parse_shape
from convert.tool.data_conversion import dump_to_numpy, load_npy, numpy_to_dump
from convert.tool.naming import MAPPING_FILE, hashed_name
from convert.tool.to_text import to_text

BF16 = np.dtype(ml_dtypes.bfloat16)
TS = 1700000000000000


def _vconvert(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (NaNs included)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# --------------------------------------------------------------------------- independent layouts


def _pad_axis(x: np.ndarray, axis: int, to: int) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, to - x.shape[axis])
    return np.pad(x, widths)


def _nc1hwc0(nchw: np.ndarray, c0: int = 16) -> np.ndarray:
    n, c, h, w = nchw.shape
    c1 = math.ceil(c / c0)
    return _pad_axis(nchw, 1, c1 * c0).reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2).copy()


def _fractal_z(nchw: np.ndarray) -> np.ndarray:
    n, c, h, w = nchw.shape
    c1, no = math.ceil(c / 16), math.ceil(n / 16)
    padded = _pad_axis(_pad_axis(nchw, 0, no * 16), 1, c1 * 16)
    blocks = padded.reshape(no, 16, c1, 16, h, w).transpose(2, 4, 5, 0, 1, 3)
    return blocks.reshape(c1 * h * w, no, 16, 16).copy()


def _fractal_nz(matrix: np.ndarray) -> np.ndarray:
    r, c = matrix.shape
    r1, c1 = math.ceil(r / 16), math.ceil(c / 16)
    padded = _pad_axis(_pad_axis(matrix, 0, r1 * 16), 1, c1 * 16)
    return padded.reshape(r1, 16, c1, 16).transpose(2, 0, 1, 3).copy()


def _ndc1hwc0(ncdhw: np.ndarray) -> np.ndarray:
    n, c, d, h, w = ncdhw.shape
    c1 = math.ceil(c / 16)
    return _pad_axis(ncdhw, 1, c1 * 16).reshape(n, c1, 16, d, h, w).transpose(0, 3, 1, 4, 5, 2).copy()


RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)  # activation, NCHW
W = RNG.standard_normal((5, 3, 2, 2)).astype(np.float32)  # conv weight, NCHW
M = RNG.standard_normal((5, 7)).astype(np.float32)  # matrix, ND
V = RNG.standard_normal((2, 3, 2, 4, 5)).astype(np.float32)  # NCDHW

# (source format, source array, original_shape, target format, -shape or None, expected)
BUILT_INS = [
    ("FRACTAL_NZ", _fractal_nz(M), (5, 7), "NCHW", None, M),
    ("FRACTAL_NZ", _fractal_nz(M), (5, 7), "ND", None, M),
    ("FRACTAL_NZ", _fractal_nz(M), (5, 7), "NHWC", "5,7", M),
    ("HWCN", W.transpose(2, 3, 1, 0), None, "FRACTAL_Z", None, _fractal_z(W)),
    ("HWCN", W.transpose(2, 3, 1, 0), None, "NCHW", None, W),
    ("HWCN", W.transpose(2, 3, 1, 0), None, "NHWC", None, W.transpose(0, 2, 3, 1)),
    ("NC1HWC0", _nc1hwc0(X), (2, 3, 4, 5), "NCHW", None, X),
    ("NC1HWC0", _nc1hwc0(X), (2, 3, 4, 5), "NHWC", "2,4,5,3", X.transpose(0, 2, 3, 1)),
    ("NC1HWC0", _nc1hwc0(X), (2, 3, 4, 5), "HWCN", "4,5,3,2", X.transpose(2, 3, 1, 0)),
    ("NCHW", W, None, "FRACTAL_Z", None, _fractal_z(W)),
    ("NCHW", X, None, "NHWC", None, X.transpose(0, 2, 3, 1)),
    ("NHWC", W.transpose(0, 2, 3, 1), None, "FRACTAL_Z", None, _fractal_z(W)),
    ("NHWC", X.transpose(0, 2, 3, 1), None, "HWCN", None, X.transpose(2, 3, 1, 0)),
    ("NHWC", X.transpose(0, 2, 3, 1), None, "NCHW", None, X),
    ("FRACTAL_Z", _fractal_z(W), (5, 3, 2, 2), "NCHW", None, W),
    ("FRACTAL_Z", _fractal_z(W), None, "HWCN", "2,2,3,5", W.transpose(2, 3, 1, 0)),
    ("NDC1HWC0", _ndc1hwc0(V), (2, 3, 2, 4, 5), "NCDHW", None, V),
    ("NDC1HWC0", _ndc1hwc0(V), (2, 3, 2, 4, 5), "ND", None, V),
    ("NCHW", X, None, "NC1HWC0", None, _nc1hwc0(X)),
    ("ND", M, None, "FRACTAL_NZ", None, _fractal_nz(M)),
]


@pytest.mark.parametrize("src,array,original,dst,shape,expected", BUILT_INS,
                         ids=[f"{b[0]}->{b[3]}" for b in BUILT_INS])
def test_every_listed_builtin_through_vconvert_shape(tmp_path: Path, capsys, src, array, original, dst, shape,
                                                     expected) -> None:
    dump = write_dump(tmp_path / f"Op.op1.1.{TS}", outputs=[TensorSpec(array, format=src, original_shape=original)])
    args = ["shape", "-i", dump, "-format", dst.lower(), "-o", tmp_path / "out"]
    code, out, err = _vconvert(capsys, *args, *(["-shape", shape] if shape else []))
    assert code == 0, err
    name = f"{dump.name}.output.0.{'x'.join(map(str, expected.shape))}.npy"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [name]
    assert _same(np.load(tmp_path / "out" / name), expected)


# --------------------------------------------------------------------------- shared oracle cases


def _convert_runs() -> list[tuple[str, dict]]:
    cases = SHARED / "cases"
    if not cases.is_dir():
        return [("shared-absent", {})]
    runs = []
    for case_json in sorted(cases.glob("*/case.json")):
        for spec in json.loads(case_json.read_text()).get("convert_runs") or []:
            runs.append((case_json.parent.name, spec))
    return runs


@pytest.mark.shared
@pytest.mark.parametrize("case,spec", _convert_runs(), ids=lambda v: v if isinstance(v, str) else v.get("name", ""))
def test_convert_agrees_with_reference_oracle(tmp_path: Path, capsys, case: str, spec: dict) -> None:
    base = shared_path("cases", case)
    oracle = base / "oracle" / spec["name"]
    args = ["dump", "-d", base / spec["d"], "-out", tmp_path] + (["-v", spec["v"]] if spec.get("v") else [])
    code, out, err = _vconvert(capsys, *args)
    assert code == 0, err
    expected = sorted(p.name for p in oracle.glob("*.npy"))
    assert expected and sorted(p.name for p in tmp_path.iterdir()) == expected
    for name in expected:
        assert _same(np.load(tmp_path / name), np.load(oracle / name)), name


# --------------------------------------------------------------------------- npy <-> dump


ROUND_TRIP_DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool", "complex64", "bfloat16"]


def _array(dtype: str, shape: tuple[int, ...], data: st.DataObject) -> np.ndarray:
    if dtype == "bfloat16":
        bits = data.draw(hnp.arrays(np.uint16, shape))
        return bits.view(BF16)
    return data.draw(hnp.arrays(np.dtype(dtype), shape))


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(ROUND_TRIP_DTYPES), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5),
       version=st.sampled_from([1, 2]), kind=st.sampled_from(["caffe", "tf", "quant"]), data=st.data())
def test_npy_dump_npy_round_trip_is_bit_exact(dtype, shape, version, kind, data) -> None:
    from compare.loaders import load_run

    array = _array(dtype, shape, data)
    with tempfile.TemporaryDirectory() as tmp:
        npy, dump, back = Path(tmp, "npy"), Path(tmp, "dump"), Path(tmp, "back")
        npy.mkdir()
        np.save(npy / f"layer_a.0.{TS}.npy", array)
        report = numpy_to_dump(npy, dump, kind, version=version)
        assert report.all_converted, report.failed
        suffix = ".quant" if kind == "quant" else ".pb"
        written = dump / f"layer_a.0.{TS}{suffix}"
        assert report.written == [written]
        header = read_header(written)
        assert header.version == version and header.op_name == "layer_a" and header.dump_time == TS
        assert _same(np.asarray(read_tensor(header, header.outputs[0])), array)
        ref = load_run(dump).ops["layer_a"].outputs[0]  # what vcompare reads
        assert _same(np.asarray(ref.load()), array)
        assert dump_to_numpy(dump, back).all_converted
        assert _same(load_npy(back / f"layer_a.0.{TS}.npy"), array)  # bf16 comes back as np.save wrote it


@pytest.mark.parametrize("kind", ["caffe", "tf"])
def test_written_dump_folder_compares_identical_to_its_npy_folder(tmp_path: Path, capsys, kind: str) -> None:
    from compare.runs.folders import run_network

    npy = tmp_path / "npy"
    npy.mkdir()
    rng = np.random.default_rng(3)
    arrays = {
        "conv1": rng.standard_normal((1, 16, 8, 8)).astype(np.float16),
        "conv1_relu": np.maximum(rng.standard_normal((1, 16, 8, 8)), 0).astype(np.float32),
        "pool1": rng.standard_normal((1, 16, 4, 4)),
        "fc": rng.integers(-128, 127, (1, 10), dtype=np.int8),
        "argmax": rng.integers(0, 10, (4,), dtype=np.int32),
    }
    for i, (name, array) in enumerate(arrays.items()):
        np.save(npy / f"{name}.0.{TS + i}.npy", array)
    code, out, err = _vconvert(capsys, "data", "-type", kind, "-target", "dump", "-i", npy, "-o", tmp_path / "dump")
    assert code == 0, err
    result = run_network(tmp_path / "dump", npy)
    assert len(result.rows) == len(arrays)
    for row in result.rows:
        assert row.status.value == "compared", row.reasons
        assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-12)
        assert row.metrics["MaxAbsoluteError"] == 0.0


def test_npy_to_dump_names_and_failures(tmp_path: Path, capsys) -> None:
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / f"a.b.conv.0.{TS}.npy", np.ones((2, 2), np.float32))  # dots in the op name
    np.save(npy / "no_timestamp.npy", np.ones(3))
    np.save(npy / f"strings.0.{TS}.npy", np.array(["x", "y"]))
    code, out, err = _vconvert(capsys, "data", "-type", "tf", "-target", "dump", "-i", npy, "-o", tmp_path / "d")
    assert code == 1
    assert (tmp_path / "d" / f"a_b_conv.0.{TS}.pb").is_file()
    failed = (tmp_path / "d" / "convert_failed_file_list.txt").read_text().splitlines()
    assert len(failed) == 2
    assert any(line.startswith(str(npy / "no_timestamp.npy") + ": ") and "{op_name}" in line for line in failed)
    assert any("strings" in line and "data type" in line for line in failed)
    assert "2 file(s) failed" in out


def test_offline_dump_to_msnpy_and_back(tmp_path: Path, capsys) -> None:
    x, w = _nc1hwc0(X).astype(np.float16), _fractal_z(W).astype(np.float16)
    (tmp_path / "src").mkdir()
    dump = write_dump(tmp_path / "src" / f"Conv2D.conv1.4.1.{TS}",
                      inputs=[TensorSpec(x, format="NC1HWC0"), TensorSpec(w, format="FRACTAL_Z")],
                      outputs=[TensorSpec(x[:, :, :2], format="NC1HWC0")], op_name="net/block/conv1")
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "ms", "-t", "msnpy")
    assert code == 0, err
    # 5 fields + op_name: field 1 becomes the op name's last '/' component.
    names = sorted(p.name for p in (tmp_path / "ms").iterdir())
    assert names == [f"Conv2D.conv1.4.1.{TS}.input.0.NC1HWC0.npy", f"Conv2D.conv1.4.1.{TS}.input.1.FRACTAL_Z.npy",
                     f"Conv2D.conv1.4.1.{TS}.output.0.NC1HWC0.npy"]
    code, out, err = _vconvert(capsys, "data", "-type", "offline", "-target", "dump", "-i", tmp_path / "ms",
                               "-o", tmp_path / "again")
    assert code == 0, err
    again = read_header(tmp_path / "again" / dump.name)
    original = read_header(dump)
    assert [(t.kind, t.index, t.format, t.shape) for t in again.tensors] == \
           [(t.kind, t.index, t.format, t.shape) for t in original.tensors]
    for a, b in zip(again.tensors, original.tensors):
        assert _same(read_tensor(again, a), read_tensor(original, b))


# --------------------------------------------------------------------------- dump naming rules


def test_bin_msnpy_and_buffer_names(tmp_path: Path, capsys) -> None:
    x = _nc1hwc0(X).astype(np.float16)
    dump = write_dump(tmp_path / f"MaxPool.pool1.5.{TS}", inputs=[TensorSpec(x, format="NC1HWC0", original_shape=X.shape)],
                      outputs=[TensorSpec(np.arange(6, dtype=BF16), format="ND")], buffers=[b"\x01\x02\x03"])
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "bin", "-t", "bin")
    assert code == 0, err
    names = sorted(p.name for p in (tmp_path / "bin").iterdir())
    assert names == [f"{dump.name}.buffer.0.bin", f"{dump.name}.input.0.{x.size}.float16.NC1HWC0.bin",
                     f"{dump.name}.output.0.6.float32.ND.bin"]  # flat shape; bf16 written as float32
    raw = np.fromfile(tmp_path / "bin" / names[1], dtype=np.float16)
    assert raw.tobytes() == x.tobytes()
    assert (tmp_path / "bin" / names[0]).read_bytes() == b"\x01\x02\x03"
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "binf", "-t", "bin", "-f", "NCHW", "-i", "0")
    assert code == 0, err
    (only,) = (tmp_path / "binf").iterdir()
    assert only.name == f"{dump.name}.input.0.2_3_4_5.float16.NCHW.bin"
    assert np.fromfile(only, dtype=np.float16).tobytes() == X.astype(np.float16).tobytes()
    # msnpy: a 4-field name keeps its name (no op_name replacement).
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "ms", "-t", "msnpy", "-f", "NCHW", "-o", "0")
    assert code == 0, err
    assert [p.name for p in (tmp_path / "ms").iterdir()] == [f"{dump.name}.output.0.NCHW.npy"]


def test_long_names_are_hashed_with_mapping_csv(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    real = f"Conv2D.{'layer_' * 37}.1.{TS}"  # 248 bytes: fits, the names of its outputs do not
    assert len(real) < 255 <= len(real) + len(".output.0.npy")
    # The dump tools store such files under a digits-only name listed in mapping.csv.
    write_dump(src / "4242", inputs=[np.ones(3, np.float16)], outputs=[np.zeros(2, np.float32)])
    (src / MAPPING_FILE).write_text(f"4242,{real}\n")
    code, out, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "o")
    assert code == 0, err
    expected = {hashed_name(f"{real}.{kind}.0.npy"): f"{real}.{kind}.0.npy" for kind in ("input", "output")}
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted([*expected, MAPPING_FILE])
    assert all(name[: -len(".npy")].isdigit() for name in expected)
    rows = (tmp_path / "o" / MAPPING_FILE).read_text().splitlines()
    assert sorted(rows) == sorted(f"{h},{r}" for h, r in expected.items())
    assert _same(np.load(tmp_path / "o" / hashed_name(f"{real}.output.0.npy")), np.zeros(2, np.float32))
    # A second run does not duplicate the rows; hashing is deterministic.
    assert run(["dump", "-d", str(src), "-out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / MAPPING_FILE).read_text().splitlines() == rows


def test_folder_with_a_bad_file_converts_the_others(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    good = write_dump(src / f"Add.add1.2.{TS}", inputs=[np.ones(3, np.float32)], outputs=[np.full(3, 2, np.float32)])
    (src / f"Add.broken.3.{TS}").write_bytes(b"\x40\x00\x00\x00\x00\x00\x00\x00garbage")
    code, out, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "out")
    assert code == 1
    assert (tmp_path / "out" / f"{good.name}.output.0.npy").is_file()
    listed = (tmp_path / "out" / "convert_failed_file_list.txt").read_text()
    assert listed.startswith(str(src / f"Add.broken.3.{TS}") + ": ") and "header length" in listed
    assert "failed:" in err and "Traceback" not in err
    # After the broken file is gone, a new run removes the stale list.
    (src / f"Add.broken.3.{TS}").unlink()
    assert run(["dump", "-d", str(src), "-out", str(tmp_path / "out")]) == 0
    assert not (tmp_path / "out" / "convert_failed_file_list.txt").exists()


def test_comma_list_with_a_missing_path(tmp_path: Path, capsys) -> None:
    good = write_dump(tmp_path / f"Relu.r.1.{TS}", outputs=[np.ones(4, np.float16)])
    code, out, err = _vconvert(capsys, "dump", "-d", f"{good},{tmp_path / 'missing'}", "-out", tmp_path / "o")
    assert code == 1
    assert (tmp_path / "o" / f"{good.name}.output.0.npy").is_file()
    assert "missing: no such file or folder" in (tmp_path / "o" / "convert_failed_file_list.txt").read_text()


def test_selection_and_conversion_failures(tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    write_dump(src / f"Conv2D.c.1.{TS}", inputs=[TensorSpec(_nc1hwc0(X), format="NC1HWC0"),
                                                 TensorSpec(_fractal_z(W), format="FRACTAL_Z")],
               outputs=[TensorSpec(_nc1hwc0(X), format="NC1HWC0", original_shape=X.shape)])
    write_dump(src / f"Relu.r.2.{TS}", inputs=[TensorSpec(X, format="NCHW")], outputs=[TensorSpec(X, format="NCHW")])
    # -i 1 on a folder: files without input 1 are noted, not failed.
    code, out, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "i1", "-i", "1")
    assert code == 0, err
    assert [p.name for p in (tmp_path / "i1").iterdir()] == [f"Conv2D.c.1.{TS}.input.1.npy"]
    assert "skipped, has no input 1" in err
    # -f NHWC: FRACTAL_Z has no NHWC converter -> that tensor fails (npy) ...
    code, out, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "nhwc", "-f", "NHWC")
    assert code == 1
    assert "no conversion from FRACTAL_Z to NHWC" in (tmp_path / "nhwc" / "convert_failed_file_list.txt").read_text()
    assert len(list((tmp_path / "nhwc").glob("*.npy"))) == 4
    # ... but is written unconverted, labelled with its own format, in msnpy mode.
    code, out, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "ms", "-f", "NHWC", "-t", "msnpy")
    assert code == 0, err
    assert (tmp_path / "ms" / f"Conv2D.c.1.{TS}.input.1.FRACTAL_Z.npy").is_file()
    assert "written unconverted as FRACTAL_Z" in err
    # A single file with a selection it does not have is a failure.
    code, out, err = _vconvert(capsys, "dump", "-d", src / f"Relu.r.2.{TS}", "-out", tmp_path / "o3", "-o", "3")
    assert code == 1 and "has no output 3" in err


def test_output_that_cannot_be_written_fails_its_file_only(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / f"Add.a.1.{TS}", inputs=[np.ones(2, np.float32)], outputs=[np.ones(2, np.float32)])
    (tmp_path / "o" / f"{dump.name}.input.0.npy").mkdir(parents=True)  # a folder where the file should go
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "o")
    assert code == 1 and "cannot write" in err
    assert (tmp_path / "o" / f"{dump.name}.output.0.npy").is_file()


def test_forced_version_mismatch_is_listed(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / f"Add.a.1.{TS}", outputs=[np.ones(2, np.float32)], version=1)
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "o", "-v", "2")
    assert code == 1
    code, out, err = _vconvert(capsys, "dump", "-d", dump, "-out", tmp_path / "o", "-v", "1")
    assert code == 0, err


# --------------------------------------------------------------------------- plugins


def _plugin(root: Path, body: str, name: str = "convert_NC1HWC0_to_NCHW.py") -> Path:
    folder = root / "format_convert"
    folder.mkdir(parents=True, exist_ok=True)
    for trusted in (root, folder):  # plugin folders must not be group/world-writable (any umask)
        trusted.chmod(0o755)
    path = folder / name
    path.write_text(body)
    path.chmod(0o644)
    return path


def test_plugin_overrides_builtin_in_vconvert_shape(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / f"Conv2D.c.1.{TS}",
                      outputs=[TensorSpec(_nc1hwc0(X), format="NC1HWC0", original_shape=X.shape)])
    _plugin(tmp_path / "custom", "import numpy as np\n"
                                 "def convert(shape_from, shape_to, array):\n"
                                 "    return np.full(shape_to, 7.0, dtype=array.dtype)\n")
    code, out, err = _vconvert(capsys, "shape", "-i", dump, "-format", "NCHW", "-o", tmp_path / "o",
                               "-custom", tmp_path / "custom")
    assert code == 0, err
    result = np.load(tmp_path / "o" / f"{dump.name}.output.0.2x3x4x5.npy")
    assert result.shape == X.shape and (result == 7).all()


def test_world_writable_plugin_is_refused_before_import(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / f"Conv2D.c.1.{TS}", outputs=[TensorSpec(_nc1hwc0(X), format="NC1HWC0")])
    marker = tmp_path / "imported"
    plugin = _plugin(tmp_path / "custom", f"open({str(marker)!r}, 'w').close()\n"
                                          "def convert(shape_from, shape_to, array):\n    return array\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IWOTH)
    code, out, err = _vconvert(capsys, "shape", "-i", dump, "-format", "NCHW", "-o", tmp_path / "o",
                               "-custom", tmp_path / "custom")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "world-writable" in err and str(plugin) in err
    assert not marker.exists() and not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- text


def test_txt_values_header_and_no_header(tmp_path: Path, capsys) -> None:
    vals = np.array([[0.1, -2.5, np.nan], [np.inf, 1e-7, 3.0]], dtype=np.float16)
    dump = write_dump(tmp_path / f"Pooling.pool1.1147.{TS}", inputs=[TensorSpec(vals, format="NCHW")],
                      outputs=[TensorSpec(np.array([True, False]), format="ND"),
                               TensorSpec(np.array([1.5, -0.1], dtype=BF16), format="ND")])
    np.save(tmp_path / "golden.0.1.npy", np.arange(4, dtype=np.int32))
    code, out, err = _vconvert(capsys, "txt", "-i", f"{dump},{tmp_path / 'golden.0.1.npy'}", "-o", tmp_path / "t")
    assert code == 0, err
    text = (tmp_path / "t" / f"{dump.name}.input.0.txt").read_text().splitlines()
    assert text[0] == "# shape=[2,3] dtype=float16 format=NCHW"
    assert text[1:] == ["0.1", "-2.5", "nan", "inf", "1e-07", "3.0"]
    back = np.loadtxt(tmp_path / "t" / f"{dump.name}.input.0.txt", dtype=np.float16).reshape(2, 3)
    assert _same(back, vals)
    assert (tmp_path / "t" / f"{dump.name}.output.0.txt").read_text().splitlines()[1:] == ["1", "0"]
    bf = np.loadtxt(tmp_path / "t" / f"{dump.name}.output.1.txt", dtype=np.float32)
    assert _same(bf.astype(BF16), np.array([1.5, -0.1], dtype=BF16))
    assert (tmp_path / "t" / "golden.0.1.txt").read_text() == "# shape=[4] dtype=int32\n0\n1\n2\n3\n"
    code, out, err = _vconvert(capsys, "txt", "-i", dump, "-o", tmp_path / "n", "--no-header")
    assert code == 0, err
    assert (tmp_path / "n" / f"{dump.name}.input.0.txt").read_text().splitlines()[0] == "0.1"


def test_txt_library_call_on_a_large_tensor_is_exact(tmp_path: Path) -> None:
    values = np.random.default_rng(0).standard_normal(1_200_000).astype(np.float32)  # two chunks
    np.save(tmp_path / "big.0.1.npy", values)
    report = to_text(tmp_path / "big.0.1.npy", tmp_path / "t", header=False)
    assert report.all_converted
    assert _same(np.loadtxt(tmp_path / "t" / "big.0.1.txt", dtype=np.float32), values)


# --------------------------------------------------------------------------- options and errors


@pytest.mark.parametrize("args,message", [
    (["dump", "-d", "{src}", "-out", "{out}", "-s", "1,2"], "-s needs -f"),
    (["dump", "-d", "{src}", "-out", "{out}", "-custom", "{missing}", "-f", "NCHW"], "-custom"),
    (["dump", "-d", "{src}", "-out", "{out}", "-o", "0", "-i", "0"], "-o and -i exclude each other"),
    (["dump", "-d", "{src}", "-out", "{out}", "-f", "NCWH"], "unknown format 'NCWH'"),
    (["dump", "-d", "{src}", "-out", "{out}", "-t", "json"], "output type 'json'"),
    (["dump", "-d", "{missing}", "-out", "{out}"], "missing: no such file or folder"),
    (["dump", "-d", "{empty}", "-out", "{out}"], "the folder holds no files"),
    (["dump", "-d", "{src}"], "Missing option '-out'"),
    (["dump", "-d", "{src}", "-out", "{out}", "-v", "3"], "'-v'"),
    (["shape", "-i", "{src}", "-format", "NCHW", "-o", "{out}"], "not a file"),
    (["shape", "-i", "{file}", "-format", "NCHW", "-o", "{out}", "-shape", "16"], "not of the form d0,d1"),
    (["shape", "-i", "{file}", "-format", "NCHW", "-o", "{out}", "-shape", "1,0,3"], "greater than 0"),
    (["shape", "-i", "{file}", "-format", "NCHW", "-o", "{out}", "-tensor", "both"], "tensor kind 'both'"),
    (["data", "-type", "pytorch", "-target", "dump", "-i", "{src}", "-o", "{out}"], "-type 'pytorch'"),
    (["data", "-type", "caffe", "-target", "json", "-i", "{src}", "-o", "{out}"], "-target 'json'"),
    (["txt", "-i", "{missing}", "-o", "{out}"], "no such file or folder"),
    (["dump", "-d", "{src}", "-out", "{file}"], "exists and is not a folder"),
])
def test_bad_options_exit_2_with_one_line(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    file = write_dump(src / f"Add.a.1.{TS}", outputs=[np.ones(2, np.float32)])
    (tmp_path / "empty").mkdir()
    values = dict(src=src, out=tmp_path / "out", missing=tmp_path / "missing", empty=tmp_path / "empty", file=file)
    code, out, err = _vconvert(capsys, *[a.format(**{k: str(v) for k, v in values.items()}) for a in args])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vconvert: error: ") and message in lines[0], err
    assert not (tmp_path / "out").exists()


def test_parse_shape_rules() -> None:
    assert parse_shape("1,3,224,224") == (1, 3, 224, 224)
    assert parse_shape("7", strict=False) == (7,)
    for bad in ("", "1,", ",1", "1;2", "-1,2", "1.5,2"):
        with pytest.raises(OptionError):
            parse_shape(bad)
    with pytest.raises(OptionError):
        DumpConvertOptions(target_shape=(1, 2))


def test_library_call_without_options_matches_cli(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / f"Add.a.1.{TS}", inputs=[np.arange(3, dtype=np.int64)], outputs=[np.ones(2, bool)])
    report = convert_dumps(str(dump), tmp_path / "o")
    assert report.all_converted and report.sources == 1
    assert sorted(p.name for p in report.written) == [f"{dump.name}.input.0.npy", f"{dump.name}.output.0.npy"]
    assert "1 file(s) read, 2 file(s) written" in report.summary()


def test_help_is_fast_and_imports_nothing_heavy() -> None:
    code = ("import sys, convert.cli\n"
            "heavy = [m for m in ('numba', 'pandas', 'numpy', 'scipy') if m in sys.modules]\n"
            "print(heavy)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert result.stdout.strip() == "[]"
    result = subprocess.run([sys.executable, "-m", "convert.cli", "--help"], capture_output=True, text=True,
                            cwd=ROOT, check=True)
    assert all(cmd in result.stdout for cmd in ("dump", "data", "shape", "txt"))

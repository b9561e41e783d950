"""Issue 17, hostile inputs round two: lengths that a file cannot back, a full disk under vconvert,
and control characters from a dump header in output names.

* Every length read from a file (a version-2 header length, a protobuf field length, a ``.npy``
  header length, a tensor's byte count) is checked against the file's size and a sane bound before
  anything is allocated or read. The sparse files are checked in a child process whose address
  space is capped (``RLIMIT_AS``, 1 GiB) and whose Python allocations are traced: a refusal names
  the file and the byte offset and allocates no more than a few MiB.
* vconvert on a full disk (``open`` of any file in the output folder gives a file whose writes
  fail with ENOSPC after N files) names each output file and the OS error, goes on, keeps the
  failed-file list (on stderr when the list itself cannot be written) and exits 1.
* Output names built from a dump header's op name never hold control characters or path
  separators.
"""

from __future__ import annotations

import builtins
import csv
import errno
import io
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from compare.testing.synthetic import make_network
from convert.cli import app as vconvert_app
from convert.codecs import dump_proto
from convert.codecs.dumpwrite import write_dump
from convert.tool import convert_dump
from convert.tool.naming import FAILED_LIST_FILE, MAPPING_FILE, msnpy_name, physical_name

ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30
#: The child processes' address-space cap: far below the files' sizes.
LIMIT = 1 * GiB
#: Largest Python-heap peak (bytes) tolerated while refusing a file.
SMALL_PEAK = 4 << 20

runner = CliRunner()


# ------------------------------------------------------------------ helpers


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _sparse(path: Path, size: int, head: bytes) -> Path:
    """A file of ``size`` bytes that holds ``head`` and then a hole (no disk blocks)."""
    with open(path, "wb") as handle:
        handle.write(head)
    try:
        os.truncate(path, size)
    except OSError as exc:  # a file system without sparse files or with a small size limit
        pytest.skip(f"cannot make a {size}-byte sparse file here: {exc}")
    return path


def _v2_sparse(path: Path, size: int, header_length: int | None = None) -> Path:
    """A version-2 dump whose header length field says ``size - 8`` (or ``header_length``)."""
    hlen = size - 8 if header_length is None else header_length
    return _sparse(path, size, struct.pack("<Q", hlen) + b"\x0a\x032.0")


def _v1_sparse(path: Path, size: int, field: int = 6) -> Path:
    """A pure-protobuf dump: one length-delimited ``field`` whose value fills the whole file."""
    tag = bytes([field << 3 | 2])
    length = size - len(tag) - len(_varint(size))
    return _sparse(path, size, tag + _varint(length))


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[name] = "1"
    return env


_CHILD = """
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
{imports}
def attempt(path):
    tracemalloc.start()
    try:
        {call}
        outcome = {{"ok": True}}
    except Exception as exc:
        outcome = {{"ok": False, "kind": type(exc).__name__, "message": str(exc),
                   "offset": getattr(exc, "offset", None)}}
    outcome["peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return outcome
print(json.dumps([attempt(p) for p in sys.argv[1:]]))
"""


def _limited(imports: str, call: str, *paths: Path) -> list[dict]:
    """Run ``call`` (with ``path`` bound) on each path in a child capped at :data:`LIMIT` bytes of
    address space; the outcome of each: refused (kind, message, offset) or ok, and the peak of
    the Python heap during the call."""
    code = _CHILD.format(limit=LIMIT, imports=imports, call=call)
    proc = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True,
                          env=_child_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _refused(outcome: dict, path: Path, *needles: str) -> None:
    assert not outcome["ok"], outcome
    assert outcome["kind"] == "DumpFormatError", outcome
    assert str(path) in outcome["message"] and outcome["offset"] is not None, outcome
    assert f"(byte {outcome['offset']})" in outcome["message"], outcome
    for needle in needles:
        assert needle in outcome["message"], outcome
    assert outcome["peak"] < SMALL_PEAK, outcome


# ------------------------------------------------------------------ 1. lengths a file cannot back


@pytest.mark.parametrize("size", [3 * GiB, 64 * GiB])
def test_a_sparse_v2_dump_whose_header_length_is_the_file_size_is_refused_without_reading_it(
        tmp_path: Path, size: int) -> None:
    path = _v2_sparse(tmp_path / "Conv2D.conv1.4.1.1700000000000001", size)
    (outcome,) = _limited("from convert.codecs.dumpfile import read_header", "read_header(path)", path)
    _refused(outcome, path, "header length")
    assert outcome["offset"] == 0


def test_a_header_length_within_the_bound_over_a_sparse_hole_is_refused_after_a_few_bytes(tmp_path: Path) -> None:
    """A 48 MiB header of zeros (within the bound) in a 3 GiB sparse file: the walk of its fields
    in the file refuses it at its first byte, before the 48 MiB are read."""
    path = _v2_sparse(tmp_path / "Conv2D.conv1.4.1.1700000000000002", 3 * GiB, header_length=48 << 20)
    (outcome,) = _limited("from convert.codecs.dumpfile import read_header", "read_header(path, version=2)", path)
    _refused(outcome, path, "not a valid DumpData protobuf")


@pytest.mark.parametrize("size,field", [(3 * GiB, 6), (64 * GiB, 6), (3 * GiB, 7), (64 * GiB, 1)])
def test_a_sparse_v1_dump_with_one_huge_field_is_refused_without_reading_it(tmp_path: Path, size: int,
                                                                          field: int) -> None:
    path = _v1_sparse(tmp_path / f"Conv2D.conv1.4.1.17000000000001{field}", size, field)
    (outcome,) = _limited("from convert.codecs.dumpfile import read_header", "read_header(path, version=1)", path)
    _refused(outcome, path)
    assert "cannot be read" not in outcome["message"]  # the diagnosis, not a failed mapping


def test_v1_length_fields_claiming_64_GiB_in_a_small_file(tmp_path: Path) -> None:
    claim = _varint(64 * GiB)
    files = {
        "op_name": b"\x32" + claim + b"abc",
        # output 0 (field 3) whose data value (field 5) claims 64 GiB
        "data": b"\x1a\x0e" + b"\x2a" + claim + b"xyzxyzx",
    }
    paths = []
    for name, body in files.items():
        path = tmp_path / f"Conv2D.{name}.4.1.1700000000000003"
        path.write_bytes(body)
        paths.append(path)
    for path, outcome in zip(paths, _limited("from convert.codecs.dumpfile import read_header", "read_header(path)",
                                             *paths)):
        _refused(outcome, path, "past the end")


def test_a_sound_header_over_a_3_GiB_sparse_tensor_is_a_refusal_not_a_memory_error(tmp_path: Path) -> None:
    """The tensor's bytes are all in the file (a hole): reading it needs 3 GiB the capped process
    does not have -- a DumpFormatError naming the file and the tensor's offset, not MemoryError."""
    path = tmp_path / "Conv2D.conv1.4.1.1700000000000004"
    msg = dump_proto.DumpData(version="2.0", op_name="conv1")
    out = msg.output.add(data_type=1, format=2, size=3 * GiB)  # DT_FLOAT, ND
    out.shape.dim.extend([3 * GiB // 4])
    blob = msg.SerializeToString()
    _sparse(path, 8 + len(blob) + 3 * GiB, struct.pack("<Q", len(blob)) + blob)
    call = "h = read_header(path); read_tensor(h, h.outputs[0])"
    (outcome,) = _limited("from convert.codecs.dumpfile import read_header, read_tensor", call, path)
    _refused(outcome, path, "output 0")


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("sparse", [False, True])
def test_an_npy_header_length_the_file_cannot_back_is_refused_before_reading(tmp_path: Path, version: int,
                                                                            sparse: bool) -> None:
    path = tmp_path / f"pool1.0.{version}{int(sparse)}.npy"
    if sparse:
        _sparse(path, 3 * GiB, b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", 3 * GiB - 12) + b"{'descr'")
    else:
        path.write_bytes(b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", 0xFFFFFFF0) + b"{'descr'")
    (outcome,) = _limited("from convert.codecs.npy import read_npy_header", "read_npy_header(path)", path)
    _refused(outcome, path, "header length")
    assert outcome["offset"] == 8


def test_vconvert_data_refuses_an_npy_promising_more_than_it_holds_before_allocating(tmp_path: Path) -> None:
    """``vconvert data``/``txt`` read goldens through the checked reader: 10**8 float32 promised by
    a 200-byte file is refused by arithmetic (numpy's loader allocated the 400 MB first)."""
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000,), }"
    text += " " * ((-(len(text) + 11)) % 64) + "\n"
    path = tmp_path / "prob.0.1700000000000005.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + bytes(64))
    call = "load_npy(path)"
    (outcome,) = _limited("from convert.tool.data_conversion import load_npy", call, path)
    _refused(outcome, path, "truncated .npy")


def _hostile_network(tmp_path: Path) -> dict[str, Path]:
    paths = make_network(tmp_path / "net", channels=4, size=8)
    leaf = paths["leaf"]
    prob = next(leaf.glob("SoftmaxV2.prob.*"))
    _v2_sparse(prob, 64 * GiB)
    pool = next(leaf.glob("Pooling.pool1.*"))
    _v1_sparse(pool, 3 * GiB)
    return paths


def test_vcompare_on_sparse_dumps_gives_rows_not_a_crash(tmp_path: Path) -> None:
    """The command line in a process capped at 1 GiB: exit 0, a report, each sparse file's
    operator a row naming the file and its problem; no traceback."""
    paths = _hostile_network(tmp_path)
    out = tmp_path / "result.csv"
    code = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))\n"
            "from compare.cli import main; main()")
    args = ["-l", str(paths["left"]), "-r", str(paths["right"]), "-f", str(paths["fusion_rule"]), "-o", str(out)]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=_child_env(),
                          timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    reasons = {op: " | ".join(r["FailReason"] for r in rows if r["LeftOp"] == op) for op in ("prob", "pool1")}
    assert "SoftmaxV2.prob" in reasons["prob"] and "header length" in reasons["prob"], reasons
    assert "Pooling.pool1" in reasons["pool1"] and "DumpData" in reasons["pool1"], reasons
    assert "MemoryError" not in reasons["prob"] + reasons["pool1"]
    compared = {r["TensorIndex"] for r in rows if r["CosineSimilarity"] not in ("NaN", "")}
    assert {"conv1:output:0", "fc1:input:0"} <= compared  # the healthy tensors were compared


def test_vconvert_on_sparse_dumps_lists_each_file_with_its_problem(tmp_path: Path) -> None:
    folder = tmp_path / "dumps"
    folder.mkdir()
    v2 = _v2_sparse(folder / "Conv2D.conv1.4.1.1700000000000006", 64 * GiB)
    v1 = _v1_sparse(folder / "Conv2D.conv2.4.1.1700000000000007", 3 * GiB)
    good = write_dump(folder / "Conv2D.conv3.4.1.1700000000000008", outputs=[np.arange(6, dtype=np.float32)])
    out = tmp_path / "out"
    code = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))\n"
            "from convert.cli import main; main()")
    proc = subprocess.run([sys.executable, "-c", code, "dump", "-d", str(folder), "-out", str(out), "--workers", "1"],
                          capture_output=True, text=True, env=_child_env(), timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stderr[-3000:]
    listed = (out / FAILED_LIST_FILE).read_text(encoding="utf-8")
    assert f"{v2}: header length" in listed and "(byte 0)" in listed
    assert f"{v1}: " in listed and "MemoryError" not in listed and "cannot be read" not in listed
    assert (out / f"{good.name}.output.0.npy").is_file()


# ------------------------------------------------------------------ 2. vconvert on a full disk


class _FullDiskFile:
    """A file opened on a full disk: it exists, and every write fails with ENOSPC (as write(2) does)."""

    def __init__(self, handle: io.IOBase) -> None:
        self._handle = handle

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> object:
        return getattr(self._handle, name)

    def __enter__(self) -> _FullDiskFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


def _fill_disk_after(monkeypatch: pytest.MonkeyPatch, folder: Path, files: int,
                     until: Callable[[], bool] = lambda: False) -> None:
    """Files opened for writing in ``folder`` after the first ``files`` ones cannot be written
    (while ``until()`` is false)."""
    real_open = builtins.open
    opened: list[str] = []

    def fake_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(file, mode, *args, **kwargs)
        writing = any(c in mode for c in "wax+")
        if writing and isinstance(file, (str, os.PathLike)) and Path(os.fspath(file)).parent == folder:
            opened.append(os.fspath(file))
            if len(opened) > files and not until():
                return _FullDiskFile(handle)
        return handle

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)


def _dump_folder(tmp_path: Path, count: int = 5) -> Path:
    folder = tmp_path / "dumps"
    folder.mkdir()
    for i in range(count):
        write_dump(folder / f"Conv2D.conv{i}.4.1.170000000000001{i}",
                   outputs=[np.full((2, 3), i, np.float32)], inputs=[np.arange(4, dtype=np.float16)])
    # first in name order, a name long enough that its output is hashed (mapping.csv is written
    # at the end)
    write_dump(folder / ("Conv2D.a" + "x" * 220 + ".4.1.1700000000000020"), outputs=[np.ones(3, np.float32)])
    return folder


def _outputs(name: str) -> list[str]:
    if "xxxx" in name:
        return [physical_name(f"{name}.output.0.npy")]
    return [f"{name}.{kind}.0.npy" for kind in ("input", "output")]


def test_vconvert_on_a_full_disk_names_each_output_keeps_the_list_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _dump_folder(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / FAILED_LIST_FILE).write_text("stale list of an earlier run\n")
    _fill_disk_after(monkeypatch, out, files=3)  # 2 dumps (3 files) fit, then the disk is full
    result = runner.invoke(vconvert_app, ["dump", "-d", str(folder), "-out", str(out), "--workers", "1"])
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    err = result.stderr
    assert "Traceback" not in result.output
    sources = sorted(p.name for p in folder.iterdir())
    # every dump after the second failed, each line naming the output file and ENOSPC
    for name in sources[2:]:
        line = next(line for line in err.splitlines() if line.startswith(f"vconvert: failed: {folder / name}:"))
        assert f"cannot write {out}/" in line and "No space left on device" in line and "ENOSPC" in line
    for name in sources[:2]:
        assert f"failed: {folder / name}:" not in err
        assert all((out / output).is_file() for output in _outputs(name))
    # the list could not be written: it says so, naming the file and the error; no stale list is left
    assert f"{out / FAILED_LIST_FILE}" in err and "No space left on device" in err
    assert not (out / FAILED_LIST_FILE).exists()
    # mapping.csv could not be written either: the hashed names are still told
    assert f"{out / MAPPING_FILE}" in err
    # nothing half-written is left under an output's name, no temporary file either
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(o for n in sources[:2] for o in _outputs(n)), written


def test_vconvert_after_a_transient_full_disk_lists_every_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _dump_folder(tmp_path)
    out = tmp_path / "out"
    freed: list[bool] = []
    _fill_disk_after(monkeypatch, out, files=2, until=lambda: bool(freed))
    real_finish = convert_dump.finish

    def finish_after_freeing(report: object) -> object:
        freed.append(True)  # space was freed before the run writes its lists
        return real_finish(report)

    monkeypatch.setattr("convert.tool.convert_dump.finish", finish_after_freeing)
    result = runner.invoke(vconvert_app, ["dump", "-d", str(folder), "-out", str(out), "--workers", "1"])
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    listed = (out / FAILED_LIST_FILE).read_text(encoding="utf-8").splitlines()
    sources = sorted(p.name for p in folder.iterdir())
    assert [line.split(": ", 1)[0] for line in listed] == [str(folder / n) for n in sources[1:]]
    assert all("No space left on device (ENOSPC)" in line and f"cannot write {out}/" in line for line in listed)


# ------------------------------------------------------------------ 3. control characters in names


HOSTILE_OP_NAMES = [
    "scope/..\x1b[31mred\r\nline",
    "a/b\\c\x00d\x7fe\tf",
    "x/..",
    "../../etc/passwd\n",
]


@pytest.mark.parametrize("op_name", HOSTILE_OP_NAMES)
def test_msnpy_names_hold_no_control_character_or_separator(op_name: str) -> None:
    name = msnpy_name("Conv2D.conv1.4.1.1700000000000001", op_name, "output", 0, "ND")
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in name), repr(name)
    assert "/" not in name and "\\" not in name and name not in (".", "..")
    assert name.startswith("Conv2D.") and name.endswith(".4.1.1700000000000001.output.0.ND.npy")


def test_vconvert_msnpy_outputs_from_hostile_op_names_stay_plain(tmp_path: Path) -> None:
    folder = tmp_path / "dumps"
    folder.mkdir()
    for i, op_name in enumerate(HOSTILE_OP_NAMES):
        write_dump(folder / f"Conv2D.conv{i}.4.1.170000000000003{i}", op_name=op_name,
                   outputs=[np.full(3, i, np.float32)])
    out = tmp_path / "out"
    result = runner.invoke(vconvert_app, ["dump", "-d", str(folder), "-out", str(out), "-t", "msnpy",
                                          "--workers", "1"])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == len(HOSTILE_OP_NAMES), names
    for name in names:
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in name), repr(name)
        assert "\\" not in name
    assert sorted(p.parent for p in out.rglob("*")) == [out] * len(names)
    for i in range(len(HOSTILE_OP_NAMES)):
        (hit,) = [n for n in names if n.endswith(f".4.1.170000000000003{i}.output.0.ND.npy")]
        assert np.load(out / hit).tolist() == [i, i, i]


def test_zero_element_tensor_with_huge_other_dimensions_is_refused(tmp_path: Path) -> None:
    """Found by the long fuzz run (seed 1717): shape (0, 2**62, 2**62) has 0 elements, and numpy
    still refuses to make it ("array is too big", a ValueError): a DumpFormatError naming it."""
    from convert.codecs import dump_proto
    from convert.codecs.dumpfile import read_header, read_tensor
    from convert.errors import DumpFormatError as GroundError

    msg = dump_proto.DumpData()
    tensor = msg.output.add()
    tensor.data_type, tensor.format, tensor.size = 0, 2, 0
    tensor.shape.dim.extend([0, 2**62, 2**62])
    header = msg.SerializeToString()
    path = tmp_path / "Op.x.1.1.1704110400000000"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    parsed = read_header(path)
    with pytest.raises(GroundError, match="0 elements, but its other dimensions multiply to"):
        read_tensor(parsed, parsed.tensors[0])

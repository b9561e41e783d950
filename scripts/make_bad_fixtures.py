"""Write ``fixtures/bad/``: a small clean network and deliberately broken copies of its files.

    python scripts/make_bad_fixtures.py            # rewrites fixtures/bad/
    python scripts/make_bad_fixtures.py --out DIR

The clean network is :func:`compare.testing.synthetic.make_network` with 4 channels and 8x8 images
(``clean/left`` holds the Ascend dump files of the leaf folder, ``clean/right`` the golden .npy,
``clean/model.json`` the fusion rule). Each case replaces one side with a copy in which some
files are broken; ``MANIFEST.json`` lists, per case, the folders to compare and, per broken file,
the operator it belongs to, what was done to it and words the diagnosis must contain.
``tests/props/test_bad_fixtures.py`` runs every case and checks: no traceback, every broken file named
with its problem, every other tensor compared with the clean run's numbers.

The trans_TransData_0 and conv1 dumps and the goldens they need (data, conv1_weight, relu1) stay
healthy in every case, so each run has something to compare.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from compare.testing.synthetic import make_network  # noqa: E402
from convert.codecs.dumpfile import read_header, read_tensor  # noqa: E402
from convert.codecs.dumpwrite import TensorSpec, write_dump  # noqa: E402

OUT = ROOT / "fixtures" / "bad"

POOL1 = "Pooling.pool1.4.1.1704110400004000"
FC1 = "FullyConnection.fc1.5.1.1704110400005000"
PROB = "SoftmaxV2.prob.6.1.1704110400006000"
G_POOL1 = "pool1.0.1704110405000005.npy"
G_FC1 = "fc1.0.1704110405000006.npy"
G_PROB = "prob.0.1704110405000007.npy"


def _specs(path: Path) -> tuple[list[TensorSpec], list[TensorSpec], str, int]:
    """The tensors of a clean dump as TensorSpecs (to rewrite them with one thing changed)."""
    header = read_header(path)

    def spec(info) -> TensorSpec:
        return TensorSpec(np.asarray(read_tensor(header, info)), format=info.format, data_type=info.data_type,
                          original_shape=info.original_shape or None)

    return [spec(i) for i in header.inputs], [spec(o) for o in header.outputs], header.op_name, header.dump_time


def _rewrite_output(src: Path, dst: Path, **change: object) -> None:
    """``src`` rewritten to ``dst`` (version 2) with fields of output 0 replaced."""
    inputs, outputs, name, when = _specs(src)
    for key, value in change.items():
        setattr(outputs[0], key, value)
    write_dump(dst, inputs=inputs, outputs=outputs, op_name=name, dump_time=when)


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    text += " " * ((-(len(text) + 11)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def build(out: Path) -> dict:
    """Write every case under ``out`` (which must not exist); return the manifest."""
    with tempfile.TemporaryDirectory() as tmp:
        net = make_network(Path(tmp) / "net", seed=7, channels=4, size=8)
        clean = out / "clean"
        shutil.copytree(net["leaf"], clean / "left")
        shutil.copytree(net["right"], clean / "right")
        shutil.copy(net["fusion_rule"], clean / "model.json")
    left, right, rule = clean / "left", clean / "right", clean / "model.json"
    cases: dict[str, dict] = {}

    # ---------------------------------------------------------------- dumps_a: the file layout
    a = _copy(left, out / "dumps_a" / "left")
    data = (a / POOL1).read_bytes()
    (a / POOL1).write_bytes(data[:-100])
    data = bytearray((a / PROB).read_bytes())
    data[:8] = struct.pack("<Q", 10 * len(data))
    (a / PROB).write_bytes(bytes(data))
    inputs, outputs, name, when = _specs(a / FC1)
    write_dump(a / FC1, inputs=inputs, outputs=outputs, op_name=name, dump_time=when, version=1)
    v1 = (a / FC1).read_bytes()
    (a / FC1).write_bytes(v1 + b"\x0f\xff\xff")  # a tag of field 1 with wire type 7, which does not exist
    cases["dumps_a"] = {
        "left": "dumps_a/left", "right": "clean/right", "rule": "clean/model.json",
        "broken": [
            {"file": POOL1, "op": "pool1", "problem": "truncated version-2 dump (last 100 bytes cut)",
             "needles": ["truncated", "100 missing"]},
            {"file": PROB, "op": "prob", "problem": "header length (bytes 0-7) 10x the file size",
             "needles": ["header length", "points past the end"]},
            {"file": FC1, "op": "fc1", "problem": "pure-protobuf (v1) dump followed by a tag with the invalid wire type 7",
             "needles": ["not a valid DumpData protobuf", "wire type"]},
        ],
    }

    # ---------------------------------------------------------------- dumps_b: shapes and magic
    b = _copy(left, out / "dumps_b" / "left")
    data = bytearray((b / POOL1).read_bytes())
    data[8:12] = struct.pack("<I", 0x5A5A5A5A)
    (b / POOL1).write_bytes(bytes(data))
    _rewrite_output(clean / "left" / FC1, b / FC1, shape=(2**32, 2**32, 2**32))
    _rewrite_output(clean / "left" / PROB, b / PROB, shape=(1, 2**64 - 1))
    cases["dumps_b"] = {
        "left": "dumps_b/left", "right": "clean/right", "rule": "clean/model.json",
        "broken": [
            {"file": POOL1, "op": "pool1", "problem": "nano dump magic 0x5A5A5A5A at byte 8",
             "needles": ["nano"]},
            {"file": FC1, "op": "fc1", "problem": "output shape [2^32, 2^32, 2^32]: its product (2^96) overflows "
             "any 64-bit size and does not fit the 20 bytes of data",
             "needles": ["needs 158456325028528675187087900672 bytes", "holds 20 bytes"]},
            {"file": PROB, "op": "prob", "problem": "output dimension 2^64-1, i.e. -1 written as uint64",
             "needles": ["-1 as a signed 64-bit integer"]},
        ],
    }

    # ---------------------------------------------------------------- dumps_c: types and formats
    c = _copy(left, out / "dumps_c" / "left")
    _rewrite_output(clean / "left" / POOL1, c / POOL1, data_type=13)
    _rewrite_output(clean / "left" / FC1, c / FC1, format=77)
    _rewrite_output(clean / "left" / PROB, c / PROB, shape=(1, 0))
    cases["dumps_c"] = {
        "left": "dumps_c/left", "right": "clean/right", "rule": "clean/model.json",
        "broken": [
            {"file": POOL1, "op": "pool1", "problem": "output 0 has data type DT_STRING (13)",
             "needles": ["DT_STRING", "cannot be decoded"], "tensor": "pool1:output:0"},
            {"file": FC1, "op": "fc1", "problem": "output 0 has the unknown format code 77",
             "needles": ["format code 77", "not an Ascend dump format"], "tensor": "fc1:output:0"},
            {"file": PROB, "op": "prob", "problem": "output 0 has shape [1, 0] but 20 bytes of data",
             "needles": ["0 elements", "disagree"], "tensor": "prob:output:0"},
        ],
    }

    # ---------------------------------------------------------------- goldens
    g = _copy(right, out / "goldens" / "right")
    with open(g / G_POOL1, "wb") as handle:
        np.save(handle, np.array([{"rows": 1}, None], dtype=object), allow_pickle=True)
    data = (g / G_FC1).read_bytes()
    (g / G_FC1).write_bytes(data[:-10])
    (g / G_PROB).write_bytes(_npy_header((1000000, 1000000)) + b"\x00" * 40)
    cases["goldens"] = {
        "left": "clean/left", "right": "goldens/right", "rule": "clean/model.json",
        "broken": [
            {"file": G_POOL1, "op": "pool1", "problem": "pickled object array", "needles": ["never unpickles"]},
            {"file": G_FC1, "op": "fc1", "problem": "truncated .npy (last 10 bytes cut)",
             "needles": ["truncated .npy"]},
            {"file": G_PROB, "op": "prob", "problem": "header promises 10^12 float32 in a 168-byte file",
             "needles": ["1000000000000 x float32"]},
        ],
    }

    # ---------------------------------------------------------------- mapping.csv
    m = _copy(left, out / "mapping" / "left")
    (m / POOL1).rename(m / "1001")
    (m / FC1).rename(m / "1002")
    (m / PROB).rename(m / "1003")
    (m / "mapping.csv").write_text(
        f"1001,../{POOL1}\n"
        f"1002,{FC1},extra\n"
        f"1003,{PROB}\n"
        "1004,/etc/passwd\n"
    )
    cases["mapping"] = {
        "left": "mapping/left", "right": "clean/right", "rule": "clean/model.json",
        "broken": [
            {"file": "1001", "op": "pool1", "problem": "mapping.csv row 1 maps it to ../" + POOL1,
             "needles": ["row 1 was refused", "points outside this folder"], "skipped": True},
            {"file": "1002", "op": "fc1", "problem": "mapping.csv row 2 has 3 columns",
             "needles": ["row 2 was refused", "3 columns"], "skipped": True},
            {"file": "mapping.csv", "op": None, "problem": "row 4 maps 1004 to /etc/passwd",
             "needles": ["row 4", "/etc/passwd", "points outside this folder"], "skipped": True},
        ],
        "note": "1003 is a correctly mapped hashed file: prob is compared as in the clean run",
    }

    # ---------------------------------------------------------------- rules (the run cannot start)
    rules = out / "rules"
    rules.mkdir(parents=True)
    base = json.loads(rule.read_text())
    wrong = json.loads(json.dumps(base))
    wrong["graph"][0]["op"][3]["output_desc"][0]["attr"][1]["value"]["i"] = "0"
    (rules / "wrong_types.json").write_text(json.dumps(wrong, indent=1))
    dup = json.loads(json.dumps(base))
    twin = json.loads(json.dumps(dup["graph"][0]["op"][4]))
    twin["type"] = "MaxPool"
    dup["graph"][0]["op"].append(twin)
    (rules / "duplicate_names.json").write_text(json.dumps(dup, indent=1))
    nulls = json.loads(json.dumps(base))
    nulls["graph"][0]["op"][5]["name"] = None
    (rules / "null_name.json").write_text(json.dumps(nulls, indent=1))
    (rules / "deep.json").write_text('{"graph": ' + "[" * 5000 + "]" * 5000 + "}")
    (rules / "truncated.json").write_text(rule.read_text()[:500])
    rule_cases = {
        "wrong_types.json": ["graph[0].op[3].output_desc[0].attr[1].value.i", "expected a JSON integer"],
        "duplicate_names.json": ["graph[0].op[4] and graph[0].op[7]", "'pool1'"],
        "null_name.json": ["graph[0].op[5].name", "expected a string, found null"],
        "deep.json": ["nested too deeply"],
        "truncated.json": ["not valid JSON", "line"],
    }
    manifest = {
        "about": "broken inputs of vcompare's own; written by scripts/make_bad_fixtures.py, checked by "
                 "tests/props/test_bad_fixtures.py; see docs/reliability.md",
        "clean": {"left": "clean/left", "right": "clean/right", "rule": "clean/model.json"},
        "cases": cases,
        "rules": {name: {"left": "clean/left", "right": "clean/right", "needles": needles}
                  for name, needles in rule_cases.items()},
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"target folder (default {OUT})")
    args = parser.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    manifest = build(args.out)
    files = sum(1 for p in args.out.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {files} files ({size} bytes) in {args.out}: cases {', '.join(manifest['cases'])}; "
          f"rules {', '.join(manifest['rules'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""MindSpore dumps: naming rules, every layout read back (contract tests on generated fixtures),
the real r1.x synchronous ``.bin`` files and their ``.expected`` goldens, pairing across families
(scope names, mapping files) and the shared ``mindspore_npy`` case against its float64 truth.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from compare.errors import DumpFormatError, OptionError, PairingError
from compare.loaders import detect, load_run
from compare.loaders.mindspore import read_sync_bin, scan_sync
from compare.pairing.mapping_file import load_mapping
from compare.pairing.names import match_names
from compare.pairing.user_mapping import pair_families
from compare.records import PairStatus, RunKind, TensorKind
from compare.runs.folders import run_network
from compare.testing.synthetic_mindspore import BF16_TENSOR, OPS, make_trees, tensor_value
from convert.names.keys import name_key
from convert.names.mindspore import ms_dtype, ms_format, parse_npy_name, parse_sync_name

REAL = "real/mindspore/tests/ut/data/dump/gpu_dumps"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_trees(tmp_path_factory.mktemp("mindspore"))


# --------------------------------------------------------------------------------------------
# Naming rules


def test_sync_name_fields() -> None:
    parsed = parse_sync_name("Default--network-WithLossCell--_backbone-AlexNet--ReLUV2-op300_output_1_shape_256_"
                             "UInt32_DefaultFormat.bin")
    assert parsed is not None
    assert parsed.op_name == "Default/network-WithLossCell/_backbone-AlexNet/ReLUV2-op300"
    assert (parsed.kind, parsed.index, parsed.shape, parsed.dtype, parsed.format) == (
        TensorKind.OUTPUT, 1, (256,), "uint32", "ND")
    dotted = parse_sync_name("moments.fc3.bias_output_0_shape_10_kNumberTypeFloat32_DefaultFormat.bin")
    assert dotted is not None and dotted.op_name == "moments.fc3.bias" and dotted.dtype == "float32"
    nchw = parse_sync_name("a--b_input_0_shape_32_12_13_13_16_Float16_NC1HWC0.bin")
    assert nchw is not None and nchw.shape == (32, 12, 13, 13, 16) and nchw.format == "NC1HWC0"
    assert nchw.kind == TensorKind.INPUT
    frac = parse_sync_name("w_output_0_shape_72_12_16_16_Float16_FRACTAL_Z.bin")
    assert frac is not None and frac.format == "FRACTAL_Z" and frac.dtype_text == "Float16"
    scalar = parse_sync_name("loss_output_0_shape_Float32_DefaultFormat.bin")
    assert scalar is not None and scalar.shape == ()
    for bad in ("conv_output_x_shape_1_Float32_NCHW.bin", "conv_output_0_shape_1_Float32_NCHW.npy", "a.b.c"):
        assert parse_sync_name(bad) is None


def test_npy_name_fields() -> None:
    parsed = parse_npy_name("Conv2D.Default--network-conv1-op104.3.0.1710000000003006.input.1.DefaultFormat."
                            "float16.npy")
    assert parsed is not None
    assert parsed.op_name == "Default/network-conv1-op104" and parsed.op_type == "Conv2D"
    assert (parsed.task_id, parsed.stream_id, parsed.timestamp) == (3, 0, 1710000000003006)
    assert (parsed.kind, parsed.slot, parsed.format, parsed.dtype_text) == (TensorKind.INPUT, 1, "ND", "float16")
    plain = parse_npy_name("Conv2D.Conv2D-op12.0.0.1623124369613540.output.0.DefaultFormat.npy")
    assert plain is not None and plain.dtype_text is None and plain.op_name == "Conv2D-op12"
    param = parse_npy_name("Parameter.conv1.weight.0.0.1623124369613540.output.0.DefaultFormat.npy")
    assert param is not None and param.op_name == "conv1.weight"
    assert parse_npy_name("pool1.0.1710000000000000.npy") is None  # a golden name


def test_type_and_format_names() -> None:
    assert ms_dtype("kNumberTypeFloat32") == ms_dtype("Float32") == "float32"
    assert ms_dtype("UInt32") == "uint32" and ms_dtype("BFloat16") == "bfloat16" and ms_dtype("Bool") == "bool"
    assert ms_dtype("String") is None
    assert ms_format("DefaultFormat") == "ND" and ms_format("FracZ") == "FRACTAL_Z"
    assert ms_format("FRAC_NZ") == "FRACTAL_NZ" and ms_format("NCHW") == "NCHW"


# --------------------------------------------------------------------------------------------
# The real r1.x synchronous dumps and their .expected goldens


def _expected_blocks(path: Path) -> list[dict[str, str]]:
    """``key = value`` fields of each block; indented lines continue the previous value."""
    blocks = []
    for chunk in path.read_text().split("-" * 59):
        fields: dict[str, str] = {}
        key = None
        for line in chunk.splitlines():
            if line[:1].strip() and " = " in line:
                key, value = line.split(" = ", 1)
                key = key.strip()
                fields[key] = value
            elif key is not None and line[:1] == " ":
                fields[key] += " " + line.strip()
        if "node name" in fields:
            blocks.append(fields)
    return blocks


def _bytes_printed(text: str) -> tuple[list[int], list[int] | None]:
    """(all bytes, None) for a full print, or (first bytes, last bytes) for a '...' print."""
    inner = text.strip().strip("[]")
    if "..." in inner:
        head, tail = inner.split("...")
        return [int(v) for v in head.split()], [int(v) for v in tail.split()]
    return [int(v) for v in inner.split()], None


@pytest.mark.parametrize("variant", ["sync_trans_false", "sync_trans_true"])
def test_real_sync_bin_files_parse_with_matching_sizes(variant: str) -> None:
    root = shared_path(REAL, variant)
    files = sorted(root.rglob("*.bin"))
    assert files
    for path in files:
        parsed = parse_sync_name(path.name)
        assert parsed is not None, path.name
        array = read_sync_bin(path, parsed)
        assert array.shape == parsed.shape
        assert array.nbytes == path.stat().st_size


@pytest.mark.parametrize("variant", ["sync_trans_false", "sync_trans_true"])
def test_real_sync_bin_values_match_expected(variant: str) -> None:
    golden = shared_path(REAL, "golden", f"{variant}_read_tensors.expected")
    debugger_dtype = {"11": "float32", "8": "uint32"}  # the dtype codes the goldens print
    checked = 0
    for block in _expected_blocks(golden):
        node, slot, iteration = block["node name"].strip(), int(block["slot"]), int(block["iteration"])
        run = load_run(shared_path(REAL, variant), iteration=iteration)
        assert run.family == "mindspore-sync" and run.iteration == iteration
        op = run.ops.get(node) or run.ops.get(node.rsplit("/", 1)[-1])  # parameters: file name = last scope part
        assert op is not None, node
        ref = op.tensor(TensorKind.OUTPUT, slot)
        assert ref is not None
        assert ref.dtype == debugger_dtype[block["debugger dtype"].strip()]
        assert list(ref.shape) == json.loads(block["shape"])
        data = ref.load()
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        assert raw.size == int(block["size in bytes"])
        head, tail = _bytes_printed(block["data (printed in uint8)"])
        if tail is None:
            assert raw.tolist() == head
        else:
            assert raw[: len(head)].tolist() == head and raw[raw.size - len(tail):].tolist() == tail
        checked += 1
    assert checked == 3


def test_real_sync_watchpoint_values() -> None:
    """The values the offline debugger's watchpoints printed, recomputed from our reads."""
    root = shared_path(REAL, "sync_trans_false")
    it2, it3 = load_run(root, iteration=2), load_run(root, iteration=3)
    conv = it2.ops["Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op308"]
    assert float(np.min(conv.outputs[0].load())) == -2.0  # "actual_value = -2.0"
    prev = it2.ops["fc3.bias"].outputs[0].load().astype(np.float64)
    cur = it3.ops["fc3.bias"].outputs[0].load().astype(np.float64)
    ratio = np.mean(np.abs(cur - prev)) / (np.mean(np.abs(prev)) + 1e-9)
    assert ratio == pytest.approx(1.793662034335766e-35, rel=1e-12)


def test_real_sync_default_iteration_is_newest_with_note() -> None:
    run = load_run(shared_path(REAL, "sync_trans_false"))
    assert run.iteration == 3
    assert any("using iteration 3" in n for n in run.notes)


def test_sync_size_mismatch_is_a_row_naming_the_file(tmp_path: Path) -> None:
    leaf = tmp_path / "Net" / "device_0" / "iteration_0"
    leaf.mkdir(parents=True)
    np.zeros(4, np.float32).tofile(leaf / "a--b_output_0_shape_4_Float32_DefaultFormat.bin")
    np.zeros(3, np.float32).tofile(leaf / "a--c_output_0_shape_4_Float32_DefaultFormat.bin")
    run = scan_sync(leaf)
    bad = run.ops["a/c"].outputs[0]
    with pytest.raises(DumpFormatError, match=r"a--c_output_0.*file size 12 bytes does not match the name"):
        bad.load()
    assert any("do not match their names" in n for n in run.notes)
    result = run_network(tmp_path, tmp_path)
    row = next(r for r in result.rows if r.tensor_id == "a/c:output:0")
    assert row.status is PairStatus.NOT_COMPARABLE and "a--c_output_0_shape_4" in "; ".join(row.reasons)


def test_sync_unknown_type_is_a_row(tmp_path: Path) -> None:
    leaf = tmp_path / "iteration_0"
    leaf.mkdir()
    (leaf / "p_output_0_shape_2_String_DefaultFormat.bin").write_bytes(b"ab")
    run = scan_sync(leaf)
    with pytest.raises(DumpFormatError, match="data type 'String'"):
        run.ops["p"].outputs[0].load()


# --------------------------------------------------------------------------------------------
# Contract tests: every generated layout read back


def _check_values(run, *, iteration: int, rank: int = 0, fp16: bool = False, names=None) -> int:
    checked = 0
    for op in OPS:
        name = names(op.name) if names else op.name
        dump = run.ops[name]
        assert dump.op_type == op.type
        for kind, shapes in ((TensorKind.INPUT, op.inputs), (TensorKind.OUTPUT, op.outputs)):
            for index, shape in enumerate(shapes):
                ref = dump.tensor(kind, index)
                assert ref is not None, (name, kind, index)
                expected = tensor_value(op.name, kind.value, index, shape, iteration, rank)
                data = np.asarray(ref.load())
                if fp16:
                    expected = expected.astype(np.float16)
                    if ref.format == "NC1HWC0":
                        from convert.layouts import convert_layout

                        data = convert_layout(data, "NC1HWC0", "NCHW", ref.shape, shape)[:, : shape[1]]
                        assert ref.original_shape == shape
                assert data.reshape(shape).tolist() == expected.tolist()
                checked += 1
    return checked


def test_fixture_sync(trees: dict[str, Path]) -> None:
    run = load_run(trees["sync"], iteration=0)
    assert run.kind is RunKind.NUMPY and run.family == "mindspore-sync" and run.coords["rank"] == 0
    assert _check_values(run, iteration=0) == 10
    matmul = run.ops["Default/network-fc/MatMul-op3"].inputs[0]
    assert (matmul.dtype, matmul.format, matmul.shape) == ("float32", "ND", (1, 32))
    mask = run.ops["Default/network-relu1/ReLU-op2"].tensor(TensorKind.OUTPUT, 1)
    assert mask is not None and mask.dtype == "uint32" and mask.load().tolist() == list(range(8))
    weight = run.ops["conv1.weight"].outputs[0]
    assert weight.format == "NCHW" and weight.load().shape == (2, 3, 3, 3)
    # execution_order lists the kernels last to first: the run's order follows it; the unlisted
    # weight (a .bin name has no timestamp) comes last
    assert [n for n, _ in sorted(run.order.items(), key=lambda kv: kv[1])] == [
        *(op.name for op in reversed(OPS)), "conv1.weight"]
    assert not run.skipped  # graphs/, execution_order/, .metadata/ are tolerated, not reported


def test_fixture_sync_cpu(trees: dict[str, Path]) -> None:
    run = load_run(trees["sync_cpu"])
    assert run.family == "mindspore-sync" and "rank" not in run.coords and run.iteration == 0
    assert sorted(run.ops) == sorted(op.name for op in OPS[:2])


def test_fixture_npy(trees: dict[str, Path]) -> None:
    run = load_run(trees["npy"], rank=1, iteration=1)
    assert run.family == "mindspore-npy" and (run.rank, run.iteration, run.coords["graph"]) == (1, 1, 0)
    assert _check_values(run, iteration=1, rank=1) == 10
    bf16 = run.ops[BF16_TENSOR[0]].tensor(TensorKind.OUTPUT, 0)
    assert bf16 is not None and bf16.dtype == "bfloat16" and bf16.load().dtype == np.float32
    hashed = run.ops["Default/network-fc/MatMul-op3"].tensor(TensorKind.INPUT, 1)
    assert hashed is not None and hashed.path.name == "1234567890123.npy"
    assert "data-1" in run.ops and run.ops["data-1"].op_type == "Parameter"  # constants/
    assert all(t.stats is not None for op in OPS for t in run.ops[op.name].outputs)
    stats = run.ops[OPS[0].name].outputs[0].stats
    expected = tensor_value(OPS[0].name, "output", 0, (1, 2, 4, 4), 1, 1).astype(np.float64)
    assert stats["max"] == pytest.approx(expected.max()) and stats["count"] == 32
    assert run.ran_iterations == (0, 1, 2)
    # the constant (not in the order file) is placed by its timestamp: dumped before every kernel
    assert [n for n, _ in sorted(run.order.items(), key=lambda kv: kv[1])] == ["data-1", *(op.name for op in OPS)]
    assert not run.skipped  # the kernel-args json and mapping.csv are not tensors


def test_fixture_npy_graph_choice(trees: dict[str, Path]) -> None:
    default = load_run(trees["npy"], rank=0, iteration=0)
    assert default.coords["graph"] == 0 and any("using graph 0" in n for n in default.notes)
    other = load_run(trees["npy"], rank=0, graph=1)
    assert other.coords["graph"] == 1 and list(other.ops) == [OPS[3].name]


def test_fixture_statistics_only(trees: dict[str, Path]) -> None:
    run = load_run(trees["stats"])
    assert run.stats_only and run.family == "mindspore-npy"
    ref = run.ops[OPS[2].name].tensor(TensorKind.INPUT, 1)
    assert ref.stats is not None and ref.reader is None
    assert ref.shape == (32, 4) and ref.dtype == "float32"
    data = tensor_value(OPS[2].name, "input", 1, (32, 4)).astype(np.float64)
    assert ref.stats["l2norm"] == pytest.approx(np.sqrt((data ** 2).sum()))
    assert ref.stats["negative_count"] == (data < 0).sum()


def test_fixture_async(trees: dict[str, Path]) -> None:
    run = load_run(trees["async"], iteration=0)
    assert run.kind is RunKind.OFFLINE and run.family == "mindspore-async"
    assert (run.rank, run.iteration, run.coords["graph"], run.coords["net"]) == (0, 0, 0, "Net")
    assert detect(trees["async"]) is RunKind.OFFLINE
    assert _check_values(run, iteration=0, fp16=True, names=name_key) == 10


def test_fixture_o2_bin_with_overflow(trees: dict[str, Path]) -> None:
    run = load_run(trees["o2"])
    assert run.family == "mindspore-o2" and run.coords["step"] == 1 and run.coords["model_name"] == "Net_model"
    assert _check_values(run, iteration=0, fp16=True, names=name_key) == 10  # incl. the random-digit file
    assert len(run.overflow) == 1 and run.overflow[0].task_id == 9
    assert "1 output(s)" in run.overflow[0].summary
    assert not any("acl_dump" in str(p) or "Opdebug" in str(p) for p, _ in run.skipped)
    result = run_network(trees["o2"], trees["npy"], rank=0, iteration=0)
    overflow = [r for r in result.rows if r.op_type == "Opdebug"]
    assert len(overflow) == 1 and overflow[0].status is PairStatus.NOT_COMPARABLE
    assert "overflow/underflow record (task 9, stream 1" in overflow[0].reasons[0]


def test_fixture_o2_npy_with_json_overflow(trees: dict[str, Path]) -> None:
    run = load_run(trees["o2_npy"])
    assert run.family == "mindspore-o2" and run.kind is RunKind.NUMPY
    assert _check_values(run, iteration=0) == 10
    assert len(run.overflow) == 1 and '"status":1' in run.overflow[0].summary


# --------------------------------------------------------------------------------------------
# Pairing across families


def test_ms_vs_ms_gpu_npy_against_ascend_async(trees: dict[str, Path]) -> None:
    """Scope names (with '/') meet the '_' names of Ascend dumps; NC1HWC0 meets NCHW."""
    for left, right in ((trees["npy"], trees["async"]), (trees["async"], trees["npy"])):
        result = run_network(left, right, rank=0, iteration=0)
        compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
        assert len(compared) == 10, [(r.tensor_id, r.reasons) for r in result.rows]
        for row in compared:
            assert row.metrics["CosineSimilarity"] > 0.9999 and row.metrics["MaxAbsoluteError"] < 2e-3
        assert any("matched only after reading '--' as '/'" in n for n in result.notes)
        one_sided = [r for r in result.rows if r.status is not PairStatus.COMPARED]
        assert [r.left_op if r.left_op != "*" else r.right_op for r in one_sided] == ["data-1"]  # never dropped


def test_ms_sync_vs_npy_same_values(trees: dict[str, Path]) -> None:
    result = run_network(trees["sync"], trees["npy"], rank=0, iteration=1)
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert len(compared) == 10
    assert all(r.metrics["MaxAbsoluteError"] == 0 for r in compared)
    missing = {(r.left_op, r.right_op, r.tensor_id) for r in result.rows if r.status is not PairStatus.COMPARED}
    assert ("conv1.weight", "*", "conv1.weight:output:0") in missing
    assert ("*", "data-1", "data-1:output:0") in missing


def test_match_names_rules() -> None:
    left = ["Default/a/Conv2D-op1", "Default/b/ReLU-op2", "Default/c/Add-op3", "x"]
    right = ["Default_a_Conv2D-op1", "Default/b/ReLU-op9", "Default/c/Add-op4", "Default/c/Add-op5"]
    matched, used = match_names(left, right)
    assert matched == {"Default/a/Conv2D-op1": "Default_a_Conv2D-op1", "Default/b/ReLU-op2": "Default/b/ReLU-op9"}
    assert used["normalised"] == 1 and used["kernel id"] == 1  # Add is ambiguous without its id: not paired


def test_no_common_name_suggests_mapping(trees: dict[str, Path], tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    np.save(golden / "conv1.0.1700000000000000.npy", np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(PairingError, match="--mapping"):
        run_network(trees["npy"], golden, rank=0, iteration=0)


def _golden_folder(tmp_path: Path) -> Path:
    golden = tmp_path / "golden"
    golden.mkdir()
    conv = OPS[0]
    np.save(golden / "conv1.0.1700000000000000.npy", tensor_value(conv.name, "output", 0, conv.outputs[0]))
    fc = OPS[2]
    np.save(golden / "fc.0.1700000000000000.npy", tensor_value(fc.name, "output", 0, fc.outputs[0]) + 0.5)
    np.save(golden / "extra.0.1700000000000000.npy", np.ones(3, np.float32))
    return golden


def test_mapping_csv_against_caffe_golden(trees: dict[str, Path], tmp_path: Path) -> None:
    golden = _golden_folder(tmp_path)
    mapping = tmp_path / "map.csv"
    mapping.write_text("left,right\n# comment\nDefault--network-conv1--Conv2D-op1,conv1\n"
                       "Default/network-fc/MatMul-op3:0,fc:output:0\nDefault/network-gone-op9,gone\n")
    result = run_network(trees["npy"], golden, rank=0, iteration=0, mapping=mapping)
    by_id = {r.tensor_id: r for r in result.rows if r.tensor_id}
    conv = by_id["Default/network-conv1/Conv2D-op1:output:0"]
    assert conv.status is PairStatus.COMPARED and conv.right_op == "conv1" and conv.metrics["MaxAbsoluteError"] == 0
    fc = by_id["Default/network-fc/MatMul-op3:output:0"]
    assert fc.metrics["MaxAbsoluteError"] == pytest.approx(0.5)
    assert "Default/network-conv1/Conv2D-op1:input:0" not in by_id  # golden folders hold outputs only
    relu = [r for r in result.rows if r.left_op == "Default/network-relu1/ReLU-op2"]
    assert relu and all(r.status is PairStatus.MISSING_RIGHT and "not in the mapping file" in r.reasons[0]
                        for r in relu)
    gone = [r for r in result.rows if r.right_op == "gone"]
    assert gone and "which the left folder does not have" in gone[0].reasons[0]
    extra = [r for r in result.rows if r.right_op == "extra"]
    assert extra and extra[0].status is PairStatus.MISSING_LEFT


def test_mapping_yaml(trees: dict[str, Path], tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    golden = _golden_folder(tmp_path)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("Default/network-conv1/Conv2D-op1: conv1\n")
    result = run_network(trees["npy"], golden, rank=0, iteration=0, mapping=mapping)
    assert any(r.right_op == "conv1" and r.status is PairStatus.COMPARED for r in result.rows)
    listed = tmp_path / "list.yml"
    listed.write_text("- {left: 'Default/network-conv1/Conv2D-op1:output:0', right: 'conv1:0'}\n")
    assert [(e.left.index, e.right.name) for e in load_mapping(listed)] == [(0, "conv1")]


def test_mapping_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n")
    with pytest.raises(OptionError, match="bad.csv line 1: expected two names"):
        load_mapping(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("left,right\n")
    with pytest.raises(OptionError, match="no mapping rows"):
        load_mapping(empty)
    with pytest.raises(OptionError, match="no such file"):
        load_mapping(tmp_path / "none.csv")


def test_mapping_with_fusion_rule_is_refused(trees: dict[str, Path], tmp_path: Path) -> None:
    mapping = tmp_path / "m.csv"
    mapping.write_text("a,b\n")
    with pytest.raises(OptionError, match="cannot be combined with -f"):
        run_network(trees["npy"], trees["npy"], tmp_path / "rule.json", mapping=mapping, rank=0, iteration=0)


def test_pair_families_direct(trees: dict[str, Path]) -> None:
    left = load_run(trees["npy"], rank=0, iteration=0)
    right = load_run(trees["npy"], rank=1, iteration=0)
    pairing = pair_families(left, right)
    assert pairing.mode == "by-name (scope)"
    assert sum(1 for p in pairing.pairs if p.status is PairStatus.COMPARED) == 11


# --------------------------------------------------------------------------------------------
# The shared case: two MindSpore npy folders compared directly


ABS_TOL, REL_TOL, STD_TOL = 1e-6, 1e-5, 1e-3
_STD_RE = re.compile(r"\(([^;]+);([^)]+)\),\(([^;]+);([^)]+)\)")


def test_shared_mindspore_npy_agrees_with_float64_truth() -> None:
    case = shared_path("cases", "mindspore_npy")
    spec = json.loads((case / "case.json").read_text())
    result = run_network(case / "left", case / "right")  # the two dump roots, directly
    ours = {row.tensor_id: row for row in result.rows}
    with (case / "oracle" / "ref_metrics.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    header, truth = rows[0], {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    problems = []
    for pair in spec["pairs"]:
        parsed = parse_npy_name(Path(pair["left_file"]).name)
        assert parsed is not None
        row = ours.get(f"{parsed.op_name}:{parsed.kind}:{parsed.slot}")
        if row is None:
            problems.append(f"{pair['tensor_id']}: not in our result")
            continue
        expected = truth[pair["tensor_id"]]
        for metric in header[1:]:
            cell = expected[metric]
            if metric == "Note" or cell == "":
                continue
            if metric == "StandardDeviation":
                match = _STD_RE.fullmatch(cell)
                assert match and row.std is not None
                for value, text in zip(row.std, match.groups()):
                    want = float(text)
                    if math.isnan(want):
                        ok = math.isnan(value)
                    else:
                        ok = abs((0.0 if abs(value) < 0.001 else value) - want) <= STD_TOL
                    if not ok:
                        problems.append(f"{pair['tensor_id']} std: {row.std} vs {cell}")
                continue
            value = row.metrics.get(metric)
            if cell == "NaN":
                ok = value is None
            elif cell == "nan":
                ok = value is not None and math.isnan(value)
            else:
                ok = value is not None and abs(value - float(cell)) <= ABS_TOL + REL_TOL * abs(float(cell))
            if not ok:
                problems.append(f"{pair['tensor_id']} {metric}: ours {value} vs truth {cell}")
    assert not problems, "\n".join(problems)
    assert sum(1 for r in result.rows if r.status is PairStatus.COMPARED) == len(spec["pairs"])
    # the operator only the right folder has is listed, not dropped
    assert all(r.status is PairStatus.MISSING_LEFT for r in result.rows if r.status is not PairStatus.COMPARED)


def test_committed_fixtures_read_back() -> None:
    """fixtures/mindspore (scripts/make_mindspore_fixtures.py) holds every layout, readable."""
    from conftest import FIXTURES

    root = FIXTURES / "mindspore"
    if not root.is_dir():
        pytest.skip("fixtures/mindspore not generated (python scripts/make_mindspore_fixtures.py)")
    families = {"sync": "mindspore-sync", "sync_cpu": "mindspore-sync", "npy": "mindspore-npy",
                "stats": "mindspore-npy", "async": "mindspore-async", "o2": "mindspore-o2",
                "o2_npy": "mindspore-o2", "tf_stats": "ge"}
    for key, family in families.items():
        run = load_run(root / key)
        assert run.family == family, key
        assert run.ops, key
    tf = load_run(root / "tf", ge_graph=root / "tf" / "ge_proto_00001_Build.txt")
    assert tf.coords["model_name"] == "ge_default_20240101120000_1"


@pytest.mark.parametrize("body", ["[" * 100_000 + "]" * 100_000, '{"status": ' + "7" * 5000 + "}"],
                         ids=["100000-deep", "5000-digits"])
def test_overflow_json_nested_too_deep_or_too_long_is_a_summary(tmp_path: Path, body: str) -> None:
    from compare.loaders.mindspore import read_overflow

    path = tmp_path / "Opdebug.Node_OpDebug.9.1.1700000000000000.output.0.json"
    path.write_text(body)
    record = read_overflow(path)  # never raises
    assert record.summary.startswith("unreadable JSON") and len(record.summary) < 400

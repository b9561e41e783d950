"""Issue 12, pairing of MindSpore runs: mixed precision (``_OutputTo16`` / ``_OutputTo32`` scopes and
inserted Cast kernels), mapping files that add to the name rules (also with ``-d``), short O0/O1
kernel names against scoped ones, and the row order of one-sided ops.

The trees are written in ``tmp_path`` with the file names MindSpore 2.10 itself writes
(``{type}.{scope name with '/' as '_'}.{task}.{stream}.{timestamp}.{input|output}.{slot}.
DefaultFormat.{Float32|Float16}.npy`` under ``rank_0/{net}/{graph}/{iteration}/``) and the scope
names of a real fp32 vs ``ms.amp.auto_mixed_precision(net, "O2")`` run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import PairingError
from compare.loaders import load_run
from compare.pairing.names import amp_key, kernel_tail, match_names
from compare.pairing.user_mapping import pair_families
from compare.records import PairStatus
from compare.runs.folders import run_network
from compare.runs.single_op import OperatorNotFound, compare_operator
from convert.names.keys import name_key

NET = "Default_network-WithLossCell__backbone-Net"
AMP = "Default_network-WithLossCell__backbone-_OutputTo32__backbone-Net"
OPT = "Default_optimizer-Momentum_ApplyMomentum-op0"


@dataclass
class Op:
    """One kernel of a synthetic dump: type, file-name op name, output values (input 0 = output of the last op)."""

    op_type: str
    name: str
    value: np.ndarray
    dtype: str = "Float32"
    inputs: list[np.ndarray] = field(default_factory=list)


def _write_tree(root: Path, ops: list[Op], *, start: int = 1795470093100000) -> Path:
    """A MindSpore 2.10 npy dump tree: one file per tensor, timestamps in list order."""
    leaf = root / "rank_0" / "Net" / "0" / "0"
    leaf.mkdir(parents=True)
    ts = start
    for op in ops:
        dtype = np.float16 if op.dtype == "Float16" else np.float32
        tensors = [("input", i, v) for i, v in enumerate(op.inputs)] + [("output", 0, op.value)]
        for kind, slot, value in tensors:
            suffix = f".DefaultFormat.{op.dtype}.npy" if op.dtype else ".DefaultFormat.npy"
            np.save(leaf / f"{op.op_type}.{op.name}.0.0.{ts}.{kind}.{slot}{suffix}", np.asarray(value, dtype))
            ts += 311
    return root


def _values(seed: int, shape=(2, 3)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _fp32_ops() -> list[Op]:
    return [
        Op("Conv2D", f"{NET}_stem-Conv2d_Conv2D-op0", _values(1)),
        Op("BatchNorm", f"{NET}_bn0-BatchNorm2d_BatchNorm-op0", _values(2)),
        Op("MatMul", f"{NET}_fc1-Dense_MatMul-op0", _values(3)),
        Op("MatMul", f"{NET}_fc2-Dense_MatMul-op0", _values(4)),
        Op("ApplyMomentum", OPT, _values(5)),
    ]


def _amp_ops() -> list[Op]:
    """The scope names ``auto_mixed_precision(net, "O2")`` gives, with its Cast kernels."""
    return [
        Op("Cast", f"{AMP}_Cast-op0", _values(1), "Float16"),
        Op("Conv2D", f"{AMP}_stem-Conv2d_Conv2D-op0", _values(1) + 1e-3),
        Op("Cast", f"{AMP}_bn0-_OutputTo16__backbone-BatchNorm2d_Cast-op0", _values(1), "Float16"),
        Op("BatchNorm", f"{AMP}_bn0-_OutputTo16__backbone-BatchNorm2d_BatchNorm-op0", _values(2)),
        Op("MatMul", f"{AMP}_fc1-Dense_MatMul-op0", _values(3)),
        Op("Cast", "Expand__Muls_Cast-op0", _values(6), "Float16"),
        Op("MatMul", f"{AMP}_fc2-Dense_MatMul-op0", _values(4)),
        Op("Cast", "Default_network-WithLossCell__backbone-_OutputTo32_Cast-op0", _values(4), "Float16"),
        Op("ApplyMomentum", OPT, _values(5)),
    ]


@pytest.fixture()
def amp_pair(tmp_path: Path) -> tuple[Path, Path]:
    return _write_tree(tmp_path / "fp32", _fp32_ops()), _write_tree(tmp_path / "amp", _amp_ops())


# --------------------------------------------------------------------------------------------
# 1. Mixed precision


def test_amp_key_reads_back_the_wrapped_scope() -> None:
    assert amp_key(name_key(f"{AMP}_stem-Conv2d_Conv2D-op0")) == f"{NET}_stem-Conv2d_Conv2D-op0"
    wrapped = ("Default/network-WithLossCell/_backbone-_OutputTo32/_backbone-Net/bn0-_OutputTo16/"
               "_backbone-BatchNorm2d/BatchNorm-op0")
    assert amp_key(name_key(wrapped)) == f"{NET}_bn0-BatchNorm2d_BatchNorm-op0"


def test_amp_names_pair_and_inserted_casts_are_one_sided_rows(amp_pair: tuple[Path, Path]) -> None:
    base, amp = amp_pair
    result = run_network(base, amp)
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert {r.left_op for r in compared} == {op.name for op in _fp32_ops()}  # every fp32 op pairs
    assert any("4 operator name(s) matched after reading back the scope changes of mixed precision" in n
               for n in result.notes), result.notes
    casts = [r for r in result.rows if r.op_type == "Cast"]
    assert len(casts) == 4 and all(r.status is PairStatus.MISSING_LEFT and r.left_op == "*" for r in casts)
    assert all("inserted by mixed precision" in r.reasons[0] for r in casts)
    assert any("4 Cast kernel(s) of the right run inserted by mixed precision" in n for n in result.notes)
    # the other way round: the casts are on the left
    back = run_network(amp, base)
    assert sum(r.status is PairStatus.COMPARED for r in back.rows) == len(compared)
    assert all(r.status is PairStatus.MISSING_RIGHT and "inserted by mixed precision" in r.reasons[0]
               for r in back.rows if r.op_type == "Cast")


def test_amp_rule_only_where_one_op_on_each_side() -> None:
    left = [f"{NET}_fc1-Dense_MatMul-op0", f"{NET}_fc2-Dense_MatMul-op0"]
    right = [f"{AMP}_fc1-Dense_MatMul-op0",
             # two wrapped spellings of the same scope: ambiguous, neither pairs
             "Default_network-WithLossCell__backbone-_OutputTo16__backbone-Net_fc2-Dense_MatMul-op0",
             f"{AMP}_fc2-Dense_MatMul-op0"]
    matched, used = match_names(left, right)
    assert matched == {left[0]: right[0]} and used["mixed precision"] == 1


def test_amp_o1_renamed_classes_pair(tmp_path: Path) -> None:
    """O1 rewrites the network: cell classes become ``ClassOpt`` / ``ClassOpt_N`` (real MindSpore 2.10 names)."""
    o1 = "Default_network-WithLossCell__backbone-NetOpt"
    assert amp_key(f"{o1}_attn-AttnOpt_k-DenseOpt_1_BiasAdd-op0") == f"{NET}_attn-Attn_k-Dense_BiasAdd-op0"
    assert amp_key(f"{o1}_layers-SequentialCellOpt_0-Conv2dOpt_Conv2D-op0") == \
        f"{NET}_layers-SequentialCell_0-Conv2d_Conv2D-op0"
    base = _write_tree(tmp_path / "fp32", [Op("BiasAdd", f"{NET}_attn-Attn_k-Dense_BiasAdd-op0", _values(1)),
                                           Op("BiasAdd", f"{NET}_attn-Attn_q-Dense_BiasAdd-op0", _values(2))])
    amp = _write_tree(tmp_path / "o1", [
        Op("Cast", f"{o1}_attn-AttnOpt_k-DenseOpt_1_Cast-op0", _values(1), "Float16"),
        Op("BiasAdd", f"{o1}_attn-AttnOpt_k-DenseOpt_1_BiasAdd-op0", _values(1)),
        Op("BiasAdd", f"{o1}_attn-AttnOpt_q-DenseOpt_2_BiasAdd-op0", _values(2))])
    result = run_network(base, amp)
    assert sum(r.status is PairStatus.COMPARED for r in result.rows) == 2
    (cast,) = [r for r in result.rows if r.op_type == "Cast"]
    assert cast.status is PairStatus.MISSING_LEFT and "inserted by mixed precision" in cast.reasons[0]


def test_amp_vs_amp_casts_pair_by_name(amp_pair: tuple[Path, Path]) -> None:
    _, amp = amp_pair
    result = run_network(amp, amp)
    assert all(r.status is PairStatus.COMPARED for r in result.rows)
    assert not any("mixed precision" in n for n in result.notes)


# --------------------------------------------------------------------------------------------
# 4. Row order: one-sided ops where they ran


def test_right_only_ops_follow_the_execution_order(amp_pair: tuple[Path, Path]) -> None:
    base, amp = amp_pair
    result = run_network(base, amp)
    indexes = [r.index for r in result.rows]
    assert indexes == sorted(indexes)
    sequence: list[str] = []
    for row in result.rows:
        name = row.right_op if row.left_op == "*" else row.left_op
        if not sequence or sequence[-1] != name:
            sequence.append(name)
    assert sequence == [
        f"{AMP}_Cast-op0",  # before the first paired op of the right side: first
        f"{NET}_stem-Conv2d_Conv2D-op0",
        f"{AMP}_bn0-_OutputTo16__backbone-BatchNorm2d_Cast-op0",
        f"{NET}_bn0-BatchNorm2d_BatchNorm-op0",
        f"{NET}_fc1-Dense_MatMul-op0",
        "Expand__Muls_Cast-op0",
        f"{NET}_fc2-Dense_MatMul-op0",
        "Default_network-WithLossCell__backbone-_OutputTo32_Cast-op0",
        OPT,
    ]
    assert len({r.index for r in result.rows}) == len(sequence)  # one Index per op, numbered in row order


def test_left_only_and_right_only_ops_interleave(tmp_path: Path) -> None:
    left = _write_tree(tmp_path / "l", [Op("ReLU", "a_ReLU-op0", _values(1)), Op("Add", "l_Add-op0", _values(2)),
                                        Op("ReLU", "b_ReLU-op0", _values(3))])
    right = _write_tree(tmp_path / "r", [Op("ReLU", "a_ReLU-op0", _values(1)), Op("Mul", "r_Mul-op0", _values(2)),
                                         Op("ReLU", "b_ReLU-op0", _values(3)), Op("Sub", "r_Sub-op0", _values(4))])
    pairing = pair_families(load_run(left), load_run(right))
    order = [(p.index, p.left_op, p.right_op) for p in pairing.pairs]
    # a right-only op comes right after the row of the paired op preceding it on the right
    assert order == [(0, "a_ReLU-op0", "a_ReLU-op0"), (1, "*", "r_Mul-op0"), (2, "l_Add-op0", "*"),
                     (3, "b_ReLU-op0", "b_ReLU-op0"), (4, "*", "r_Sub-op0")]


# --------------------------------------------------------------------------------------------
# 2. Mapping files add, never take away


def test_mapping_adds_to_the_name_rules(amp_pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, amp = amp_pair
    mapping = tmp_path / "map.csv"
    # fc1 deliberately mapped to the other layer: the mapping wins for it, names pair the rest
    mapping.write_text(f"{NET}_fc1-Dense_MatMul-op0,{AMP}_fc2-Dense_MatMul-op0\n")
    result = run_network(base, amp, mapping=mapping)
    compared = {(r.left_op, r.right_op) for r in result.rows if r.status is PairStatus.COMPARED}
    assert (f"{NET}_fc1-Dense_MatMul-op0", f"{AMP}_fc2-Dense_MatMul-op0") in compared
    assert (OPT, OPT) in compared  # identical names still pair
    assert (f"{NET}_stem-Conv2d_Conv2D-op0", f"{AMP}_stem-Conv2d_Conv2D-op0") in compared  # and the ladder
    # fc2 on the left: its name counterpart is taken by the mapping, so it is one-sided, with a reason
    fc2 = [r for r in result.rows if r.left_op == f"{NET}_fc2-Dense_MatMul-op0"]
    assert fc2 and all(r.status is PairStatus.MISSING_RIGHT and "not in the mapping file" in r.reasons[0]
                       for r in fc2)
    assert any("then by operator scope name" in n for n in result.notes)
    # the right fc1 nobody maps stays a row too
    assert any(r.right_op == f"{AMP}_fc1-Dense_MatMul-op0" and r.left_op == "*" for r in result.rows)


def test_mapping_naming_no_left_op_still_pairs_by_name(amp_pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, amp = amp_pair
    mapping = tmp_path / "map.csv"
    mapping.write_text("Default/gone/Conv2D-op9,whatever\n")
    result = run_network(base, amp, mapping=mapping)
    assert sum(r.status is PairStatus.COMPARED for r in result.rows) == len(_fp32_ops())
    gone = [r for r in result.rows if r.right_op == "whatever"]
    assert gone and "which the left folder does not have" in gone[0].reasons[0]
    assert any("1 mapping line(s) name a left operator" in n for n in result.notes)


def test_nothing_pairs_with_a_useless_mapping_is_an_error(tmp_path: Path) -> None:
    left = _write_tree(tmp_path / "l", [Op("ReLU", "a_ReLU-op0", _values(1))])
    right = _write_tree(tmp_path / "r", [Op("Mul", "r_Mul-op0", _values(2))])
    mapping = tmp_path / "map.csv"
    mapping.write_text("x,y\n")
    with pytest.raises(PairingError, match="no left name of the mapping file"):
        run_network(left, right, mapping=mapping)


def test_single_op_with_mapping_api(amp_pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, amp = amp_pair
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"{NET}_fc1-Dense_MatMul-op0,{AMP}_fc2-Dense_MatMul-op0\n")
    op = f"{NET}_fc1-Dense_MatMul-op0"
    mapped = compare_operator(base, amp, op, mapping=mapping)
    assert mapped.right_op == f"{AMP}_fc2-Dense_MatMul-op0"
    np.testing.assert_array_equal(mapped.right, _values(4).ravel())
    by_name = compare_operator(base, amp, op)
    assert by_name.right_op == f"{AMP}_fc1-Dense_MatMul-op0" and by_name.summary["MaxAbsoluteError"] == 0
    with pytest.raises(OperatorNotFound, match="not in the mapping file"):
        compare_operator(base, amp, f"{NET}_fc2-Dense_MatMul-op0", mapping=mapping)


def test_single_op_with_mapping_cli(amp_pair: tuple[Path, Path], tmp_path: Path) -> None:
    base, amp = amp_pair
    mapping = tmp_path / "map.csv"
    mapping.write_text(f"{NET}_fc1-Dense_MatMul-op0,{AMP}_fc2-Dense_MatMul-op0\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["-l", str(base), "-r", str(amp), "-d", f"{NET}_fc1-Dense_MatMul-op0",
                                      "--mapping", str(mapping), "-o", str(out), "-n", "3"])
    assert result.exit_code == 0, result.output
    summary = next(out.glob("*summary*"))
    assert f"{AMP}_fc2-Dense_MatMul-op0" in summary.read_text()


# --------------------------------------------------------------------------------------------
# 3. Short O0/O1 names against scoped names


def test_kernel_tail() -> None:
    assert kernel_tail(name_key("Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12")) \
        == "Conv2D-op12"
    assert kernel_tail("Conv2D-op12") == "Conv2D-op12"
    assert kernel_tail("Default_network-conv1-op104") is None  # no '{Type}-op{N}' scope part


def test_short_names_pair_with_scoped_names(tmp_path: Path) -> None:
    scoped = "Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12"
    short = _write_tree(tmp_path / "o0", [
        Op("Conv2D", "Conv2D-op12", _values(1), dtype=""),  # the manual's own example name, no dtype field
        Op("ReLU", "ReLU-op3", _values(2), dtype=""),
        Op("Add", "Add-op7", _values(3), dtype=""),
    ])
    ascend = _write_tree(tmp_path / "o2", [
        Op("Conv2D", scoped, _values(1)),
        Op("ReLU", "Default_a_ReLU-op3", _values(2)),
        Op("ReLU", "Default_b_ReLU-op3", _values(2)),  # two scoped ReLU-op3: ambiguous, not paired
        Op("Add", "Default_c_Add-op8", _values(3)),  # another kernel id: not the same op
    ])
    for left, right in ((short, ascend), (ascend, short)):
        result = run_network(left, right)
        compared = {(r.left_op, r.right_op) for r in result.rows if r.status is PairStatus.COMPARED}
        assert compared in ({("Conv2D-op12", scoped)}, {(scoped, "Conv2D-op12")})
        assert any("1 short O0/O1 kernel name(s)" in n for n in result.notes)
        one_sided = {r.left_op if r.left_op != "*" else r.right_op for r in result.rows
                     if r.status is not PairStatus.COMPARED}
        assert one_sided == {"ReLU-op3", "Add-op7", "Default_a_ReLU-op3", "Default_b_ReLU-op3", "Default_c_Add-op8"}


def test_short_rule_never_pairs_two_scoped_names() -> None:
    matched, used = match_names(["Default_a_Conv2D-op1"], ["Default_b_Conv2D-op1"])
    assert matched == {} and not used["short name"]
    matched, used = match_names(["conv1", "Conv2D-op4"], ["x_conv1", "Default_z_Conv2D-op4"])
    assert matched == {"Conv2D-op4": "Default_z_Conv2D-op4"} and used["short name"] == 1


# --------------------------------------------------------------------------------------------
# 5. The single-operator docs


def test_single_op_doc_does_not_call_q_unsupported() -> None:
    doc = (ROOT / "docs" / "single_op.md").read_text()
    assert "`-q` is not supported" not in doc
    assert "--mapping" in doc


# --------------------------------------------------------------------------------------------
# The committed real AMP pair, when the generator has written one


def test_committed_real_amp_pair_pairs_every_fp32_tensor(tmp_path: Path) -> None:
    root = ROOT / "fixtures" / "mindspore_real"
    base, amp = root / "base", root / "amp"
    if not (base.is_dir() and amp.is_dir()):
        pytest.skip(f"no real mixed-precision pair under {root} (scripts/make_mindspore_dumps.py writes it)")
    result = run_network(base, amp)
    left_files = sum(1 for _ in base.rglob("*.npy"))
    left_rows = [r for r in result.rows if r.left_op != "*" and r.tensor_id]
    assert len(left_rows) == left_files
    assert all(r.status is PairStatus.COMPARED for r in left_rows), [
        (r.tensor_id, r.reasons) for r in left_rows if r.status is not PairStatus.COMPARED][:5]
    right_only = [r for r in result.rows if r.left_op == "*"]
    assert right_only and all(r.op_type == "Cast" and "inserted by mixed precision" in r.reasons[0]
                              for r in right_only)


def test_short_npy_names_pair_with_an_o2_binary_dump(tmp_path: Path) -> None:
    """A short-named O0/O1 ``.npy`` run against the O2 binary dump (``Default_network-..._Conv2D-op1``)."""
    from compare.testing.synthetic_mindspore import OPS, make_trees, tensor_value

    o2 = make_trees(tmp_path / "trees")["o2"]
    short = _write_tree(tmp_path / "short", [
        Op(op.type, op.name.rsplit("/", 1)[1], tensor_value(op.name, "output", 0, op.outputs[0]), dtype="",
           inputs=[tensor_value(op.name, "input", i, shape) for i, shape in enumerate(op.inputs)])
        for op in OPS])
    result = run_network(short, o2)
    compared = [r for r in result.rows if r.status is PairStatus.COMPARED]
    assert {r.left_op for r in compared} == {"Conv2D-op1", "ReLU-op2", "MatMul-op3", "Softmax-op4"}
    assert all(r.metrics["MaxAbsoluteError"] < 1e-3 for r in compared), [(r.tensor_id, r.metrics) for r in compared]
    assert any("4 short O0/O1 kernel name(s)" in n for n in result.notes)

"""msprobe tensors as columns (issue 31): a tabled run's records (``run.ops``, an OpsView) are the
records the loader builds for each leaf, two tabled runs pair into a PairTable whose Pairs are the
general rules' Pairs, and what reads the columns -- the statistics comparison, msprobe's cells,
the argument rows -- gives what it gives on the records. A statistics comparison of two usual
msprobe statistics dumps builds no OpDump at all."""

from __future__ import annotations

import json
import math
import struct
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.api import compare_network
from compare.loaders.msprobe import scan_msprobe
from compare.pairing.user_mapping import pair_families
from compare.records import Pair, Run, TensorRef
from compare.runs.msprobe_rows import argument_order, msprobe_cells
from compare.stats_table import RowColumns, compare_stats
from compare.tensor_table import OpsView, PairTable
from compare.testing.synthetic_msprobe import write_msprobe_dump

FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0, math.inf, math.nan])
ODD = st.none() | st.integers(-3, 3) | st.text(max_size=3) | st.booleans()


@st.composite
def tensor(draw: st.DrawFn) -> dict:
    """A tensor leaf: mostly msprobe's usual statistics item, sometimes anything else."""
    item: dict = {"type": draw(st.sampled_from(["torch.Tensor", "torch.nn.parameter.Parameter"])),
                  "dtype": draw(st.sampled_from(["torch.float32", "torch.bfloat16", "torch.int64"])),
                  "shape": draw(st.sampled_from([[2, 3], [4], [], [1, 1, 2]]))}
    for key in ("Max", "Min", "Mean", "Norm"):
        item[key] = draw(FLOATS)
    if draw(st.integers(0, 5)) == 0:  # a null / integer / text statistic, an odd shape or a data file
        item[draw(st.sampled_from(["Mean", "Norm", "shape", "data_name", "md5", "requires_grad"]))] = draw(
            ODD | st.sampled_from(["x.pt", "-1", [-1, 2]]))
    if draw(st.booleans()):
        item["requires_grad"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0:
        item["md5"] = draw(st.sampled_from(["0a1b2c3d", "ffff0000"]))
    return item


ITEM = tensor() | tensor() | tensor() | st.sampled_from([None, {"type": "int", "value": 3},
                                                        {"type": "slice", "value": [0, 2, None]}])


@st.composite
def calls(draw: st.DrawFn) -> list[tuple[str, dict]]:
    out = []
    for number in range(draw(st.integers(1, 6))):
        api = draw(st.sampled_from(["linear", "relu", "add"]))
        entry: dict = {"input_args": draw(st.lists(ITEM, max_size=3)),
                       "input_kwargs": draw(st.dictionaries(st.sampled_from(["weight", "bias"]), ITEM, max_size=2)),
                       "output": draw(st.lists(tensor(), max_size=2))}
        if draw(st.integers(0, 9)) == 0:
            entry = draw(st.sampled_from([[], "odd"]))  # type: ignore[assignment]
        out.append((f"Functional.{api}.{number}.forward", entry))
    return out


def _changed(draw: st.DrawFn, left: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """The right side: the left's calls, some values changed, some items or calls dropped or added."""
    right = []
    for name, entry in left:
        if draw(st.integers(0, 7)) == 0:
            continue  # a call of the left side only
        if type(entry) is dict and draw(st.booleans()):
            entry = json.loads(json.dumps(entry))
            outputs = entry["output"]
            if outputs and draw(st.booleans()):
                outputs[0] = draw(tensor())
            elif entry["input_args"] and draw(st.booleans()):
                entry["input_args"].pop()
        right.append((name, entry))
    if draw(st.integers(0, 5)) == 0:
        right.append(("Functional.mul.9.forward", {"input_args": [draw(tensor())], "output": [draw(tensor())]}))
    return right


def _tree(root: Path, data: list[tuple[str, dict]]) -> Run:
    folder = root / "step0" / "rank0"
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                                  "dump_data_dir": None, "data": dict(data)}))
    return scan_msprobe(folder)


def _records(run: Run) -> Run:
    """The run as records: a plain dict of its OpDumps, no table (the general code paths)."""
    return replace(run, ops=dict(run.ops), tensors=None)


def _value(value: object) -> object:
    if type(value) is float:
        return ("float", struct.pack("<d", value) if not math.isnan(value) else "nan")
    if isinstance(value, dict):
        return [(k, _value(v)) for k, v in value.items()]
    return value


def _ref_key(ref: TensorRef | None) -> object:
    if ref is None:
        return None
    fields = vars(ref)
    return [(name, _value(value)) for name, value in fields.items() if name != "reader"] + [ref.reader is None]


def _pair_key(pair: Pair) -> tuple:
    return tuple((name, _ref_key(value) if isinstance(value, TensorRef) else value)
                 for name, value in vars(pair).items())


def _row_key(row: object) -> tuple:
    values = row.values  # type: ignore[attr-defined]
    stats = None if values is None else [(n, [_value(v) for v in (d.left, d.right, d.diff, d.rel)])
                                          for n, d in values.items()]
    return (row.index, row.op_type, row.left_op, row.right_op, row.tensor_id, row.left_dtype,  # type: ignore[attr-defined]
            row.right_dtype, row.shape, stats, row.left_source, row.right_source, row.reasons,  # type: ignore[attr-defined]
            row.status)  # type: ignore[attr-defined]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_columns_give_what_the_records_give(tmp_path_factory, data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("t")
    left_calls = data.draw(calls())
    right_calls = _changed(data.draw, left_calls)
    left, right = _tree(root / "l", left_calls), _tree(root / "r", right_calls)
    assert isinstance(left.ops, OpsView) and list(left.ops) == [name for name, _ in left_calls]
    plain_left, plain_right = _records(left), _records(right)
    try:
        expected = pair_families(plain_left, plain_right)
    except Exception as exc:  # noqa: BLE001 - the tabled runs must fail alike
        try:
            pair_families(left, right)
        except type(exc) as again:
            assert str(again) == str(exc)
            return
        raise AssertionError(f"the records fail ({exc}), the tables do not") from None
    got = pair_families(left, right)
    assert isinstance(got.pairs, PairTable) and not isinstance(expected.pairs, PairTable)
    assert [_pair_key(p) for p in got.pairs] == [_pair_key(p) for p in expected.pairs]
    assert (got.notes, got.unmatched_left, got.unmatched_right, got.mode) == (
        expected.notes, expected.unmatched_left, expected.unmatched_right, expected.mode)
    tabled, general = compare_stats(got.pairs), compare_stats(expected.pairs)
    assert tabled.stats == general.stats
    assert [_row_key(r) for r in tabled.rows] == [_row_key(r) for r in general.rows]
    assert msprobe_cells(got.pairs, left, right) == msprobe_cells(expected.pairs, plain_left, plain_right)
    metrics = tabled.metrics
    assert (argument_order(RowColumns(tabled.metric_rows()), got.pairs, left, right, metrics)
            == argument_order(RowColumns(general.metric_rows()), expected.pairs, plain_left, plain_right, metrics))


def test_a_statistics_comparison_builds_no_record(tmp_path: Path) -> None:
    """Two usual statistics dumps: every row from the columns, not one OpDump (nor TensorRef) built."""
    left = write_msprobe_dump(tmp_path / "l", task="statistics")
    right = write_msprobe_dump(tmp_path / "r", task="statistics", noise=0.01)
    result = compare_network(str(left.root), str(right.root))
    network = result.network
    assert network is not None and len(network.rows) > 10
    for run in (network.left, network.right):
        assert isinstance(run.ops, OpsView) and run.ops.built == 0
    pairs = network.pairing.pairs
    assert isinstance(pairs, PairTable) and not pairs.built

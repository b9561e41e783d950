"""The divergence generator (compare/testing/synthetic_divergence.py): its ground truth is what a
comparison of the case actually shows.

Two injections in different branches and one perturbed weight: every tensor row is compared;
clean ops pass the dtype bounds (float32 RED <= 1e-6); injected and data-differs outputs fail;
every downstream output fails by more than ten times its bound. The ground-truth sets partition
the compute ops, follow data edges only, and a seed gives the same files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from compare import compare_network
from compare.records import MetricRow, PairStatus
from compare.testing.synthetic_divergence import DivergenceCase, make_divergence_network
from compare.verdict.policy import dtype_bounds
from convert.codecs.dumpfile import read_header, read_tensor

RED = "RelativeEuclideanDistance"
COS = "CosineSimilarity"
INJECT = {"a3": 0.05, "b2": 0.05}
PERTURB = {"w_b4": 0.05}


def _bounds(row: MetricRow) -> tuple[float, float]:
    """(RED upper bound, cosine lower bound) of the row's data types (docs/policy.md)."""
    found = {b.metric: b.value for b in dtype_bounds(row.left_dtype, row.right_dtype)}
    return found[RED], found[COS]


def _fails(row: MetricRow) -> bool:
    red_bound, cos_bound = _bounds(row)
    red, cos = row.metrics[RED], row.metrics[COS]
    assert red is not None and cos is not None
    return not (red <= red_bound) or not (cos >= cos_bound)  # NaN fails


def _rows(case: DivergenceCase) -> list[MetricRow]:
    return compare_network(case.left, case.right, case.rule, algorithms=[COS, RED]).rows


def _outputs(rows: list[MetricRow]) -> dict[str, MetricRow]:
    return {r.left_op: r for r in rows if r.tensor_id == f"{r.left_op}:output:0"}


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> DivergenceCase:
    return make_divergence_network(tmp_path_factory.mktemp("divergence"), seed=3, inject=INJECT,
                                   perturb_inputs=PERTURB)


@pytest.fixture(scope="module")
def rows(case: DivergenceCase) -> list[MetricRow]:
    return _rows(case)


def test_ground_truth_partitions_the_compute_ops(case: DivergenceCase) -> None:
    sets = (case.injected, case.data_differs, case.downstream, case.clean)
    names = [name for names in sets for name in names]
    assert len(names) == len(set(names)), "the ground-truth sets overlap"
    assert set(names) == set(case.compute)
    assert set(case.compute).isdisjoint(case.sources)
    assert set(case.compute) | set(case.sources) == set(case.order)
    assert 14 <= len(case.compute) <= 20
    position = {name: k for k, name in enumerate(case.order)}
    for names in sets:
        assert list(names) == sorted(names, key=position.get), "not in topological order"
    for name, producers in case.edges.items():
        assert all(position[p] < position[name] for p in producers)
    assert case.injected == ("a3", "b2")
    assert case.data_differs == ("b4",)
    assert case.downstream == ("a4", "a5", "b3", "b5", "merge", "m1", "m2", "m3", "out")
    assert case.clean == ("a1", "a2", "b1", "cast_c", "c1", "c2")
    assert case.truth_of("b4") == "data_differs"
    # the rule: every node, data edges as `producer:0`, and b1's control edge from a3 -- which
    # is no data edge (else b1 would be downstream of the injected a3)
    rule = json.loads(case.rule.read_text())
    ops = {op["name"]: op for op in rule["graph"][0]["op"]}
    assert list(ops) == list(case.order)
    for name, op in ops.items():
        assert op["type"] == case.op_types[name]
        data_edges = [e.rpartition(":")[0] for e in op.get("input", []) if not e.endswith(":-1")]
        assert tuple(data_edges) == case.edges[name]
    assert "a3:-1" in ops["b1"]["input"]
    assert "a3" not in case.edges["b1"]
    assert {case.op_types[s] for s in case.sources} == {"Data", "Const"}


def test_every_row_is_compared_with_inputs_and_outputs(case: DivergenceCase, rows: list[MetricRow]) -> None:
    compared = [r for r in rows if r.status is PairStatus.COMPARED]
    others = [r for r in rows if r.status is not PairStatus.COMPARED]
    # Data / Const are not dumped: one expected MISSING_LEFT row each, nothing else is missing
    assert sorted(r.left_op for r in others) == sorted(case.sources)
    assert all(r.status is PairStatus.MISSING_LEFT and r.expected_gap for r in others)
    expected = {f"{op}:input:{i}" for op in case.compute for i in range(len(case.edges[op]))}
    expected |= {f"{op}:output:0" for op in case.compute}
    assert {r.tensor_id for r in compared} == expected
    assert len(compared) == len(expected)
    for r in compared:
        assert r.left_dtype == case.left_dtypes[r.left_op] or ":input:" in (r.tensor_id or "")
    assert {case.left_dtypes[op] for op in case.compute} == {"float32", "float16"}


def test_the_comparison_shows_the_ground_truth(case: DivergenceCase, rows: list[MetricRow]) -> None:
    by_op: dict[str, list[MetricRow]] = {}
    for r in rows:
        if r.status is PairStatus.COMPARED:
            by_op.setdefault(r.left_op, []).append(r)
    outputs = _outputs(rows)
    for op in case.clean:  # inputs and outputs pass, with room to spare
        for r in by_op[op]:
            assert not _fails(r), (r.tensor_id, r.metrics)
            if r.left_dtype == "float32":
                assert r.metrics[RED] <= 1e-6, (r.tensor_id, r.metrics)
                assert r.metrics[COS] > 0.99999994, (r.tensor_id, r.metrics)
    for op in case.injected:  # the op's own inputs are clean, its output is wrong
        assert not any(_fails(r) for r in by_op[op] if ":input:" in (r.tensor_id or ""))
        row = outputs[op]
        assert row.metrics[RED] > 10 * _bounds(row)[0], (op, row.metrics)
        assert abs(row.metrics[RED] - INJECT[op]) < 0.5 * INJECT[op]  # the injected size, roughly
    for op in case.data_differs:  # the perturbed weight's row fails, and so does the output
        weight_rows = [r for r in by_op[op] if r.tensor_id == f"{op}:input:{case.edges[op].index('w_b4')}"]
        assert len(weight_rows) == 1 and weight_rows[0].metrics[RED] > 10 * _bounds(weight_rows[0])[0]
        assert outputs[op].metrics[RED] > 10 * _bounds(outputs[op])[0]
    for op in case.downstream:  # inherited, not squashed: an input and the output fail by 10x
        row = outputs[op]
        assert row.metrics[RED] > 10 * _bounds(row)[0], (op, row.metrics)
        assert row.metrics[COS] < _bounds(row)[1], (op, row.metrics)
        assert any(_fails(r) for r in by_op[op] if ":input:" in (r.tensor_id or "")), op


def test_a_seed_gives_the_same_files_and_an_injection_changes_only_what_it_reaches(tmp_path: Path) -> None:
    def files(case: DivergenceCase) -> dict[str, bytes]:
        root = case.left.parent
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    first = files(make_divergence_network(tmp_path / "a", seed=5, inject={"a3": 0.05}))
    again = files(make_divergence_network(tmp_path / "b", seed=5, inject={"a3": 0.05}))
    assert first == again
    other = files(make_divergence_network(tmp_path / "c", seed=6, inject={"a3": 0.05}))
    assert first.keys() == other.keys() and first != other
    plain_case = make_divergence_network(tmp_path / "d", seed=5)
    assert plain_case.injected == () and set(plain_case.clean) == set(plain_case.compute)
    plain = files(plain_case)
    changed = {Path(name).name.split(".")[1] for name in first if name.startswith("npu") and first[name] != plain[name]}
    assert changed == {"a3", "a4", "a5", "merge", "m1", "m2", "m3", "out"}  # not b1 (control edge from a3)


def test_nonfinite_values_start_at_the_chosen_op_and_spread(tmp_path: Path) -> None:
    case = make_divergence_network(tmp_path, seed=1, nonfinite_at="b4")
    assert case.nonfinite == "b4" and case.injected == ("b4",)
    assert case.downstream == ("b5", "merge", "m1", "m2", "m3", "out")
    header = read_header(next(case.leaf.glob("Conv2D.b4.*")))
    values = read_tensor(header, header.outputs[0])
    assert int(np.isnan(values).sum()) == 3 and int(np.isinf(values).sum()) == 2
    inputs = read_tensor(header, header.inputs[0])
    assert np.isfinite(inputs).all()
    outputs = _outputs(_rows(case))
    for op in case.clean:
        assert math.isfinite(outputs[op].metrics[RED]), op
    for op in (*case.injected, *case.downstream):
        assert math.isnan(outputs[op].metrics[RED]), op


@pytest.mark.parametrize("kwargs, message", [
    ({"inject": {"w_a1": 0.05}}, "inject: 'w_a1'"),
    ({"inject": {"nope": 0.05}}, "inject: 'nope'"),
    ({"perturb_inputs": {"a1": 0.05}}, "perturb_inputs: 'a1'"),
    ({"inject": {"a1": 0.0}}, "positive finite"),
    ({"inject": {"a1": math.nan}}, "positive finite"),
    ({"nonfinite_at": "data"}, "nonfinite_at: 'data'"),
    ({"size": 2}, "size must be"),
])
def test_bad_options_are_refused(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_divergence_network(tmp_path, **kwargs)

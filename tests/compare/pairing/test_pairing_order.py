"""Pairing by scope name takes each run's ops in their recorded order without sorting when the run
recorded every op in the order it holds them (msprobe's loader), and its rows come out in index
order without a final sort (issue 31, load3). Each shortcut must give what the general rule gives."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from compare.pairing.user_mapping import _order, pair_families
from compare.records import DumpLayout, OpDump, Run, RunKind, TensorKind, TensorRef

PATH = Path("dump.json")


def _op(name: str, timestamp: int) -> OpDump:
    tensor = TensorRef(name, TensorKind.OUTPUT, 0, "float32", "ND", (2,), PATH)
    return OpDump(name, "add", PATH, (PATH,), (), (tensor,), None, timestamp)


def _run(names: list[str], positions: dict[str, int], timestamps: list[int]) -> Run:
    run = Run(root=PATH, path=PATH, kind=RunKind.NUMPY, family=DumpLayout.MSPROBE)
    for name, timestamp in zip(names, timestamps):
        run.ops[name] = _op(name, timestamp)
    run.order.update(positions)
    return run


def _sorted(run: Run) -> list[str]:
    far = len(run.order) + 1
    return [d.name for d in sorted(run.ops.values(), key=lambda d: (run.order.get(d.name, far), d.timestamp, d.name))]


names = st.lists(st.sampled_from([f"Functional.relu.{i}.forward" for i in range(8)]), unique=True, max_size=8)


@given(names, st.data())
def test_the_order_is_the_sorted_order(ops: list[str], data: st.DataObject) -> None:
    timestamps = data.draw(st.lists(st.integers(0, 3), min_size=len(ops), max_size=len(ops)))
    kind = data.draw(st.sampled_from(["as read", "shuffled", "repeated", "some"]))
    if kind == "as read":
        positions = {name: place for place, name in enumerate(ops)}
    elif kind == "shuffled":
        positions = dict(zip(ops, data.draw(st.permutations(range(len(ops))))))
    elif kind == "repeated":
        positions = {name: 0 for name in ops}
    else:
        positions = {name: place for place, name in enumerate(ops) if data.draw(st.booleans())}
    run = _run(ops, positions, timestamps)
    assert _order(run) == _sorted(run)


def test_rows_are_in_index_order() -> None:
    left = _run(["a.0", "b.0", "c.0"], {"a.0": 0, "b.0": 1, "c.0": 2}, [0, 0, 0])
    right = _run(["x.0", "b.0", "a.0"], {"x.0": 0, "b.0": 1, "a.0": 2}, [0, 0, 0])
    indexes = [pair.index for pair in pair_families(left, right).pairs]
    assert indexes == sorted(indexes) and len(indexes) == 4

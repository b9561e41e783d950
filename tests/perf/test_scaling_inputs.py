"""Inputs whose cost must scale with their size (issue 14).

- fusion rules: loading is linear in the number of graphs, and gives exactly what the former
  per-graph algorithm (re-run the rename adjustment over every op after each graph) gives --
  that algorithm is kept here as a small reference implementation;
- pathological protobuf dumps (millions of tiny fields): refused quickly with a DumpFormatError
  naming the file and the byte offset, before the protobuf runtime sees them; normal dumps
  still parse.

Costs are counted (Python calls), never timed.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from builders import REAL, desc, op
from conftest import shared_path

from compare.errors import DumpFormatError
from compare.pairing import fusion_groups as fg
from compare.pairing import fusion_rule as fr
from compare.pairing.fusion_rule import load_fusion_rule
from compare.pairing.rule_records import FusionGroup, OutputDesc, Relation, RuleOp
from compare.runs.folders import run_network
from convert.codecs import dumpfile, dumpwire
from convert.codecs.dumpfile import read_header
from convert.codecs.dumpwrite import write_dump

# --------------------------------------------------------------------------------------------
# Reference: the former (quadratic) fusion-rule algorithm.


def _old_group_ops(ops: list[RuleOp]) -> list[FusionGroup]:
    by_key: dict[str, FusionGroup] = {}
    for one in ops:
        key = fg.group_key(one)
        group = by_key.get(key)
        if group is None:
            by_key[key] = FusionGroup(len(by_key), key, [one], Relation.ONE_TO_ONE)
        elif all(member.name != one.name for member in group.ops):
            group.ops.append(one)
    for group in by_key.values():
        group.relation = fg.relation_of(group.ops)
    return list(by_key.values())


def _old_rename_adjust(ops: list[RuleOp]) -> None:
    position = {one.name: i for i, one in enumerate(ops)}
    for group in _old_group_ops(ops):
        if len(group.ops) != 1:
            continue
        one = group.ops[0]
        if len(one.original_names) != 1 or one.original_names[0] != group.key:
            continue
        name = group.key
        if one.descs:
            descs = tuple(d if d.origin_name else fg.replace(d, origin_name=name) for d in one.descs)
        else:
            descs = (OutputDesc(0, name, None, "", None),)
        ops[position[one.name]] = fg.replace(one, descs=descs)


def _old_load(path: Path) -> tuple[dict[str, RuleOp], list[tuple[int, str, list[str], Relation]]]:
    """(ops by name, groups as (index, key, member names, relation)) by the former algorithm."""
    reader = fr._Reader(path)
    ops: list[RuleOp] = []
    seen: set[str] = set()
    for g, graph in enumerate(json.loads(path.read_text())["graph"]):
        for i, node in enumerate(graph["op"]):
            one = fr._parse_op(reader, node, graph.get("name") or "", f"graph[{g}].op[{i}]")
            if one.name not in seen:
                seen.add(one.name)
                ops.append(one)
        _old_rename_adjust(ops)
    groups = [(gr.index, gr.key, [o.name for o in gr.ops], gr.relation) for gr in _old_group_ops(ops)]
    return {o.name: o for o in ops}, groups


def _assert_same_as_old(path: Path) -> None:
    rule = load_fusion_rule(path)
    ops, groups = _old_load(path)
    assert rule.ops == ops
    assert [(gr.index, gr.key, [o.name for o in gr.ops], gr.relation) for gr in rule.groups] == groups


def _random_graphs(seed: int, n_graphs: int) -> list[list[dict[str, Any]]]:
    """Graphs whose groups span graphs: shared original names, L1 groups, ops without descs."""
    rng = random.Random(seed)
    graphs: list[list[dict[str, Any]]] = []
    serial = 0
    for _ in range(n_graphs):
        ops: list[dict[str, Any]] = []
        for _ in range(rng.randint(0, 5)):
            serial += 1
            kind = rng.randrange(6)
            name = f"op{serial}"  # repeated names are tested in test_pairing
            names: tuple[str, ...] | None = (f"orig{rng.randint(0, 12)}",)
            if kind == 1:
                names = None
            elif kind == 2:
                names = (f"orig{rng.randint(0, 12)}", f"orig{rng.randint(0, 12)}")
            elif kind == 3:
                names = ("",)
            descs = [desc(), desc("kept", 1)] if rng.random() < 0.5 else None
            attrs = [fr_attr_l1(rng.randint(0, 2))] if kind == 4 else None
            node = op(name, "Relu", op_id=rng.randint(0, 50), names=names, descs=descs, attrs=attrs)
            ops.append(node)
        graphs.append(ops)
    return graphs


def fr_attr_l1(number: int) -> dict[str, Any]:
    return {"key": "_L1_fusion_sub_graph_no", "value": {"s": f"L1_{number}"}}


def _write(tmp_path: Path, graphs: list[list[dict[str, Any]]], name: str = "rule.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"graph": [{"name": f"g{i}", "op": ops} for i, ops in enumerate(graphs)]}))
    return path


@pytest.mark.parametrize("seed", range(12))
def test_fusion_rule_loader_equals_former_algorithm(tmp_path: Path, seed: int) -> None:
    _assert_same_as_old(_write(tmp_path, _random_graphs(seed, 1 + seed % 6 * 3)))


def test_fusion_rule_adjusts_only_ops_alone_at_the_end_of_their_graph(tmp_path: Path) -> None:
    """Alone after graph 0 -> adjusted, and kept when graph 1 adds a second op to its group."""
    graphs = [
        [op("a", "Relu", names=("x",), descs=[desc()])],
        [op("b", "Relu", names=("x",), descs=[desc()]), op("c", "Relu", names=("y",), descs=[desc()]),
         op("d", "Relu", names=("y",), descs=[desc()])],
    ]
    rule = load_fusion_rule(_write(tmp_path, graphs))
    assert [rule.ops[n].descs[0].origin_name for n in "abcd"] == ["x", "", "", ""]
    _assert_same_as_old(_write(tmp_path, graphs, "again.json"))


@pytest.mark.parametrize("rel", sorted(REAL)[:3])
def test_fusion_rule_real_graphs_split_into_graphs_equal_former_algorithm(tmp_path: Path, rel: str) -> None:
    """A real graph, whole and split into 7 graphs (groups then span graphs)."""
    doc = json.loads(shared_path("real", rel).read_text())
    nodes = [node for graph in doc["graph"] for node in graph["op"]]
    _assert_same_as_old(_write(tmp_path, [nodes], "whole.json"))
    _assert_same_as_old(_write(tmp_path, [nodes[i::7] for i in range(7)], "split.json"))


def _scaling_rule(tmp_path: Path, n_graphs: int) -> Path:
    """n graphs of one renamed op each (the shape of the 10,000-graph rule of issue 14)."""
    graphs = [[op(f"n{i}", "Relu", op_id=i, names=(f"o{i}",), descs=[desc()])] for i in range(n_graphs)]
    return _write(tmp_path, graphs, f"rule{n_graphs}.json")


def _python_calls(work: Callable[[], object]) -> int:
    """The Python function calls ``work`` makes: a count of work done that no machine load can
    change (tests never time anything)."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_fusion_rule_loading_is_linear_in_graph_count(tmp_path: Path) -> None:
    """4x the graphs costs far less than 16x (quadratic) in Python calls: the ratio stays under 6
    (linear gives ~4; the former per-graph loader re-walked every op after each graph)."""
    small, large = _scaling_rule(tmp_path, 1000), _scaling_rule(tmp_path, 4000)
    assert len(load_fusion_rule(large).groups) == 4000
    ratio = _python_calls(lambda: load_fusion_rule(large)) / _python_calls(lambda: load_fusion_rule(small))
    assert ratio < 6, f"loading 4x the graphs made {ratio:.1f}x the Python calls (quadratic would be ~16x)"


# --------------------------------------------------------------------------------------------
# Pathological protobuf dumps.


def _tiny_fields(count: int) -> bytes:
    """``count`` top-level ``dump_time`` varint fields of 2 bytes each (a valid DumpData)."""
    return b"\x10\x01" * count


def test_v1_dump_of_millions_of_tiny_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "Relu.relu.1.1.1"
    path.write_bytes(_tiny_fields(2_000_000))  # 4 MB
    with pytest.raises(DumpFormatError) as info:
        read_header(path, version=1)
    limit = dumpwire.MAX_TOP_LEVEL_FIELDS
    assert info.value.offset == 2 * limit
    assert f"top-level has more than {limit} fields" in str(info.value) and str(path) in str(info.value)


def test_auto_detected_dump_of_tiny_fields_is_refused_with_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "Relu.relu.1.1.1"
    path.write_bytes(_tiny_fields(1_000_000))
    with pytest.raises(DumpFormatError, match="top-level has more than") as info:
        read_header(path)
    assert f"at byte {2 * dumpwire.MAX_TOP_LEVEL_FIELDS}" in str(info.value)  # offset: the v2 diagnosis


def test_v2_header_of_tiny_fields_is_refused(tmp_path: Path) -> None:
    header = _tiny_fields(dumpwire.MAX_TOP_LEVEL_FIELDS + 1)
    path = tmp_path / "Relu.relu.1.1.1"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(DumpFormatError, match="top-level has more than") as info:
        read_header(path, version=2)
    assert info.value.offset == 8 + 2 * dumpwire.MAX_TOP_LEVEL_FIELDS


def _tensor_element(field_number: int, inner: bytes) -> bytes:
    return bytes([field_number << 3 | 2]) + dumpwire.len_prefix(len(inner)) + inner


def test_v1_tensor_of_too_many_fields_is_refused(tmp_path: Path) -> None:
    """One input whose message repeats its ``size`` field beyond the per-tensor limit."""
    inner = b"\x28\x01" * (dumpwire.MAX_TENSOR_FIELDS + 1)
    path = tmp_path / "Relu.relu.1.1.1"
    path.write_bytes(b"\x32\x01r" + _tensor_element(4, inner))
    with pytest.raises(DumpFormatError, match="input 0 .* more than .* fields") as info:
        read_header(path, version=1)
    assert info.value.offset == 3


def test_shape_of_absurd_rank_is_refused(tmp_path: Path) -> None:
    """A packed shape of MAX_RANK + 1 dims (a legal protobuf) is refused, not turned into a tuple."""
    dims = b"\x01" * (dumpwire.MAX_RANK + 1)
    shape = b"\x0a" + dumpwire.len_prefix(len(dims)) + dims
    inner = b"\x08\x01" + _tensor_element(3, shape)  # data_type, shape
    path = tmp_path / "Relu.relu.1.1.1"
    path.write_bytes(b"\x32\x01r" + _tensor_element(3, inner))
    with pytest.raises(DumpFormatError, match=f"output 0: .*{dumpwire.MAX_RANK + 1} dimensions"):
        read_header(path, version=1)


@pytest.mark.parametrize("version", [1, 2])
def test_normal_dumps_still_parse(tmp_path: Path, version: int) -> None:
    path = tmp_path / "Conv2D.conv.1.1.1"
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    write_dump(path, inputs=[data, data[0]], outputs=[data], version=version)
    header = read_header(path)
    assert header.version == version and [t.shape for t in header.inputs] == [(2, 3, 4), (3, 4)]
    np.testing.assert_array_equal(dumpfile.read_tensor(header, header.outputs[0]), data)


def test_network_run_gives_the_refused_dump_a_row_with_the_reason(tmp_path: Path) -> None:
    """The operator whose dump is a pile of tiny fields gets a row naming the file and limit."""
    case = tmp_path / "case"
    shutil.copytree(shared_path("cases", "bad_inputs", "header_past_end"), case)
    dump = case / "left" / "MaxPool.pool1.5.1.1700000000006280"
    dump.write_bytes(_tiny_fields(1_000_000))
    result = run_network(case / "left", case / "right", case / "fusion.json")
    reason = " | ".join("; ".join(r.reasons) for r in result.rows if r.left_op == "pool1")
    assert dump.name in reason and "top-level has more than" in reason

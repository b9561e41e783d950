"""Reader of the ATC om->json fusion rule (``atc --mode=1`` output) and golden-tensor lookup.

The rule says, for every operator of the compiled (fused) model, which operators of the original
framework model it stands for (``_datadump_original_op_names``) and, for each of its outputs,
which original tensor it reproduces (``_datadump_origin_name`` / ``_datadump_origin_output_index``
/ ``_datadump_origin_format`` / ``origin_shape`` on the ``output_desc``).

Only the keys below are read; every other key and attribute value shape is tolerated as it is
(real graphs carry ``list`` of ``i``/``b``/``f``/``s``, tensors, ``null`` values, ...).

Reading rules (spec §3.3):

- ``graph`` (array) of graphs, each with ``op`` (array). ``graph[].name`` is collected.
- Per op: ``name`` and ``type`` (strings, required), ``id`` (int, default 0), ``input`` (strings
  ``producer:index``; control edges ``*:-1`` and empty strings dropped), ``attr``, ``output_desc``.
- ``_datadump_original_op_names`` (``value.list.s``): absent -> ``[op name]`` and empty output
  origin names are filled with the op's own name; ``list`` present without ``s`` -> ``[""]``.
- ``_L1_fusion_sub_graph_no`` (``value.s``), ``_datadump_is_multiop`` (``value.b``).
- Per ``output_desc``: an entry without ``attr`` is skipped (later positions move up).
  ``_datadump_origin_name`` (``value.s``); ``_datadump_origin_output_index`` (``value.i``, must be a
  JSON integer, default = the desc position); ``_datadump_origin_format`` (``value.s``, falling back
  to ``origin_format`` when empty); ``origin_shape`` (``value.list.i``, ``()`` when the list has no
  ``i``, ``None`` when absent). ``dtype``, ``layout`` and ``shape.dim`` are kept as well.
- Every ``_lxslice<digits>`` is removed from op names and input names.
- Several graphs are merged into one op space; the ops are sorted by ``id`` (stable).
- Rename-node adjustment after each graph: a group made of exactly one op whose group key equals
  its single original name gets that name in its empty output origin names (and one desc
  ``(name, index unset)`` when it has none).
- Groups ("fusion ops") keep the order of their first appearance in the JSON; relations follow
  the table of §3.4 (see :func:`relation_of`).

Edge-case policy (deliberate, documented):

- A ``value`` of ``null`` for a key we read counts as "attribute absent" (proto3 JSON writes
  ``null`` for unset messages). A ``_datadump_origin_output_index`` whose value has no ``i`` is
  treated as absent too (default = desc position).
- An input entry is split on its **last** ``:`` so producer names containing ``:`` still work;
  the part after it must be an integer.
- A repeated op name: two *different* operators with one name raise :class:`RuleError` naming
  both JSON paths (the reference keeps the first silently); an exact repeat, or names equal only
  after ``_lxslice<digits>`` removal, keeps the first op with a note in ``FusionRule.warnings``.
- JSON that is nested too deeply, holds integers of more than 4300 digits, or strings with unpaired
  surrogates (not encodable text) raises :class:`RuleError` too.
- Anything structurally wrong raises :class:`~compare.errors.RuleError` with the JSON path of the
  bad node (e.g. ``graph[0].op[12].output_desc[0].attr[3].value.i``); a file that is not JSON
  raises it with the decoder's line and column.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from convert.entries import special_file_problem

from ..errors import RuleError
from .fusion_groups import group_key, group_ops, rename_adjust
from .rule_records import FusionRule, OutputDesc, RuleOp

_LXSLICE = re.compile(r"_lxslice\d+")

_ORIGINAL_NAMES = "_datadump_original_op_names"
_L1_NO = "_L1_fusion_sub_graph_no"
_IS_MULTIOP = "_datadump_is_multiop"
_ORIGIN_NAME = "_datadump_origin_name"
_ORIGIN_INDEX = "_datadump_origin_output_index"
_ORIGIN_FORMAT = "_datadump_origin_format"
_PLAIN_ORIGIN_FORMAT = "origin_format"
_ORIGIN_SHAPE = "origin_shape"


# --------------------------------------------------------------------------------------------
# JSON access helpers: each failure names the JSON path of the bad node.


class _Reader:
    """Typed access to JSON nodes; raises RuleError naming the file and the JSON path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, json_path: str, problem: str) -> RuleError:
        return RuleError(self.path, problem, json_path=json_path)

    def obj(self, node: Any, json_path: str) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise self.fail(json_path, f"expected a JSON object, found {_kind(node)}")
        return node

    def array(self, node: Any, json_path: str) -> list[Any]:
        if not isinstance(node, list):
            raise self.fail(json_path, f"expected a JSON array, found {_kind(node)}")
        return node

    def string(self, node: Any, json_path: str) -> str:
        if not isinstance(node, str):
            raise self.fail(json_path, f"expected a string, found {_kind(node)}")
        try:
            node.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self.fail(json_path, f"string holds an unpaired UTF-16 surrogate ({exc.object[exc.start]!a} "
                                       f"at character {exc.start}): not text") from None
        return node

    def integer(self, node: Any, json_path: str) -> int:
        if isinstance(node, bool) or not isinstance(node, int):
            raise self.fail(json_path, f"expected a JSON integer, found {_kind(node)}")
        return node

    def boolean(self, node: Any, json_path: str) -> bool:
        if not isinstance(node, bool):
            raise self.fail(json_path, f"expected true or false, found {_kind(node)}")
        return node

    def optional_array(self, parent: dict[str, Any], key: str, json_path: str) -> list[Any]:
        node = parent.get(key)
        return [] if node is None else self.array(node, f"{json_path}.{key}")

    def int_list(self, node: Any, json_path: str) -> tuple[int, ...]:
        items = self.array(node, json_path)
        return tuple(self.integer(v, f"{json_path}[{i}]") for i, v in enumerate(items))


def _kind(node: Any) -> str:
    """Plain-English JSON type of a node, for error messages."""
    if node is None:
        return "null"
    if isinstance(node, bool):
        return f"a boolean ({str(node).lower()})"
    if isinstance(node, (int, float)):
        return f"a number ({node!r})"
    if isinstance(node, str):
        text = node if len(node) <= 40 else node[:37] + "..."
        return f"a string ({text!r})"
    if isinstance(node, list):
        return "an array"
    return "an object"


def _attrs(r: _Reader, owner: dict[str, Any], json_path: str) -> dict[str, tuple[Any, str]]:
    """``attr`` list -> {key: (value, json path of value)}; the first occurrence of a key wins.

    Only the list and entry shapes are checked; values are checked where a key is read.
    """
    found: dict[str, tuple[Any, str]] = {}
    for i, entry in enumerate(r.optional_array(owner, "attr", json_path)):
        entry_path = f"{json_path}.attr[{i}]"
        entry = r.obj(entry, entry_path)
        if "key" not in entry:
            raise r.fail(entry_path, "attribute without a 'key'")
        key = r.string(entry["key"], f"{entry_path}.key")
        found.setdefault(key, (entry.get("value"), f"{entry_path}.value"))
    return found


def _value(r: _Reader, attrs: dict[str, tuple[Any, str]], key: str) -> tuple[dict[str, Any], str] | None:
    """The value object of attribute ``key``, or None if absent (or ``null``)."""
    if key not in attrs:
        return None
    value, path = attrs[key]
    if value is None:
        return None
    return r.obj(value, path), path


def _attr_str(r: _Reader, attrs: dict[str, tuple[Any, str]], key: str) -> str | None:
    """``value.s`` of attribute ``key``; None if the attribute is absent; '' if ``s`` is absent."""
    found = _value(r, attrs, key)
    if found is None:
        return None
    value, path = found
    return r.string(value["s"], f"{path}.s") if "s" in value else ""


def _strip_lxslice(name: str) -> str:
    return _LXSLICE.sub("", name)


# --------------------------------------------------------------------------------------------
# Parsing one op.


def _parse_inputs(r: _Reader, op: dict[str, Any], json_path: str) -> tuple[tuple[str, int], ...]:
    """Data inputs ``(producer, output index)``; control edges (``:-1``) and '' are dropped."""
    inputs: list[tuple[str, int]] = []
    for i, entry in enumerate(r.optional_array(op, "input", json_path)):
        entry_path = f"{json_path}.input[{i}]"
        text = r.string(entry, entry_path)
        if not text or text.endswith(":-1"):
            continue
        producer, sep, index = text.rpartition(":")
        if not sep or not producer or not re.fullmatch(r"\d+", index):
            raise r.fail(entry_path, f"input {text!r} is not of the form 'producer:output_index'")
        inputs.append((_strip_lxslice(producer), int(index)))
    return tuple(inputs)


def _parse_original_names(r: _Reader, attrs: dict[str, tuple[Any, str]]) -> tuple[str, ...] | None:
    """``_datadump_original_op_names``: None if absent; ``("",)`` if the list has no ``s``."""
    found = _value(r, attrs, _ORIGINAL_NAMES)
    if found is None:
        return None
    value, path = found
    if value.get("list") is None:
        return ("",)
    listed = r.obj(value["list"], f"{path}.list")
    if listed.get("s") is None:
        return ("",)
    items = r.array(listed["s"], f"{path}.list.s")
    return tuple(r.string(s, f"{path}.list.s[{i}]") for i, s in enumerate(items))


def _parse_desc(r: _Reader, desc: dict[str, Any], position: int, json_path: str) -> OutputDesc:
    """One ``output_desc`` that has an ``attr`` key (see module docstring for the keys)."""
    attrs = _attrs(r, desc, json_path)
    origin_name = _attr_str(r, attrs, _ORIGIN_NAME) or ""
    origin_index = position
    found = _value(r, attrs, _ORIGIN_INDEX)
    if found is not None and "i" in found[0]:
        origin_index = r.integer(found[0]["i"], f"{found[1]}.i")
    origin_format = _attr_str(r, attrs, _ORIGIN_FORMAT) or _attr_str(r, attrs, _PLAIN_ORIGIN_FORMAT) or ""
    origin_shape: tuple[int, ...] | None = None
    found = _value(r, attrs, _ORIGIN_SHAPE)
    if found is not None:
        value, path = found
        listed = value.get("list")
        if listed is None:
            origin_shape = ()
        else:
            listed = r.obj(listed, f"{path}.list")
            origin_shape = () if listed.get("i") is None else r.int_list(listed["i"], f"{path}.list.i")
    dtype = r.string(desc["dtype"], f"{json_path}.dtype") if desc.get("dtype") is not None else ""
    layout = r.string(desc["layout"], f"{json_path}.layout") if desc.get("layout") is not None else ""
    shape: tuple[int, ...] | None = None
    if desc.get("shape") is not None:
        shape_node = r.obj(desc["shape"], f"{json_path}.shape")
        dims = shape_node.get("dim")
        shape = () if dims is None else r.int_list(dims, f"{json_path}.shape.dim")
    return OutputDesc(position, origin_name, origin_index, origin_format, origin_shape, dtype, layout, shape)


def _parse_op(r: _Reader, op: Any, graph_name: str, json_path: str) -> RuleOp:
    """One op of ``graph[].op[]`` (spec §3.3); defaults as in the module docstring."""
    op = r.obj(op, json_path)
    for key in ("name", "type"):
        if key not in op:
            raise r.fail(json_path, f"operator without a {key!r}")
    name = _strip_lxslice(r.string(op["name"], f"{json_path}.name"))
    op_type = r.string(op["type"], f"{json_path}.type")
    op_id = r.integer(op["id"], f"{json_path}.id") if op.get("id") is not None else 0
    attrs = _attrs(r, op, json_path)
    original = _parse_original_names(r, attrs)
    l1_no = _attr_str(r, attrs, _L1_NO) or ""
    is_multiop = False
    found = _value(r, attrs, _IS_MULTIOP)
    if found is not None and "b" in found[0]:
        is_multiop = r.boolean(found[0]["b"], f"{found[1]}.b")
    descs: list[OutputDesc] = []
    for k, desc in enumerate(r.optional_array(op, "output_desc", json_path)):
        desc_path = f"{json_path}.output_desc[{k}]"
        desc = r.obj(desc, desc_path)
        if "attr" not in desc:
            continue
        descs.append(_parse_desc(r, desc, len(descs), desc_path))
    if original is None:
        original = (name,)
        descs = [d if d.origin_name else replace(d, origin_name=name) for d in descs]
    return RuleOp(
        name=name,
        type=op_type,
        id=op_id,
        inputs=_parse_inputs(r, op, json_path),
        original_names=original,
        descs=tuple(descs),
        l1_fusion_no=l1_no,
        is_multiop=is_multiop,
        graph=graph_name,
    )


# --------------------------------------------------------------------------------------------
# Groups.


# --------------------------------------------------------------------------------------------
# Entry points.


def _read_json(path: Path) -> Any:
    special = special_file_problem(path)  # a FIFO would block, /dev/zero would never end: never opened
    if special is not None:
        raise RuleError(path, f"cannot read the fusion rule: {special}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleError(path, f"cannot read the fusion rule: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RuleError(path, f"not a UTF-8 text file (byte {exc.start}): not a JSON fusion rule") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleError(
            path, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError:
        raise RuleError(path, "JSON nested too deeply to read (thousands of levels): not a fusion rule") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise RuleError(path, f"not usable JSON: {exc}") from None


def _duplicate(r: _Reader, op: RuleOp, node: Any, op_path: str, first_path: str, first_node: Any) -> str:
    """The warning for a repeated op name, or RuleError when the repeat is a different operator.

    Policy (the reference tool keeps the first op silently):

    * names that became equal only when ``_lxslice<digits>`` was removed (the slices of one L1
      fusion op) and exact repeats of the same JSON object: the first op is kept, with a warning;
    * two *different* operators with the same name: RuleError naming both JSON paths -- a dump
      file is found by op name, so which of the two it belongs to cannot be told, and keeping
      either one silently could compare against the wrong golden tensor.
    """
    raw = node.get("name") if isinstance(node, dict) else None
    first_raw = first_node.get("name") if isinstance(first_node, dict) else None
    if raw == first_raw and node != first_node:
        raise r.fail(
            op_path,
            f"operator name {op.name!r} is used by two different operators ({first_path} and {op_path}): "
            "a dump file is matched by operator name, so the rule is ambiguous (give every operator a "
            "unique name)",
        )
    why = "the same operator repeated" if raw == first_raw else f"{raw!r} and {first_raw!r} differ only by _lxslice"
    return f"{op_path}: operator name {op.name!r} appears again ({why}; first at {first_path}); the first one is kept"


def load_fusion_rule(path: str | Path) -> FusionRule:
    """Read an ATC om->json fusion rule (spec §3.3-3.4).

    Raises :class:`RuleError` naming the file and the JSON path of the first bad node.
    """
    path = Path(path)
    r = _Reader(path)
    root = r.obj(_read_json(path), "")
    if "graph" not in root:
        raise r.fail("", "no 'graph' array: not an ATC om->json fusion rule")
    graphs = r.array(root["graph"], "graph")
    ops: list[RuleOp] = []
    seen: dict[str, tuple[str, Any]] = {}  # op name -> (JSON path, JSON node) of its first op
    warnings: list[str] = []
    graph_names: list[str] = []
    group_sizes: Counter[str] = Counter()
    for g, graph in enumerate(graphs):
        graph_path = f"graph[{g}]"
        graph = r.obj(graph, graph_path)
        graph_name = r.string(graph["name"], f"{graph_path}.name") if graph.get("name") is not None else ""
        graph_names.append(graph_name)
        if "op" not in graph:
            raise r.fail(graph_path, "graph without an 'op' array")
        first_of_graph = len(ops)
        for i, node in enumerate(r.array(graph["op"], f"{graph_path}.op")):
            op_path = f"{graph_path}.op[{i}]"
            op = _parse_op(r, node, graph_name, op_path)
            if op.name in seen:
                warnings.append(_duplicate(r, op, node, op_path, *seen[op.name]))
                continue
            seen[op.name] = (op_path, node)
            ops.append(op)
            group_sizes[group_key(op)] += 1
        rename_adjust(ops, first_of_graph, group_sizes)
    groups = group_ops(ops)
    group_of = {op.name: group for group in groups for op in group.ops}
    ordered = sorted(ops, key=lambda op: op.id)
    return FusionRule(
        path=path,
        ops={op.name: op for op in ordered},
        groups=groups,
        group_of=group_of,
        graph_names=graph_names,
        input_nodes=[op.name for op in ops if op.type == "Data"],
        warnings=warnings,
    )



"""msprobe's layer mapping (``-lm layer_mapping.yaml``): calls of two msprobe trees paired by where
they ran in the model, after renaming the layers that differ between the two models.

**The file** (msprobe's own YAML): class name -> ``{attribute: attribute on the other side}``::

    TopLayer:                      # the model itself (msprobe's older spelling ``Cell`` is read the same)
      network_with_loss: module
    ParallelTransformerLayer:
      attention: self_attention
    VocabParallelEmbedding:
      logical_or: __or__           # an API called inside the layer renamed
      reduce_from_mp_region.all_reduce: all_reduce   # several levels at once
    ParallelAttention:
      flash_attention_score: core_attention_flash.npu_fusion_attention

A key names one or more scope levels below a layer of that class (the left model's class
names); a value is what they are called on the right (text after a ``(`` is ignored, as msprobe
does). Where several keys start at the same level the longest matches first.

**The scope of a call** (one per ``dump.json`` entry, in the entry order):

- a cell / module call ``{Cell|Module}.{path}.{Class}.{direction}.{n}``: its ``path`` levels; the
  level it ends on is of class ``Class``;
- an API call ``{Prefix}.{...}.{api}.{n}.{direction}``: the path of the cell / module it ran in
  (``construct.json``; the model itself when none), then the framework function that called the
  API when the call's stack (``stack.json``) enters the API through the framework (the last
  framework frame -- a ``site-packages/torch`` / ``site-packages/mindspore`` file -- of the
  frames right after the hook's ``Template`` frame, up to the user's code; frames of
  ``msprobe`` / ``MindSpeed`` files and ``construct`` / ``__call__`` functions do not count), then
  ``api`` (the last dotted part before the call count);
- a backward call takes the scope of its forward call (msprobe records no stack for backward);
- Megatron's pipeline numbering: the ``layers.{k}`` under a ``ParallelTransformer`` are renumbered
  from 0 (MindSpore numbers them globally, PyTorch per stage).

Calls with the same scope and direction are numbered in entry order. A left call converts its
scope level by level through the mapping (the level's class picks the table) and pairs with the
right call of the converted scope, the same direction and the same number; when there is none it
pairs with nothing (msprobe's ``N/A``). Without ``construct.json`` / ``stack.json`` the scopes are
coarser (every API at the model level, no framework function), never wrong in kind: a note says
which side lacked them.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from convert.names.msprobe import CallKind, parse_msprobe_name

from ..errors import OptionError

TOP_LAYER = "TopLayer"
#: Files of the frameworks: a stack frame in one of these is the framework's, not the user's.
FRAMEWORK_FILES = ("site-packages/torch", "package/torch", "site-packages/mindspore", "package/mindspore")
_SKIP_FILES = ("msprobe", "MindSpeed")
_SKIP_FUNCS = ("construct", "__call__")
#: Where a call's own frames end (the user's code): MindSpore ``construct``, PyTorch ``forward`` / ``backward``.
_END_SIGNS = {"mindspore": re.compile("construct"), "pytorch": re.compile(r"in (for|back)ward,")}
_START_SIGN = re.compile("Template")


@dataclass(frozen=True)
class LayerRule:
    """One line of a layer mapping: ``levels`` (the key split at dots) -> ``target`` (its value)."""

    levels: tuple[str, ...]
    target: str


#: class name -> first level of a key -> its rules, longest first.
LayerMapping = dict[str, dict[str, list[LayerRule]]]


def parse_layer_mapping(data: object, source: str) -> LayerMapping:
    """The rules of a loaded layer-mapping YAML document (module doc); ``Cell`` at the top is read as
    ``TopLayer``. Raises :class:`OptionError` naming ``source`` for a document of another shape."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise OptionError(f"--layer-mapping {source}: expected class names, each with a mapping "
                          f"'attribute: attribute', got {type(data).__name__}")
    out: LayerMapping = {}
    for type_name, renames in data.items():
        if not isinstance(renames, dict):
            raise OptionError(f"--layer-mapping {source}: class {type_name!r} must hold 'attribute: attribute' "
                              f"lines, got {renames!r}")
        table = out.setdefault(TOP_LAYER if str(type_name) == "Cell" else str(type_name), {})
        for key, value in renames.items():
            if not isinstance(key, (str, int)) or not isinstance(value, (str, int)):
                raise OptionError(f"--layer-mapping {source}: class {type_name!r}: names must be text, got "
                                  f"{key!r}: {value!r}")
            levels = tuple(str(key).split("."))
            table.setdefault(levels[0], []).append(LayerRule(levels, str(value).split("(")[0]))
        for rules in table.values():
            rules.sort(key=lambda r: -len(r.levels))
    return out


@dataclass
class _Node:
    """A level of a scope tree: its class (``TopLayer`` at the root) and the calls ending there per direction."""

    type_name: str
    children: dict[str, _Node] = field(default_factory=dict)
    calls: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


@dataclass(frozen=True)
class _Item:
    name: str
    scope: tuple[str, ...]
    type_name: str
    state: str


@dataclass
class ScopeTree:
    """The calls of one msprobe tree by scope (module doc); ``notes`` say what was missing."""

    root: _Node
    items: list[_Item]
    notes: list[str]

    def find(self, scope: tuple[str, ...], state: str, number: int) -> str | None:
        node = self.root
        for level in scope:
            node = node.children.get(level)  # type: ignore[assignment]
            if node is None:
                return None
        calls = node.calls.get(state, [])
        return calls[number] if number < len(calls) else None


def _read_json(path: Path, notes: list[str]) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        notes.append(f"{path.name} not found beside {path.parent / 'dump.json'}: layer mapping uses coarser scopes")
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        notes.append(f"{path} not used by the layer mapping: {str(exc)[:200]}")
    return None


def _stacks(data: object) -> dict[str, list[str]]:
    """call -> its frames, from either ``stack.json`` shape (``{call: [frames]}`` or
    ``{"0": [[calls], [frames]]}``)."""
    out: dict[str, list[str]] = {}
    if not isinstance(data, dict):
        return out
    for key, value in data.items():
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], list) and isinstance(value[1], list):
            frames = [f for f in value[1] if isinstance(f, str)]
            for call in value[0]:
                if isinstance(call, str):
                    out[call] = frames
        elif isinstance(value, list):
            out[str(key)] = [f for f in value if isinstance(f, str)]
    return out


def _frame_parts(frame: str) -> tuple[str, str]:
    """``(file, function)`` of ``File {file}, line {n}, in {function}, ...``."""
    parts = frame.split(",")
    func = parts[2].split() if len(parts) > 2 else []
    return parts[0], (func[1] if len(func) > 1 else "")


def framework_function(frames: list[str], framework: str) -> str | None:
    """The framework function that called the API (module doc), None when the user's code called it."""
    end_sign = _END_SIGNS.get(framework)
    if end_sign is None:
        return None
    start, end = -1, len(frames)
    for i, line in enumerate(frames):
        if _START_SIGN.search(line):
            start = i
        elif start >= 0 and end_sign.search(line):
            end = i
            break
    last = None
    for line in frames[start + 1:end]:
        file, _ = _frame_parts(line)
        if not any(f in file for f in FRAMEWORK_FILES):
            break
        last = line
    if last is None:
        return None
    file, func = _frame_parts(last)
    if any(s in file for s in _SKIP_FILES) or any(s in func for s in _SKIP_FUNCS) or not func:
        return None
    return func


def _layer_path(parent: str | None) -> tuple[tuple[str, ...], str] | None:
    parsed = parse_msprobe_name(parent) if parent else None
    if parsed is None or parsed.kind is not CallKind.MODULE:
        return None
    return tuple(parsed.path.split(".")), parsed.op_type


def build_tree(names: list[str], folder: Path, framework: str) -> ScopeTree:
    """The scope tree of one msprobe tree's calls (``names`` in ``dump.json`` order), reading
    ``construct.json`` and ``stack.json`` from ``folder``."""
    notes: list[str] = []
    construct = _read_json(folder / "construct.json", notes)
    parents = {str(k): v for k, v in construct.items() if isinstance(v, str) and v} if isinstance(construct, dict) else {}
    stacks = _stacks(_read_json(folder / "stack.json", notes))
    classes: dict[tuple[str, ...], str] = {}
    scoped: dict[str, _Item] = {}
    items: list[_Item] = []
    for name in names:
        parsed = parse_msprobe_name(name)
        if parsed is None:
            continue
        if parsed.kind is CallKind.MODULE:
            scope = tuple(parsed.path.split("."))
            classes[scope] = parsed.op_type
            item = _Item(name, scope, parsed.op_type, parsed.direction)
        else:
            api = parsed.api.rsplit(".", 1)[-1]
            layer = _layer_path(parents.get(name))
            if layer is not None:
                classes.setdefault(layer[0], layer[1])
            base = layer[0] if layer is not None else ()
            func = framework_function(stacks.get(name, []), framework) if parsed.prefix not in ("Primitive", "Jit") \
                else None
            item = _Item(name, base + ((func,) if func else ()) + (api,), api, parsed.direction)
            if parsed.direction == "backward":
                forward = scoped.get(f"{parsed.prefix}.{parsed.api}.{parsed.count}.forward")
                if forward is not None:
                    item = _Item(name, forward.scope, api, parsed.direction)
        scoped[name] = item
        items.append(item)
    items = _renumber(items, "ParallelTransformer", "layers", classes)
    root = _Node(TOP_LAYER)
    for item in items:
        node = root
        for depth, level in enumerate(item.scope, start=1):
            child = node.children.get(level)
            if child is None:
                child = node.children[level] = _Node(classes.get(item.scope[:depth], level))
            node = child
        node.type_name = item.type_name
        node.calls[item.state].append(item.name)
    return ScopeTree(root, items, notes)


def _renumber(items: list[_Item], type_name: str, level: str, classes: dict[tuple[str, ...], str]) -> list[_Item]:
    """The ``{level}.{k}`` right under a layer of class ``type_name`` renumbered from the smallest k."""
    prefixes = [scope + (level,) for scope, cls in classes.items() if cls == type_name]
    for prefix in prefixes:
        numbers = [int(m[-1]) for item in items if item.scope[:len(prefix)] == prefix and len(item.scope) > len(prefix)
                   for m in [re.findall(r"\d+", item.scope[len(prefix)])] if m]
        low = min(numbers, default=math.inf)
        if math.isinf(low) or low == 0:
            continue
        out = []
        for item in items:
            digits = re.findall(r"\d+", item.scope[len(prefix)]) if item.scope[:len(prefix)] == prefix and \
                len(item.scope) > len(prefix) else []
            if digits:
                scope = item.scope[:len(prefix)] + (str(int(digits[-1]) - int(low)),) + item.scope[len(prefix) + 1:]
                item = _Item(item.name, scope, item.type_name, item.state)
            out.append(item)
        items = out
    return items


def convert_scope(tree: ScopeTree, scope: tuple[str, ...], mapping: LayerMapping) -> tuple[str, ...]:
    """``scope`` of the left tree renamed level by level through ``mapping`` (module doc)."""
    out: list[str] = []
    node: _Node | None = tree.root
    i = 0
    while i < len(scope):
        rules = mapping.get(node.type_name, {}).get(scope[i], []) if node is not None else []
        step, target = 1, scope[i]
        for rule in rules:
            if scope[i:i + len(rule.levels)] == rule.levels:
                step, target = len(rule.levels), rule.target
                break
        out.extend(target.split("."))
        for _ in range(step):
            node = node.children.get(scope[i]) if node is not None else None
            i += 1
    return tuple(out)


def layer_pairs(left: ScopeTree, right: ScopeTree, mapping: LayerMapping) -> dict[str, str | None]:
    """left call -> its right call by the layer mapping (None: msprobe's ``N/A``), every left call of
    the tree (module doc)."""
    seen: dict[tuple[tuple[str, ...], str], int] = defaultdict(int)
    out: dict[str, str | None] = {}
    for item in left.items:
        number = seen[(item.scope, item.state)]
        seen[(item.scope, item.state)] += 1
        out[item.name] = right.find(convert_scope(left, item.scope, mapping), item.state, number)
    return out


__all__ = [
    "TOP_LAYER",
    "LayerMapping",
    "LayerRule",
    "ScopeTree",
    "build_tree",
    "convert_scope",
    "framework_function",
    "layer_pairs",
    "parse_layer_mapping",
]

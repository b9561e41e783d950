"""msprobe's mapping options (``-lm``, ``-am [FILE]``, ``-dm``, ``-cm``, ``-fm``) read into one record,
and the mapping entries they give for two msprobe trees.

:class:`MsprobeMapping` is read once (:meth:`MsprobeMapping.read`: every YAML file parsed and
checked, errors name the file and the entry); :func:`msprobe_entries` turns it into
:class:`~compare.pairing.mapping_file.MapEntry` items, each with the rule that made it, which the
mapping-file pairing (:mod:`compare.pairing.user_mapping`) applies: the rows they make say which
rule paired them, the notes count the pairs per rule. The rules, first one wins for a left call
(each right call is taken once):

1. **data mapping** (``-dm``, :func:`parse_data_mapping`): ``{left data name}: {right data name}``
   per tensor (``Functional.gelu.0.forward.input.0: Torch.gelu.0.forward.input.0``,
   ``...input.attn_mask`` by keyword, :mod:`compare.pairing.msprobe_names`; ``N/A``: no
   counterpart); the other tensors of a named call are one-sided rows; a line naming a tensor a run
   does not have is not used (a note lists it);
2. **layer mapping** (``-lm``, :mod:`compare.pairing.layer_mapping`): every left call, by scope;
   calls it finds no counterpart for are one-sided rows (msprobe's ``N/A``);
3. **cell mapping** (``-cm``, :func:`cell_target`): ``Cell.{path}.{Class}`` -> ``Module.{...}``;
4. **API mapping** (``-am [FILE]``, :mod:`compare.pairing.api_mapping`): the file's entries, then the
   built-in table -- applied without asking between a MindSpore and a PyTorch tree;
5. **fuzzy match** (``-fm``, :func:`fuzzy_key`): calls whose names differ only in the call count,
   paired in order.

Calls no rule names pair by the usual name rules (:mod:`compare.pairing.names`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from convert.names.msprobe import CallKind, parse_msprobe_name

from ..errors import OptionError
from ..records import DumpLayout, Run, TensorKind
from .api_mapping import ApiRule, api_pairs, builtin_candidates, parse_api_mapping
from .layer_mapping import LayerMapping, build_tree, layer_pairs, parse_layer_mapping
from .mapping_file import MapEntry, TensorSel
from .msprobe_names import ArgumentIndex, DataName, split_data_name

#: msprobe's name for "no counterpart" in a mapping.
NOT_APPLICABLE = "N/A"
_MS_PREFIXES = frozenset({"Cell", "Mint", "MintFunctional", "Primitive", "Jit"})
_PT_PREFIXES = frozenset({"Module", "Torch", "NPU", "Aten", "VF"})


class MappingRule(str, Enum):
    """Which msprobe rule made a pair (``MapEntry.rule``; the rows and notes name it)."""

    DATA = "data mapping"
    LAYER = "layer mapping"
    CELL = "cell mapping"
    API = "API mapping"
    API_BUILTIN = "built-in API mapping"
    FUZZY = "fuzzy match"


def _yaml(path: Path, option: str) -> object:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise OptionError(f"{option} {path}: msprobe's mapping files are YAML and need PyYAML, which is not "
                          "installed (pip install pyyaml, or pip install 'vcompare[yaml]')") from None
    if not Path(path).is_file():
        raise OptionError(f"{option} {path}: no such file")
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise OptionError(f"{option} {path}: cannot be read as YAML ({str(exc)[:300]})") from None


@dataclass(frozen=True)
class DataRule:
    """One data-mapping line: a left data name -> a right one (None: ``N/A``, no counterpart)."""

    left: DataName
    right: DataName | None
    source: str


def parse_data_mapping(data: object, source: str) -> list[DataRule]:
    """The lines of a loaded data-mapping YAML ``{left data name: right data name}``; a right
    name ``N/A`` (or empty) means no counterpart. Names are split by
    :func:`~compare.pairing.msprobe_names.split_data_name`; their tensors are found in the runs."""
    if not isinstance(data, dict) or not data:
        raise OptionError(f"--data-mapping {source}: expected lines 'left data name: right data name', "
                          f"got {type(data).__name__}")
    rules = []
    for number, (left, right) in enumerate(data.items(), start=1):
        if not isinstance(left, str) or not (right is None or isinstance(right, str)):
            raise OptionError(f"--data-mapping {source} entry {number}: names must be text, got {left!r}: {right!r}")
        try:
            rules.append(DataRule(split_data_name(left), None if right in (None, "", NOT_APPLICABLE)
                                  else split_data_name(right), f"{source}#{number}"))
        except OptionError as exc:
            raise OptionError(f"--data-mapping {source} entry {number}: {exc}") from None
    return rules


def _data_entry(rule: DataRule, left: ArgumentIndex, right: ArgumentIndex) -> tuple[MapEntry | None, str]:
    """The entry of one data-mapping line, or None and why its names were not found in the runs."""
    def sel(name: DataName, index: ArgumentIndex, side: str) -> tuple[TensorSel | None, str]:
        if not name.argument:
            return TensorSel(name.call), ""
        found = index.lookup(name.call, name.argument)
        if found is None:
            return None, f"the {side} dump.json has no {name.argument} of {name.call!r}"
        return TensorSel(name.call, found[0], found[1]), ""

    lsel, why = sel(rule.left, left, "left")
    if lsel is None:
        return None, why
    if rule.right is None:
        return MapEntry(lsel, TensorSel(""), rule.source, MappingRule.DATA.value), ""
    rsel, why = sel(rule.right, right, "right")
    if rsel is None:
        return None, why
    if (lsel.index is None) != (rsel.index is None):
        return None, "one side names a whole call and the other one tensor"
    return MapEntry(lsel, rsel, rule.source, MappingRule.DATA.value), ""


def parse_cell_mapping(data: object, source: str) -> dict[str, str]:
    """The lines of a loaded cell-mapping YAML: ``{cell path.Class | text}: {module path.Class | text}``."""
    if not isinstance(data, dict) or not data:
        raise OptionError(f"--cell-mapping {source}: expected lines '{{cell_name}}.{{Class}}: {{module_name}}.{{Class}}'")
    out = {}
    for number, (left, right) in enumerate(data.items(), start=1):
        if not isinstance(left, (str, int)) or not isinstance(right, (str, int)):
            raise OptionError(f"--cell-mapping {source} entry {number}: names must be text, got {left!r}: {right!r}")
        out[str(left)] = str(right)
    return out


def cell_target(name: str, mapping: dict[str, str]) -> str | None:
    """The PyTorch module call of a MindSpore cell call: ``Cell`` -> ``Module``, and ``{path}.{Class}``
    through ``mapping`` -- the whole of it when listed, else the first listed text it contains
    replaced once by its value (msprobe's two forms). None for a name that is no cell call."""
    parsed = parse_msprobe_name(name)
    if parsed is None or parsed.kind is not CallKind.MODULE or parsed.prefix != "Cell":
        return None
    cell = parsed.api
    new = mapping.get(cell)
    if new is None:
        new = cell
        for text, value in mapping.items():
            if text in new:
                new = new.replace(text, value, 1)
    return f"Module.{new}.{parsed.direction}.{parsed.count}"


def fuzzy_key(name: str) -> str | None:
    """A call's name without its call count (``Functional.relu.forward``,
    ``Module.fc.Linear.parameters_grad``), None for a name in neither msprobe form."""
    parsed = parse_msprobe_name(name)
    if parsed is None:
        return None
    return f"{parsed.prefix}.{parsed.api}.{parsed.direction}"


@dataclass(frozen=True)
class MsprobeMapping:
    """msprobe's mapping options, read (:meth:`read`). ``api_builtin``: the built-in API table
    asked for (``-am``); ``api_rules``: a ``-am FILE``'s entries; ``layer_source`` the ``-lm`` file."""

    layer: LayerMapping | None = None
    layer_source: str = ""
    api_builtin: bool = False
    api_rules: tuple[ApiRule, ...] = ()
    data: tuple[DataRule, ...] = ()
    cell: dict[str, str] | None = None
    cell_source: str = "cell mapping"
    fuzzy: bool = False
    names: tuple[MapEntry, ...] = ()

    @classmethod
    def read(cls, *, layer_mapping: str | Path | None = None, api_mapping: str | Path | bool | None = None,
             data_mapping: str | Path | None = None, cell_mapping: str | Path | None = None,
             fuzzy_match: bool = False, names: list[MapEntry] | None = None) -> MsprobeMapping:
        """Read the files of the options (``api_mapping`` True: the built-in table alone)."""
        layer = parse_layer_mapping(_yaml(Path(layer_mapping), "--layer-mapping"), Path(layer_mapping).name) \
            if layer_mapping is not None else None
        rules: tuple[ApiRule, ...] = ()
        if api_mapping is not None and not isinstance(api_mapping, bool):
            rules = tuple(parse_api_mapping(_yaml(Path(api_mapping), "--api-mapping"), Path(api_mapping).name))
        data = tuple(parse_data_mapping(_yaml(Path(data_mapping), "--data-mapping"), Path(data_mapping).name)) \
            if data_mapping is not None else ()
        cell = parse_cell_mapping(_yaml(Path(cell_mapping), "--cell-mapping"), Path(cell_mapping).name) \
            if cell_mapping is not None else None
        return cls(layer=layer, layer_source=Path(layer_mapping).name if layer_mapping is not None else "",
                   api_builtin=api_mapping is not None and api_mapping is not False, api_rules=rules, data=data,
                   cell=cell, cell_source=Path(cell_mapping).name if cell_mapping is not None else "cell mapping",
                   fuzzy=fuzzy_match, names=tuple(names or ()))


def framework(run: Run) -> str | None:
    """``mindspore`` / ``pytorch`` for an msprobe run, by the call prefixes only one of them writes
    (``Cell`` / ``Mint`` / ``Primitive`` ... vs ``Module`` / ``Torch`` / ``NPU`` ...); None otherwise."""
    if run.family is not DumpLayout.MSPROBE:
        return None
    prefixes = {name.split(".", 1)[0] for name in run.ops}
    ms, pt = bool(prefixes & _MS_PREFIXES), bool(prefixes & _PT_PREFIXES)
    return "mindspore" if ms and not pt else "pytorch" if pt and not ms else None


def cross_framework(left: Run, right: Run) -> bool:
    """Whether the left run is a MindSpore msprobe tree and the right one a PyTorch one."""
    return framework(left) == "mindspore" and framework(right) == "pytorch"


def _ordered(run: Run) -> list[str]:
    far = len(run.order) + 1
    names = list(run.ops)
    position = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (run.order.get(n, far), position[n]))


@dataclass
class _Taken:
    left: set[str] = field(default_factory=set)
    right: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def msprobe_entries(left: Run, right: Run, mapping: MsprobeMapping) -> tuple[list[MapEntry], list[str]]:
    """The entries of ``mapping`` for two runs (module doc), the ``--mapping`` names first, and notes
    counting the pairs each rule made. Raises :class:`OptionError` when an msprobe option meets a
    run that is not an msprobe tree."""
    asked = mapping.layer is not None or mapping.api_builtin or mapping.data or mapping.cell is not None or mapping.fuzzy
    if asked and (left.family is not DumpLayout.MSPROBE or right.family is not DumpLayout.MSPROBE):
        raise OptionError("-lm / -am / -dm / -cm / -fm pair msprobe dumps (dump.json trees); the "
                          f"{'left' if left.family is not DumpLayout.MSPROBE else 'right'} side is not one")
    lefts, rights = _ordered(left), _ordered(right)
    taken = _Taken()
    entries: list[MapEntry] = list(mapping.names)
    taken.left.update(e.left.name for e in mapping.names)
    taken.right.update(e.right.name for e in mapping.names)
    notes: list[str] = []

    def add(entry: MapEntry) -> None:
        entries.append(entry)
        taken.left.add(entry.left.name)
        if entry.right.name:
            taken.right.add(entry.right.name)
        taken.counts[entry.rule] += 1

    if mapping.data:
        left_index, right_index = ArgumentIndex(left.path), ArgumentIndex(right.path)
        unused = []
        for rule in mapping.data:
            entry, why = _data_entry(rule, left_index, right_index)
            if entry is None:
                unused.append(f"{rule.source} ({why})")
            else:
                add(entry)
        if unused:
            notes.append(f"{len(unused)} data-mapping line(s) not used: " + "; ".join(unused[:5])
                         + (f" (+{len(unused) - 5} more)" if len(unused) > 5 else ""))
    if mapping.layer is not None:
        tree_l = build_tree(lefts, left.path, framework(left) or "mindspore")
        tree_r = build_tree(rights, right.path, framework(right) or "pytorch")
        notes += [f"left: {n}" for n in tree_l.notes] + [f"right: {n}" for n in tree_r.notes]
        for name, other in layer_pairs(tree_l, tree_r, mapping.layer).items():
            if name in taken.left or (other is not None and other in taken.right):
                continue
            add(MapEntry(TensorSel(name), TensorSel(other or ""), mapping.layer_source, MappingRule.LAYER.value))
    if mapping.cell is not None:
        for name in lefts:
            other = cell_target(name, mapping.cell)
            if other and name not in taken.left and other in right.ops and other not in taken.right:
                add(MapEntry(TensorSel(name), TensorSel(other), mapping.cell_source, MappingRule.CELL.value))
    builtin = mapping.api_builtin or cross_framework(left, right)
    if builtin or mapping.api_rules:
        free_r = [n for n in rights if n not in taken.right]
        for name, match in api_pairs([n for n in lefts if n not in taken.left], free_r, list(mapping.api_rules),
                                     builtin).items():
            _api_entries(name, match.right, match.rule, add)
        if cross_framework(left, right) and not mapping.api_builtin:
            notes.append("MindSpore vs PyTorch msprobe trees: msprobe's built-in API mapping applied (Mint.* -> "
                         "Torch.*, Functional.* -> Torch.* / Functional.*, renamed APIs; -am FILE adds or overrides)")
    if mapping.fuzzy:
        for name, other in _fuzzy(lefts, rights, taken, builtin).items():
            add(MapEntry(TensorSel(name), TensorSel(other), MappingRule.FUZZY.value, MappingRule.FUZZY.value))
    for rule in MappingRule:
        count = taken.counts.get(rule.value, 0)
        if count:
            notes.append(f"{count} pair(s) made by the {rule.value}"
                         + (" (call counts differ; check them)" if rule is MappingRule.FUZZY else ""))
    return entries, notes


def _api_entries(name: str, other: str, rule: ApiRule | None, add) -> None:
    """The entries of one API-mapped call: the whole call, or the positions the rule lists."""
    kind_rule = MappingRule.API if rule is not None else MappingRule.API_BUILTIN
    source = rule.source if rule is not None else MappingRule.API_BUILTIN.value
    if rule is None or not (rule.args or rule.outputs):
        add(MapEntry(TensorSel(name), TensorSel(other), source, kind_rule.value))
        return
    for kind in (TensorKind.INPUT, TensorKind.OUTPUT):
        for a, b in rule.positions(kind):
            add(MapEntry(TensorSel(name, kind, a), TensorSel(other, kind, b), source, kind_rule.value))


def _left_keys(name: str, builtin: bool) -> list[str]:
    """The fuzzy keys a left call may meet: its own, then (``builtin``) those of the PyTorch APIs the
    built-in API mapping gives it (``Mint.cos.forward`` -> ``Torch.cos.forward``)."""
    own = fuzzy_key(name)
    parsed = parse_msprobe_name(name)
    if own is None or parsed is None:
        return []
    keys = [own]
    if builtin and parsed.kind is CallKind.API:
        keys += [f"{candidate}.{parsed.direction}" for candidate in builtin_candidates(parsed.prefix, parsed.api)]
    return keys


def _fuzzy(lefts: list[str], rights: list[str], taken: _Taken, builtin: bool = False) -> dict[str, str]:
    """Free left calls without a same-named right call -> the right call of the same name but the
    call count (or of a name the built-in API mapping gives it, with ``builtin``), the k-th of a
    name with the k-th (in each run's order)."""
    right_set = set(rights)
    free_l = [n for n in lefts if n not in taken.left and n not in right_set]
    named_r = set(lefts)
    queues: dict[str, list[str]] = defaultdict(list)
    for name in rights:
        key = fuzzy_key(name)
        if key is not None and name not in taken.right and name not in named_r:
            queues[key].append(name)
    out = {}
    for name in free_l:
        for key in _left_keys(name, builtin):
            if queues.get(key):
                out[name] = queues[key].pop(0)
                break
    return out


__all__ = [
    "NOT_APPLICABLE",
    "DataRule",
    "MappingRule",
    "MsprobeMapping",
    "cell_target",
    "cross_framework",
    "framework",
    "fuzzy_key",
    "msprobe_entries",
    "parse_cell_mapping",
    "parse_data_mapping",
]

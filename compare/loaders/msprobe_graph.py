"""The call graph of an msprobe dump folder (:func:`read_msprobe_graph`): the calls in the order
they ran, which of their inputs are parameters, and the user's source line of each call.

msprobe writes, beside ``dump.json`` (:mod:`compare.loaders.msprobe`), ``construct.json`` (each
call -> the module / cell call it ran inside, ``null`` at the top; ``{}`` or ``[]`` at level
``L1``) and ``stack.json`` (``{"0": [[call, ...], [frame, ...]], ...}``, a frame being ``"File
{file}, line {n}, in {function}, \\n {code}"``, innermost first). Neither gives data edges: a call's
inputs are not linked to the call that produced them. So the graph is **order only**
(``OpGraph.edges`` False): one node per ``dump.json`` entry in ``data`` key order (the order the
calls ran; forward before backward), plus an :class:`InputEdge` without a producer, of role
:attr:`NodeRole.PARAMETER`, for each input known to be a parameter (a trained weight, a bias, a
normalisation's running statistic). Those inputs have no producing call before them: when they
differ, the data differs, not a computation.

**Parameter inputs** (forward calls only; input indices are the loader's: the leaves of
``input_args``, then ``input_kwargs``, then ``parameters``, each leaf -- tensor or not -- taking
the next index):

* a module / cell call (``mix``, ``L0``): every tensor of its ``parameters`` section, named
  ``{module path}.{key}`` (``blocks.0.mlp.fc1.weight``);
* an API call whose API name (its last dotted part, any prefix: ``Functional``, ``Torch``,
  ``Mint``, ``MintFunctional`` ...) is in :data:`PARAMETER_ARGS`: the tensor arguments at those
  positions of ``input_args`` or under those names in ``input_kwargs`` (``Functional.linear``:
  input 1 ``weight`` and 2 ``bias``); named ``{module path}.{argument}`` when ``construct.json``
  says which module the call ran in, else ``{call}.{argument}``. An argument that is not a single
  tensor (``None``: no bias) is no parameter.

**Source line**: the innermost frame of the call's stack that is not inside ``site-packages`` /
``dist-packages`` (the user's line); the innermost frame when all are.

``dump.json`` is parsed once: the loader hands what the graph needs of it over
(:func:`remember_calls`: the calls and their parameter inputs, keyed by the file's real path, size,
modification time and inode); the graph parses the file itself only when it was not loaded in this
process or changed since.

Edge-case policy: ``construct.json`` / ``stack.json`` missing, unreadable, not JSON or of another
shape are ignored (a note says so when present but unusable); ``dump.json`` problems raise
:class:`~compare.errors.DumpFormatError` (the loader read it already, so they do not arise).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from convert.names.msprobe import CallKind, parse_msprobe_name

from ..diverge.records import GraphSource, InputEdge, NodeRole, OpGraph, OpNode, SourceLine
from .ms_ir_text import user_line
from .msprobe_json import _is_tensor, _leaves, read_dump_json
from .msprobe_folders import DUMP_JSON

CONSTRUCT_JSON = "construct.json"
STACK_JSON = "stack.json"


@dataclass(frozen=True)
class ParameterArg:
    """A parameter argument of an API: its position in ``input_args`` and its keyword name."""

    position: int
    name: str


def _args(*names: str, start: int) -> tuple[ParameterArg, ...]:
    return tuple(ParameterArg(start + i, name) for i, name in enumerate(names))


#: API name -> its parameter arguments (PyTorch ``torch.nn.functional`` / ``torch`` signatures;
#: MindSpore's ``ops.dense`` / ``mint.nn.functional`` ones agree for these).
PARAMETER_ARGS: Mapping[str, tuple[ParameterArg, ...]] = {
    **{name: _args("weight", "bias", start=1) for name in (
        "linear", "dense", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
    "layer_norm": _args("weight", "bias", start=2),
    "group_norm": _args("weight", "bias", start=2),
    "rms_norm": _args("weight", start=2),
    "batch_norm": _args("running_mean", "running_var", "weight", "bias", start=1),
    "instance_norm": _args("running_mean", "running_var", "weight", "bias", start=1),
    "embedding": _args("weight", start=1),
    "prelu": _args("weight", start=1),
    "bilinear": _args("weight", "bias", start=2),
}

_FRAME_RE = re.compile(r"File (?P<file>.+?), line (?P<line>\d+), in [^,\n]*,?[ \t]*(?:\n(?P<code>.*))?", re.DOTALL)


def _read_json(path: Path, notes: list[str]) -> object | None:
    """A side file's JSON, None when it is missing or unusable (a note says why for the latter)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{path} not used: {exc}")
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also an integer beyond Python's 4300 digits
        notes.append(f"{path} not used: not JSON ({str(exc)[:200]})")
        return None


def _parents(folder: Path, notes: list[str]) -> dict[str, str]:
    """call -> the module / cell call it ran in (``construct.json``; calls at the top left out)."""
    data = _read_json(folder / CONSTRUCT_JSON, notes)
    if not isinstance(data, dict):
        return {}
    return {str(call): parent for call, parent in data.items() if isinstance(parent, str) and parent}


def _frame(text: object) -> SourceLine | None:
    if not isinstance(text, str):
        return None
    match = _FRAME_RE.match(text.strip())
    if match is None:
        return None
    return SourceLine(match["file"].strip(), int(match["line"]), (match["code"] or "").strip())


def _sources(folder: Path, notes: list[str]) -> dict[str, SourceLine]:
    """call -> the user's source line (module doc), from ``stack.json``."""
    data = _read_json(folder / STACK_JSON, notes)
    if not isinstance(data, dict):
        return {}
    out: dict[str, SourceLine] = {}
    for value in data.values():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)
                and isinstance(value[1], list)):
            continue
        calls, frames = value
        traces = [t for t in (_frame(f) for f in frames) if t is not None]
        line = user_line(reversed(traces))  # frames are innermost first; user_line takes the last user frame
        if line is None:
            continue
        for call in calls:
            if isinstance(call, str):
                out.setdefault(call, line)
    return out


def read_stacks(folder: Path, notes: list[str]) -> dict[str, tuple[str, ...]]:
    """call -> its whole stack as ``stack.json`` records it (frames innermost first, each as written);
    empty when the file is missing or unusable (a note says why for the latter). Entries of
    another shape and frames that are not text are left out."""
    data = _read_json(folder / STACK_JSON, notes)
    if not isinstance(data, dict):
        if data is not None:
            notes.append(f"{folder / STACK_JSON} not used: not an object of stacks")
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for value in data.values():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)
                and isinstance(value[1], list)):
            continue
        calls, frames = value
        stack = tuple(f for f in frames if isinstance(f, str))
        for call in calls:
            if isinstance(call, str):
                out.setdefault(call, stack)
    return out


#: Path parts of frames that are not the user's (the frameworks, msprobe, installed packages).
_NOT_USER = ("site-packages", "dist-packages", "torch", "torch_npu", "mindspore", "msprobe")


def user_frame(stack: tuple[str, ...]) -> str:
    """``file:line`` of the innermost frame of ``stack`` (innermost first) whose file lies in none
    of the folders :data:`_NOT_USER` (``.../site-packages/...``, ``.../torch/...``); ``""`` when every
    frame does, or none can be read."""
    for text in stack:
        frame = _frame(text)
        if frame is None:
            continue
        parts = set(re.split(r"[/\\]", frame.file))
        if not parts.intersection(_NOT_USER):
            return f"{frame.file}:{frame.line}"
    return ""


#: ``CallKind.MODULE`` (a member read through its enum class is a Python-level lookup: once a call).
_MODULE = CallKind.MODULE


def _module_path(call: str | None) -> str | None:
    parsed = parse_msprobe_name(call) if call else None
    return parsed.path if parsed is not None and parsed.kind is _MODULE else None


@dataclass(frozen=True)
class ParameterSlot:
    """A parameter input of a call as ``dump.json`` gives it: its input index and the name it has
    below its owner (``weight``, a ``parameters`` key); :func:`parameter_inputs` adds the owner."""

    index: int
    name: str


def _one_leaf(item: object) -> bool:
    """Whether ``item`` is its own one leaf (what :func:`~compare.loaders.msprobe_json._leaves` yields
    alone: ``null``, an object with ``type`` / ``dtype``, a bare value) -- msprobe's usual item,
    answered without the walk's generator."""
    return item is None or (type(item) is dict and ("type" in item or "dtype" in item)) or \
        not isinstance(item, (list, dict))


@functools.lru_cache(maxsize=4096)
def _parameter_args(api: str) -> tuple[ParameterArg, ...]:
    """:data:`PARAMETER_ARGS` of an API name with any prefix (its last dotted part), remembered: a
    dump calls a few hundred APIs 10^5 times."""
    return PARAMETER_ARGS.get(api.rsplit(".", 1)[-1], ())


def parameter_slots(call: str, entry: object) -> tuple[ParameterSlot, ...]:
    """The parameter inputs of one ``dump.json`` entry (module doc), before their owner is known."""
    parsed = parse_msprobe_name(call)
    if parsed is None or parsed.direction != "forward" or not isinstance(entry, dict):
        return ()
    known = () if parsed.kind is _MODULE else _parameter_args(parsed.api)
    parameters = entry.get("parameters")
    if not known and not isinstance(parameters, dict):
        return ()  # no argument is one, and no parameters section: the leaves need not be counted
    wanted = {a.position: a.name for a in known}
    wanted_kw = {a.name: a.name for a in known}
    slots: list[ParameterSlot] = []
    index = 0
    for section, names in ((entry.get("input_args"), wanted), (entry.get("input_kwargs"), wanted_kw)):
        if not isinstance(section, (list, dict)):
            continue
        items = list(enumerate(section)) if isinstance(section, list) else list(section.items())
        for key, item in items:
            if _one_leaf(item):
                count = 1
            else:
                try:
                    count = sum(1 for _ in _leaves(item))
                except ValueError:
                    return tuple(slots)  # nested too deeply: the indices after it are unknown
            name = names.get(key)  # type: ignore[call-overload]  # int keys for args, str for kwargs
            if name is not None and count == 1 and _is_tensor(item):
                slots.append(ParameterSlot(index, name))
            index += count
    for section_name in ("input", "grad_input"):  # not in a forward entry msprobe writes; kept for the numbering
        section = entry.get(section_name)
        if isinstance(section, (list, dict)):
            try:
                index += sum(1 for _ in _leaves(section))
            except ValueError:
                return tuple(slots)
    if isinstance(parameters, dict):
        for key, item in parameters.items():
            try:
                leaves = [item] if _one_leaf(item) else list(_leaves(item))
            except ValueError:
                break
            for leaf in leaves:
                if _is_tensor(leaf):
                    slots.append(ParameterSlot(index, str(key)))
                index += 1
    return tuple(slots)


def _edges(call: str, slots: tuple[ParameterSlot, ...], parent: str | None) -> tuple[InputEdge, ...]:
    """``slots`` of ``call`` as producer-less PARAMETER edges named ``{owner}.{name}`` (module doc:
    a module call owns its parameters; an API call's owner is the module it ran in, else itself)."""
    if not slots:
        return ()
    owner = _module_path(call) or _module_path(parent) or call
    return tuple(InputEdge(index=slot.index, producer=None, role=NodeRole.PARAMETER, name=f"{owner}.{slot.name}")
                 for slot in slots)


def parameter_inputs(call: str, entry: object, parent: str | None = None) -> tuple[InputEdge, ...]:
    """The parameter inputs of one ``dump.json`` entry as producer-less PARAMETER edges (module doc)."""
    return _edges(call, parameter_slots(call, entry), parent)


@dataclass(frozen=True)
class DumpCalls:
    """What the call graph takes from one ``dump.json``: its calls in ``data`` order and the
    parameter inputs of those that have some. Small (a reference a call): the loader, which parses
    ``dump.json`` anyway, hands it over (:func:`remember_calls`) so that the graph does not parse
    the file a second time."""

    calls: tuple[str, ...]
    slots: Mapping[str, tuple[ParameterSlot, ...]]


def dump_calls(data: Mapping[str, object]) -> DumpCalls:
    """The :class:`DumpCalls` of a parsed ``dump.json``'s ``data`` object."""
    calls = tuple(map(str, data))
    slots: dict[str, tuple[ParameterSlot, ...]] = {}
    for call, entry in zip(calls, data.values()):
        found = parameter_slots(call, entry)
        if found:
            slots[call] = found
    return DumpCalls(calls=calls, slots=slots)


#: ``dump.json`` files whose calls the loader handed over, by what identifies their content
#: (:func:`_signature`); the few most recent only (a run has two sides).
_REMEMBERED: dict[tuple[str, int, int, int], DumpCalls] = {}
_REMEMBER_AT_MOST = 4


def _signature(path: Path) -> tuple[str, int, int, int] | None:
    """Real path, size, modification time and inode of a file (None when it cannot be stat'ed):
    a file that changed since it was remembered is parsed again."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), info.st_size, info.st_mtime_ns, info.st_ino)


def dump_signature(path: Path) -> tuple[str, int, int, int] | None:
    """What :func:`remember_calls` keys a ``dump.json`` by: take it just before parsing the file."""
    return _signature(path)


def remember_calls(signature: tuple[str, int, int, int] | None, calls: DumpCalls) -> None:
    """Keep the calls of the ``dump.json`` of ``signature`` (:func:`dump_signature`) for
    :func:`read_msprobe_graph`."""
    if signature is None:
        return
    _REMEMBERED.pop(signature, None)
    _REMEMBERED[signature] = calls
    while len(_REMEMBERED) > _REMEMBER_AT_MOST:
        del _REMEMBERED[next(iter(_REMEMBERED))]


def _calls_of(path: Path) -> DumpCalls:
    """The calls of a ``dump.json``: as the loader handed them over when the file is unchanged,
    else parsed here."""
    signature = _signature(path)
    found = _REMEMBERED.get(signature) if signature is not None else None
    if found is not None:
        return found
    return dump_calls(read_dump_json(path).data)


def read_msprobe_graph(folder: Path) -> OpGraph:
    """The call graph of one msprobe dump folder (module doc)."""
    folder = Path(folder)
    calls = _calls_of(folder / DUMP_JSON)
    notes: list[str] = []
    parents = _parents(folder, notes)
    sources = _sources(folder, notes)
    nodes: dict[str, OpNode] = {}
    with_parameters = 0
    compute, slots_of, source_of = NodeRole.COMPUTE, calls.slots, sources.get  # read once: 10^5 calls
    for call in calls.calls:
        parsed = parse_msprobe_name(call)
        slots = slots_of.get(call)
        inputs = _edges(call, slots, parents.get(call)) if slots else ()
        with_parameters += bool(inputs)
        nodes[call] = OpNode(call, parsed.op_type if parsed is not None else None, compute, inputs, source_of(call))
    notes.append(f"msprobe call order of {folder / DUMP_JSON}: {len(nodes)} call(s), {with_parameters} with parameter "
                 "inputs (no data edges: msprobe does not record which call produced an input)")
    return OpGraph(nodes=nodes, source=GraphSource.MSPROBE_CALLS, edges=False, notes=tuple(notes))


__all__ = ["CONSTRUCT_JSON", "PARAMETER_ARGS", "STACK_JSON", "DumpCalls", "ParameterArg", "ParameterSlot",
           "dump_calls", "dump_signature", "parameter_inputs", "parameter_slots", "read_msprobe_graph", "read_stacks",
           "remember_calls", "user_frame"]

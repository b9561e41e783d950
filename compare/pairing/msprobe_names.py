"""msprobe data names (``Functional.linear.0.forward.input.1``, ``...input.attn_mask``,
``Module.fc.Linear.forward.0.parameters.weight``) -> the tensor vcompare numbers for them.

A data name is ``{call}.{argument}``: ``{call}`` the ``dump.json`` entry, ``{argument}``
``input.{i}`` (``input_args[i]``; a nested item ``input.{i}.{j}``), ``input.{key}``
(``input_kwargs[key]``), ``parameters.{key}``, ``output.{i}``; for a backward entry ``input.{i}`` /
``output.{i}``; for a ``parameters_grad`` entry the parameter's name. :func:`split_data_name`
splits one; :func:`argument_indexes` numbers the arguments of one ``dump.json`` entry as the msprobe
reader numbers tensors (:mod:`compare.loaders.msprobe`): every leaf -- tensor or not -- takes the next
index of its kind, inputs across ``input_args``, ``input_kwargs``, ``input``, ``grad_input``,
``parameters``; outputs across ``output``, ``grad_output``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import OptionError
from ..loaders.msprobe_folders import DUMP_JSON
from ..loaders.msprobe_json import SECTIONS, named_leaves, read_dump_json
from ..records import TensorKind


def _word(key: str, kind: TensorKind) -> str:
    """The word a data name uses for the items of a ``dump.json`` section (module doc)."""
    return "parameters" if key == "parameters" else kind.value

_DATA_RE = re.compile(r"(?P<call>.+?\.(?:\d+\.(?:forward|backward)|(?:forward|backward)\.\d+))"
                      r"\.(?P<arg>(?:input|output|parameters)\..+)")
_GRAD_RE = re.compile(r"(?P<call>.+\.parameters_grad(?:\.\d+)?)\.(?P<arg>[^.]+)")
_CALL_RE = re.compile(r".+\.(?:\d+\.(?:forward|backward)|(?:forward|backward)\.\d+|parameters_grad(?:\.\d+)?)")


@dataclass(frozen=True)
class DataName:
    """A data name split: the call, and the argument path (``""``: the whole call)."""

    call: str
    argument: str = ""


def split_data_name(name: str) -> DataName:
    """``{call}.{argument}`` (module doc), or a call name alone. Raises :class:`OptionError` for text
    in neither form."""
    for pattern in (_DATA_RE, _GRAD_RE):
        found = pattern.fullmatch(name)
        if found is not None and not (pattern is _GRAD_RE and found["arg"].isdigit()):
            return DataName(found["call"], found["arg"])
    if _CALL_RE.fullmatch(name):
        return DataName(name)
    raise OptionError(f"{name!r} is not an msprobe data name ('{{call}}.{{input|output|parameters}}.{{N or name}}')")


def _paths(prefix: str, section: object) -> list[str]:
    """``prefix.{place}`` of each leaf of a section, in the reader's order
    (:func:`compare.loaders.msprobe_json.named_leaves`, as the reader numbers items)."""
    return [".".join((prefix, *(str(p) for p in place))) for place, _ in named_leaves(section)]


def argument_indexes(call: str, entry: object) -> dict[str, tuple[TensorKind, int]]:
    """argument path -> (kind, index) for one ``dump.json`` entry (module doc)."""
    out: dict[str, tuple[TensorKind, int]] = {}
    if not isinstance(entry, dict):
        return out
    counters = {TensorKind.INPUT: 0, TensorKind.OUTPUT: 0}
    try:
        if ".parameters_grad" in call:
            for key, value in entry.items():
                for number, path in enumerate(_paths(str(key), value)):
                    out.setdefault(str(key) if number == 0 else path, (TensorKind.OUTPUT, counters[TensorKind.OUTPUT]))
                    counters[TensorKind.OUTPUT] += 1
            return out
        for key, kind in SECTIONS:
            if key not in entry:
                continue
            for path in _paths(_word(key, kind), entry[key]):
                out[path] = (kind, counters[kind])
                counters[kind] += 1
    except ValueError:  # nested more than 64 levels: the reader refused the entry too; nothing to name
        return {}
    return out


class ArgumentIndex:
    """The argument numbering of a run's calls, read from its ``dump.json`` once, on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._data: dict | None = None

    def lookup(self, call: str, argument: str) -> tuple[TensorKind, int] | None:
        """(kind, index) of ``argument`` of ``call``; None when the call or the argument is not there."""
        if self._data is None:
            self._data = read_dump_json(self.folder / DUMP_JSON).data
        return argument_indexes(call, self._data.get(call)).get(argument)


__all__ = ["ArgumentIndex", "DataName", "argument_indexes", "split_data_name"]

"""Reading an msprobe ``dump.json`` (:func:`read_dump_json`) and walking the sections of its entries
(:func:`_leaves`, :func:`_is_tensor`): what the reader (:mod:`compare.loaders.msprobe`) and the
call graph (:mod:`compare.loaders.msprobe_graph`) both read a dump folder with. The format and
the edge-case policy are in :mod:`compare.loaders.msprobe`'s doc.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import DumpFormatError
from ..records import TensorKind

#: ``dump.json`` files larger than this are refused (a network of 10^5 calls is ~100 MB).
MAX_JSON_BYTES = 2 << 30


@dataclass(frozen=True)
class DumpJson:
    """The top level of a ``dump.json``: its path, the fields that describe it, and ``data``."""

    path: Path
    task: str
    level: str
    framework: str
    data: dict


def read_dump_json(path: Path) -> DumpJson:
    """Parse a ``dump.json``; :class:`DumpFormatError` (file, character offset) when it is not one."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise DumpFormatError(path, f"{size} bytes: larger than the {MAX_JSON_BYTES} bytes a dump.json is "
                                        "read up to")
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DumpFormatError(path, f"not UTF-8 text: {exc.reason}", offset=exc.start) from None
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DumpFormatError(path, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                              offset=len(text[:exc.pos].encode("utf-8"))) from None
    except RecursionError:
        raise DumpFormatError(path, f"JSON nested too deeply (more levels than Python's recursion limit, "
                                    f"{sys.getrecursionlimit()})") from None
    except ValueError as exc:  # an integer beyond Python's int-string conversion limit
        raise DumpFormatError(path, _long_integer(text, exc), offset=_long_integer_offset(text)) from None
    if not isinstance(top, dict):
        raise DumpFormatError(path, f"the top level is a JSON {type(top).__name__}, not an object")
    data = top.get("data")
    if not isinstance(data, dict):
        raise DumpFormatError(path, "no \"data\" object: not an msprobe dump.json")

    def field_text(key: str) -> str:
        value = top.get(key)
        return value if isinstance(value, str) else ""

    return DumpJson(path=path, task=field_text("task"), level=field_text("level"), framework=field_text("framework"),
                    data=data)


def _long_integer_match(text: str) -> re.Match[str] | None:
    limit = sys.get_int_max_str_digits()
    if limit <= 0:
        return None
    return re.search(r"(?<![\w.\"])-?\d{%d,}(?![\d.eE])" % (limit + 1), text)


def _long_integer_offset(text: str) -> int | None:
    found = _long_integer_match(text)
    return None if found is None else len(text[:found.start()].encode("utf-8"))


def _long_integer(text: str, exc: ValueError) -> str:
    """Why ``json.loads`` raised a plain ValueError: an integer longer than Python reads (where)."""
    found = _long_integer_match(text)
    limit = sys.get_int_max_str_digits()
    if found is None:
        return f"not usable JSON: {str(exc)[:200]}"
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    digits = len(found.group().lstrip("-"))
    return (f"not usable JSON: an integer of {digits} digits (line {line}, column {column}), more than the {limit} "
            "digits Python reads into an integer (no msprobe field holds one)")


#: Sections of a forward/backward entry -> the kind of their tensors, in the order their items are
#: numbered (the reader, :mod:`compare.loaders.msprobe`, and the data mapping,
#: :mod:`compare.pairing.msprobe_names`, number them alike).
SECTIONS: tuple[tuple[str, TensorKind], ...] = (
    ("input_args", TensorKind.INPUT),
    ("input_kwargs", TensorKind.INPUT),
    ("input", TensorKind.INPUT),
    ("grad_input", TensorKind.INPUT),
    ("parameters", TensorKind.INPUT),
    ("output", TensorKind.OUTPUT),
    ("grad_output", TensorKind.OUTPUT),
)


def is_leaf(item: object) -> bool:
    """A leaf of a section: ``null``, or an object with a ``type`` or ``dtype`` key (module doc of
    :mod:`compare.loaders.msprobe`)."""
    return item is None or (isinstance(item, dict) and ("type" in item or "dtype" in item))


def _leaves(section: object, depth: int = 0) -> Iterator[object]:
    """The leaves of a section, depth first (lists in order, objects in key order)."""
    if depth > 64:
        raise ValueError("nested more than 64 levels")
    if is_leaf(section):
        yield section
    elif isinstance(section, list):
        for item in section:
            yield from _leaves(item, depth + 1)
    elif isinstance(section, dict):
        for item in section.values():
            yield from _leaves(item, depth + 1)
    else:
        yield section  # a bare value (not written by msprobe): a leaf that is no tensor


def named_leaves(section: object, path: tuple[str | int, ...] = (), depth: int = 0
                  ) -> Iterator[tuple[tuple[str | int, ...], object]]:
    """The leaves of a section with their places (list positions, object keys; outermost first),
    in :func:`_leaves` order. A section that is itself a leaf is at place ``(0,)``."""
    if depth > 64:
        raise ValueError("nested more than 64 levels")
    if is_leaf(section) or not isinstance(section, (list, dict)):
        yield (path or (0,)), section
    elif isinstance(section, list):
        for position, item in enumerate(section):
            yield from named_leaves(item, (*path, position), depth + 1)
    else:
        for key, item in section.items():
            yield from named_leaves(item, (*path, str(key)), depth + 1)


def _is_tensor(item: object) -> bool:
    """A tensor item: ``type`` ending in ``Tensor`` or ``Parameter``, or a ``dtype`` and a ``shape``
    (non-tensor items -- ``int``, ``slice``, ``torch.Size``, ``torch.dtype`` -- carry a ``value``)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith(("Tensor", "Parameter")):
        return True
    return "dtype" in item and "shape" in item


__all__ = ["MAX_JSON_BYTES", "SECTIONS", "DumpJson", "is_leaf", "named_leaves", "read_dump_json"]

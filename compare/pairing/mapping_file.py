"""The user's names file (``--mapping map.csv|yaml``): which left operator or tensor meets which right one.

Each entry maps a left name to a right name (see :mod:`compare.pairing.user_mapping` for the
format and how the entries are applied). CSV rows ``left,right`` (a header row and ``#``
comments allowed); YAML (when PyYAML is installed) a mapping ``{left: right}`` or a list of
``{left: ..., right: ...}`` items. A name may end in ``:{index}`` or ``:{input|output}:{index}``.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from convert.entries import special_file_problem

from ..errors import OptionError
from ..records import TensorKind

if TYPE_CHECKING:
    from .msprobe_mapping import MsprobeMapping

_HEADER_CELLS = frozenset({"left", "right", "left_op", "right_op", "left name", "right name", "source", "target",
                           "mindspore", "golden", "npu", "ground truth", "groundtruth"})


@dataclass(frozen=True)
class TensorSel:
    """``name[:index]`` / ``name:{input|output}:index``; ``kind``/``index`` None = whole op."""

    name: str
    kind: TensorKind | None = None
    index: int | None = None

    @classmethod
    def parse(cls, text: str) -> "TensorSel":
        parts = text.strip().split(":")
        if len(parts) >= 3 and parts[-1].isdecimal() and parts[-2].lower() in ("input", "output"):
            return cls(":".join(parts[:-2]), TensorKind(parts[-2].lower()), int(parts[-1]))
        if len(parts) >= 2 and parts[-1].isdecimal():
            return cls(":".join(parts[:-1]), TensorKind.OUTPUT, int(parts[-1]))
        return cls(text.strip())

    def text(self) -> str:
        if self.index is None:
            return self.name
        return f"{self.name}:{(self.kind or TensorKind.OUTPUT).value}:{self.index}"


@dataclass(frozen=True)
class MapEntry:
    """One mapping entry and where it came from (``file:line``). ``rule``: the msprobe rule that
    made it (:class:`compare.pairing.msprobe_mapping.MappingRule` value; its rows say so), ``""``
    for a ``--mapping`` line. A ``right`` named ``""`` means: no counterpart (msprobe's ``N/A``)."""

    left: TensorSel
    right: TensorSel
    source: str
    rule: str = ""


def load_mapping(path: str | Path | MsprobeMapping) -> list[MapEntry] | MsprobeMapping:
    """Read a ``.csv`` / ``.txt`` or ``.yaml`` / ``.yml`` mapping file (see the module doc); msprobe's
    mapping options (:class:`~compare.pairing.msprobe_mapping.MsprobeMapping`) are read already and
    are returned as they are.

    Raises :class:`OptionError` naming the file (and line) for an unreadable file, a row
    without two names, a field longer than ``csv.field_size_limit()``, a FIFO or a device (never
    opened), or YAML when PyYAML is not installed. A UTF-8 byte-order mark is dropped.
    """
    if not isinstance(path, (str, os.PathLike)):
        return path
    path = Path(path)
    special = special_file_problem(path)  # never opened: a FIFO would block, a device never ends
    if special is not None:
        raise OptionError(f"--mapping {path}: {special}")
    if not path.is_file():
        raise OptionError(f"--mapping {path}: no such file")
    if path.suffix.lower() in (".yaml", ".yml"):
        return _load_yaml(path)
    entries: list[MapEntry] = []
    reader = None
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            rows = list(reader)
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit(): the user's file, so an error naming the line
        line = reader.line_num if reader is not None else 0
        raise OptionError(f"--mapping {path} line {line}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(f"--mapping {path}: cannot be read ({exc})") from None
    for number, row in enumerate(rows, start=1):
        cells = [c.strip() for c in row]
        if not cells or not any(cells) or cells[0].startswith("#"):
            continue
        if not entries and {c.lower() for c in cells if c} <= _HEADER_CELLS:
            continue
        names = [c for c in cells if c]
        if len(names) != 2:
            raise OptionError(f"--mapping {path} line {number}: expected two names (left,right), got {len(names)}: "
                              f"{','.join(row)!r}")
        entries.append(MapEntry(TensorSel.parse(names[0]), TensorSel.parse(names[1]), f"{path.name}:{number}"))
    if not entries:
        raise OptionError(f"--mapping {path}: no mapping rows (expected lines 'left_name,right_name')")
    return entries


def _load_yaml(path: Path) -> list[MapEntry]:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise OptionError(f"--mapping {path}: YAML mapping files need PyYAML, which is not installed; "
                          "write the mapping as CSV (left,right per line) instead") from None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise OptionError(f"--mapping {path}: cannot be read as YAML ({exc})") from None
    pairs: list[tuple[object, object]] = []
    if isinstance(data, dict):
        pairs = list(data.items())
    elif isinstance(data, list):
        for number, item in enumerate(data, start=1):
            if isinstance(item, dict) and "left" in item and "right" in item:
                pairs.append((item["left"], item["right"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((item[0], item[1]))
            else:
                raise OptionError(f"--mapping {path} item {number}: expected {{left: ..., right: ...}} or "
                                  f"[left, right], got {item!r}")
    else:
        raise OptionError(f"--mapping {path}: expected a mapping {{left: right}} or a list of "
                          "{left: ..., right: ...} items")
    entries = []
    for number, (left, right) in enumerate(pairs, start=1):
        if not isinstance(left, (str, int)) or not isinstance(right, (str, int)):
            raise OptionError(f"--mapping {path} entry {number}: names must be text, got {left!r}: {right!r}")
        entries.append(MapEntry(TensorSel.parse(str(left)), TensorSel.parse(str(right)), f"{path.name}#{number}"))
    if not entries:
        raise OptionError(f"--mapping {path}: no mapping entries")
    return entries

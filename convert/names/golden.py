"""Golden file names: ``{op_name}.{output_index}.{timestamp}.npy`` (Caffe / TF tfdbg) and DumpData
``.pb`` / ``.quant`` files (§2.7, §2.8 of the reference-tool spec).

* ``.npy``: ``op_name`` may hold letters, digits, ``_``, ``-`` and ``.``; it runs greedily up to
  the last ``.<digits>.<digits>.npy``.
* ``.pb`` (standard) and ``.quant`` (quantized Caffe): the same form, ``op_name`` without dots.

Of several files for one ``(op, output_index)`` the latest 16-digit timestamp wins (others sort
as 0): :attr:`GoldenName.sort_key`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Golden file kinds and their suffixes.
GOLDEN_SUFFIXES = {"npy": ".npy", "pb": ".pb", "quant": ".quant"}

_NPY_RE = re.compile(r"([A-Za-z0-9_.-]+)\.([0-9]+)\.([0-9]+)\.npy")
_DUMPDATA_RE = {
    "pb": re.compile(r"([A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]+)\.pb"),
    "quant": re.compile(r"([A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]+)\.quant"),
}
_FORMS = {
    "npy": "{op_name}.{output_index}.{timestamp}.npy (op_name: [A-Za-z0-9_.-]+)",
    "pb": "{op_name}.{output_index}.{timestamp}.pb (op_name: [A-Za-z0-9_-]+, no dots)",
    "quant": "{op_name}.{output_index}.{timestamp}.quant (op_name: [A-Za-z0-9_-]+, no dots)",
}
_TIMESTAMP_DIGITS = 16


@dataclass(frozen=True)
class GoldenName:
    """Fields of a golden file name: ``kind`` is ``npy``, ``pb`` or ``quant``."""

    kind: str
    op_name: str
    output_index: int
    timestamp: int
    timestamp_digits: str

    @property
    def sort_key(self) -> int:
        """Timestamp used to pick the latest file: its value if it has 16 digits, else 0."""
        return self.timestamp if len(self.timestamp_digits) == _TIMESTAMP_DIGITS else 0


def _kind_of(name: str) -> str | None:
    for kind, suffix in GOLDEN_SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None


def parse_golden_name(name: str) -> GoldenName | None:
    """Parse a golden file name (whole-name match), or ``None`` when it matches no golden form."""
    kind = _kind_of(name)
    if kind is None:
        return None
    pattern = _NPY_RE if kind == "npy" else _DUMPDATA_RE[kind]
    match = pattern.fullmatch(name)
    if match is None:
        return None
    return GoldenName(
        kind=kind,
        op_name=match.group(1),
        output_index=int(match.group(2)),
        timestamp=int(match.group(3)),
        timestamp_digits=match.group(3),
    )


def explain_golden_name(name: str) -> str:
    """Why ``name`` (ending in a golden suffix) is not a golden file name."""
    kind = _kind_of(name) or "npy"
    return f"name matches no dump naming rule: a {GOLDEN_SUFFIXES[kind]} file must be named {_FORMS[kind]}"


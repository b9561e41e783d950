"""The records of msprobe's rows (:mod:`compare.records` re-exports them): a call's non-tensor
items (:class:`Argument`), both values of an argument row (:class:`ArgumentDiff`) and msprobe's own
cells of a row (:class:`MsprobeCells`). The rows and columns they make: docs/msprobe.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .records import TensorKind


#: The metric of an argument row: 0.0 when both values are the same, 1.0 when they differ (gate
#: ``ArgumentDiff==same``); None when a side has no value (a one-sided row).
ARGUMENT_METRIC = "ArgumentDiff"
#: How the reason of an argument row whose values differ begins (a saved table's rows are read back by it).
ARGUMENT_DIFFERS = "argument differs"


@dataclass(frozen=True, slots=True)
class ArgumentDiff:
    """Both sides of a non-tensor argument row: type names and values as recorded (``None`` for a
    missing side's), ``same`` (values and types equal; ``1`` and ``1.0`` are different types,
    ``True`` and ``1`` too), ``diff`` = ``left - right`` as float64 when both values are numbers
    (bool excluded; None otherwise)."""

    left_type: str | None
    right_type: str | None
    left: str | None
    right: str | None
    same: bool
    diff: float | None = None

    @property
    def cell(self) -> str:
        """The Value cell: the value when the same, ``left / right`` when not (``*`` for a missing side)."""
        if self.same:
            return self.left or ""
        return f"{'*' if self.left is None else self.left} / {'*' if self.right is None else self.right}"


@dataclass(frozen=True, slots=True)
class MsprobeCells:
    """msprobe's own columns of a row of an msprobe run (``MetricRow.msprobe``): each side's name
    in msprobe's form (``NPU Name`` / ``Bench Name``), data file (``Data_name``; ``""`` when the
    side has none: statistics, an argument, no counterpart), ``requires_grad`` (None: not recorded),
    the left call's stack (``stack.json``, innermost first; the right's when there is no left) and
    its user frame ``file:line`` (the innermost frame outside torch / mindspore / msprobe /
    site-packages; ``""`` when none)."""

    left_name: str
    right_name: str
    left_data: str = ""
    right_data: str = ""
    left_grad: bool | None = None
    right_grad: bool | None = None
    stack: tuple[str, ...] = ()
    source: str = ""

    @property
    def grad_consistent(self) -> bool | None:
        """Whether both sides recorded the same ``requires_grad`` (msprobe's ``Requires_grad
        Consistent``); None when a side did not record it."""
        if self.left_grad is None or self.right_grad is None:
            return None
        return self.left_grad == self.right_grad


@dataclass(frozen=True, slots=True)
class Argument:
    """One non-tensor item of a call (msprobe's ``{"type": "int", "value": 1}``, ``null``, a
    ``slice``, a ``torch.dtype`` ...): compared by value, never read from a file.

    ``label``: its name in its tool's form (``Functional.conv2d.0.forward.input.3.0``); ``kind`` /
    ``index``: its place among the call's items (numbered with the tensors, so it pairs as they do);
    ``type_name``: the recorded ``type`` (``int``, ``float``, ``bool``, ``slice`` ...; ``None`` for a
    ``null`` item); ``value``: the recorded value when it is a JSON scalar, else its JSON text
    (a slice ``[0, 4, null]``); ``numeric``: whether ``value`` is a number (bool excluded).
    """

    label: str
    kind: TensorKind
    index: int
    type_name: str
    value: bool | int | float | str | None
    numeric: bool = False

    @property
    def text(self) -> str:
        """The value as a table shows it: ``repr`` of a number (exact), the text, ``None``."""
        if isinstance(self.value, float):
            return repr(self.value)
        return "None" if self.value is None else str(self.value)

    def tensor_id(self, op_name: str) -> str:
        """``{op_name}:{input|output}:{index}``, the TensorIndex of its row (as a tensor's)."""
        return f"{op_name}:{self.kind.value}:{self.index}"


__all__ = ["ARGUMENT_DIFFERS", "ARGUMENT_METRIC", "Argument", "ArgumentDiff", "MsprobeCells"]

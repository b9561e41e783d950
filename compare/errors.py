"""The one error hierarchy of vcompare: the ground's errors (:mod:`convert.errors`: the base
:class:`CompareError`, :class:`DumpFormatError`, :class:`OptionError`, :class:`OutputError`) and
the errors of comparing, as their subclasses.

Every exception's message is the diagnosis: which file (and byte offset) or which JSON path, and
what is wrong with it. Library code raises these; only ``compare/cli/`` turns them into exit
codes (:mod:`convert.exits`, shared by both command lines), in one place.
"""

from __future__ import annotations

from convert.errors import CompareError, DumpFormatError, OptionError, OutputError

__all__ = ["CompareError", "DumpFormatError", "OptionError",
           "OutputError", "RuleError", "PairingError", "ShapeError"]



class RuleError(CompareError):
    """A fusion / quantisation rule JSON is unreadable or has the wrong structure.

    The message names the file and the JSON path of the bad node, e.g. ``graph[0].op[3].name``.
    """

    def __init__(self, path: object, problem: str, *, json_path: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.json_path = json_path
        where = self.path if not json_path else f"{self.path} at {json_path}"
        super().__init__(f"{where}: {problem}")


class PairingError(CompareError):
    """Two runs cannot be paired at all (no common operator, unsupported scenario, ...)."""


class ShapeError(CompareError):
    """Two tensors cannot be brought to the same element count / layout."""

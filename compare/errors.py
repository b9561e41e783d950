"""The one error hierarchy of vcompare.

Every exception's message is the diagnosis: which file (and byte offset) or which JSON path, and
what is wrong with it. Library code raises these; only ``compare/cli.py`` turns them into exit
codes (see ``EXIT_*`` below), in one place.

Policy: per-operator problems never abort a run. Loaders and the engine catch ``CompareError``
for one operator or tensor and turn it into a report row whose FailReason is the message.
"""

from __future__ import annotations

#: Exit codes of the command-line tools (documented in README.md).
EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_CANNOT_RUN = 2


class CompareError(Exception):
    """Base class of every error vcompare raises on purpose."""


class DumpFormatError(CompareError):
    """A dump, .npy or mapping file is malformed (truncated, bad header, unknown type, ...).

    The message names the file and, where it applies, the byte offset.
    """

    def __init__(self, path: object, problem: str, *, offset: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.offset = offset
        where = f"{self.path}" if offset is None else f"{self.path} (byte {offset})"
        super().__init__(f"{where}: {problem}")


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


class OptionError(CompareError):
    """A command-line or API option is invalid (bad metric name, bad gate expression, ...)."""


class GateError(CompareError):
    """An accuracy gate failed (the CLI maps this to exit code 1)."""


class OutputError(CompareError):
    """A result file could not be written (read-only folder, disk full, permission, a directory
    in the way, a parent that cannot be created ...). The CLI maps it to exit code 2.

    The message is one line: the path, then the operating system's reason.
    """

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot write {self.path}: {reason}")

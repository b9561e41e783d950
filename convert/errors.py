"""The error base of vcompare and vconvert: the errors of the ground floor (bytes on disk, options).

Every exception's message is the diagnosis: which file (and byte offset), or which option, and
what is wrong with it. :mod:`compare.errors` adds the errors of comparing (rules, pairing,
shapes) as subclasses of :class:`CompareError`; only the command-line modules turn errors into
exit codes.

Policy: per-operator problems never abort a run. Loaders and the engine catch ``CompareError``
for one operator or tensor and turn it into a report row whose FailReason is the message.
"""

from __future__ import annotations


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


class OptionError(CompareError):
    """A command-line or API option is invalid (bad metric name, bad gate expression, ...)."""


class OutputError(CompareError):
    """A result file could not be written (read-only folder, disk full, permission, a directory
    in the way, a parent that cannot be created ...). The CLI maps it to exit code 2.

    The message is one line: the path, then the operating system's reason.
    """

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot write {self.path}: {reason}")

"""JSON text that may be hostile, parsed with its bounds named: one small loader for every JSON
file vcompare reads (saved results, rank-group files, Opdebug copies ...).

:func:`load_json` is :func:`json.loads` plus these refusals, each a :class:`DumpFormatError` whose
message names the file, the line and column and the bound:

- **depth**: nesting deeper than Python's parser follows (the interpreter's recursion limit,
  1,000 by default, less the caller's own frames: about 990 levels) raises ``RecursionError``
  inside :mod:`json`; it is refused as "nested deeper than ...". vcompare's own files nest fewer
  than 10 levels.
- **whole-number digits**: a whole number of more than :data:`MAX_INT_DIGITS` (4,300, Python's
  default ``int`` string limit) digits is refused before it is converted (a conversion that is
  quadratic in the digits; the interpreter's own limit, if set lower, is reported the same way).
- **non-finite numbers** (``finite=True``, the default): a number beyond float64's range
  (``1e400``, which :mod:`json` reads as infinity) and the non-standard literals ``NaN``,
  ``Infinity`` and ``-Infinity`` are refused. vcompare writes non-finite values as the strings
  ``"nan"``, ``"inf"`` and ``"-inf"``, never as numbers, so a number that overflows is not one it
  wrote, and reading it as infinity would pass a ``>=`` gate. ``finite=False`` reads them as
  Python does (for files of other tools that write ``NaN``).

The happy path costs what :func:`json.loads` costs (the hooks run per number in C's scanner); the
position of a refusal is worked out only when there is one.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any

from .errors import DumpFormatError

#: A whole number with more digits than this (sign not counted) is refused.
MAX_INT_DIGITS = 4300

__all__ = ["MAX_INT_DIGITS", "load_json"]


class _Refused(ValueError):
    """Raised by a number hook: ``literal`` as written, ``problem`` the diagnosis."""

    def __init__(self, literal: str, problem: str) -> None:
        super().__init__(problem)
        self.literal = literal
        self.problem = problem


def _whole(literal: str) -> int:
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise _Refused(literal, f"a whole number of {digits} digits (at most {MAX_INT_DIGITS} are read)")
    try:
        return int(literal)
    except ValueError:  # the interpreter's own limit (PYTHONINTMAXSTRDIGITS) is lower
        raise _Refused(literal, f"a whole number of {digits} digits (at most {sys.get_int_max_str_digits()} "
                                "are read: PYTHONINTMAXSTRDIGITS)") from None


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        shown = literal if len(literal) <= 40 else literal[:20] + "..." + literal[-10:]
        raise _Refused(literal, f"the number {shown} is beyond float64's range (about 1.8e308)")
    return value


def _constant(literal: str) -> float:
    raise _Refused(literal, f"{literal} is not JSON (vcompare writes the strings \"nan\", \"inf\", \"-inf\")")


#: The tokens that matter to a nesting scan: a whole string (skipped), or a bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _line_column(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line} column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _too_deep(text: str) -> str:
    """Where the nesting first passes the recursion limit (or reaches its deepest), for the message."""
    limit = sys.getrecursionlimit()
    depth = deepest = 0
    where = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, match.start()
            if depth > limit:
                return (f"{_line_column(text, where)}: JSON nested more than {limit} levels deep (the JSON "
                        f"reader stops at Python's recursion limit, {limit})")
        elif token in "]}":
            depth -= 1
    return (f"{_line_column(text, where)}: JSON nested {deepest} levels deep, deeper than the JSON reader "
            f"follows here (Python's recursion limit is {limit})")


def _literal_at(text: str, literal: str) -> str:
    """The position of a refused number (its first occurrence as a token, best effort)."""
    for match in re.finditer(re.escape(literal), text):
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if not (before.isalnum() or before in ".-+") and not (after.isalnum() or after in ".+-"):
            return _line_column(text, match.start())
    return "a number"


def load_json(text: str | bytes, where: str | os.PathLike[str], *, finite: bool = True) -> Any:
    """``json.loads(text)`` with the refusals of the module docstring.

    ``where`` names the source in messages (a path, or ``--option VALUE``). Invalid JSON raises
    :class:`DumpFormatError` with line and column too. Reads non-finite numbers as Python does
    when ``finite`` is False.
    """
    try:
        if finite:
            return json.loads(text, parse_int=_whole, parse_float=_finite, parse_constant=_constant)
        return json.loads(text, parse_int=_whole)
    except _Refused as refused:
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise DumpFormatError(where, f"{_literal_at(decoded, refused.literal)}: {refused.problem}") from None
    except RecursionError:
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise DumpFormatError(where, _too_deep(decoded)) from None
    except json.JSONDecodeError as exc:
        raise DumpFormatError(where, f"line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DumpFormatError(where, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None

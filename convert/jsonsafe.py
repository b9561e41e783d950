"""JSON text that may be hostile, parsed with its bounds named: one small loader for every JSON
file vcompare reads (saved results, rank-group files, Opdebug copies ...).

:func:`load_json` is :func:`json.loads` plus these refusals, each a :class:`DumpFormatError` whose
message names the file, the line and column and the bound:

- **depth**: nesting deeper than :data:`MAX_DEPTH` (100) levels is refused, with the line and
  column where it passes the bound. vcompare's own files nest fewer than 10 levels, other tools'
  (msprobe's dump.json) about as many. Nesting deeper than Python's parser follows (the
  recursion limit, 1,000) raises ``RecursionError`` inside :mod:`json` and is refused the same
  way; a document that parses but nests deeper than 100 would still break code that walks it
  recursively later (``repr`` in a message, ``json.dumps`` of an output): so the bound is checked
  after the parse too (an iterative walk of the containers; ``max_depth=None`` skips it for a
  caller that checks the parts it keeps, as the saved-result reader does for all but its rows).
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
#: JSON nested deeper than this many levels (arrays and objects) is refused.
MAX_DEPTH = 100

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "deeper_than", "load_json", "too_deep"]


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


def _too_deep(text: str, bound: int | None) -> str:
    """Where the nesting first passes ``bound`` (default: the recursion limit), or reaches its
    deepest, for the message."""
    limit = sys.getrecursionlimit() if bound is None else bound
    depth = deepest = 0
    where = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, match.start()
            if depth > limit:
                reader = "" if bound is not None else " (the JSON reader stops at Python's recursion limit)"
                return f"{_line_column(text, where)}: JSON nested more than {limit} levels deep{reader}"
        elif token in "]}":
            depth -= 1
    return (f"{_line_column(text, where)}: JSON nested {deepest} levels deep, deeper than the JSON reader "
            f"follows here (Python's recursion limit is {sys.getrecursionlimit()})")


def deeper_than(value: object, bound: int) -> bool:
    """Whether a parsed JSON value nests more than ``bound`` containers deep (iterative: any depth)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > bound:
            return True
        if type(item) is dict:
            children: Any = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
    return False


def _literal_at(text: str, literal: str) -> str:
    """The position of a refused number (its first occurrence as a token, best effort)."""
    for match in re.finditer(re.escape(literal), text):
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if not (before.isalnum() or before in ".-+") and not (after.isalnum() or after in ".+-"):
            return _line_column(text, match.start())
    return "a number"


def load_json(text: str | bytes, where: str | os.PathLike[str], *, finite: bool = True,
              max_depth: int | None = MAX_DEPTH) -> Any:
    """``json.loads(text)`` with the refusals of the module docstring.

    ``where`` names the source in messages (a path, or ``--option VALUE``). Invalid JSON raises
    :class:`DumpFormatError` with line and column too. Reads non-finite numbers as Python does
    when ``finite`` is False. ``max_depth`` None: only what the parser itself cannot follow is
    refused (the caller bounds what it keeps with :func:`deeper_than`).
    """
    try:
        if finite:
            document = json.loads(text, parse_int=_whole, parse_float=_finite, parse_constant=_constant)
        else:
            document = json.loads(text, parse_int=_whole)
    except _Refused as refused:
        raise DumpFormatError(where, f"{_literal_at(_text(text), refused.literal)}: {refused.problem}") from None
    except RecursionError:
        raise DumpFormatError(where, _too_deep(_text(text), max_depth)) from None
    except json.JSONDecodeError as exc:
        raise DumpFormatError(where, f"line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DumpFormatError(where, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if max_depth is not None and deeper_than(document, max_depth):
        raise DumpFormatError(where, _too_deep(_text(text), max_depth))
    return document


def too_deep(text: str | bytes, where: str | os.PathLike[str], bound: int = MAX_DEPTH) -> DumpFormatError:
    """The error of a document whose part nests deeper than ``bound`` (found by :func:`deeper_than`)."""
    return DumpFormatError(where, _too_deep(_text(text), bound))


def _text(text: str | bytes) -> str:
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else text

"""Caffe ``.prototxt`` files: a text-format parser and printer that keep every field.

**Parser** (:func:`parse`). Protobuf text format, read into a tree that keeps every field in
order -- known to Caffe or not -- so the file can be written back without a schema:

* a message is a list of :class:`Field`; a field is ``name: scalar``, ``name { ... }``,
  ``name: { ... }``, ``name < ... >`` or the list form ``name: [v, v, ...]`` (scalars or
  messages); fields may end with ``,`` or ``;``; extension names ``[pkg.ext]`` are kept;
* a scalar is kept verbatim (:class:`Scalar`): numbers (``-1``, ``1e-5``, ``0.5f``, ``0x1F``,
  ``-inf``), identifiers / enum values (``MAX``, ``true``) and strings -- a string value is the
  text of its quoted literal(s), adjacent literals (``"a" 'b'``) being one value; escapes
  (``\\n``, ``\\"``, ``\\123``, ``\\x41``, ``\\u00e9``, ...) are decoded only where the value is
  needed (:attr:`Scalar.value`);
* ``#`` comments and the layout are dropped.

Errors are :class:`PrototxtError` naming ``file:line:column`` and what was expected and found.
Numbers are not checked here: the protobuf parser does it (below).

**Printer** (:func:`format_text`): two-space indentation, one field per line, ``name: value`` and
``name {`` ... ``}``; scalars exactly as read. ``parse(format_text(tree)) == tree``.

The in-place layer rewrite that uses them is :mod:`convert.tool.inplace`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

from ..errors import CompareError

#: Messages nested deeper than this are refused (a guard against runaway recursion).
MAX_DEPTH = 100

LAYER_KEYS = ("layer", "layers")
PHASE_RULES = ("include", "exclude")


class PrototxtError(CompareError):
    """A prototxt cannot be read or rewritten; the message is ``file:line:column: problem``."""

    def __init__(self, path: object, problem: str, *, line: int | None = None, column: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        self.column = column
        where = self.path if line is None else f"{self.path}:{line}:{column}"
        super().__init__(f"{where}: {problem}")


# ------------------------------------------------------------------------------ tree


@dataclass
class Scalar:
    """A scalar value as written: ``kind`` is ``string``, ``number`` or ``identifier``.

    ``text`` is the source text (a string's quoted literals, joined by one space when there are
    several). Two scalars are equal when they are written the same.
    """

    text: str
    kind: str

    @property
    def value(self) -> str:
        """A string's decoded value (invalid UTF-8 as surrogate escapes); other kinds: the text."""
        if self.kind != "string":
            return self.text
        return b"".join(unescape(body) for body in _literal_bodies(self.text)).decode("utf-8", "surrogateescape")

    @classmethod
    def string(cls, value: str) -> Scalar:
        """A string scalar holding ``value`` (quoted with :func:`quote`)."""
        return cls(quote(value), "string")


Value = Union[Scalar, "Message", list[Union[Scalar, "Message"]]]


@dataclass
class Field:
    """``name`` and its value: a :class:`Scalar`, a :class:`Message` or a list of them (``[...]``).

    ``line`` (where the field starts; 0 when built in code) is not part of equality.
    """

    name: str
    value: Value
    line: int = field(default=0, compare=False)


@dataclass
class Message:
    """The fields of a message, in order."""

    fields: list[Field] = field(default_factory=list)

    def all(self, name: str) -> list[Field]:
        """The fields called ``name``, in order."""
        return [f for f in self.fields if f.name == name]

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def first_string(self, name: str) -> str | None:
        """The value of the first ``name`` field when it is a string scalar, else None."""
        for f in self.fields:
            if f.name == name and isinstance(f.value, Scalar) and f.value.kind == "string":
                return f.value.value
        return None


# ------------------------------------------------------------------------------ strings

_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v",
                   "\\": b"\\", "'": b"'", '"': b'"', "?": b"?"}
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
_PRINT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def _literal_bodies(text: str) -> Iterator[str]:
    """The bodies (without quotes) of the adjacent literals of a string scalar's text."""
    i = 0
    while i < len(text):
        quote_char = text[i]
        if quote_char not in "\"'":
            i += 1  # the space between literals
            continue
        j = i + 1
        while text[j] != quote_char:
            j += 2 if text[j] == "\\" else 1
        yield text[i + 1 : j]
        i = j + 1


def unescape(body: str) -> bytes:
    """The bytes a literal's body stands for (text as UTF-8, C escapes decoded).

    Escapes: ``\\n \\t \\r \\a \\b \\f \\v \\\\ \\' \\" \\?``, octal ``\\o``..``\\ooo``, hex ``\\xH`` or
    ``\\xHH``, ``\\uHHHH`` and ``\\UHHHHHHHH`` (as UTF-8). Raises ValueError for anything else.
    """
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char != "\\":
            j = body.find("\\", i)
            j = n if j < 0 else j
            out += body[i:j].encode("utf-8", "surrogateescape")
            i = j
            continue
        if i + 1 >= n:
            raise ValueError("a string ends with a lone backslash")
        esc = body[i + 1]
        if esc in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[esc]
            i += 2
        elif esc in _OCTAL:
            j = i + 1
            while j < n and j < i + 4 and body[j] in _OCTAL:
                j += 1
            value = int(body[i + 1 : j], 8)
            if value > 0xFF:
                raise ValueError(f"octal escape \\{body[i + 1 : j]} is more than one byte")
            out.append(value)
            i = j
        elif esc == "x":
            j = i + 2
            while j < n and j < i + 4 and body[j] in _HEX:
                j += 1
            if j == i + 2:
                raise ValueError("\\x is not followed by a hex digit")
            out.append(int(body[i + 2 : j], 16))
            i = j
        elif esc in "uU":
            width = 4 if esc == "u" else 8
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not set(digits) <= _HEX:
                raise ValueError(f"\\{esc} needs {width} hex digits")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ValueError(f"\\{esc}{digits} is not a Unicode scalar value")
            out += chr(code).encode("utf-8")
            i += 2 + width
        else:
            raise ValueError(f"unknown escape \\{esc}")
    return bytes(out)


def quote(value: str) -> str:
    """``value`` as a double-quoted literal: ``"`` ``\\`` and newlines escaped, other control
    characters (and bytes that were invalid UTF-8) as 3-digit octal; other characters as is."""
    parts = ['"']
    for char in value:
        code = ord(char)
        if char in _PRINT_ESCAPES:
            parts.append(_PRINT_ESCAPES[char])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            parts.append(f"\\{code - 0xDC00:03o}")
        elif code < 0x20 or code == 0x7F:
            parts.append(f"\\{code:03o}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


# ------------------------------------------------------------------------------ tokenizer

_TOKEN = re.compile(
    r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
  | (?P<badstring>["'])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(?:[0-9]|\.[0-9])[0-9A-Za-z_.+-]*|[-+][0-9A-Za-z_.][0-9A-Za-z_.+-]*)
  | (?P<punct>[{}<>\[\]:;,./])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # string, ident, number, punct, eof
    text: str
    line: int
    column: int

    def describe(self) -> str:
        if self.kind == "eof":
            return "the end of the file"
        shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"{self.kind} {shown}" if self.kind in ("string", "number") else repr(shown)


def tokenize(text: str, path: object = "<text>") -> list[Token]:
    """The tokens of ``text`` (comments and spaces dropped), ending with an ``eof`` token."""
    tokens: list[Token] = []
    line, line_start, pos = 1, 0, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        column = pos - line_start + 1
        if match is None:
            raise PrototxtError(path, f"unexpected character {text[pos]!r}", line=line, column=column)
        kind = match.lastgroup or ""
        if kind == "newline":
            line, line_start = line + 1, match.end()
        elif kind == "badstring":
            raise PrototxtError(path, "string not closed before the end of the line", line=line, column=column)
        elif kind not in ("space", "comment"):
            tokens.append(Token(kind, match.group(), line, column))
        pos = match.end()
    tokens.append(Token("eof", "", line, len(text) - line_start + 1))
    return tokens


# ------------------------------------------------------------------------------ parser


class _Parser:
    def __init__(self, text: str, path: object) -> None:
        self.path = path
        self.tokens = tokenize(text, path)
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            self.pos += 1
        return token

    def error(self, token: Token, problem: str) -> PrototxtError:
        return PrototxtError(self.path, problem, line=token.line, column=token.column)

    def is_punct(self, *texts: str) -> bool:
        token = self.peek()
        return token.kind == "punct" and token.text in texts

    def message_body(self, closer: str | None, opened: Token | None, depth: int) -> Message:
        if depth > MAX_DEPTH:
            raise self.error(self.peek(), f"messages nested more than {MAX_DEPTH} deep")
        message = Message()
        while True:
            token = self.peek()
            if token.kind == "eof":
                if closer is not None and opened is not None:
                    raise self.error(token, f"missing {closer!r} for the {opened.text!r} of line {opened.line}")
                return message
            if token.kind == "punct" and token.text in "}>":
                if token.text != closer:
                    expected = f"{closer!r} or a field name" if closer else "a field name"
                    raise self.error(token, f"expected {expected}, found {token.describe()}")
                self.take()
                return message
            message.fields.append(self.field(depth))
            if self.is_punct(",", ";"):
                self.take()

    def field_name(self) -> str:
        token = self.take()
        if token.kind == "ident":
            return token.text
        if token.kind == "punct" and token.text == "[":
            parts = []
            while not self.is_punct("]"):
                part = self.take()
                if not (part.kind == "ident" or (part.kind == "punct" and part.text in (".", "/"))):
                    raise self.error(part, f"expected an extension name inside [...], found {part.describe()}")
                parts.append(part.text)
            self.take()
            return "[" + "".join(parts) + "]"
        raise self.error(token, f"expected a field name, found {token.describe()}")

    def field(self, depth: int) -> Field:
        start = self.peek()
        name = self.field_name()
        if self.is_punct(":"):
            self.take()
            if self.is_punct("{", "<"):
                return Field(name, self.message(depth), start.line)
            if self.is_punct("["):
                return Field(name, self.list_value(depth), start.line)
            return Field(name, self.scalar(name), start.line)
        if self.is_punct("{", "<"):
            return Field(name, self.message(depth), start.line)
        found = self.peek().describe()
        raise self.error(self.peek(), f"expected ':' or '{{' after the field name {name!r}, found {found}")

    def message(self, depth: int) -> Message:
        opened = self.take()
        return self.message_body("}" if opened.text == "{" else ">", opened, depth + 1)

    def list_value(self, depth: int) -> list[Scalar | Message]:
        opened = self.take()
        items: list[Scalar | Message] = []
        if self.is_punct("]"):
            self.take()
            return items
        while True:
            items.append(self.message(depth) if self.is_punct("{", "<") else self.scalar("a list"))
            token = self.take()
            if token.kind == "punct" and token.text == "]":
                return items
            if not (token.kind == "punct" and token.text == ","):
                raise self.error(token, f"expected ',' or ']' in the list opened at line {opened.line}, "
                                        f"found {token.describe()}")

    def scalar(self, owner: str) -> Scalar:
        token = self.take()
        if token.kind == "string":
            literals = [token]
            while self.peek().kind == "string":
                literals.append(self.take())
            for literal in literals:
                try:
                    unescape(literal.text[1:-1])
                except ValueError as exc:
                    raise self.error(literal, f"bad string: {exc}") from None
            return Scalar(" ".join(t.text for t in literals), "string")
        if token.kind == "number":
            return Scalar(token.text, "number")
        if token.kind == "ident":
            return Scalar(token.text, "identifier")
        raise self.error(token, f"expected a value for {owner!r}, found {token.describe()}")


def parse(text: str, *, path: object = "<text>") -> Message:
    """The tree of a text-format message (see the module doc); PrototxtError if malformed."""
    return _Parser(text, path).message_body(None, None, 0)


# ------------------------------------------------------------------------------ printer


def _format_value(value: Scalar | Message, indent: str, lines: list[str], head: str, tail: str = "") -> None:
    if isinstance(value, Scalar):
        lines.append(f"{head}{value.text}{tail}")
        return
    lines.append(f"{head}{{")
    _format_fields(value, indent + "  ", lines)
    lines.append(f"{indent}}}{tail}")


def _format_fields(message: Message, indent: str, lines: list[str]) -> None:
    for item in message.fields:
        value = item.value
        if isinstance(value, Scalar):
            lines.append(f"{indent}{item.name}: {value.text}")
        elif isinstance(value, Message):
            _format_value(value, indent, lines, f"{indent}{item.name} ")
        elif not any(isinstance(v, Message) for v in value):
            lines.append(f"{indent}{item.name}: [{', '.join(v.text for v in value)}]")  # type: ignore[union-attr]
        else:
            lines.append(f"{indent}{item.name}: [")
            inner = indent + "  "
            for k, element in enumerate(value):
                _format_value(element, inner, lines, inner, "," if k < len(value) - 1 else "")
            lines.append(f"{indent}]")


def format_text(message: Message) -> str:
    """``message`` as text format (see the module doc), ending with a newline when not empty."""
    lines: list[str] = []
    _format_fields(message, "", lines)
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------------------ protobuf schema


# ------------------------------------------------------------------------------ in-place rewrite


__all__ = [
    "Field",
    "Message",
    "PrototxtError",
    "Scalar",
    "format_text",
    "parse",
    "quote",
    "tokenize",
    "unescape",
]

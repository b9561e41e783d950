"""Caffe ``.prototxt`` files: a text-format parser and printer, and the in-place layer rewrite.

The manual's ``inplace_layer_process`` step: before golden ``.npy`` files are dumped from a Caffe
model (one file per layer top, named after the *layer*), no layer may work in place, or the
blob read for layer A holds the output of the last in-place layer D that overwrote it.
:func:`remove_inplace` gives every in-place top a blob of its own; :func:`remove_inplace_file`
writes the result as ``new_{file name}`` beside the input.

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

**Protobuf check.** The input, and the rewritten text, are also read by protobuf's own
``google.protobuf.text_format`` against a minimal Caffe schema built at run time
(:func:`caffe_classes`: ``NetParameter{name, layers, input, input_dim, input_shape, layer}``,
``LayerParameter{name, type, bottom, top}``, ``V1LayerParameter{bottom, top, name}``,
``BlobShape{dim}``; the Caffe field numbers), other fields being skipped as unknown. So a file
Caffe could not read (a bad number, ``type: CONVOLUTION`` in a ``layer``, two ``name`` fields) is
refused with protobuf's message, and the rewrite is verified field by field.

**In-place rewrite** (:func:`remove_inplace`), over the ``layer`` (and legacy V1 ``layers``)
fields in file order:

* a layer's bottom that names a blob renamed earlier is rewired to the new name -- until a later
  layer (not in place) produces that blob name again, which ends the renaming;
* a top equal to one of the layer's own bottoms (in place) becomes a new blob named after the
  layer (``name``; a layer without name: the top's name), with ``_1``, ``_2``... appended when
  that name is already a blob of the net (any bottom, top or ``input``) or was given already;
* a layer with ``include`` / ``exclude`` phase rules is left in place (its bottoms and in-place
  tops are rewired together), with a note: renaming a blob only one phase produces would break
  the other phase (a training net's TRAIN-only ``Dropout``, for one);
* nothing else changes: every other field, value and the order are kept.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

from google.protobuf import descriptor_pb2, descriptor_pool, text_format
from google.protobuf.message_factory import GetMessageClass

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

_CAFFE_PACKAGE = "vcompare.caffe_min"


def _caffe_file() -> object:
    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    messages = {
        "BlobShape": [("dim", 1, F.TYPE_INT64, rep, "")],
        "LayerParameter": [("name", 1, F.TYPE_STRING, opt, ""), ("type", 2, F.TYPE_STRING, opt, ""),
                           ("bottom", 3, F.TYPE_STRING, rep, ""), ("top", 4, F.TYPE_STRING, rep, "")],
        "V1LayerParameter": [("bottom", 2, F.TYPE_STRING, rep, ""), ("top", 3, F.TYPE_STRING, rep, ""),
                             ("name", 4, F.TYPE_STRING, opt, "")],
        "NetParameter": [("name", 1, F.TYPE_STRING, opt, ""),
                         ("layers", 2, F.TYPE_MESSAGE, rep, "V1LayerParameter"),
                         ("input", 3, F.TYPE_STRING, rep, ""), ("input_dim", 4, F.TYPE_INT32, rep, ""),
                         ("input_shape", 8, F.TYPE_MESSAGE, rep, "BlobShape"),
                         ("layer", 100, F.TYPE_MESSAGE, rep, "LayerParameter")],
    }
    fdp = descriptor_pb2.FileDescriptorProto(name="vcompare_caffe_min.proto", package=_CAFFE_PACKAGE,
                                             syntax="proto2")
    for message_name, fields in messages.items():
        message = fdp.message_type.add(name=message_name)
        for name, number, kind, label, type_name in fields:
            item = message.field.add(name=name, number=number, type=kind, label=label)
            if type_name:
                item.type_name = f".{_CAFFE_PACKAGE}.{type_name}"
    return fdp


_CLASSES: dict[str, type] = {}


def caffe_classes() -> dict[str, type]:
    """The minimal Caffe message classes (see the module doc), built once in a private pool."""
    if not _CLASSES:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(_caffe_file())
        for name in ("BlobShape", "LayerParameter", "V1LayerParameter", "NetParameter"):
            _CLASSES[name] = GetMessageClass(pool.FindMessageTypeByName(f"{_CAFFE_PACKAGE}.{name}"))
    return _CLASSES


def _safe_tokens(text: str) -> list[Token]:
    try:
        return tokenize(text)
    except PrototxtError:
        return []


@dataclass(frozen=True)
class LayerView:
    """What the in-place rewrite reads and changes of a layer: its key, name, bottoms and tops."""

    key: str
    name: str
    bottom: tuple[str, ...]
    top: tuple[str, ...]


def protobuf_view(text: str, path: object = "<text>") -> list[LayerView]:
    """The layers of ``text`` as protobuf's text-format parser reads them (minimal schema, other
    fields skipped); PrototxtError with protobuf's message when it refuses the text."""
    net = caffe_classes()["NetParameter"]()
    logger = logging.getLogger("google.protobuf")  # unknown fields are skipped silently
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        text_format.Parse(text, net, allow_unknown_field=True, allow_unknown_extension=True)
    except text_format.ParseError as exc:
        line, column = exc.GetLine(), exc.GetColumn()
        problem = str(exc).split(" : ", 1)[-1] if line is not None else str(exc)
        if line is None:  # some messages ("Invalid field value: 1x2") carry no position: find the token
            culprit = problem.rsplit(": ", 1)[-1]
            token = next((t for t in _safe_tokens(text) if t.text == culprit), None)
            if token is not None:
                line, column = token.line, token.column
        raise PrototxtError(path, f"protobuf's text-format parser refuses it: {problem}", line=line,
                            column=column) from None
    finally:
        logger.setLevel(level)
    views: list[LayerView] = []
    for key in LAYER_KEYS:
        views.extend(LayerView(key, layer.name, tuple(layer.bottom), tuple(layer.top)) for layer in getattr(net, key))
    return views


# ------------------------------------------------------------------------------ in-place rewrite


@dataclass(frozen=True)
class Rename:
    """One in-place top given a blob of its own, and the later layers rewired to it."""

    layer: str
    layer_index: int
    old: str
    new: str
    consumers: tuple[str, ...]


@dataclass
class InplaceResult:
    """The rewritten net, what was renamed, and notes (layers left in place and why)."""

    net: Message
    layers: int
    renames: list[Rename] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: Path | None = None

    def summary(self) -> str:
        text = f"{self.layers} layer(s), {len(self.renames)} in-place top(s) renamed"
        if not self.renames:
            text += " (no layer works in place)"
        return text + (f"; written to {self.written}" if self.written else "")


@dataclass
class _Slot:
    """One bottom/top string of a layer (a field value, or an element of a list value)."""

    field: Field
    index: int | None

    def get(self) -> Scalar:
        value = self.field.value
        return value if self.index is None else value[self.index]  # type: ignore[index,return-value]

    def set(self, name: str) -> None:
        if self.index is None:
            self.field.value = Scalar.string(name)
        else:
            self.field.value[self.index] = Scalar.string(name)  # type: ignore[index]


def _slots(layer: Message, name: str, path: object, label: str) -> list[_Slot]:
    slots: list[_Slot] = []
    for item in layer.all(name):
        values = item.value if isinstance(item.value, list) else [item.value]
        for k, value in enumerate(values):
            if not (isinstance(value, Scalar) and value.kind == "string"):
                shown = value.text if isinstance(value, Scalar) else "a message"
                raise PrototxtError(path, f"{label}: {name} must be a quoted string, not {shown}", line=item.line,
                                    column=1)
            slots.append(_Slot(item, k if isinstance(item.value, list) else None))
    return slots


def clone(message: Message) -> Message:
    """A copy of the tree sharing only the scalars (which are never changed in place)."""

    def value_copy(value: Value) -> Value:
        if isinstance(value, Message):
            return clone(value)
        if isinstance(value, list):
            return [clone(v) if isinstance(v, Message) else v for v in value]
        return value

    return Message([Field(f.name, value_copy(f.value), f.line) for f in message.fields])


def layers_of(net: Message) -> list[tuple[str, Message]]:
    """The ``layer`` / ``layers`` messages of a net, in file order, with their key."""
    return [(f.name, f.value) for f in net.fields if f.name in LAYER_KEYS and isinstance(f.value, Message)]


def views_of(net: Message, path: object = "<text>") -> list[LayerView]:
    """:class:`LayerView` of every layer, ``layer`` ones first then ``layers`` (protobuf's order)."""
    views = []
    for key in LAYER_KEYS:
        for found, layer in layers_of(net):
            if found == key:
                views.append(LayerView(key, layer.first_string("name") or "",
                                       tuple(s.get().value for s in _slots(layer, "bottom", path, key)),
                                       tuple(s.get().value for s in _slots(layer, "top", path, key))))
    return views


def _blob_names(net: Message, path: object) -> set[str]:
    names = {f.value.value for f in net.all("input") if isinstance(f.value, Scalar)}
    for index, (key, layer) in enumerate(layers_of(net)):
        for what in ("bottom", "top"):
            names.update(s.get().value for s in _slots(layer, what, path, f"{key} #{index}"))
    return names


def remove_inplace(net: Message, *, path: object = "<text>") -> InplaceResult:
    """A copy of ``net`` in which no layer works in place (rules in the module doc)."""
    net = clone(net)
    taken = _blob_names(net, path)
    current: dict[str, str] = {}  # original blob name -> the name its latest producer writes now
    renames: list[tuple[int, str, str, str, list[str]]] = []
    by_new: dict[str, list[str]] = {}
    notes: list[str] = []
    for index, (key, layer) in enumerate(layers_of(net)):
        name = layer.first_string("name") or ""
        label = f"{key} {name!r}" if name else f"{key} #{index}"
        bottoms = _slots(layer, "bottom", path, label)
        tops = _slots(layer, "top", path, label)
        original_bottoms = [s.get().value for s in bottoms]
        for slot, blob in zip(bottoms, original_bottoms):
            if blob in current:
                slot.set(current[blob])
                users = by_new[current[blob]]
                if (name or f"#{index}") not in users:
                    users.append(name or f"#{index}")
        restricted = [rule for rule in PHASE_RULES if layer.has(rule)]
        for slot in tops:
            blob = slot.get().value
            if blob not in original_bottoms:
                current.pop(blob, None)  # a new producer of this name: later layers read it
                continue
            if restricted:
                if blob in current:
                    slot.set(current[blob])
                notes.append(f"{label} works in place on {blob!r} but has {'/'.join(restricted)} phase rules: "
                             f"left in place (renaming a blob only some phases produce would break the others; "
                             f"remove the rules -- a deploy net needs none -- to have it renamed)")
                continue
            base = name or blob
            new, k = base, 0
            while new in taken:
                k += 1
                new = f"{base}_{k}"
            taken.add(new)
            slot.set(new)
            current[blob] = new
            by_new[new] = []
            renames.append((index, name, blob, new, by_new[new]))
    result = InplaceResult(net, len(layers_of(net)), notes=notes)
    result.renames = [Rename(name, index, old, new, tuple(users)) for index, name, old, new, users in renames]
    return result


def _same_views(theirs: list[LayerView], ours: list[LayerView], path: object) -> None:
    """Raise PrototxtError naming the first layer protobuf's parser reads differently from ours."""
    if theirs == ours:
        return
    for k, (a, b) in enumerate(zip(theirs, ours)):
        if a != b:
            raise PrototxtError(path, f"protobuf's parser and this one read {a.key} #{k} differently "
                                      f"(protobuf: {a}, here: {b}); an escape such as \\? or \\8 in a "
                                      f"name is read differently by protobuf's Python parser: write the "
                                      f"character itself")
    raise PrototxtError(path, f"protobuf's parser reads {len(theirs)} layers, this one {len(ours)}")


def new_prototxt_path(path: str | Path) -> Path:
    """``new_{name}`` beside ``path`` (``resnet50.prototxt`` -> ``new_resnet50.prototxt``)."""
    path = Path(path)
    return path.with_name("new_" + path.name)


def remove_inplace_file(path: str | Path, out: str | Path | None = None) -> InplaceResult:
    """Read ``path``, rewrite it (:func:`remove_inplace`) and write ``out`` (default
    :func:`new_prototxt_path`). Both texts are checked by protobuf's parser (module doc).

    Raises PrototxtError (unreadable, malformed, refused by protobuf, a layer whose bottom or top
    is not a string, or an output that would overwrite the input).
    """
    source = Path(path)
    if not source.is_file():
        why = "no such file" if not source.exists() else "not a file (give the .prototxt file)"
        raise PrototxtError(source, why)
    target = Path(out) if out is not None else new_prototxt_path(source)
    if target.exists() and target.resolve() == source.resolve():
        raise PrototxtError(source, f"the output {target} is the input file; give another output path")
    try:
        text = source.read_bytes().decode("utf-8", "surrogateescape").removeprefix("\ufeff")  # a BOM
    except OSError as exc:
        raise PrototxtError(source, f"cannot read it ({exc.strerror or exc})") from None
    tree = parse(text, path=source)
    _same_views(protobuf_view(text, source), views_of(tree, source), source)
    result = remove_inplace(tree, path=source)
    written = format_text(result.net)
    _same_views(protobuf_view(written, target), views_of(result.net, target), target)
    try:
        target.write_bytes(written.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise PrototxtError(target, f"cannot write it ({exc.strerror or exc})") from None
    result.written = target
    return result


__all__ = [
    "Field",
    "InplaceResult",
    "LayerView",
    "Message",
    "PrototxtError",
    "Rename",
    "Scalar",
    "caffe_classes",
    "format_text",
    "new_prototxt_path",
    "parse",
    "protobuf_view",
    "quote",
    "remove_inplace",
    "remove_inplace_file",
    "tokenize",
    "unescape",
    "views_of",
]

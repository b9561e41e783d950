"""Caffe in-place layers rewritten (``vconvert inplace``).

The manual's ``inplace_layer_process`` step: before golden ``.npy`` files are dumped from a Caffe
model (one file per layer top, named after the *layer*), no layer may work in place, or the
blob read for layer A holds the output of the last in-place layer D that overwrote it.
:func:`remove_inplace` gives every in-place top a blob of its own; :func:`remove_inplace_file`
writes the result as ``new_{file name}`` beside the input.

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


The text format itself (parse, print, escapes) is :mod:`convert.tool.prototxt`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, text_format
from google.protobuf.message_factory import GetMessageClass

from .batch import write_atomically
from .prototxt import (
    LAYER_KEYS,
    PHASE_RULES,
    Field,
    Message,
    PrototxtError,
    Scalar,
    Token,
    Value,
    format_text,
    parse,
    tokenize,
)

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
    data = written.encode("utf-8", "surrogateescape")
    try:  # atomically, a link followed, a device written through (convert.atomic)
        write_atomically(target, lambda temporary: temporary.write_bytes(data))
    except OSError as exc:
        raise PrototxtError(target, f"cannot write it ({exc.strerror or exc})") from None
    result.written = target
    return result

"""``vconvert inplace`` (prototxt parser/printer, in-place removal), ``vconvert rename-npy`` and the
process pool of folder conversions."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.errors import OptionError
from convert.cli import run
from convert.codecs.dumpwrite import TensorSpec, write_dump
from convert.names.golden import parse_golden_name
from convert.tool import batch
from convert.tool.batch import FileOutcome, SourceFile, run_files, worker_count
from convert.tool.convert_dump import DumpConvertOptions, convert_dumps
from convert.tool.inplace import LayerView, protobuf_view, remove_inplace, remove_inplace_file, views_of
from convert.tool.naming import FAILED_LIST_FILE
from convert.tool.prototxt import Field, Message, PrototxtError, Scalar, format_text, parse, quote, tokenize, unescape
from convert.tool.rename_npy import golden_name_for, is_valid_name, rename_npy

TS = "1700000000000000"


def _vconvert(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# =========================================================================== prototxt parser/printer

RESNET = """\
name: "ResNet-50"   # a deploy net
input: "data"
input_dim: 1
input_dim: 3
input_dim: 224
input_dim: 224
layer {
  bottom: "data"
  top: "conv1"
  name: "conv1"
  type: "Convolution"
  convolution_param {
    num_output: 64
    kernel_size: 7
    pad: 3
    stride: 2
    weight_filler { type: "msra" std: 0.01 }
    bias_term: false
  }
}
layer { bottom: "conv1" top: "conv1" name: "bn_conv1" type: "BatchNorm"
        batch_norm_param { use_global_stats: true eps: 1e-5 } }
layer { bottom: "conv1" top: "conv1" name: "scale_conv1" type: "Scale" scale_param { bias_term: true } }
layer { bottom: "conv1" top: "conv1" name: "conv1_relu" type: "ReLU" }
layer { bottom: "conv1" top: "res2a_branch1" name: "res2a_branch1" type: "Convolution"
        convolution_param { num_output: 256 kernel_size: 1 } }
layer { bottom: "res2a_branch1" top: "res2a_branch1" name: "bn2a_branch1" type: "BatchNorm" }
layer { bottom: "conv1" top: "res2a_branch2a" name: "res2a_branch2a" type: "Convolution"
        convolution_param { num_output: 256 kernel_size: 1 } }
layer { bottom: "res2a_branch1" bottom: "res2a_branch2a" top: "res2a" name: "res2a" type: "Eltwise"
        eltwise_param { operation: SUM } }
layer { bottom: "res2a" top: "res2a" name: "res2a_relu" type: "ReLU" }
layer { bottom: "res2a" top: "prob" name: "prob" type: "Softmax" }
"""


def _layer(net: Message, name: str) -> Message:
    for item in net.fields:
        if isinstance(item.value, Message) and item.value.first_string("name") == name:
            return item.value
    raise KeyError(name)


def _io(net: Message, name: str) -> tuple[list[str], list[str]]:
    layer = _layer(net, name)
    return ([f.value.value for f in layer.all("bottom")], [f.value.value for f in layer.all("top")])


def _without_io(message: Message) -> Message:
    """The tree with every bottom/top field removed (what the rewrite must not touch)."""
    fields = []
    for item in message.fields:
        if item.name in ("bottom", "top"):
            continue
        value = _without_io(item.value) if isinstance(item.value, Message) else item.value
        fields.append(Field(item.name, value))
    return Message(fields)


def test_resnet_chain_gets_one_blob_per_layer() -> None:
    result = remove_inplace(parse(RESNET))
    net = result.net
    assert _io(net, "conv1") == (["data"], ["conv1"])
    assert _io(net, "bn_conv1") == (["conv1"], ["bn_conv1"])
    assert _io(net, "scale_conv1") == (["bn_conv1"], ["scale_conv1"])
    assert _io(net, "conv1_relu") == (["scale_conv1"], ["conv1_relu"])
    assert _io(net, "res2a_branch1") == (["conv1_relu"], ["res2a_branch1"])
    assert _io(net, "bn2a_branch1") == (["res2a_branch1"], ["bn2a_branch1"])
    assert _io(net, "res2a_branch2a") == (["conv1_relu"], ["res2a_branch2a"])
    assert _io(net, "res2a") == (["bn2a_branch1", "res2a_branch2a"], ["res2a"])
    assert _io(net, "res2a_relu") == (["res2a"], ["res2a_relu"])
    assert _io(net, "prob") == (["res2a_relu"], ["prob"])
    assert [(r.layer, r.old, r.new) for r in result.renames] == [
        ("bn_conv1", "conv1", "bn_conv1"), ("scale_conv1", "conv1", "scale_conv1"),
        ("conv1_relu", "conv1", "conv1_relu"), ("bn2a_branch1", "res2a_branch1", "bn2a_branch1"),
        ("res2a_relu", "res2a", "res2a_relu")]
    assert result.renames[2].consumers == ("res2a_branch1", "res2a_branch2a")
    assert result.layers == 10 and not result.notes


def test_rewrite_keeps_every_other_field_and_protobuf_agrees() -> None:
    tree = parse(RESNET)
    result = remove_inplace(tree)
    assert _without_io(result.net) == _without_io(tree)  # params, values, order: untouched
    assert tree == parse(RESNET)  # the input tree is not modified
    text = format_text(result.net)
    assert "weight_filler {\n      type: \"msra\"\n      std: 0.01\n    }" in text
    assert "eps: 1e-5" in text and "operation: SUM" in text and "bias_term: false" in text
    assert protobuf_view(text) == views_of(result.net)
    assert protobuf_view(RESNET) == views_of(tree)


def test_parse_print_parse_is_the_same_tree() -> None:
    tree = parse(RESNET)
    text = format_text(tree)
    assert parse(text) == tree
    assert format_text(parse(text)) == text


def test_comments_separators_and_alternative_delimiters() -> None:
    text = """# header comment
    layer < name: "a" # trailing comment
      top: "a", type: 'Input';
      input_param: { shape: { dim: 1 dim: 3 } } >
    layer{name:"b";bottom:"a";top:"a";type:"ReLU"}
    """
    tree = parse(text)
    assert [f.name for f in tree.fields] == ["layer", "layer"]
    assert "#" not in format_text(tree)
    assert views_of(tree) == [LayerView("layer", "a", (), ("a",)), LayerView("layer", "b", ("a",), ("a",))]
    assert protobuf_view(text) == views_of(tree)
    out = remove_inplace(tree).net
    assert views_of(out)[1] == LayerView("layer", "b", ("a",), ("b",))


def test_quoted_strings_with_escapes() -> None:
    text = r'''layer { name: "q\"uo\\te\n\t\101\x42\u00e9" "+" 'tail' bottom: "in" top: "in" }'''
    tree = parse(text)
    name = tree.fields[0].value.fields[0].value
    assert name.kind == "string"
    assert name.value == 'q"uo\\te\n\tAB\u00e9+tail'
    assert name.text == r'"q\"uo\\te\n\t\101\x42\u00e9" "+" ' + "'tail'"  # kept verbatim
    assert protobuf_view(text)[0].name == name.value
    result = remove_inplace(tree)
    # the new blob is named after the layer: written back as a valid, escaped literal
    assert result.renames[0].new == name.value
    printed = format_text(result.net)
    assert protobuf_view(printed)[0].top == (name.value,)
    assert parse(printed) == result.net


def test_list_values_and_extension_names() -> None:
    text = 'layer { name: "r" type: "ReLU" bottom: ["x", "y"] top: ["y"] [ext.pkg.opt]: 3 p: [1, 2.5, -inf] ' \
           'm: [{a: 1}, <b: "c">] e: [] }'
    tree = parse(text)
    assert parse(format_text(tree)) == tree
    out = remove_inplace(tree).net
    assert views_of(out) == [LayerView("layer", "r", ("x", "y"), ("r",))]
    assert "[ext.pkg.opt]: 3" in format_text(out)


def test_legacy_v1_layers_key() -> None:
    text = """
    layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" convolution_param { num_output: 8 } }
    layers { name: "relu1" type: RELU bottom: "conv1" top: "conv1" }
    layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1" pooling_param { pool: MAX } }
    """
    result = remove_inplace(parse(text))
    assert views_of(result.net) == [
        LayerView("layers", "conv1", ("data",), ("conv1",)),
        LayerView("layers", "relu1", ("conv1",), ("relu1",)),
        LayerView("layers", "pool1", ("relu1",), ("pool1",)),
    ]
    printed = format_text(result.net)
    assert "type: RELU" in printed
    assert protobuf_view(printed) == views_of(result.net)


def test_new_name_avoids_existing_blobs() -> None:
    text = """
    layer { name: "c" type: "Convolution" bottom: "data" top: "x" }
    layer { name: "relu" type: "ReLU" bottom: "x" top: "x" }
    layer { name: "other" type: "Convolution" bottom: "x" top: "relu" }
    layer { name: "relu" type: "ReLU" bottom: "relu" top: "relu" }
    """
    result = remove_inplace(parse(text))
    assert [(r.old, r.new) for r in result.renames] == [("x", "relu_1"), ("relu", "relu_2")]
    assert [v.bottom for v in views_of(result.net)] == [("data",), ("x",), ("relu_1",), ("relu",)]


def test_redefinition_ends_the_renaming() -> None:
    text = """
    layer { name: "relu" type: "ReLU" bottom: "a" top: "a" }
    layer { name: "use1" type: "Power" bottom: "a" top: "b" }
    layer { name: "again" type: "Input" top: "a" }
    layer { name: "use2" type: "Power" bottom: "a" top: "c" }
    """
    views = views_of(remove_inplace(parse(text)).net)
    assert [v.bottom for v in views] == [("a",), ("relu",), (), ("a",)]


def test_phase_restricted_in_place_layer_is_left_with_a_note() -> None:
    text = """
    layer { name: "fc6" type: "InnerProduct" bottom: "x" top: "fc6" }
    layer { name: "relu6" type: "ReLU" bottom: "fc6" top: "fc6" }
    layer { name: "drop6" type: "Dropout" bottom: "fc6" top: "fc6" include { phase: TRAIN } }
    layer { name: "fc7" type: "InnerProduct" bottom: "fc6" top: "fc7" }
    """
    result = remove_inplace(parse(text))
    assert [v.bottom + v.top for v in views_of(result.net)] == [
        ("x", "fc6"), ("fc6", "relu6"), ("relu6", "relu6"), ("relu6", "fc7")]
    assert len(result.notes) == 1 and "drop6" in result.notes[0] and "phase" in result.notes[0]


@pytest.mark.parametrize(("text", "where", "message"), [
    ('layer { name: "a"\n  top: "a"\n', ":3:1", "missing '}' for the '{' of line 1"),
    ('layer { name "a" }', ":1:14", "expected ':' or '{' after the field name 'name', found string \"a\""),
    ('layer { name: "a" >', ":1:19", "expected '}' or a field name, found '>'"),
    ('name: "unterminated\n', ":1:7", "string not closed"),
    ('name: "bad \\q escape"', ":1:7", "bad string: unknown escape \\q"),
    ('name: @', ":1:7", "unexpected character '@'"),
    ("name: }", ":1:7", "expected a value for 'name', found '}'"),
    ("layer { bottom: [\"a\" \"b\"; }", ":1:25", "expected ',' or ']'"),
])
def test_parse_errors_name_line_column_and_problem(text: str, where: str, message: str) -> None:
    with pytest.raises(PrototxtError) as info:
        parse(text, path="m.prototxt")
    assert str(info.value).startswith(f"m.prototxt{where}: "), str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ('layer { name: "a" type: CONVOLUTION }', "protobuf's text-format parser refuses it"),
    ('layer { name: "a" name: "b" }', "protobuf's text-format parser refuses it"),
    ('layer { name: "a" convolution_param { num_output: 1x2 } }', "protobuf's text-format parser refuses it"),
    ('layer { name: "a" bottom: data }', "protobuf's text-format parser refuses it"),
])
def test_files_caffe_could_not_read_are_refused(tmp_path: Path, text: str, message: str) -> None:
    model = tmp_path / "m.prototxt"
    model.write_text(text)
    with pytest.raises(PrototxtError, match=message) as info:
        remove_inplace_file(model)
    assert re.match(rf"{re.escape(str(model))}:1:\d+: ", str(info.value))
    assert not (tmp_path / "new_m.prototxt").exists()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # protobuf warns on the very escape tested
def test_escape_read_differently_by_protobuf_is_named(tmp_path: Path) -> None:
    model = tmp_path / "m.prototxt"
    model.write_text('layer { name: "a\\?" top: "x" }')  # C++ reads \? as ?, protobuf's Python parser as \?
    with pytest.raises(PrototxtError, match=r"read layer #0 differently .* write the character itself"):
        remove_inplace_file(model)


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(PrototxtError, match="nested more than"):
        parse("a {" * 500 + "}" * 500)


def test_tokenizer_keeps_numbers_and_identifiers_verbatim() -> None:
    kinds = [(t.kind, t.text) for t in tokenize('a: -1.5e-3 b: 0x1F c: .5f d: -inf e: nan f: true')]
    values = [t for t in kinds if t[0] in ("number", "ident")][1::2]
    assert values == [("number", "-1.5e-3"), ("number", "0x1F"), ("number", ".5f"), ("number", "-inf"),
                      ("ident", "nan"), ("ident", "true")]


# ---------------------------------------------------------------------------------- hypothesis

_names = st.text(alphabet="abcxyz_019/.", min_size=1, max_size=6)


@st.composite
def layer_chains(draw) -> str:
    """A random net: layers whose bottoms are earlier blobs and whose tops are fresh, or in place."""
    blobs = ["data"]
    lines = ['input: "data"']
    count = draw(st.integers(1, 14))
    for i in range(count):
        bottoms = draw(st.lists(st.sampled_from(blobs), min_size=0, max_size=3))
        in_place = bool(bottoms) and draw(st.booleans())
        name = draw(st.one_of(_names, st.just(f"L{i}"), st.sampled_from(blobs)))
        if in_place:
            tops = [draw(st.sampled_from(bottoms))]
        else:
            tops = draw(st.lists(st.one_of(_names, st.just(f"b{i}")), min_size=1, max_size=2, unique=True))
            tops = [t for t in tops if t not in blobs] or [f"fresh{i}"]
        blobs.extend(t for t in tops if t not in blobs)
        fields = [f"name: {quote(name)}", f"type: {quote(draw(st.sampled_from(['ReLU', 'Scale', 'Conv'])))}"]
        fields += [f"bottom: {quote(b)}" for b in bottoms] + [f"top: {quote(t)}" for t in tops]
        fields.insert(draw(st.integers(0, len(fields))), "p { q: 1 r: [2, 3] s: ENUM }")
        lines.append("layer { " + " ".join(fields) + " }")
    return "\n".join(lines) + "\n"


def _producers(views: list[LayerView], inputs: set[str]) -> list[list[tuple[int, int] | str]]:
    """For every layer, the producer (layer index, top index) or net input each bottom reads."""
    latest: dict[str, tuple[int, int] | str] = {name: f"input:{name}" for name in inputs}
    out = []
    for i, view in enumerate(views):
        out.append([latest.get(b, f"undefined:{b}") for b in view.bottom])
        for k, top in enumerate(view.top):
            latest[top] = (i, k)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=layer_chains())
def test_random_chains_lose_in_place_and_keep_the_dataflow(text: str) -> None:
    tree = parse(text)
    before = views_of(tree)
    result = remove_inplace(tree)
    after = views_of(result.net)
    # no layer works in place any more, and every top is written by one layer only
    assert all(not set(v.top) & set(v.bottom) for v in after)
    tops = [t for v in after for t in v.top]
    assert len(tops) == len(set(tops))
    # every bottom reads the same producer as before
    assert _producers(after, {"data"}) == _producers(before, {"data"})
    # new names are the layer's name (or it with a suffix) and collide with no original blob
    originals = {"data"} | {b for v in before for b in v.bottom + v.top}
    for rename in result.renames:
        assert rename.new not in originals
        assert rename.new == rename.layer or rename.new.startswith(rename.layer + "_")
    assert len(result.renames) == sum(bool(set(v.top) & set(v.bottom)) for v in before)
    # nothing but bottoms and tops changed; the text reads back the same, also for protobuf
    assert _without_io(result.net) == _without_io(tree)
    printed = format_text(result.net)
    assert parse(printed) == result.net
    assert protobuf_view(printed) == after
    assert protobuf_view(text) == before


_scalars = st.one_of(
    st.text(max_size=8).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)).map(
        lambda s: Scalar.string(s)),
    st.sampled_from(["1", "-2", "1e-5", "0.5f", "0x1F", "-inf", ".5"]).map(lambda t: Scalar(t, "number")),
    st.sampled_from(["MAX", "true", "SUM", "inf", "nan"]).map(lambda t: Scalar(t, "identifier")),
)
_field_names = st.sampled_from(["a", "b_c", "layer", "top", "x9", "[ext.name]"])


def _messages(children):
    return st.lists(st.builds(Field, _field_names, children), max_size=4).map(Message)


_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(_messages(inner), st.lists(st.one_of(_scalars, _messages(inner)), max_size=3)),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(tree=_messages(_values))
def test_any_tree_prints_and_parses_back_to_itself(tree: Message) -> None:
    text = format_text(tree)
    assert parse(text) == tree
    assert format_text(parse(text)) == text


@settings(max_examples=300, deadline=None)
@given(value=st.text().filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)))
def test_quote_round_trips_and_protobuf_reads_the_same_string(value: str) -> None:
    literal = quote(value)
    assert unescape(literal[1:-1]) == value.encode("utf-8")
    assert Scalar(literal, "string").value == value
    text = f"name: {literal}\nlayer {{ name: {literal} }}\n"
    assert protobuf_view(text) == [LayerView("layer", value, (), ())]


# --------------------------------------------------------------------------------- files & CLI


def test_inplace_cli_writes_new_file_beside_the_model(tmp_path: Path, capsys) -> None:
    model = tmp_path / "resnet50.prototxt"
    model.write_text(RESNET)
    code, out, err = _vconvert(capsys, "inplace", "-i", model)
    assert code == 0, err
    written = tmp_path / "new_resnet50.prototxt"
    assert written.is_file() and model.read_text() == RESNET
    assert "layer bn_conv1: top conv1 -> bn_conv1; read by scale_conv1" in out
    assert "10 layer(s), 5 in-place top(s) renamed; written to" in out
    assert views_of(parse(written.read_text())) == views_of(remove_inplace(parse(RESNET)).net)
    code, out, err = _vconvert(capsys, "inplace", "-i", model, "-o", tmp_path / "sub.prototxt")
    assert code == 0 and (tmp_path / "sub.prototxt").is_file()


def test_inplace_cli_errors_exit_2_with_one_line(tmp_path: Path, capsys) -> None:
    code, _, err = _vconvert(capsys, "inplace", "-i", tmp_path / "none.prototxt")
    assert code == 2 and "none.prototxt: no such file" in err
    bad = tmp_path / "bad.prototxt"
    bad.write_text('layer {\n  name: "a"\n  top: "a"\n')
    code, _, err = _vconvert(capsys, "inplace", "-i", bad)
    assert code == 2 and f"{bad}:4:1: missing '}}'" in err and len(err.strip().splitlines()) == 1
    code, _, err = _vconvert(capsys, "inplace", "-i", bad, "-o", bad)
    assert code == 2 and "is the input file" in err


def test_net_without_in_place_layers_is_copied(tmp_path: Path) -> None:
    model = tmp_path / "plain.prototxt"
    model.write_text('layer { name: "a" type: "Input" top: "a" }\n')
    result = remove_inplace_file(model)
    assert result.renames == [] and "no layer works in place" in result.summary()
    assert (tmp_path / "new_plain.prototxt").read_text() == 'layer {\n  name: "a"\n  type: "Input"\n  top: "a"\n}\n'


def test_byte_order_mark_and_crlf_are_accepted(tmp_path: Path) -> None:
    model = tmp_path / "bom.prototxt"
    model.write_bytes(b'\xef\xbb\xbflayer {\r\n  name: "r" bottom: "x" top: "x"\r\n}\r\n')
    result = remove_inplace_file(model)
    assert [(r.old, r.new) for r in result.renames] == [("x", "r")]


# =========================================================================== rename-npy


@pytest.mark.parametrize(("relative", "expected", "note"), [
    ("a/b/Conv2D:0.npy", f"a_b_Conv2D.0.{TS}.npy", None),
    ("a_b_Conv2D.0.npy", f"a_b_Conv2D.0.{TS}.npy", None),
    ("Conv2D:1.npy", f"Conv2D.1.{TS}.npy", None),
    ("pool.0.1589195081588.npy", f"pool.0.{TS}.npy", "13 digits"),
    ("pool.0.15891950815880181.npy", f"pool.0.{TS}.npy", "17 digits"),
    ("sub/pool.0.1589195081588018.npy", "sub_pool.0.1589195081588018.npy", None),
    ("block.1.0.npy", f"block.1.0.{TS}.npy", None),
    ("scope/layer-1/Relu:12.npy", f"scope_layer-1_Relu.12.{TS}.npy", None),
])
def test_golden_names(relative: str, expected: str, note: str | None) -> None:
    new = golden_name_for(relative, TS)
    assert new.name == expected and new.refused is None
    assert (note is None and new.note is None) or (note in new.note)
    assert is_valid_name(expected)


@pytest.mark.parametrize(("relative", "why"), [
    ("Conv2D.npy", "no output index"),
    ("Conv2D.1589195081588018.npy", "is a timestamp"),
    ("0.npy", "no output index"),
    ("sp ace:0.npy", "characters outside A-Za-z0-9_.-"),
    ("op\u00e9:0.npy", "characters outside"),
    ("x" * 250 + ":0.npy", "bytes"),
])
def test_golden_name_refusals(relative: str, why: str) -> None:
    new = golden_name_for(relative, TS)
    assert new.name is None and why in new.refused


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.text(alphabet="abcXYZ09_-", min_size=1, max_size=5), min_size=1, max_size=3),
       index=st.integers(0, 999), sep=st.sampled_from([":", "."]))
def test_tfdbg_names_become_golden_names_with_the_same_op_and_index(parts: list[str], index: int, sep: str) -> None:
    new = golden_name_for("/".join(parts) + f"{sep}{index}.npy", TS)
    parsed = parse_golden_name(new.name)
    assert parsed is not None and parsed.op_name == "_".join(parts)
    assert parsed.output_index == index and parsed.timestamp_digits == TS


def _touch(folder: Path, relative: str, value: float = 0.0) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.array([value], np.float32))
    if not relative.endswith(".npy"):  # np.save appends .npy
        path.with_name(path.name + ".npy").rename(path)
    return path


def test_rename_folder_reports_renames_and_refusals(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "tf"
    _touch(folder, "a/b/Conv2D:0.npy", 1)
    _touch(folder, "a_b_Conv2D.0.npy", 2)  # collides with the one above
    _touch(folder, "Relu:0.npy", 3)
    _touch(folder, "pool.0.1589195081588.npy", 4)
    _touch(folder, "ok.0.1589195081588018.npy", 5)
    _touch(folder, "noindex.npy", 6)
    _touch(folder, f"sub_taken.0.{TS}.npy", 7)
    _touch(folder, f"sub/taken.0.{TS}.npy", 8)  # its new name exists at the top level
    (folder / "notes.txt").write_text("not a .npy file")
    report = rename_npy(folder, timestamp=TS)
    assert sorted((m.old.relative_to(folder).as_posix(), m.new.name) for m in report.renamed) == [
        ("Relu:0.npy", f"Relu.0.{TS}.npy"), ("pool.0.1589195081588.npy", f"pool.0.{TS}.npy")]
    assert [m.note for m in report.renamed if m.note] == [
        "timestamp 1589195081588 has 13 digits, not 16: replaced"]
    refused = {p.relative_to(folder).as_posix(): why for p, why in report.refused}
    assert set(refused) == {"a/b/Conv2D:0.npy", "a_b_Conv2D.0.npy", "noindex.npy", f"sub/taken.0.{TS}.npy"}
    assert "2 files would become a_b_Conv2D.0." in refused["a_b_Conv2D.0.npy"]
    assert refused[f"sub/taken.0.{TS}.npy"] == f"sub_taken.0.{TS}.npy already exists"
    assert sorted(p.name for p in report.valid) == ["ok.0.1589195081588018.npy", f"sub_taken.0.{TS}.npy"]
    assert not report.all_renamed
    # data moved with its name; refused and valid files untouched
    assert np.load(folder / f"Relu.0.{TS}.npy")[0] == 3 and not (folder / "Relu:0.npy").exists()
    assert np.load(folder / f"sub_taken.0.{TS}.npy")[0] == 7
    assert np.load(folder / "sub" / f"taken.0.{TS}.npy")[0] == 8
    assert (folder / "a" / "b" / "Conv2D:0.npy").is_file() and (folder / "a_b_Conv2D.0.npy").is_file()


def test_rename_cli_dry_run_then_run(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "tf"
    _touch(folder, "net/conv/Conv2D:0.npy")
    _touch(folder, "net/relu/Relu:0.npy")
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.npy"))
    code, out, err = _vconvert(capsys, "rename-npy", "-i", folder, "--dry-run")
    assert code == 0, err
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.npy")) == before
    assert out.count("would rename: ") == 2 and "2 file(s) would be renamed, 0 already valid" in out
    start_us = time.time_ns() // 1000
    code, out, err = _vconvert(capsys, "rename-npy", "-i", folder)
    assert code == 0, err
    names = sorted(p.name for p in folder.glob("*.npy"))
    stamps = {parse_golden_name(n).timestamp for n in names}
    assert len(stamps) == 1 and start_us <= stamps.pop() <= time.time_ns() // 1000  # one per run, now
    assert [n.rsplit(".", 2)[0] for n in names] == ["net_conv_Conv2D.0", "net_relu_Relu.0"]
    assert f"renamed: {folder / 'net' / 'conv' / 'Conv2D:0.npy'} -> {names[0]}" in out
    code, out, err = _vconvert(capsys, "rename-npy", "-i", folder)  # second run: nothing left to do
    assert code == 0 and "0 file(s) renamed, 2 already valid" in out


def test_rename_cli_exit_codes(tmp_path: Path, capsys) -> None:
    code, _, err = _vconvert(capsys, "rename-npy", "-i", tmp_path / "missing")
    assert code == 2 and "no such folder" in err
    (tmp_path / "empty").mkdir()
    code, _, err = _vconvert(capsys, "rename-npy", "-i", tmp_path / "empty")
    assert code == 2 and "no .npy files" in err
    _touch(tmp_path / "f", "NoIndex.npy")
    _touch(tmp_path / "f", "Good:0.npy")
    code, out, err = _vconvert(capsys, "rename-npy", "-i", tmp_path / "f")
    assert code == 1 and "refused: " in err and "NoIndex.npy: no output index" in err
    assert "1 file(s) renamed, 0 already valid, 1 refused" in out


def test_rename_refuses_a_bad_timestamp_argument(tmp_path: Path) -> None:
    _touch(tmp_path, "a:0.npy")
    with pytest.raises(OptionError, match="not 16 digits"):
        rename_npy(tmp_path, timestamp="123")


# =========================================================================== parallel folders


def _dumps(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(count):
        x = rng.standard_normal((1, 1, 3, 3, 16)).astype(np.float16)
        spec = TensorSpec(x, format="NC1HWC0", original_shape=(1, 5, 3, 3))
        paths.append(write_dump(folder / f"Conv2D.c{i}.{i}.{TS}", inputs=[spec], outputs=[spec]))
    return paths


@pytest.fixture
def four_cpus(monkeypatch):
    """Pretend to have 4 CPUs so that the process pool really runs, whatever the machine."""
    monkeypatch.setattr(batch, "usable_cpus", lambda: 4)


def test_worker_count_rules(four_cpus) -> None:
    assert worker_count(None, 10) == 4 and worker_count(0, 10) == 4
    assert worker_count(2, 10) == 2 and worker_count(8, 10) == 4 and worker_count(0, 3) == 3
    assert worker_count(0, 1) == 1 and worker_count(0, 0) == 1
    with pytest.raises(OptionError, match="--workers -1"):
        worker_count(-1, 3)


def test_pool_matches_serial_and_lists_failures(tmp_path: Path, four_cpus) -> None:
    src = tmp_path / "dumps"
    _dumps(src, 9)
    (src / "Conv2D.broken.1.1700000000000001").write_bytes(b"\x05not a dump")
    reports = {}
    for workers in (1, 0):
        out = tmp_path / f"out{workers}"
        reports[workers] = convert_dumps(src, out, DumpConvertOptions(target_format="NCHW", workers=workers))
    serial, pooled = reports[1], reports[0]
    assert [p.name for p in serial.written] == [p.name for p in pooled.written] and len(serial.written) == 18
    for a, b in zip(serial.written, pooled.written):
        assert a.read_bytes() == b.read_bytes()
    assert list(pooled.failed) == [src / "Conv2D.broken.1.1700000000000001"]
    listed = (tmp_path / "out0" / FAILED_LIST_FILE).read_text()
    assert listed.startswith(f"{src / 'Conv2D.broken.1.1700000000000001'}: ")


def _job_with_bug(source: SourceFile) -> FileOutcome:
    if source.name == "b":
        raise RuntimeError("boom")
    outcome = FileOutcome(source)
    outcome.notes.append(f"{source.name} in {os.getpid()}")
    return outcome


def _job_that_dies(source: SourceFile) -> FileOutcome:
    if source.name == "b":
        os._exit(3)
    return FileOutcome(source)


@pytest.mark.parametrize("pool", ["process", "thread"])
def test_a_job_that_raises_fails_its_file_only(four_cpus, pool: str) -> None:
    sources = [SourceFile(Path(n), n) for n in "abcd"]
    outcomes = run_files(sources, _job_with_bug, 0, pool=pool)
    assert [o.source.name for o in outcomes] == list("abcd")
    assert outcomes[1].errors == ["unexpected error: RuntimeError: boom"]
    assert all(not o.errors and o.notes for k, o in enumerate(outcomes) if k != 1)
    pids = {int(o.notes[0].rsplit(" ", 1)[1]) for k, o in enumerate(outcomes) if k != 1}
    assert (os.getpid() not in pids) == (pool == "process")


def test_a_dead_worker_fails_its_files_with_a_hint(four_cpus) -> None:
    sources = [SourceFile(Path(n), n) for n in "abcdef"]
    outcomes = run_files(sources, _job_that_dies, 0, pool="process")
    assert len(outcomes) == 6
    failed = [o for o in outcomes if o.errors]
    assert outcomes[1] in failed
    assert all("worker process died" in o.errors[0] and "--workers 1" in o.errors[0] for o in failed)


def test_closures_and_plugins_run_in_the_pool(tmp_path: Path, four_cpus) -> None:
    plugins = tmp_path / "plugins" / "format_convert"
    plugins.mkdir(parents=True)
    (plugins / "convert_NC1HWC0_to_NCHW.py").write_text(
        "import numpy as np\n\ndef convert(shape_from, shape_to, array):\n"
        "    return np.full(shape_to, 7, np.float32)\n")
    os.chmod(plugins / "convert_NC1HWC0_to_NCHW.py", 0o644)
    src = tmp_path / "dumps"
    _dumps(src, 4)
    code = run(["dump", "-d", str(src), "-out", str(tmp_path / "o"), "-f", "NCHW", "-custom",
                str(tmp_path / "plugins"), "--workers", "3"])
    assert code == 0
    outs = sorted((tmp_path / "o").glob("*.npy"))
    assert len(outs) == 8 and all((np.load(p) == 7).all() for p in outs)


def test_workers_option_on_every_folder_command(tmp_path: Path, capsys) -> None:
    src = tmp_path / "dumps"
    _dumps(src, 3)
    for args in (["dump", "-d", src, "-out", tmp_path / "a"], ["txt", "-i", src, "-o", tmp_path / "b"],
                 ["data", "-type", "offline", "-target", "numpy", "-i", src, "-o", tmp_path / "c"]):
        for workers in ("1", "2"):
            code, _, err = _vconvert(capsys, *args, "--workers", workers)
            assert code == 0, err
    code, _, err = _vconvert(capsys, "dump", "-d", src, "-out", tmp_path / "a", "--workers", "-1")
    assert code == 2 and "--workers" in err

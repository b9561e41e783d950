"""compare.loaders.ms_ir: the three ways MindSpore graph files give a kernel's full name.

* today's (2.x): ``# Fullname with scope: ({scope}/{Type}-op{K})``;
* the older manuals' (seeds 000 / 002): a plain ``: ({scope}/{Type}-op{K})`` line under the node's
  abstract lines;
* the r1.3 manual's sample (seed 001): ``: full_name_with_scope: ({scope}/{Type}-op{K})``.

Small ``.ir`` texts written here, modelled on the manuals' excerpts (facts only), one per form;
then a graph with no usable names (the note it gives, in the graph and in the run's notes), and
a whole comparison on a synthetic r1.x sync tree whose first-divergence summary names the source
line of an old-form graph.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from compare.cli import app
from compare.loaders import load_run
from compare.loaders.ms_ir import read_ir
from compare.loaders.ms_ir_text import graph_gives_names
from compare.testing.synthetic_mindspore import OPS, make_trees, ms_file_op

SCOPE = "Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op107"
BIAS = "Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/BiasAdd-op105"
HEAD = """#IR entry      : @kernel_graph_0
#Total params  : 2

%para1_x: <Tensor[Float32]x[const vector][32, 128, 13, 13]>  :  IsWeight: false
%para2_conv3.weight: <Tensor[Float16]x[const vector][192, 128, 3, 3]>  :  IsWeight: true

#Total subgraph : 1

subgraph attr:
subgraph @kernel_graph_0() {
"""
TAIL = """  Return(%1)
      : (<Tensor[Float16]x[const vector][32, 192, 13, 13]>)
}
"""
HOST = ("      : (<Tensor[Float32]x[const vector][32, 128, 13, 13]>, <Tensor[Float16]x[const vector][192, 128, 3, 3]>)"
        " -> (<Tensor[Float16]x[const vector][32, 192, 13, 13]>)\n")
DEVICE = ("      : (<Float16xNC1HWC0[const vector][32, 8, 13, 13, 16]>, <Float16xFracZ[const vector][72, 12, 16, 16]>)"
          " -> (<Float16xNC1HWC0[const vector][32, 12, 13, 13, 16]>)\n")
TRACE = "      # In file /models/official/cv/alexnet/src/alexnet.py(58)/        x = self.conv3(x)/\n"


def _graph_text(name_line: str, bias_line: str) -> str:
    """A two-kernel body (Conv2D then BiasAdd), each kernel's name given by the line passed."""
    conv = ("  %0(equivoutput) = Conv2D(%para1_x, %para2_conv3.weight) {instance name: conv2d} primitive_attrs: "
            "{pri_format: NC1HWC0, stride: (1, 1, 1, 1), pad_mod: same, out_channel: 192, input_names: [x, w]}\n"
            + HOST + DEVICE + name_line + TRACE)
    bias = ("  %1(equivoutput) = BiasAdd(%0, %para2_conv3.weight) {instance name: bias_add} primitive_attrs: "
            "{input_names: [x, b], format: NCHW}\n"
            "      : (<Tensor[Float16]x[const vector][32, 192, 13, 13]>) -> (<Tensor[Float16]x[const vector][32, 192, 13, 13]>)\n"
            + bias_line + TRACE)
    return HEAD + conv + bias + TAIL


def _read(tmp_path: Path, text: str):
    path = tmp_path / "ms_output_trace_code_graph_0.ir"
    path.write_text(text, encoding="utf-8")
    return read_ir(path)


FORMS = {
    "today": "      # Fullname with scope: ({})\n",
    "seed-000-002": "      : ({})\n",
    "seed-001": "      : full_name_with_scope: ({})\n",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_names_the_kernels(tmp_path: Path, form: str) -> None:
    line = FORMS[form]
    graph = _read(tmp_path, _graph_text(line.format(SCOPE), line.format(BIAS)))
    conv, bias = SCOPE.replace("/", "_"), BIAS.replace("/", "_")
    assert list(graph.nodes) == [conv, bias]
    node = graph.nodes[conv]
    assert node.op_type == "Conv2D"
    assert node.source is not None
    assert (node.source.file, node.source.line, node.source.code) == (
        "/models/official/cv/alexnet/src/alexnet.py", 58, "x = self.conv3(x)")
    assert graph.nodes[bias].inputs[0].producer == conv
    assert graph.notes == ()
    assert graph_gives_names(tmp_path / "ms_output_trace_code_graph_0.ir")


def test_forms_mixed_in_one_file_first_line_wins(tmp_path: Path) -> None:
    """A node with a plain ``: (...)`` line and a ``# Fullname with scope`` line keeps the first."""
    both = FORMS["seed-000-002"].format(SCOPE) + FORMS["today"].format(BIAS)
    graph = _read(tmp_path, _graph_text(both, FORMS["seed-001"].format(BIAS)))
    assert list(graph.nodes) == [SCOPE.replace("/", "_"), BIAS.replace("/", "_")]


@pytest.mark.parametrize("line", [
    "      : (<Tensor[Float32], (2, 2)>) -> (<Tensor[Float32], (2, 2)>)\n",
    "      : () -> (<Tensor[Float32], (2, 2)>)\n",
    "      : (<Float16xNC1HWC0[const vector][32, 8, 13, 13, 16]>)\n",
    "      : ()\n",
    "      : (a b)\n",
    "      : full_name_with_scope: ()\n",
])
def test_abstract_lines_are_not_names(tmp_path: Path, line: str) -> None:
    graph = _read(tmp_path, _graph_text(line, line))
    assert list(graph.nodes) == ["kernel_graph_0_Conv2D-%0", "kernel_graph_0_BiasAdd-%1"]


_SCOPE_PART = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="-_.@"), min_size=1,
                      max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_SCOPE_PART, min_size=1, max_size=5), form=st.sampled_from(sorted(FORMS)),
       indent=st.sampled_from(["", "  ", "       ", "\t"]))
def test_any_scope_name_reads_back_in_every_form(tmp_path: Path, parts: list[str], form: str, indent: str) -> None:
    scope = "/".join(parts)
    line = indent + FORMS[form].lstrip().format(scope)
    graph = _read(tmp_path, _graph_text(line, ""))
    assert next(iter(graph.nodes)) == scope.replace("/", "_")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inner=st.text(max_size=40), arrow=st.booleans())
def test_abstract_like_lines_never_name(tmp_path: Path, inner: str, arrow: bool) -> None:
    """A ``:`` line holding a ``<`` (a tensor abstract) or a ``->`` is never a name."""
    text = f"(<{inner}>)" + (" -> (<T>)" if arrow else "")
    line = "      : " + text.replace("\n", " ").replace("\r", " ") + "\n"
    graph = _read(tmp_path, _graph_text(line, line))
    assert list(graph.nodes) == ["kernel_graph_0_Conv2D-%0", "kernel_graph_0_BiasAdd-%1"]


def test_no_usable_names_gives_a_note(tmp_path: Path) -> None:
    graph = _read(tmp_path, _graph_text("", ""))
    assert list(graph.nodes) == ["kernel_graph_0_Conv2D-%0", "kernel_graph_0_BiasAdd-%1"]
    assert graph.notes == (
        ("ms_output_trace_code_graph_0.ir: none of its 2 kernels has a full name (no '# Fullname with scope: (...)', "
         "': full_name_with_scope: (...)' or ': (...)' line under a node): its kernels cannot be matched to the "
         "dumped operators, so the first divergence has no source line"),)
    assert not graph_gives_names(tmp_path / "ms_output_trace_code_graph_0.ir")


def test_graph_gives_names_on_other_files(tmp_path: Path) -> None:
    path = tmp_path / "g.ir"
    path.write_text("# graph\n")
    assert not graph_gives_names(path)
    path.write_bytes(b"\xff\x00" * 100)
    assert not graph_gives_names(path)
    with pytest.raises(OSError):
        graph_gives_names(tmp_path / "absent.ir")


# --------------------------------------------------------------------------------------------
# a run whose graph file gives no names, and a whole comparison with an old-form graph
# --------------------------------------------------------------------------------------------

#: Where the user wrote each kernel of the synthetic network (an old-form ``In file`` line).
LINES = {op.name: 40 + number for number, op in enumerate(OPS)}


def _old_graph(name_line: str) -> str:
    """The synthetic network's kernels in an r1.x ``.ir`` (seed 000's form by default)."""
    body = ""
    previous = "%para1_x"
    for number, op in enumerate(OPS):
        body += f"  %{number}(equivoutput) = {op.type}({previous}) {{instance name: k{number}}}\n"
        body += "      : (<Tensor[Float32]x[const vector][1, 4]>) -> (<Tensor[Float32]x[const vector][1, 4]>)\n"
        body += name_line.format(op.name) if name_line else ""
        body += f"      # In file /home/user/net.py({LINES[op.name]})/        x = self.k{number}(x)/\n"
        previous = f"%{number}"
    return ("%para1_x: <Tensor[Float32]x[const vector][1, 3, 4, 4]>  :  IsWeight: false\n\n"
            "subgraph @kernel_graph_0() {\n" + body + f"  Return({previous})\n}}\n")


def _sync_pair(tmp_path: Path, name_line: str) -> tuple[Path, Path]:
    """The synthetic r1.x sync tree with an old-form graph (left), and a copy whose ReLU output
    differs (right)."""
    left = make_trees(tmp_path / "trees")["sync"]
    (left / "Net" / "device_0" / "graphs" / "ms_output_trace_code_graph_0.ir").write_text(_old_graph(name_line))
    right = tmp_path / "right"
    shutil.copytree(left, right)
    relu = OPS[1]
    for path in (right / "Net" / "device_0").glob(f"iteration_*/{ms_file_op(relu.name)}_output_0_*.bin"):
        data = np.fromfile(path, dtype=np.float32)
        (data * 1.5 + 0.25).astype(np.float32).tofile(path)
    return left, right


def test_run_note_when_the_graph_gives_no_names(tmp_path: Path) -> None:
    left, _ = _sync_pair(tmp_path, "")
    run = load_run(left)
    ir = left / "Net" / "device_0" / "graphs" / "ms_output_trace_code_graph_0.ir"
    assert (f"graph file {ir} gives no operator names (no '# Fullname with scope: (...)', "
            "': full_name_with_scope: (...)' or ': (...)' line under a node): the first-divergence summary "
            "cannot name source lines") in run.notes


def test_run_without_note_when_the_graph_gives_names(tmp_path: Path) -> None:
    left, _ = _sync_pair(tmp_path, FORMS["seed-000-002"])
    assert not [n for n in load_run(left).notes if "graph file" in n]


@pytest.mark.parametrize("form", ["seed-000-002", "seed-001"])
def test_first_divergence_names_the_source_line(tmp_path: Path, form: str) -> None:
    left, right = _sync_pair(tmp_path, FORMS[form])
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out / "r.csv"),
                                      "--json", str(out / "r.json")])
    assert result.exit_code == 0, result.output
    relu = OPS[1].name
    assert f"source: /home/user/net.py:{LINES[relu]}" in result.output
    document = json.loads((out / "r.json").read_text())
    first = document["localisation"]["first_divergence"]
    assert first["op"] == relu and first["source"]["line"] == LINES[relu]
    assert not [n for n in document["notes"] if "graph file" in n]


def test_no_names_note_reaches_the_json_result(tmp_path: Path) -> None:
    left, right = _sync_pair(tmp_path, "")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["-l", str(left), "-r", str(right), "-o", str(out / "r.csv"),
                                      "--json", str(out / "r.json")])
    assert result.exit_code == 0, result.output
    assert "gives no operator names" in result.output
    document = json.loads((out / "r.json").read_text())
    assert [n for n in document["notes"] if "gives no operator names" in n]
    assert [n for n in document["localisation"]["notes"] if "none of its 4 kernels has a full name" in n]

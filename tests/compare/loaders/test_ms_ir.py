"""compare.loaders.ms_ir: MindSpore ``.ir`` graph files read into OpGraph records.

On the real MindSpore 2.10 files of ``../shared/mindspore-real`` (skipped with a message when
absent): names, edges, roles, source lines, order against the execution-order file, and every
dumped kernel against the graph (input slots counted from the ``input.N`` files). Then small
synthetic ``.ir`` texts for each rule, and arbitrary text (hypothesis): only the documented
error, never slow.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.diverge.records import GraphSource, NodeRole, OpGraph
from compare.errors import DumpFormatError
from compare.loaders.ms_ir import find_ir, in_execution_order, match_dumped, read_ir
from compare.loaders.ms_ir_text import parse_trace, user_line
from compare.loaders.ms_order import read_execution_order
from convert.names.keys import name_key

NET = "Default_network-WithLossCell__backbone-Net_"
GRAD = "Gradients_" + NET
FC1 = NET + "fc1-Dense_MatMul-op0"
STEM = NET + "stem-Conv2d_Conv2D-op0"
#: ``{op_type}.{op_name}.{task}.{stream}.{timestamp}.{input|output}.{slot}.{format}.{dtype}.npy``
NPY = re.compile(r"(?P<type>[^.]+)\.(?P<op>.+)\.\d+\.\d+\.(?P<ts>\d+)\.(?P<kind>input|output)\.(?P<slot>\d+)\."
                 r"[A-Za-z0-9_]+\.(?P<dtype>[A-Za-z0-9_]+)\.npy")
#: The kernels MindSpore 2.10 rebuilt after writing the ``.ir`` (other ``-opN`` in the dump names,
#: no file for their trailing ``Tensor`` input).
REBUILT = ("Conv2DBackpropInput", "Conv2DBackpropFilter")
#: dtype of the dump file of a literal argument, by the literal's constructor.
LITERAL_DTYPES = {"Bool": "Bool", "I64": "Int64", "F32": "Float32", "(I64": "Int64"}


# --------------------------------------------------------------------------------------------
# the real files
# --------------------------------------------------------------------------------------------

def _rank(tree: str) -> Path:
    return shared_path("mindspore-real", tree, "rank_0")


def _leaf(tree: str = "K_base_kernels") -> Path:
    return _rank(tree) / "ResNetAttn" / "0" / "0"


@pytest.fixture(scope="module")
def graph() -> OpGraph:
    path = find_ir(_leaf())
    assert path is not None, "K_base_kernels has graphs/ms_output_trace_code_graph_0.ir"
    return read_ir(path)


def _dumped(leaf: Path) -> dict[str, dict[int, str]]:
    """Kernel name -> {input slot: dtype} of a leaf's ``.npy`` files (Parameters left out)."""
    found: dict[str, dict[int, str]] = defaultdict(dict)
    for path in leaf.iterdir():
        match = NPY.fullmatch(path.name)
        if match is None or match["type"] == "Parameter":
            continue
        inputs = found[match["op"]]
        if match["kind"] == "input":
            inputs[int(match["slot"])] = match["dtype"]
    return dict(found)


def test_find_ir_of_a_leaf() -> None:
    leaf = _leaf()
    expected = _rank("K_base_kernels") / "graphs" / "ms_output_trace_code_graph_0.ir"
    assert find_ir(leaf) == expected
    assert find_ir(leaf, 0) == expected
    assert find_ir(leaf, 7) is None


def test_find_ir_absent(tmp_path: Path) -> None:
    leaf = tmp_path / "rank_0" / "Net" / "0" / "0"
    leaf.mkdir(parents=True)
    assert find_ir(leaf) is None
    assert find_ir(tmp_path / "missing" / "0" / "0") is None
    graphs = tmp_path / "rank_0" / "graphs"
    graphs.mkdir()
    (graphs / "ms_output_trace_code_graph_0.ir").write_text("x")
    assert find_ir(leaf) == graphs / "ms_output_trace_code_graph_0.ir"
    sync_leaf = tmp_path / "rank_0" / "iteration_1"  # no graph id in the path: the only file
    sync_leaf.mkdir()
    assert find_ir(sync_leaf) == graphs / "ms_output_trace_code_graph_0.ir"
    (graphs / "ms_output_trace_code_graph_1.ir").write_text("x")
    assert find_ir(sync_leaf) is None  # two files, no id: none chosen


def test_fc1_matmul(graph: OpGraph) -> None:
    assert graph.source is GraphSource.MINDSPORE_IR and graph.edges
    node = graph.nodes[FC1]
    assert node.op_type == "MatMul"
    data, weight, transpose_a, transpose_b = node.inputs
    assert weight.index == 1 and weight.role is NodeRole.PARAMETER
    assert weight.name == "fc1.weight" and weight.producer == "fc1_weight"
    assert data.index == 0 and data.role is NodeRole.COMPUTE
    assert data.producer in graph.nodes and graph.nodes[data.producer].op_type == "Flatten"
    assert (transpose_a.role, transpose_a.name) == (NodeRole.CONST, "Bool(0)")
    assert (transpose_b.role, transpose_b.name) == (NodeRole.CONST, "Bool(1)")


def test_stem_conv_reads_the_network_input(graph: OpGraph) -> None:
    data, weight = graph.nodes[STEM].inputs
    assert data.role is NodeRole.DATA and data.name == "inputs0"
    assert weight.role is NodeRole.PARAMETER and weight.name == "stem.weight"


def test_tuple_outputs_are_followed(graph: OpGraph) -> None:
    """``LayerNormGrad(%x, %dy, TupleGetItem(%ln, 2), TupleGetItem(%ln, 1), %gamma, ...)``."""
    edges = graph.nodes[GRAD + "attn-Attn_ln-LayerNorm_Grad_LayerNorm_LayerNormGrad-op0"].inputs
    layer_norm = NET + "attn-Attn_ln-LayerNorm_LayerNorm-op0"
    assert (edges[2].producer, edges[2].output) == (layer_norm, 2)
    assert (edges[3].producer, edges[3].output) == (layer_norm, 1)
    relu = graph.nodes[NET + "relu-ReLU_ReLU-op0"].inputs[0]  # ReLU(TupleGetItem(BatchNorm, 0))
    assert (relu.producer, relu.output) == (NET + "bn0-BatchNorm2d_BatchNorm-op0", 0)


def test_source_line_is_the_users(graph: OpGraph) -> None:
    source = graph.nodes[FC1].source
    assert source is not None
    assert Path(source.file).name == "net.py" and "site-packages" not in source.file
    assert source.line == 72 and source.code == "x = self.relu(self.fc1(x))"
    assert str(source).endswith("net.py:72")


def test_roles_and_edges_are_consistent(graph: OpGraph) -> None:
    """Every COMPUTE edge names an earlier node (the body is in topological order); source roles
    name no node; the graph holds exactly the 109 kernels of the execution-order file."""
    position = {name: index for index, name in enumerate(graph.order)}
    for node in graph.nodes.values():
        assert [edge.index for edge in node.inputs] == list(range(len(node.inputs)))
        for edge in node.inputs:
            if edge.role is NodeRole.COMPUTE:
                assert position[edge.producer] < position[node.name], (node.name, edge)
            else:
                assert edge.producer not in graph.nodes
    order = read_execution_order(_rank("K_base_kernels") / "execution_order" / "ms_execution_order_graph_0.csv")
    assert sorted(name_key(name) for name in order) == sorted(name_key(name) for name in graph.nodes)
    assert len(graph.nodes) == 109


def test_order_against_the_execution_order_file(graph: OpGraph) -> None:
    """The ``.ir`` body is not in execution order (finding: only some kernels keep their places);
    :func:`in_execution_order` gives the file's order for every kernel both list."""
    order = read_execution_order(_rank("K_base_kernels") / "execution_order" / "ms_execution_order_graph_0.csv")
    keys = [name_key(name) for name in order]
    body = [name_key(name) for name in graph.order if name_key(name) in keys]
    assert body != [key for key in keys if key in body]  # the finding, kept visible
    ordered = in_execution_order(graph, order)
    both = [name_key(name) for name in ordered.order if name_key(name) in keys]
    assert both == [key for key in keys if key in both]
    assert set(ordered.nodes) == set(graph.nodes) and ordered.notes
    assert in_execution_order(graph, []) is graph


def test_every_dumped_kernel_is_a_node_with_its_input_slots(graph: OpGraph) -> None:
    """Each dumped kernel (``K_base_kernels/rank_0/*/0/0``) is a node: by its own name, except the
    rebuilt Conv2DBackprop* kernels (other ``-opN``). Its ``input.N`` files are the node's input
    slots (a literal's file has the literal's type), except that a rebuilt kernel has no file for
    its trailing ``Tensor`` literal."""
    leaves = sorted(path / "0" for path in _rank("K_base_kernels").glob("*/0") if (path / "0").is_dir())
    assert leaves
    for leaf in leaves:
        dumped = _dumped(leaf)
        matched = match_dumped(graph, dumped)
        assert set(matched) == set(dumped)
        renamed = sorted(name for name, node in matched.items() if name != node)
        assert renamed and all(name.split("_")[-1].startswith(REBUILT) for name in renamed), renamed
        for name, slots in dumped.items():
            node = graph.nodes[matched[name]]
            edges = list(node.inputs)
            if node.op_type in REBUILT:
                assert edges[-1].role is NodeRole.CONST and edges[-1].name.startswith("Tensor(")
                edges = edges[:-1]
            assert sorted(slots) == [edge.index for edge in edges], name
            for edge in edges:
                if edge.role is NodeRole.CONST:
                    assert slots[edge.index] == LITERAL_DTYPES[edge.name.split("(")[0] or "(I64"], (name, edge)


def test_renumbered_kernels_are_matched_in_order(graph: OpGraph) -> None:
    """The dumped ``Conv2DBackpropInput-op0`` reads the conv2 weight: it is the ``.ir``'s ``-op2``,
    whose input 1 is ``block.conv2.weight``."""
    leaf = _leaf()
    dumped = GRAD + "block-ResBlock_conv1-Conv2d_Grad_Conv2D_Conv2DBackpropInput-op0"
    node = match_dumped(graph, _dumped(leaf))[dumped]
    assert node.endswith("-op2") and graph.nodes[node].inputs[1].name == "block.conv2.weight"

    def first(op: str, tensor: str) -> np.ndarray:
        (path,) = leaf.glob(f"*.{op}.*.{tensor}.*.npy")
        return np.load(path)

    conv2_weight = first(NET + "block-ResBlock_conv2-Conv2d_Conv2D-op0", "input.1")
    assert np.array_equal(first(dumped, "input.1"), conv2_weight)


def test_long_names_and_dumped_parameters() -> None:
    """``L_base``: kernel names over 255 characters (dumped as ``{digits}.npy``, named in
    ``mapping.csv``) are nodes; a param edge's producer is the dumped Parameter's name."""
    leaf = _leaf("L_base")
    path = find_ir(leaf)
    assert path is not None
    graph = read_ir(path)
    mapped = {line.split(",", 1)[1].split(".")[1] for line in (leaf / "mapping.csv").read_text().splitlines() if line}
    assert mapped and mapped <= set(graph.nodes)
    parameters = {p.name.split(".")[1] for p in leaf.glob("Parameter.*.npy")}
    sources = (NodeRole.PARAMETER, NodeRole.DATA)
    producers = {e.producer for n in graph.nodes.values() for e in n.inputs if e.role in sources}
    assert producers == parameters


# --------------------------------------------------------------------------------------------
# synthetic texts
# --------------------------------------------------------------------------------------------

HEAD = """# IR entry: @kernel_graph0
# Total subgraphs: 1

# Params:
%para1_net.w: <Ref[Tensor[Float32]], (2, 2), ref_key=net.w, is_parameter>  :  has_default  :  IsWeight: true
%para2_x: <Tensor[Float32], (2, 2)> : [2, 2]  :  IsWeight: false

"""


def _ir(tmp_path: Path, body: str, head: str = HEAD, name: str = "g.ir") -> OpGraph:
    path = tmp_path / name
    path.write_text(head + body, encoding="utf-8")
    return read_ir(path)


def _node(index: int, callee: str, args: str, scope: str | None = None, trace: str | None = None) -> str:
    text = f"  %{index}(n{index}) = {callee}({args}) primitive_attrs: {{a: Bool(1)}}\n"
    text += "      : (<Tensor[Float32], (2, 2)>) -> (<Tensor[Float32], (2, 2)>)\n"
    if scope is not None:
        text += f"      # Fullname with scope: ({scope})\n"
    if trace is not None:
        text += f"      # In file {trace}\n"
    return text


def _body(*nodes: str, name: str = "kernel_graph0") -> str:
    ret = "  Return(%0)\n      # Fullname with scope: (Default/Return-op0)\n"
    return f"subgraph @{name}() {{\n" + "".join(nodes) + ret + "}\n"


def test_tuple_getitem_chains(tmp_path: Path) -> None:
    graph = _ir(tmp_path, _body(
        _node(0, "PrimFunc_Split", "%para2_x, I64(0)", "Default/Split-op0"),
        _node(1, "TupleGetItem", "%0, I64(1)"),
        _node(2, "MakeTuple", "%1, %0"),
        _node(3, "TupleGetItem", "%2, I64(0)"),
        _node(4, "TupleGetItem", "%2, I64(1)"),
        _node(5, "TupleGetItem", "%4, I64(2)"),
        _node(6, "Add", "%3, %5", "Default/Add-op0"),
    ))
    assert list(graph.nodes) == ["Default_Split-op0", "Default_Add-op0"]
    first, second = graph.nodes["Default_Add-op0"].inputs
    assert (first.producer, first.output, first.role) == ("Default_Split-op0", 1, NodeRole.COMPUTE)
    assert (second.producer, second.output) == ("Default_Split-op0", 2)


def test_depend_load_and_monads(tmp_path: Path) -> None:
    graph = _ir(tmp_path, _body(
        _node(0, "Load", "%para1_net.w, UMonad[U]", "Default/Load-op0"),
        _node(1, "ReLU", "%para2_x", "Default/ReLU-op0"),
        _node(2, "UpdateState", "U, %0"),
        _node(3, "Depend", "%1, %2"),
        _node(4, "Assign", "%para1_net.w, %3, %2", "Default/Assign-op0"),
        _node(5, "MatMul", "%3, %0, Bool(0), IOMonad[IO]", "Default/MatMul-op0"),
    ))
    assert list(graph.nodes) == ["Default_ReLU-op0", "Default_Assign-op0", "Default_MatMul-op0"]
    assign = graph.nodes["Default_Assign-op0"].inputs
    assert [(e.index, e.role) for e in assign] == [(0, NodeRole.PARAMETER), (1, NodeRole.COMPUTE)]
    assert assign[1].producer == "Default_ReLU-op0"
    matmul = graph.nodes["Default_MatMul-op0"].inputs
    assert [e.producer for e in matmul] == ["Default_ReLU-op0", "net_w", None]
    assert (matmul[1].role, matmul[1].name) == (NodeRole.PARAMETER, "net.w")


def test_param_used_directly_and_literals(tmp_path: Path) -> None:
    graph = _ir(tmp_path, _body(_node(
        0, "PrimFunc_BiasAdd",
        '%para2_x, %para1_net.w, I64(0), (0, 2), None, "a,(b", Tensor(shape=[2], dtype=Int64, value=[1 2])',
        "Default/net-Net/BiasAdd-op0")))
    node = graph.nodes["Default_net-Net_BiasAdd-op0"]
    assert node.op_type == "BiasAdd"
    assert [(e.role, e.name) for e in node.inputs] == [
        (NodeRole.DATA, "x"), (NodeRole.PARAMETER, "net.w"), (NodeRole.CONST, "I64(0)"), (NodeRole.CONST, "(0, 2)"),
        (NodeRole.CONST, "None"), (NodeRole.CONST, '"a,(b"'),
        (NodeRole.CONST, "Tensor(shape=[2], dtype=Int64, value=[1 2])")]
    assert node.inputs[0].producer == "x" and node.inputs[2].producer is None


def test_make_tuple_argument_is_unfolded(tmp_path: Path) -> None:
    graph = _ir(tmp_path, _body(
        _node(0, "ReLU", "%para2_x", "Default/ReLU-op0"),
        _node(1, "MakeTuple", "%0, %para1_net.w, U"),
        _node(2, "AddN", "%1, I64(2)", "Default/AddN-op0"),
    ))
    edges = graph.nodes["Default_AddN-op0"].inputs
    assert [(e.index, e.role) for e in edges] == [(0, NodeRole.COMPUTE), (1, NodeRole.PARAMETER), (2, NodeRole.CONST)]


def test_node_without_trace_lines(tmp_path: Path) -> None:
    graph = _ir(tmp_path, _body(
        _node(0, "ReLU", "%para2_x"),
        _node(1, "Abs", "%0", "Default/Abs-op0"),
        _node(2, "Neg", "%1", "Default/Neg-op0", "/home/u/net.py:3, 4~9/        y = -x/"),
    ))
    assert list(graph.nodes) == ["kernel_graph0_ReLU-%0", "Default_Abs-op0", "Default_Neg-op0"]
    assert graph.nodes["kernel_graph0_ReLU-%0"].source is None
    assert graph.nodes["Default_Abs-op0"].source is None
    assert graph.nodes["Default_Abs-op0"].inputs[0].producer == "kernel_graph0_ReLU-%0"
    neg = graph.nodes["Default_Neg-op0"].source
    assert neg is not None and (neg.file, neg.line, neg.code) == ("/home/u/net.py", 3, "y = -x")


def test_source_skips_library_frames(tmp_path: Path) -> None:
    lib = "/v/lib/python3.11/site-packages/mindspore/nn/layer/basic.py:807, 12~39/        x = self.matmul(x, self.w)/"
    dist = "C:\\py\\dist-packages\\ms\\conv.py:10~12, 4~9/    def construct(self, x):/"
    node = _node(0, "MatMul", "%para2_x, %para1_net.w", "Default/MatMul-op0",
                 "/u/net.py:5~9, 4~26/    def construct(self, x):/")
    node += f"      # In file /u/net.py:7, 12~21/        x = self.fc(x)/\n      # In file {lib}\n"
    node += f"      # Corresponding forward node candidate:\n      # In file {dist}\n"
    graph = _ir(tmp_path, _body(node, _node(1, "Abs", "%0", "Default/Abs-op0", lib)))
    source = graph.nodes["Default_MatMul-op0"].source
    assert source is not None and (source.file, source.line, source.code) == ("/u/net.py", 7, "x = self.fc(x)")
    library = graph.nodes["Default_Abs-op0"].source
    assert library is not None and library.line == 807 and library.code == "x = self.matmul(x, self.w)"
    assert user_line([]) is None
    assert parse_trace("/a/b.py(12)/    y = f(x)/") is not None
    assert parse_trace("no location here") is None


def test_several_subgraphs_in_file_order(tmp_path: Path) -> None:
    head = HEAD.replace("# Total subgraphs: 1", "# Total subgraphs: 2")
    second = _body(_node(0, "Abs", "%para9_y", "Default/Abs-op0"), name="kernel_graph1").replace(
        "subgraph @kernel_graph1()", "subgraph @kernel_graph1(%para9_y)")
    graph = _ir(tmp_path, _body(_node(0, "Neg", "%para2_x", "Default/Neg-op0")) + "\n" + second, head=head)
    assert list(graph.nodes) == ["Default_Neg-op0", "Default_Abs-op0"]
    assert graph.nodes["Default_Abs-op0"].inputs[0].role is NodeRole.DATA


def test_empty_body(tmp_path: Path) -> None:
    graph = _ir(tmp_path, "subgraph @kernel_graph0() {\n}\n")
    assert dict(graph.nodes) == {} and graph.notes == () and graph.source is GraphSource.MINDSPORE_IR


def test_unclosed_body_and_duplicates_give_notes(tmp_path: Path) -> None:
    graph = _ir(tmp_path, "subgraph @kernel_graph0() {\n" + _node(0, "Abs", "%para2_x", "Default/Abs-op0")
                + _node(1, "Abs", "%0", "Default/Abs-op0"))
    assert list(graph.nodes) == ["Default_Abs-op0"]
    assert any("not closed" in note for note in graph.notes)
    assert any("named like an earlier one" in note for note in graph.notes)
    second = _body(_node(0, "Neg", "%para2_x", "Default/Neg-op0"), name="kernel_graph1")
    graph = _ir(tmp_path, "subgraph @kernel_graph0() {\n" + _node(0, "Abs", "%para2_x", "Default/Abs-op0") + second)
    assert list(graph.nodes) == ["Default_Abs-op0", "Default_Neg-op0"]
    assert [note.split(":")[0] for note in graph.notes] == ["g.ir @kernel_graph0 (line 8)"]


def test_multi_line_literal(tmp_path: Path) -> None:
    node = ("  %0(n0) = Mul(%para2_x, Tensor(shape=[2, 2], dtype=Float32, value=\n[[1 2]\n [3 4]]), %para1_net.w)\n"
            "      # Fullname with scope: (Default/Mul-op0)\n")
    graph = _ir(tmp_path, _body(node))
    edges = graph.nodes["Default_Mul-op0"].inputs
    assert [e.role for e in edges] == [NodeRole.DATA, NodeRole.CONST, NodeRole.PARAMETER]


@pytest.mark.parametrize("text", ["", "hello\nworld\n", "# IR entry: @kernel_graph0\n%para1_x: <Tensor>\n",
                                  "NodeExecutionOrder-FullNameWithScope\nDefault/Add-op0\n"])
def test_not_an_ir_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.ir"
    path.write_text(text)
    with pytest.raises(DumpFormatError, match="bad.ir.*not a MindSpore .ir graph"):
        read_ir(path)


def test_binary_and_unreadable_files(tmp_path: Path) -> None:
    binary = tmp_path / "graph.pb"
    binary.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(DumpFormatError, match="graph.pb"):
        read_ir(binary)
    with pytest.raises(DumpFormatError, match="cannot read"):
        read_ir(tmp_path)
    with pytest.raises(DumpFormatError, match="missing.ir"):
        read_ir(tmp_path / "missing.ir")


def test_huge_lines_are_fast(tmp_path: Path) -> None:
    nested = "(" * 300_000 + "%0, " * 100_000
    commas = ", ".join(["I64(1)"] * 20_000)
    colons = "# In file " + "a:1~" * 200_000 + "\n"
    unclosed = "  %3(w) = Mul(%para2_x, Tensor(value=\n" + ("[" * 100_000 + "\n") * 100  # continuation capped
    body = ("subgraph @kernel_graph0() {\n" + f"  %0(x) = Add({nested}\n" + f"  %1(y) = Add({commas})\n"
            + "      # Fullname with scope: (Default/Add-op1)\n      " + colons + "  %2(" + "z" * 2_000_000 + "\n"
            + unclosed + "      # Fullname with scope: (Default/Mul-op0)\n}\n")
    graph = _ir(tmp_path, body)  # bounded work: the caps below are what keep it fast (no wall-time assert)
    assert len(graph.nodes["Default_Add-op1"].inputs) == 4096  # the slot cap
    assert any("more than 4096 inputs" in note for note in graph.notes)
    # the continuation stopped at the cap; the lines after it end the node's comment lines
    assert graph.nodes["kernel_graph0_Mul-%3"].inputs[0].role is NodeRole.DATA


def test_nested_tuples_are_bounded(tmp_path: Path) -> None:
    """Deep chains and doubling tuples (2**60 elements) unfold without recursion, in bounded work."""
    deep = [_node(0, "MakeTuple", "%para2_x")] + [_node(i, "MakeTuple", f"%{i - 1}, U") for i in range(1, 20_000)]
    doubling = [_node(20_000, "MakeTuple", "U, IO")]
    doubling += [_node(i, "MakeTuple", f"%{i - 1}, %{i - 1}") for i in range(20_001, 20_060)]
    add = _node(30_000, "AddN", "%19999, %20059, %para1_net.w", "Default/AddN-op0")
    graph = _ir(tmp_path, _body(*deep, *doubling, add))
    edges = graph.nodes["Default_AddN-op0"].inputs
    assert [e.role for e in edges] == [NodeRole.DATA]  # the monads of the doubling tuple ran out the budget
    assert any("more than 4096 inputs" in note for note in graph.notes)


IR_PIECES = st.sampled_from([
    "subgraph @g() {\n", "}\n", "%para1_w: <Ref[Tensor[Float32]], (2), is_parameter>\n", "%para2_x: <Tensor>\n",
    "  %0(a) = Add(%para1_w, %para2_x)\n", "  %1(b) = TupleGetItem(%0, I64(1))\n", "  %2 = MakeTuple(%1, %2, U)\n",
    "  %3(c) = Depend(%2, %9)\n", "      # Fullname with scope: (Default/Add-op0)\n", "      # Fullname with scope: \n",
    "      # In file /a/net.py:3~4, 1~2/  x/\n", "      # In file :/\n", "  Return(%3)\n", "(", ")", ",", '"', "\\",
    "Tensor(shape=[2], value=\n", "      : (<Tensor>) -> (<Tensor>)\n", "# IR entry: @g\n", "\n"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(IR_PIECES, st.text(max_size=40)), max_size=40))
def test_arbitrary_text(tmp_path: Path, pieces: list[str]) -> None:
    path = tmp_path / "fuzz.ir"
    path.write_text("".join(pieces), encoding="utf-8", errors="surrogatepass")
    try:
        graph = read_ir(path)
    except DumpFormatError as exc:
        assert "fuzz.ir" in str(exc)
    else:
        assert graph.source is GraphSource.MINDSPORE_IR
        for node in graph.nodes.values():
            assert [edge.index for edge in node.inputs] == list(range(len(node.inputs)))

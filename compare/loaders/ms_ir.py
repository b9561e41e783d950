"""MindSpore ``.ir`` graph files: the kernel graph of a dump (what feeds each input of each kernel,
where the user wrote it, graph order) as an :class:`~compare.diverge.records.OpGraph`.

MindSpore writes ``{root}/rank_{r}/graphs/ms_output_trace_code_graph_{graph_id}.ir`` next to a
dump whose leaves are ``{root}/rank_{r}/{net}/{graph_id}/{iteration}/`` (:func:`find_ir`). The
text is read by hand (:func:`read_ir`): there is no library for this text format (it is written
for people to read).

**Grammar handled**: :mod:`compare.loaders.ms_ir_text` reads the lines (params, subgraph bodies, node
lines and their comment lines); this module makes the graph of what it read.

* **Params**: ``is_parameter`` in the abstract or ``IsWeight: true`` -> :attr:`NodeRole.PARAMETER`
  (weights, optimizer state, ``global_step``, ``learning_rate``); any other param (the network
  inputs ``%para3_inputs0``, a ``%para`` of a subgraph header) -> :attr:`NodeRole.DATA`.
* **Kernels**: one :class:`OpNode` per node whose callee is a primitive other than the virtual
  ones of :data:`VIRTUAL_OPS` (``Load``, ``TupleGetItem``, ``Depend``, ``MakeTuple``,
  ``UpdateState``, ``Return`` ...) and other than a graph call (``@g(...)``, ``%N(...)``). Its
  name is the ``Fullname with scope`` with ``/`` as ``_`` -- the dump-file spelling
  (``Default/network-WithLossCell/_backbone-Net/fc1-Dense/MatMul-op0`` ->
  ``Default_network-WithLossCell__backbone-Net_fc1-Dense_MatMul-op0``); a node without that line
  is named ``{graph}_{Type}-%{N}``. A name met twice keeps its first node (a note says so). The
  full name is read in all three forms MindSpore has written (:mod:`compare.loaders.ms_ir_text`:
  ``# Fullname with scope: (...)`` today, ``: full_name_with_scope: (...)`` in r1.3, a plain
  ``: (...)`` line in r1.1 / r1.2, as the manuals of those versions show); a graph whose kernels
  have none of them gets a note (its kernels match no dumped operator, so no source line reaches
  the first-divergence summary), and so does the run of a leaf whose graph file gives no name
  (:func:`names_note`, read when the leaf is scanned).
  ``op_type`` is the callee without a ``PrimFunc_`` prefix. Nodes keep the body's order, several
  subgraphs one after the other in file order. That order is topological (every producer comes
  before its consumers) but it is **not** the execution order: on the real MindSpore 2.10 CPU
  dump ``K_base_kernels`` (the same 109 kernels in both files) only 69 keep their
  relative places in ``ms_execution_order_graph_0.csv`` (whose order the dump timestamps follow);
  :func:`in_execution_order` puts the nodes in the file's order.
* **Inputs** (:class:`InputEdge`, ``index`` = the dump's ``input.{index}`` slot): the arguments
  are taken left to right and each takes the next slot, except that a monad (``U``,
  ``UMonad[U]``, ``IO``, ``IOMonad[IO]``, an ``UpdateState`` result, or a node that resolves to
  one) takes none, and a ``MakeTuple`` argument takes one slot per element (tuple inputs are
  unfolded in a kernel graph). Scalar and literal arguments (``I64(0)``, ``Bool(1)``,
  ``F32(1e-05)``, a tuple literal such as ``(I64(-1))`` or ``(0, 2)``, ``Tensor(shape=...)``,
  ``None``) are :attr:`NodeRole.CONST` edges (``producer`` None, ``name`` the literal). Checked on
  the real MindSpore 2.10 CPU dump ``K_base_kernels`` (every dumped kernel): ``MatMul(%x, %w,
  Bool(0), Bool(1))`` has ``input.0``..``input.3`` with 2 and 3 ``Bool``; ``LayerNorm(%x, %g,
  %b, I64(-1), I64(-1), F32(1e-07))`` has ``input.0``..``input.5`` (3, 4 ``Int64``, 5
  ``Float32``); ``Softmax(%x, (I64(-1)))`` has ``input.1`` ``Int64`` (the tuple literal is one
  slot); ``BatchMatMul`` has 4 inputs like ``MatMul``. The one exception seen:
  ``Conv2DBackpropInput`` / ``Conv2DBackpropFilter(%dy, %w, Tensor(shape=[4], ...))`` dump only
  ``input.0`` and ``input.1`` -- the trailing ``Tensor`` literal is not a dumped input (the
  kernel was rebuilt after the ``.ir`` was written); the edge of the literal is kept (slot 2 has
  no file), the other slots are unaffected. Those rebuilt kernels also carry another ``-op{K}`` id in their
  dump file names than in the ``.ir`` (see :func:`match_dumped`).
* **Pass-through nodes** are resolved so that an edge names the real producer:
  ``Load(%para, U)`` -> the param; ``Depend(%x, ...)`` / ``StopGradient(%x)`` -> ``%x``;
  ``TupleGetItem(%x, k)`` -> output ``k`` of ``%x`` (element ``k`` when ``%x`` is a
  ``MakeTuple``; chains follow); a kernel used directly is its output 0. An edge from a param has
  ``producer`` = the param's name in the dump-file spelling (``.`` and ``/`` as ``_``: a dumped
  Parameter is ``Parameter.fc1_weight....npy``), ``name`` = the name as the ``.ir`` writes it
  (``fc1.weight``), role PARAMETER or DATA. A reference the reader cannot resolve (undefined or
  later ``%N``, the result of a graph call or of ``Switch`` / ``Partial``, an element of a tuple
  output taken twice) is an edge with ``producer`` None, role COMPUTE, ``name`` the reference.
* **Source** (:class:`SourceLine`): the last ``# In file`` line of the node whose file is not in a
  ``site-packages`` / ``dist-packages`` folder (the last one when all are): ``file``, the first
  line number, the code between the slashes (stripped). A gradient kernel's lines are those of
  its forward node (MindSpore's "Corresponding forward node candidate"). Also accepted:
  ``# In file {file}({line})/{code}/`` (a line number in parentheses: the r1.x manuals' form; not
  seen in 2.10 files).

**Edge-case policy**: the text as :mod:`compare.loaders.ms_ir_text` reads it (unknown lines
skipped, continuation lines, lines of at most 4 MiB); one node's arguments unfold to at most 4096
slots (looking at 65536 tuple elements at most); a subgraph left open (at the end of the file, or
by the next ``subgraph`` line) is kept and a note says the file may be truncated. A file that
cannot be read, or has no ``subgraph @name(...) {`` line at all (not an ``.ir``: a ``.pb``, a
csv, garbage), raises :class:`DumpFormatError` naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from convert.names.keys import name_key

from ..diverge.records import GraphSource, InputEdge, NodeRole, OpGraph, OpNode
from ..errors import CompareError, DumpFormatError
from ..records import Run
from .ms_ir_text import (
    FULLNAME_FORMS,
    PARAM_REF_RE,
    NodeText,
    Param,
    Subgraph,
    graph_gives_names,
    scan_ir,
    user_line,
)
from .reader import RecordedGraph

#: ``graphs/`` file name of graph ``{graph}``.
IR_NAME = "ms_output_trace_code_graph_{graph}.ir"
#: How many folders above a dump leaf :func:`find_ir` looks for ``graphs/``.
IR_SEARCH_DEPTH = 3

#: Callees that are not kernels: they move, bundle or order values (never dumped).
VIRTUAL_OPS = frozenset({"Return", "MakeTuple", "MakeList", "TupleGetItem", "ListGetItem", "Depend",
                         "UpdateState", "Load", "StopGradient", "Partial", "Switch", "SwitchLayer"})
#: Virtual ops whose value is their first argument.
_FORWARDING_OPS = frozenset({"Load", "Depend", "StopGradient"})
_TUPLE_OPS = frozenset({"MakeTuple", "MakeList"})
_GETITEM_OPS = frozenset({"TupleGetItem", "ListGetItem"})
_MONAD_TOKENS = frozenset({"U", "IO", "UMonad", "IOMonad"})

_MAX_SLOTS = 4096
_MAX_LITERAL = 120

_NODE_REF_RE = re.compile(r"%(\d{1,9})")
_GETITEM_INDEX_RE = re.compile(r"(?:I64|I32|I16|I8|U64|U32)?\(?(\d{1,9})\)?")
_KERNEL_ID_RE = re.compile(r"-op(\d{1,9})$")


# --------------------------------------------------------------------------------------------
# finding the file
# --------------------------------------------------------------------------------------------

def find_ir(leaf: Path, graph: int | None = None) -> Path | None:
    """The ``.ir`` of a dump leaf, None when there is none (never raises for absence).

    ``graphs/`` is looked up in the leaf's ancestors up to :data:`IR_SEARCH_DEPTH` levels above
    it (``rank_{r}/graphs`` for ``rank_{r}/{net}/{graph_id}/{iteration}``; ``device_{d}/graphs``
    for a synchronous ``device_{d}/iteration_{n}``). The graph id is ``graph``, else the leaf's
    parent folder when it is a number (``{graph_id}/{iteration}``); without either, the only
    ``ms_output_trace_code_graph_*.ir`` of the folder (None when there are several).
    """
    if graph is None and leaf.parent.name.isdigit():
        graph = int(leaf.parent.name)
    folder = leaf
    for _ in range(IR_SEARCH_DEPTH + 1):
        graphs = folder / "graphs"
        try:
            if graphs.is_dir():
                return _ir_in(graphs, graph)
        except OSError:
            return None
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def _ir_in(graphs: Path, graph: int | None) -> Path | None:
    """The graph's ``.ir`` in a ``graphs/`` folder (the only one when ``graph`` is None)."""
    try:
        if graph is not None:
            path = graphs / IR_NAME.format(graph=graph)
            return path if path.is_file() else None
        found = sorted(p for p in graphs.glob(IR_NAME.format(graph="*")) if p.is_file())
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def names_note(leaf: Path, graph: int | None = None) -> str | None:
    """The note for a run read from ``leaf`` whose graph file (:func:`find_ir`) is there but gives no
    kernel name in any of the three forms (:func:`compare.loaders.ms_ir_text.graph_gives_names`);
    None when there is no graph file or it gives names. The file is read only up to its first
    name line. One that cannot be read gets its own note (it cannot be used either)."""
    ir = find_ir(leaf, graph)
    if ir is None:
        return None
    try:
        if graph_gives_names(ir):
            return None
    except OSError as exc:
        return (f"graph file {ir} cannot be read ({exc.strerror or exc}): the first-divergence summary cannot "
                "name source lines")
    return (f"graph file {ir} gives no operator names (no {FULLNAME_FORMS} line under a node): the first-divergence "
            "summary cannot name source lines")


# --------------------------------------------------------------------------------------------
# values: what an argument stands for once pass-through nodes are resolved
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Ref:
    """A single value: output ``output`` of ``producer`` (None: a literal or unknown). ``whole``:
    a kernel's value as such (a later ``TupleGetItem`` picks its output)."""

    producer: str | None
    role: NodeRole
    name: str
    output: int = 0
    whole: bool = False


@dataclass(frozen=True)
class _Tuple:
    """A ``MakeTuple`` value: its elements."""

    items: tuple[_Value, ...]


@dataclass(frozen=True)
class _Monad:
    """A side-effect token (``U``, ``IO``, an ``UpdateState`` result): no dump slot."""


_Value = _Ref | _Tuple | _Monad
_MONAD = _Monad()


def dump_spelling(name: str) -> str:
    """A scope or param name as MindSpore's dump file names spell it: ``/`` (and, for a param,
    ``.``) as ``_``."""
    return name.replace("/", "_").replace(".", "_")


class _Resolver:
    """The values of one subgraph's nodes, filled in body order (a reference to a later node is
    unknown: MindSpore prints a body in topological order)."""

    def __init__(self, params: dict[str, Param]) -> None:
        self.params = params
        self.values: dict[int, _Value] = {}

    def argument(self, token: str) -> _Value:
        """What one argument token stands for."""
        if token.startswith("%para"):
            match = PARAM_REF_RE.fullmatch(token)
            if match is not None:
                param = self.params.get(match.group(1), Param(match.group(1), NodeRole.DATA))
                return _Ref(dump_spelling(param.name), param.role, param.name)
        if token.startswith("%"):
            match = _NODE_REF_RE.fullmatch(token)
            value = self.values.get(int(match.group(1))) if match is not None else None
            return value if value is not None else _Ref(None, NodeRole.COMPUTE, _literal(token))
        if token.split("[", 1)[0] in _MONAD_TOKENS:
            return _MONAD
        return _Ref(None, NodeRole.CONST, _literal(token))

    def define(self, node: NodeText, kernel_name: str | None) -> None:
        """Record the value of ``%N`` (a kernel's whole output, or what a virtual node passes on)."""
        if kernel_name is not None:
            self.values[node.number] = _Ref(kernel_name, NodeRole.COMPUTE, kernel_name, whole=True)
            return
        self.values[node.number] = self._virtual(node)

    def _virtual(self, node: NodeText) -> _Value:
        """The value of a non-kernel node."""
        callee = node.callee
        if callee == "UpdateState":
            return _MONAD
        if callee in _FORWARDING_OPS and node.args:
            return self.argument(node.args[0])
        if callee in _TUPLE_OPS:
            return _Tuple(tuple(self.argument(a) for a in node.args))
        if callee in _GETITEM_OPS and len(node.args) == 2:
            return self._item(node)
        return _Ref(None, NodeRole.COMPUTE, _literal(f"%{node.number}({node.label}) = {callee}"))

    def _item(self, node: NodeText) -> _Value:
        """``TupleGetItem(%x, k)``: element ``k`` of a tuple, output ``k`` of a kernel."""
        source = self.argument(node.args[0])
        match = _GETITEM_INDEX_RE.fullmatch(node.args[1])
        unknown = _Ref(None, NodeRole.COMPUTE, _literal(f"%{node.number}({node.label}) = {node.callee}"))
        if match is None:
            return unknown
        index = int(match.group(1))
        if isinstance(source, _Tuple):
            return source.items[index] if index < len(source.items) else unknown
        if isinstance(source, _Ref) and source.whole:
            return _Ref(source.producer, source.role, source.name, output=index)
        return unknown


def _literal(token: str) -> str:
    """A token as an edge name, at most :data:`_MAX_LITERAL` characters."""
    return token if len(token) <= _MAX_LITERAL else token[:_MAX_LITERAL - 3] + "..."


def _slots(values: list[_Value]) -> tuple[list[_Ref], bool]:
    """The single values of a node's arguments in slot order -- monads dropped, tuples unfolded
    (iteratively: nesting depth does not matter) -- at most :data:`_MAX_SLOTS` of them, and
    whether more were left out."""
    found: list[_Ref] = []
    stack: list[_Value] = list(reversed(values))
    visits = 0
    while stack:
        visits += 1
        if visits > 16 * _MAX_SLOTS:  # tuples of tuples of monads: bounded work all the same
            return found, True
        value = stack.pop()
        if isinstance(value, _Tuple):
            stack.extend(reversed(value.items))
        elif isinstance(value, _Ref):
            if len(found) == _MAX_SLOTS:
                return found, True
            found.append(value)
    return found, False


def _edges(values: list[_Value]) -> tuple[tuple[InputEdge, ...], bool]:
    """The input edges of a kernel, and whether :data:`_MAX_SLOTS` cut them short."""
    refs, cut = _slots(values)
    return tuple(InputEdge(index, ref.producer, ref.output, ref.role, ref.name) for index, ref in enumerate(refs)), cut


# --------------------------------------------------------------------------------------------
# the graph
# --------------------------------------------------------------------------------------------

def read_ir(path: Path) -> OpGraph:
    """The kernel graph of a MindSpore ``.ir`` file (grammar and policy: the module doc).

    Raises :class:`DumpFormatError` naming the file when it cannot be read or is not an ``.ir``.
    """
    path = Path(path)
    try:
        ir = scan_ir(path)
    except OSError as exc:
        raise DumpFormatError(path, f"cannot read the MindSpore graph file: {exc.strerror or exc}") from None
    if not ir.subgraphs:
        raise DumpFormatError(path, f"not a MindSpore .ir graph: none of its {ir.lines} lines opens a subgraph "
                                    "('subgraph @name(...) {')")
    nodes: dict[str, OpNode] = {}
    notes: list[str] = []
    for subgraph in ir.subgraphs:
        _add_subgraph(nodes, notes, subgraph, {**subgraph.params, **ir.params}, path)
    kernels = [text for subgraph in ir.subgraphs for text in subgraph.nodes if _is_kernel(text.callee)]
    if kernels and not any(text.fullname for text in kernels):
        notes.append(f"{path.name}: none of its {len(kernels)} kernels has a full name (no {FULLNAME_FORMS} line "
                     "under a node): its kernels cannot be matched to the dumped operators, so the first divergence "
                     "has no source line")
    return OpGraph(nodes=nodes, source=GraphSource.MINDSPORE_IR, edges=True, notes=tuple(notes))


def _add_subgraph(nodes: dict[str, OpNode], notes: list[str], subgraph: Subgraph,
                  params: dict[str, Param], path: Path) -> None:
    """Add the kernels of one body to ``nodes`` (body order); notes for what was odd."""
    resolver = _Resolver(params)
    taken = cut = 0
    for text in subgraph.nodes:
        kernel = _is_kernel(text.callee)
        name = _node_name(subgraph.name, text) if kernel else None
        if name is not None:
            edges, short = _edges([resolver.argument(a) for a in text.args])
            cut += short
            node = OpNode(name, op_type(text.callee), NodeRole.COMPUTE, edges, user_line(text.traces))
            if name in nodes:
                taken += 1
            else:
                nodes[name] = node
        resolver.define(text, name)
    where = f"{path.name} @{subgraph.name} (line {subgraph.line})"
    if not subgraph.closed:
        notes.append(f"{where}: the subgraph is not closed by '}}' (the file may be truncated)")
    if taken:
        notes.append(f"{where}: {taken} kernel(s) named like an earlier one were left out")
    if cut:
        notes.append(f"{where}: {cut} kernel(s) had more than {_MAX_SLOTS} inputs once tuples were unfolded; "
                     "only the first were kept")


def _is_kernel(callee: str) -> bool:
    """A primitive that is not virtual (graph calls ``@g`` / ``%N`` are not kernels)."""
    return not callee.startswith(("@", "%")) and op_type(callee) not in VIRTUAL_OPS


def op_type(callee: str) -> str:
    """The primitive's name without MindSpore's ``PrimFunc_`` prefix."""
    return callee[len("PrimFunc_"):] if callee.startswith("PrimFunc_") and len(callee) > 9 else callee


def _node_name(graph: str, text: NodeText) -> str:
    """The dump-file spelling of the node's scope name, or ``{graph}_{Type}-%{N}`` without one."""
    if text.fullname:
        return dump_spelling_scope(text.fullname)
    return f"{graph}_{op_type(text.callee)}-%{text.number}"


def dump_spelling_scope(fullname: str) -> str:
    """A ``Fullname with scope`` as dump file names spell it (``/`` as ``_``; dots kept)."""
    return fullname.replace("/", "_")


# --------------------------------------------------------------------------------------------
# dumped names
# --------------------------------------------------------------------------------------------

def match_dumped(graph: OpGraph, dumped: Iterable[str]) -> dict[str, str]:
    """Which graph node each dumped kernel name is: ``{dumped name: node name}``.

    A name that is a node matches itself. The others are matched within their group -- the names
    that are equal without the trailing ``-op{K}`` -- when the group has as many unmatched dumped
    names as unmatched nodes: the dumped names by ``K``, the nodes in graph order, pairwise.
    In the MindSpore 2.10 CPU dumps some kernels carry another ``-op{K}`` in their file names than
    in the ``.ir`` and the execution order -- the ``Conv2DBackpropInput`` / ``Conv2DBackpropFilter``
    whose trailing ``Tensor`` input has no dump file: the ``.ir`` says
    ``...conv1-Conv2d_Grad_Conv2D_Conv2DBackpropInput-op2`` and ``-op3``, the dump files ``-op0``
    and ``-op1``, in the same order (checked on the values: the dumped ``-op0`` reads the
    ``conv2`` weight that the ``.ir``'s ``-op2`` loads). Names left unmatched are absent from the
    result.
    """
    names = list(dict.fromkeys(dumped))
    result = {name: name for name in names if name in graph.nodes}
    matched_nodes = set(result.values())
    free_dumped: dict[str, list[str]] = {}
    for name in names:
        if name not in result:
            free_dumped.setdefault(_KERNEL_ID_RE.sub("", name), []).append(name)
    free_nodes: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node not in matched_nodes:
            free_nodes.setdefault(_KERNEL_ID_RE.sub("", node), []).append(node)
    for group, members in free_dumped.items():
        candidates = free_nodes.get(group, [])
        if len(candidates) == len(members):
            result.update(zip(sorted(members, key=_kernel_id), candidates))
    return result


def in_execution_order(graph: OpGraph, names: Sequence[str]) -> OpGraph:
    """The graph with its nodes in the order of an execution-order file (the names
    :func:`compare.loaders.ms_order.read_execution_order` returns).

    A ``.ir`` body is printed in a topological order (every producer before its consumers) that is
    not the order the kernels ran in: on ``K_base_kernels`` 69 of the 109 kernels keep their
    relative places, and the dump timestamps follow the execution-order file. Policy: a node the
    file lists (matched by :func:`convert.names.keys.name_key`, the first listing counts) takes its
    place in the file; a node it does not list stays right after the node that precedes it in
    the body (before every listed node when none does); ties keep body order. An empty ``names``
    returns the graph unchanged.
    """
    if not names:
        return graph
    listed: dict[str, int] = {}
    for position, name in enumerate(names):
        listed.setdefault(name_key(name), position)
    keys: dict[str, tuple[int, int, int]] = {}
    anchor = -1
    found = 0
    for body, name in enumerate(graph.nodes):
        position = listed.get(name_key(name))
        if position is None:
            keys[name] = (anchor, 1, body)
        else:
            keys[name] = (position, 0, body)
            anchor = position
            found += 1
    ordered = {name: graph.nodes[name] for name in sorted(graph.nodes, key=keys.__getitem__)}
    note = (f"nodes in execution order ({found} of {len(graph.nodes)} listed in the file; the others after the "
            "node preceding them in the .ir)")
    return OpGraph(nodes=ordered, source=graph.source, edges=graph.edges, notes=(*graph.notes, note))


def _kernel_id(name: str) -> int:
    match = _KERNEL_ID_RE.search(name)
    return int(match.group(1)) if match is not None else -1


# --------------------------------------------------------------------------------------------
# the graph of a run
# --------------------------------------------------------------------------------------------

def recorded_ir_graph(run: Run, ops: Collection[str], notes: list[str]) -> RecordedGraph | None:
    """The ``.ir`` graph of ``run``'s folder (:func:`find_ir`, the run's ``graph`` coordinate as the
    id), in the run's execution order when it has one (:func:`in_execution_order`: the ``.ir``
    body is a topological order, not the order the kernels ran in), with the graph nodes
    :func:`match_dumped` finds for the report's ``ops``. None when there is no ``.ir``, or when it
    cannot be read (a note in ``notes`` says why)."""
    order = sorted(run.order, key=run.order.__getitem__)
    ir = find_ir(run.path, run.coords.get("graph") if isinstance(run.coords.get("graph"), int) else None)
    if ir is None:
        return None
    try:
        graph = read_ir(ir)
    except CompareError as exc:
        notes.append(f"graph file not used: {exc}")
        return None
    if order:
        graph = in_execution_order(graph, order)
    return RecordedGraph(graph, {node: dumped for dumped, node in match_dumped(graph, ops).items()})


__all__ = ["IR_NAME", "VIRTUAL_OPS", "dump_spelling", "dump_spelling_scope", "find_ir", "in_execution_order",
           "match_dumped", "names_note", "op_type", "read_ir", "recorded_ir_graph"]

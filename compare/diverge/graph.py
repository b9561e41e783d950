"""The operator graph of a compared run, from the best source at hand (:class:`OpGraph`).

Sources, best first (the first that applies is used; the rows keep their own order, the graph
is for analysis only):

1. **The ATC fusion rule** (``-f``): one node per rule op, data edges from each op's ``input``
   list (``"producer:k"``; control edges ``"x:-1"`` are ignored, and input slot ``i`` is the
   ``i``-th data edge, which is how Ascend dumps number inputs); order: topological, ties by op
   id. Roles: ``Data`` / ``RefData`` / ``AippData`` / ``PlaceHolder`` are DATA, ``Const`` /
   ``Constant`` CONST, ``Variable`` / ``VariableV2`` / ``VarHandleOp`` PARAMETER.
2. **The MindSpore ``.ir`` graph** of the left dump leaf (``rank_N/graphs/
   ms_output_trace_code_graph_{g}.ir``, :mod:`compare.loaders.ms_ir`): edges through Load /
   TupleGetItem / Depend to the real producer, Parameters and graph inputs as sources, and the
   user's source line of every kernel.
3. **The msprobe call order** of the left dump folder (``dump.json`` ``data`` order,
   :mod:`compare.loaders.msprobe_graph`): order only, plus producer-less PARAMETER edges for the
   parameter inputs of each call (a module's ``parameters``, the weight / bias arguments of
   ``linear``, ``conv2d``, ``layer_norm`` ...) and the user's source line from ``stack.json``.
   Sources 2 and 3 are the graphs dump families record beside their runs: the first reader with
   one for the left run gives it (:func:`compare.loaders.recorded_graph`, in registry order), so
   a new family's graph needs nothing here.
4. **The MindSpore execution order** (``Run.order``): order only.
5. **The dump order** (the rows' order, i.e. dump timestamps): order only.

Every operator of the rows is a node: operators the source does not know are placed after the
last known operator that precedes them in row order (a note counts them). Names are aligned to
the rows' ``LeftOp`` exactly, else by :func:`convert.names.keys.name_key`, else by that key
without the kernel id where unique on both sides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from convert.names.keys import name_key, without_kernel_id

from ..loaders import recorded_graph
from ..pairing.rule_records import FusionRule
from ..records import Run
from .checks import PartRows
from .records import GraphSource, InputEdge, NodeRole, OpGraph, OpNode

#: Rule / dump op types whose values come from outside the graph's computation.
ROLE_OF_TYPE: Mapping[str, NodeRole] = {
    "Data": NodeRole.DATA, "RefData": NodeRole.DATA, "AippData": NodeRole.DATA, "PlaceHolder": NodeRole.DATA,
    "Placeholder": NodeRole.DATA,
    "Const": NodeRole.CONST, "Constant": NodeRole.CONST,
    "Variable": NodeRole.PARAMETER, "VariableV2": NodeRole.PARAMETER, "VarHandleOp": NodeRole.PARAMETER,
    "Parameter": NodeRole.PARAMETER,
}


def role_of(op_type: str | None) -> NodeRole:
    """The role an op type implies (COMPUTE for any type not in :data:`ROLE_OF_TYPE`)."""
    return ROLE_OF_TYPE.get(op_type or "", NodeRole.COMPUTE)


def row_ops(rows: PartRows) -> dict[str, str | None]:
    """Left op name -> op type of the rows, in row order (rows without a left op are skipped)."""
    out: dict[str, str | None] = {}
    for left, op_type in zip(rows.left_op, rows.op_type):
        if left and left != "*" and left not in out:
            out[left] = op_type
    return out


# ------------------------------------------------------------------------------ sources


def _topological(ops: Mapping[str, Sequence[str]], rank: Mapping[str, int]) -> list[str]:
    """Kahn's order of ``ops`` (name -> producer names), ties by ``rank``; producers outside
    ``ops`` are ignored; a cycle (never in a valid graph) keeps the remaining ops in rank order.
    When the rank order is already topological (ATC numbers ops so), it is returned as it is."""
    import heapq  # noqa: PLC0415 - small, only here

    if all(rank[p] < rank[name] for name, producers in ops.items() for p in producers if p in rank and p != name):
        return sorted(ops, key=rank.__getitem__)

    indegree = {name: 0 for name in ops}
    consumers: dict[str, list[str]] = {name: [] for name in ops}
    for name, producers in ops.items():
        for producer in set(producers):
            if producer in ops and producer != name:
                indegree[name] += 1
                consumers[producer].append(name)
    ready = [(rank[name], name) for name, degree in indegree.items() if degree == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for consumer in consumers[name]:
            indegree[consumer] -= 1
            if indegree[consumer] == 0:
                heapq.heappush(ready, (rank[consumer], consumer))
    if len(order) < len(ops):
        done = set(order)
        order += sorted((n for n in ops if n not in done), key=rank.__getitem__)
    return order


def graph_from_rule(rule: FusionRule) -> OpGraph:
    """Policy 1: the fusion rule's ops, data edges and topological order (ties by op id, then
    rule order: a stable sort by id)."""
    ops = rule.ops
    roles = {name: ROLE_OF_TYPE.get(op.type or "", NodeRole.COMPUTE) for name, op in ops.items()}  # role_of, once an op
    compute = NodeRole.COMPUTE
    edges: dict[str, tuple[InputEdge, ...]] = {}
    producers: dict[str, list[str]] = {}
    for name, op in ops.items():
        data = [(producer, index) for producer, index in op.inputs if index >= 0]
        edges[name] = tuple([InputEdge(i, producer, index, roles.get(producer, compute), producer)
                             for i, (producer, index) in enumerate(data)])
        producers[name] = [producer for producer, _ in data if producer]
    ids = {name: op.id for name, op in ops.items()}
    order = _topological(producers, {name: i for i, name in enumerate(sorted(ids, key=ids.__getitem__))})
    nodes = {name: OpNode(name, ops[name].type, roles[name], edges[name]) for name in order}
    return OpGraph(nodes=nodes, source=GraphSource.FUSION_RULE, edges=True)


def graph_from_order(names: Sequence[str], types: Mapping[str, str | None], source: GraphSource) -> OpGraph:
    """Policies 3-4: nodes in the given order, no edges."""
    nodes = {name: OpNode(name=name, op_type=types.get(name), role=role_of(types.get(name))) for name in names}
    return OpGraph(nodes=nodes, source=source, edges=False)


# ------------------------------------------------------------------------------ alignment


def _aligner(graph_names: Iterable[str], row_names: Iterable[str], known: Mapping[str, str] | None = None
             ) -> dict[str, str]:
    """graph name -> row name: ``known`` first, then exactly, else by name_key, else by the key
    without the kernel id where it is unique on both sides."""
    rows = list(row_names)
    row_set = set(rows)
    graph = list(graph_names)
    out: dict[str, str] = dict(known or {})
    claimed = set(out.values())
    out.update({name: name for name in graph if name in row_set and name not in out and name not in claimed})
    if len(out) == len(graph) or len(out) == len(row_set):
        return out  # every name matched exactly (the usual case): no keys to compute
    taken: set[str] = set(out)
    free_rows = [n for n in rows if n not in taken]
    by_key: dict[str, str] = {}
    for name in free_rows:
        by_key.setdefault(name_key(name), name)
    stripped_rows = Counter(without_kernel_id(name_key(n)) for n in free_rows)
    row_by_stripped = {without_kernel_id(name_key(n)): n for n in free_rows}
    stripped_graph = Counter(without_kernel_id(name_key(n)) for n in graph if n not in out)
    for name in graph:
        if name in out:
            continue
        other = by_key.get(name_key(name))
        if other is None:
            key = without_kernel_id(name_key(name))
            if stripped_rows[key] == 1 and stripped_graph[key] == 1:
                other = row_by_stripped[key]
        if other is not None and other not in taken:
            out[name] = other
            taken.add(other)
    return out


def align(graph: OpGraph, rows_ops: Mapping[str, str | None], known: Mapping[str, str] | None = None) -> OpGraph:
    """``graph`` renamed to the rows' op names, with every row op a node (module doc);
    ``known``: graph name -> row name pairs found by the graph's own reader."""
    rename = _aligner(graph.nodes, rows_ops, known)
    renamed = any(old != new for old, new in rename.items())

    def edge(e: InputEdge) -> InputEdge:
        producer = rename.get(e.producer, e.producer) if e.producer is not None else None
        return InputEdge(index=e.index, producer=producer, output=e.output, role=e.role, name=e.name)

    nodes: dict[str, OpNode] = {}
    for name, node in graph.nodes.items():
        new = rename.get(name, name)
        if not renamed and (node.op_type or not rows_ops.get(new)):
            nodes[new] = node  # names already the rows' (the usual case): the node as it is
            continue
        nodes[new] = OpNode(name=new, op_type=node.op_type or rows_ops.get(new), role=node.role,
                            inputs=tuple(edge(e) for e in node.inputs), source=node.source)
    missing = [name for name in rows_ops if name not in nodes]
    notes = list(graph.notes)
    if missing:
        notes.append(f"{len(missing)} operator(s) of the report are not in the {graph.source} graph; they are "
                     f"placed by report order (e.g. {', '.join(missing[:3])})")
        nodes = _insert_by_row_order(nodes, rows_ops, set(missing))
    return OpGraph(nodes=nodes, source=graph.source, edges=graph.edges, notes=tuple(notes))


def _insert_by_row_order(nodes: dict[str, OpNode], rows_ops: Mapping[str, str | None], missing: set[str]
                         ) -> dict[str, OpNode]:
    """``nodes`` with each missing row op placed right after the last known op preceding it in row order."""
    after: dict[str | None, list[str]] = {}
    last: str | None = None
    for name in rows_ops:
        if name in missing:
            after.setdefault(last, []).append(name)
        else:
            last = name
    out: dict[str, OpNode] = {}

    def add_missing(anchor: str | None) -> None:
        for name in after.get(anchor, ()):
            out[name] = OpNode(name=name, op_type=rows_ops[name], role=role_of(rows_ops[name]))

    add_missing(None)
    for name, node in nodes.items():
        out[name] = node
        add_missing(name)
    return out


# ------------------------------------------------------------------------------ entry


def build_graph(rows: PartRows, left: Run | None = None, rule: FusionRule | None = None) -> OpGraph:
    """The graph of a compared run (module doc: the first source that applies)."""
    ops = row_ops(rows)
    notes: list[str] = []
    if rule is not None and rule.ops:
        return align(graph_from_rule(rule), ops)
    if left is not None:
        recorded = recorded_graph(left, ops, notes)
        if recorded is not None:
            return align(recorded.graph, ops, recorded.known)
        order = sorted(left.order, key=left.order.__getitem__)  # the execution order, when the run has one
        if order:
            aligned = align(graph_from_order(order, ops, GraphSource.EXECUTION_ORDER), ops)
            return replace(aligned, notes=tuple(notes) + aligned.notes)
    return replace(graph_from_order(list(ops), ops, GraphSource.DUMP_ORDER), notes=tuple(notes))


__all__ = ["ROLE_OF_TYPE", "align", "build_graph", "graph_from_order", "graph_from_rule", "role_of", "row_ops"]

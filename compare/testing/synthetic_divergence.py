"""A seeded two-branch network with errors injected at known operators: ground truth for localisation.

:func:`make_divergence_network` writes one fusion-rule comparison case in the real on-disk formats
(as :func:`compare.testing.synthetic.make_network` does) and returns a :class:`DivergenceCase`
saying which operators were made wrong, which only inherit the error and which are clean.

The graph (``order``; ``*`` marks a Const, every Const and ``data`` is a source)::

    data -> a1 Conv2D(*w_a1) -> a2 Add(*bias_a2) -> a3 Relu -> a4 Conv2D(*w_a4) -> a5 Tanh --+
    data -> b1 Mul(*scale_b1) -> b2 Tanh -> b3 Add(b2, b1) -> b4 Conv2D(*w_b4) -> b5 Relu --+
         (b1 also has a control edge ``a3:-1``, which is no data edge)                     |
    merge ConcatD(a5, b5) -> m1 Conv2D(*w_m1) -> m2 Tanh -> m3 Add(m2, m1) -> out Conv2D(*w_out)
    data -> cast_c Cast (fp16) -> c1 Mul(*w_c1, fp16) -> c2 Tanh (fp16)       (a side head)

Tensors are NCHW float32 (``1 x 8 x size x size``; convolutions are 1x1), except the side head,
which the left side computes and stores in float16 (``cast_c`` is an ATC-inserted Cast: its
golden is ``data``'s, found by walking back through it).

- **right** (``golden/{op}.0.{ts}.npy``): every framework op's output (Data and Const included,
  no Cast), computed in float64 from float32 sources and stored float32;
- **left** (``npu/{time}/0/divergence_net/1/0/``): Ascend binary dumps of every compute op, its
  input tensors (the values it consumed) and its output, in execution order; Data and Const are
  not dumped. The left side is the same computation in float32 (float16 on the side head) plus
  relative noise of ``1e-7`` at every op, plus at each op of ``inject`` an additive error of
  relative L2 size ``magnitude`` on its output *before* it is fed on (consumers are recomputed
  from the wrong values). Each source of ``perturb_inputs`` is given to its consumers with an
  error of that relative size (a data divergence). ``nonfinite_at`` puts 3 NaN and 2 Inf values
  into that op's output (they spread downstream);
- **rule** (``model.json``): the ATC om->json graph of all ops with their data edges
  (``producer:0``) and the control edge.

Random streams are per node (seeded by ``(seed, position)``), so injecting at one op changes no
other value upstream or in an unrelated branch.

Bounds (docs/policy.md, dtype defaults): clean float32 tensors stay near RED 1e-7 (bound
3.45e-4); an injected magnitude ``m`` gives RED about ``m`` at the op; downstream ops keep an error
of the same order (no saturating activation: tanh inputs are kept moderate). The float16 side head
is held to fp16 bounds (RED 0.03125): its clean RED is about 3e-4, and an injection there needs a
magnitude of about 0.3 or more to fail it unambiguously.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from convert.codecs.dumpwrite import TensorSpec

from .synthetic_quant import _Desc, _dump, _leaf, _npy, _op_json, _write_rule

MODEL = "divergence_net"
CHANNELS = 8
#: Relative size of the noise added to every left op output (on top of float32 rounding).
NOISE = 1e-7
#: Element counts of the values ``nonfinite_at`` writes.
NAN_COUNT, INF_COUNT = 3, 2

SOURCE_TYPES = frozenset({"Data", "Const"})


@dataclass(frozen=True)
class _Node:
    """One node of the network: its inputs (data edges, in order) and control edges."""

    name: str
    op_type: str
    inputs: tuple[str, ...] = ()
    control: tuple[str, ...] = ()
    half: bool = False  # the left side holds this node's output in float16


_NODES: tuple[_Node, ...] = (
    _Node("data", "Data"),
    _Node("w_a1", "Const"),
    _Node("a1", "Conv2D", ("data", "w_a1")),
    _Node("bias_a2", "Const"),
    _Node("a2", "Add", ("a1", "bias_a2")),
    _Node("a3", "Relu", ("a2",)),
    _Node("w_a4", "Const"),
    _Node("a4", "Conv2D", ("a3", "w_a4")),
    _Node("a5", "Tanh", ("a4",)),
    _Node("scale_b1", "Const"),
    _Node("b1", "Mul", ("data", "scale_b1"), control=("a3",)),
    _Node("b2", "Tanh", ("b1",)),
    _Node("b3", "Add", ("b2", "b1")),
    _Node("w_b4", "Const"),
    _Node("b4", "Conv2D", ("b3", "w_b4")),
    _Node("b5", "Relu", ("b4",)),
    _Node("merge", "ConcatD", ("a5", "b5")),
    _Node("w_m1", "Const"),
    _Node("m1", "Conv2D", ("merge", "w_m1")),
    _Node("m2", "Tanh", ("m1",)),
    _Node("m3", "Add", ("m2", "m1")),
    _Node("w_out", "Const"),
    _Node("out", "Conv2D", ("m3", "w_out")),
    _Node("cast_c", "Cast", ("data",), half=True),
    _Node("w_c1", "Const", half=True),
    _Node("c1", "Mul", ("cast_c", "w_c1"), half=True),
    _Node("c2", "Tanh", ("c1",), half=True),
)


def _conv1x1(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A 1x1 convolution of NCHW ``x`` with ``(out, in, 1, 1)`` weights (no bias)."""
    return np.einsum("oc,nchw->nohw", w[:, :, 0, 0], x)


_KERNELS: dict[str, Callable[[Sequence[np.ndarray]], np.ndarray]] = {
    "Conv2D": lambda a: _conv1x1(a[0], a[1]),
    "Add": lambda a: a[0] + a[1],
    "Mul": lambda a: a[0] * a[1],
    "Relu": lambda a: np.maximum(a[0], 0),
    "Tanh": lambda a: np.tanh(a[0]),
    "ConcatD": lambda a: np.concatenate(list(a), axis=1),
    "Cast": lambda a: a[0].copy(),
}


@dataclass(frozen=True)
class DivergenceCase:
    """A written divergence case and its ground truth.

    ``left`` is the dump tree's top folder (``leaf`` its data_index folder), ``right`` the golden
    folder, ``rule`` the fusion rule. ``order``: every node (sources included) in topological
    order, which is also the dump order; ``edges``: node -> its data-edge producers in input order
    (control edges excluded; sources map to ``()``); ``op_types``: node -> type; ``sources``:
    the Data / Const nodes (never dumped); ``compute``: the dumped ops; ``left_dtypes``: compute
    op -> numpy name of its left output (``float32`` / ``float16``).

    The ground truth partitions ``compute`` (each tuple in topological order): ``injected`` (the
    ops of ``inject``, and ``nonfinite`` when given), ``data_differs`` (ops that consume a
    perturbed source and are not injected), ``downstream`` (ops reached through data edges from
    an injected or data_differs op, those excluded) and ``clean``. ``inject`` / ``perturbed`` /
    ``nonfinite`` repeat the generator's arguments.
    """

    left: Path
    leaf: Path
    right: Path
    rule: Path
    order: tuple[str, ...]
    edges: Mapping[str, tuple[str, ...]]
    op_types: Mapping[str, str]
    sources: tuple[str, ...]
    compute: tuple[str, ...]
    left_dtypes: Mapping[str, str]
    injected: tuple[str, ...]
    data_differs: tuple[str, ...]
    downstream: tuple[str, ...]
    clean: tuple[str, ...]
    inject: Mapping[str, float]
    perturbed: Mapping[str, float]
    nonfinite: str | None = None

    def truth_of(self, op: str) -> str:
        """``injected``, ``data_differs``, ``downstream`` or ``clean`` for a compute op (KeyError otherwise)."""
        for label, names in (("injected", self.injected), ("data_differs", self.data_differs),
                             ("downstream", self.downstream), ("clean", self.clean)):
            if op in names:
                return label
        raise KeyError(f"{op!r} is not a compute op of the case")


def network_nodes() -> tuple[str, ...]:
    """Every node name of the network, in topological order (for option checks and help texts)."""
    return tuple(node.name for node in _NODES)


def _sources(seed: int, size: int) -> dict[str, np.ndarray]:
    """The float32 input and weights, drawn in one fixed order (independent of the options)."""
    rng = np.random.default_rng(seed)
    c = CHANNELS
    half_c = c // 2

    def normal(shape: tuple[int, ...], scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def signed_uniform(shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
        magnitude = rng.uniform(low, high, shape)
        return (magnitude * rng.choice([-1.0, 1.0], shape)).astype(np.float32)

    return {
        "data": normal((1, c, size, size), 1.0),
        "w_a1": normal((c, c, 1, 1), 1.0 / math.sqrt(c)),
        "bias_a2": normal((1, c, 1, 1), 0.3),
        "w_a4": normal((c, c, 1, 1), 1.0 / math.sqrt(c)),
        "scale_b1": signed_uniform((1, c, 1, 1), 0.3, 0.8),
        "w_b4": normal((c, c, 1, 1), 1.0 / math.sqrt(c)),
        "w_m1": normal((c, 2 * c, 1, 1), 1.0 / math.sqrt(2 * c)),
        "w_out": normal((half_c, c, 1, 1), 1.0 / math.sqrt(c)),
        "w_c1": rng.uniform(0.5, 1.5, (1, c, 1, 1)).astype(np.float32),
    }


def _rms(value: np.ndarray) -> float:
    finite = value[np.isfinite(value)]
    rms = float(np.sqrt(np.mean(np.square(finite, dtype=np.float64)))) if finite.size else 0.0
    return rms or 1.0


def _with_error(value: np.ndarray, relative: float, rng: np.random.Generator) -> np.ndarray:
    """``value`` plus Gaussian error of relative L2 size about ``relative`` (float32 result)."""
    error = rng.standard_normal(value.shape) * (relative * _rms(value))
    return (value.astype(np.float64) + error).astype(np.float32)


def _with_nonfinite(value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``value`` with NAN_COUNT NaN and INF_COUNT +/-Inf elements at seeded positions."""
    flat = value.copy().reshape(-1)
    where = rng.choice(flat.size, NAN_COUNT + INF_COUNT, replace=False)
    flat[where[:NAN_COUNT]] = np.nan
    flat[where[NAN_COUNT:]] = [np.inf if k % 2 == 0 else -np.inf for k in range(INF_COUNT)]
    return flat.reshape(value.shape)


def _check_options(inject: Mapping[str, float], perturb: Mapping[str, float], nonfinite_at: str | None,
                   size: int) -> None:
    kinds = {node.name: node.op_type for node in _NODES}
    compute = sorted(name for name, kind in kinds.items() if kind not in SOURCE_TYPES)
    sources = sorted(name for name, kind in kinds.items() if kind in SOURCE_TYPES)
    for what, names, allowed in (("inject", inject, compute), ("perturb_inputs", perturb, sources)):
        for name, magnitude in names.items():
            if name not in allowed:
                raise ValueError(f"{what}: {name!r} is not one of {', '.join(allowed)}")
            if not (math.isfinite(magnitude) and magnitude > 0):
                raise ValueError(f"{what}: the magnitude of {name!r} must be a positive finite number, not {magnitude}")
    if nonfinite_at is not None and nonfinite_at not in compute:
        raise ValueError(f"nonfinite_at: {nonfinite_at!r} is not one of {', '.join(compute)}")
    if size < 4:
        raise ValueError(f"size must be at least 4 (tensors of 8 x size x size elements), not {size}")


def _ground_truth(inject: Mapping[str, float], perturb: Mapping[str, float], nonfinite_at: str | None
                  ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(injected, data_differs, downstream, clean), each in topological order."""
    compute = [node for node in _NODES if node.op_type not in SOURCE_TYPES]
    injected = [n.name for n in compute if n.name in inject or n.name == nonfinite_at]
    data_differs = [n.name for n in compute if n.name not in injected and any(p in perturb for p in n.inputs)]
    wrong = set(injected) | set(data_differs)
    reached: set[str] = set()
    for node in compute:  # topological order: a producer is decided before its consumers
        if any(p in wrong or p in reached for p in node.inputs):
            reached.add(node.name)
    downstream = [n.name for n in compute if n.name in reached and n.name not in wrong]
    clean = [n.name for n in compute if n.name not in wrong and n.name not in reached]
    return tuple(injected), tuple(data_differs), tuple(downstream), tuple(clean)


def make_divergence_network(out_dir: str | Path, *, seed: int = 0, inject: Mapping[str, float] | None = None,
                            perturb_inputs: Mapping[str, float] | None = None, nonfinite_at: str | None = None,
                            size: int = 8) -> DivergenceCase:
    """Write the two-branch divergence case under ``out_dir`` (see the module doc); return its truth.

    ``inject``: compute op -> relative error of its output (e.g. ``{"a3": 0.05}``);
    ``perturb_inputs``: Data/Const node -> relative error of the value its consumers get on the
    left (e.g. ``{"w_b4": 0.05}``); ``nonfinite_at``: a compute op whose left output gets NaN and
    Inf values; ``size``: the spatial size (tensors are ``1 x 8 x size x size``). The same
    arguments write the same files. Raises ValueError for an unknown name or a bad magnitude.
    """
    inject = dict(inject or {})
    perturb = dict(perturb_inputs or {})
    _check_options(inject, perturb, nonfinite_at, size)
    out = Path(out_dir)
    right = out / "golden"
    right.mkdir(parents=True, exist_ok=True)
    leaf = _leaf(out, MODEL)

    sources = _sources(seed, size)
    golden: dict[str, np.ndarray] = {}  # float64
    left: dict[str, np.ndarray] = {}  # as the left side stores it (float32 / float16)
    for position, node in enumerate(_NODES):
        stream = np.random.default_rng([seed, position])
        if node.op_type in SOURCE_TYPES:
            value = sources[node.name]
            golden[node.name] = value.astype(np.float64)
            if node.name in perturb:
                value = _with_error(value, perturb[node.name], stream)
        else:
            golden[node.name] = _KERNELS[node.op_type]([golden[p] for p in node.inputs])
            value = _KERNELS[node.op_type]([left[p].astype(np.float32) for p in node.inputs]).astype(np.float32)
            value = _with_error(value, NOISE, stream)
            if node.name in inject:
                value = _with_error(value, inject[node.name], stream)
            if node.name == nonfinite_at:
                value = _with_nonfinite(value, stream)
        left[node.name] = value.astype(np.float16 if node.half else np.float32)

    rule_ops: list[dict] = []
    for position, node in enumerate(_NODES):
        value = left[node.name]
        shape = tuple(int(d) for d in value.shape)
        dtype = "DT_FLOAT16" if node.half else "DT_FLOAT"
        edges = [f"{p}:0" for p in node.inputs] + [f"{c}:-1" for c in node.control]
        if node.op_type in SOURCE_TYPES:  # no original-name attribute: maps to itself
            originals, origin = None, None
        elif node.op_type == "Cast":  # inserted by ATC: no framework counterpart
            originals, origin = [], ""
        else:
            originals, origin = [node.name], node.name
        desc = _Desc(dtype, origin, "NCHW", shape, layout="NCHW", shape=shape)
        rule_ops.append(_op_json(node.name, node.op_type, position, edges, originals, [desc]))
        if node.op_type != "Cast":
            _npy(right, node.name, position, golden[node.name].astype(np.float32))
        if node.op_type in SOURCE_TYPES:
            continue
        inputs = [TensorSpec(left[p], format="NCHW", original_shape=left[p].shape) for p in node.inputs]
        outputs = [TensorSpec(value, format="NCHW", original_shape=shape)]
        _dump(leaf, position, node.op_type, node.name, inputs, outputs)
    rule = _write_rule(out / "model.json", MODEL, rule_ops)

    injected, data_differs, downstream, clean = _ground_truth(inject, perturb, nonfinite_at)
    compute = tuple(n.name for n in _NODES if n.op_type not in SOURCE_TYPES)
    return DivergenceCase(
        left=out / "npu", leaf=leaf, right=right, rule=rule,
        order=network_nodes(),
        edges=MappingProxyType({n.name: n.inputs for n in _NODES}),
        op_types=MappingProxyType({n.name: n.op_type for n in _NODES}),
        sources=tuple(n.name for n in _NODES if n.op_type in SOURCE_TYPES),
        compute=compute,
        left_dtypes=MappingProxyType({name: str(left[name].dtype) for name in compute}),
        injected=injected, data_differs=data_differs, downstream=downstream, clean=clean,
        inject=MappingProxyType(inject), perturbed=MappingProxyType(perturb), nonfinite=nonfinite_at,
    )

"""A seeded multi-rank training dump: R ranks x I iterations of a small data-parallel network.

:func:`make_rank_tree` writes one dump tree in which data-parallel replicas agree where a real
data-parallel run agrees and differ where it differs, so that the cross-rank consistency check
(:mod:`compare.consistency`) has something true to find:

* ``param`` ops (:class:`OpKind.PARAM`, MindSpore ``Parameter`` files): one output, the same
  on every rank of a data-parallel group;
* ``grad`` ops (:class:`OpKind.GRAD`, an ``AllReduce`` under the ``Gradients`` scope; a
  ``HcomAllReduce`` in a GE tree): input 0 is the rank's local gradient (its own micro-batch:
  different on every rank), output 0 the all-reduced gradient, the float32 mean of the group's
  local gradients -- the same on every rank of the group;
* ``activation`` ops (:class:`OpKind.ACTIVATION`, forward ``MatMul`` / ``ReLU``): inputs and
  outputs of the rank's own micro-batch, different on every rank.

Groups: ``dp`` consecutive ranks form a data-parallel group (``dp`` = ``ranks`` by default).
Replicated values depend on the group (groups of a tensor-parallel layout hold different
shards), so checking with the wrong groups finds disagreements everywhere.

Layouts (``layout``):

* ``"npy"`` -- MindSpore O0/O1: ``rank_{r}/Net/0/{iteration}/`` holding
  ``{type}.{scope name with --}.{task}.0.{ts}.{input|output}.{slot}.DefaultFormat.float32.npy``
  (Parameters written in the iteration folder, as MindSpore 2.x does);
* ``"ge"`` -- TF-NPU / GE: ``{time}/{device}/{model}/1/{data_index}/`` holding Ascend dump files
  ``{type}.{name}.{task}.1.{ts}`` (float16). A GE dump holds no parameter operators (variables
  are not tasks): the ``param`` ops are left out of a ``ge`` tree.

``perturb`` (:class:`Perturbation`) multiplies the chosen rank's tensors of the chosen op kinds
(their replicated tensors: parameter outputs, all-reduced gradients) by ``1 + relative``: the
rank's relative Euclidean distance to its replicas is ``relative`` (float32 rounding aside).

Values are a pure function of (op, tensor, iteration, rank or group) -- see :func:`local_value`
and :func:`group_value` -- so a test can say exactly what each file holds.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from convert.codecs.dumpwrite import TensorSpec, write_dump

from .synthetic_mindspore import BASE_TS, TIME_DIR, ascend_file_op, ms_file_op

#: The model_name folder of a ``ge`` tree.
GE_MODEL = "ge_default_20240101120000_1"


class OpKind(str, enum.Enum):
    """What an op of the synthetic network is, for data parallelism (module doc)."""

    PARAM = "param"
    GRAD = "grad"
    ACTIVATION = "activation"


@dataclass(frozen=True)
class RankOp:
    """One op of the network: its kind, type (as a MindSpore dump names it), name and tensor shape.

    ``ge_type``: the op type in a GE tree (``HcomAllReduce`` for an ``AllReduce``)."""

    kind: OpKind
    type: str
    name: str
    shape: tuple[int, ...]
    ge_type: str = ""


#: The network, in execution order: two layers' parameters, forward activations, all-reduced gradients.
RANK_OPS: tuple[RankOp, ...] = (
    RankOp(OpKind.PARAM, "Parameter", "fc1_weight", (16, 32)),
    RankOp(OpKind.PARAM, "Parameter", "fc1_bias", (16,)),
    RankOp(OpKind.PARAM, "Parameter", "fc2_weight", (4, 16)),
    RankOp(OpKind.ACTIVATION, "MatMul", "Default/network-fc1/MatMul-op1", (8, 16)),
    RankOp(OpKind.ACTIVATION, "ReLU", "Default/network-relu/ReLU-op2", (8, 16)),
    RankOp(OpKind.ACTIVATION, "MatMul", "Default/network-fc2/MatMul-op3", (8, 4)),
    RankOp(OpKind.GRAD, "AllReduce", "Gradients/Default/network-fc2/AllReduce-op4", (4, 16), "HcomAllReduce"),
    RankOp(OpKind.GRAD, "AllReduce", "Gradients/Default/network-fc1/AllReduce-op5", (16, 32), "HcomAllReduce"),
    RankOp(OpKind.GRAD, "AllReduce", "Gradients/Default/network-fc1/AllReduce-op6", (16,), "HcomAllReduce"),
)


@dataclass(frozen=True)
class Perturbation:
    """Multiply ``rank``'s replicated tensors of ``kinds`` by ``1 + relative`` (module doc)."""

    rank: int
    relative: float = 1e-3
    kinds: tuple[OpKind, ...] = (OpKind.GRAD,)


@dataclass
class RankTree:
    """A written tree: its root, the ranks and iterations, and where each tensor was written.

    ``files`` maps ``(rank, iteration, tensor_id)`` (``{op name}:{input|output}:{index}`` as the
    reader names it) to the file, so a test can delete or damage one tensor of one rank."""

    root: Path
    ranks: int
    iterations: int
    dp: int
    layout: str
    files: dict[tuple[int, int, str], Path] = field(default_factory=dict)

    def file(self, rank: int, iteration: int, tensor_id: str) -> Path:
        return self.files[(rank, iteration, tensor_id)]


def _seeded(*parts: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("|".join(str(p) for p in parts).encode()))


def local_value(op: RankOp, kind: str, iteration: int, rank: int) -> np.ndarray:
    """A per-rank float32 value (a micro-batch's activation or local gradient)."""
    return _seeded(op.name, kind, iteration, "rank", rank).standard_normal(op.shape).astype(np.float32)


def group_value(op: RankOp, iteration: int, group: int) -> np.ndarray:
    """A parameter's float32 value, the same on every rank of data-parallel group ``group``."""
    return _seeded(op.name, iteration, "group", group).standard_normal(op.shape).astype(np.float32)


def reduced_value(op: RankOp, iteration: int, group_ranks: Sequence[int]) -> np.ndarray:
    """The all-reduced gradient: the float32 mean of the group's local gradients (summed in rank order)."""
    total = np.zeros(op.shape, dtype=np.float32)
    for rank in group_ranks:
        total += local_value(op, "input", iteration, rank)
    return total / np.float32(len(group_ranks))


def _tensors(op: RankOp, iteration: int, rank: int, group_ranks: Sequence[int], group: int,
             perturb: Perturbation | None) -> list[tuple[str, int, np.ndarray]]:
    """``(input|output, index, value)`` of one op on one rank."""
    scale = None
    if perturb is not None and perturb.rank == rank and op.kind in perturb.kinds:
        scale = np.float32(1.0 + perturb.relative)
    if op.kind is OpKind.PARAM:
        value = group_value(op, iteration, group)
        return [("output", 0, value * scale if scale is not None else value)]
    if op.kind is OpKind.GRAD:
        reduced = reduced_value(op, iteration, group_ranks)
        return [("input", 0, local_value(op, "input", iteration, rank)),
                ("output", 0, reduced * scale if scale is not None else reduced)]
    return [("input", 0, local_value(op, "input", iteration, rank)),
            ("output", 0, local_value(op, "output", iteration, rank))]


def make_rank_tree(out: str | Path, *, ranks: int = 8, iterations: int = 2, dp: int | None = None,
                   layout: str = "npy", perturb: Perturbation | None = None,
                   ops: Sequence[RankOp] = RANK_OPS) -> RankTree:
    """Write the tree under ``out`` (see the module doc) and return where everything went."""
    dp = ranks if dp is None else dp
    if layout not in ("npy", "ge"):
        raise ValueError(f"layout must be 'npy' or 'ge', not {layout!r}")
    if dp < 1 or ranks % dp:
        raise ValueError(f"{ranks} ranks do not split into data-parallel groups of {dp}")
    root = Path(out)
    tree = RankTree(root, ranks, iterations, dp, layout)
    for rank in range(ranks):
        group = rank // dp
        group_ranks = range(group * dp, group * dp + dp)
        for iteration in range(iterations):
            if layout == "npy":
                leaf = root / f"rank_{rank}" / "Net" / "0" / str(iteration)
            else:
                leaf = root / TIME_DIR / str(rank) / GE_MODEL / "1" / str(iteration)
            leaf.mkdir(parents=True, exist_ok=True)
            for task, op in enumerate(ops, start=1):
                ts = BASE_TS + 1000 * task + iteration
                tensors = _tensors(op, iteration, rank, group_ranks, group, perturb)
                if layout == "npy":
                    for kind, index, value in tensors:
                        path = leaf / (f"{op.type}.{ms_file_op(op.name)}.{task}.0.{ts}.{kind}.{index}"
                                       ".DefaultFormat.float32.npy")
                        np.save(path, value)
                        tree.files[(rank, iteration, f"{op.name}:{kind}:{index}")] = path
                elif op.kind is not OpKind.PARAM:
                    name = ascend_file_op(op.name)
                    path = leaf / f"{op.ge_type or op.type}.{name}.{task}.1.{ts}"
                    specs = {kind: TensorSpec(value.astype(np.float16), format="ND") for kind, _, value in tensors}
                    write_dump(path, inputs=[specs["input"]] if "input" in specs else [],
                               outputs=[specs["output"]], op_name=op.name)
                    for kind, index, _ in tensors:
                        tree.files[(rank, iteration, f"{name}:{kind}:{index}")] = path
    return tree


__all__ = ["GE_MODEL", "OpKind", "Perturbation", "RANK_OPS", "RankOp", "RankTree", "group_value", "local_value",
           "make_rank_tree", "reduced_value"]

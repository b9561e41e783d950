"""Seeded multi-rank, multi-iteration MindSpore ``.npy`` dump trees: an LLM training run in small.

:func:`make_rank_trees` writes two trees under ``out``, ``left`` (the run under test) and ``right``
(the golden run), each ``rank_R/Net/0/I/`` for ``ranks`` ranks and ``iterations`` iterations, plus
``rank_R/execution_order/ms_execution_order_graph_0.csv``. Every part holds a chain of ``ops``
operators (types cycling through :data:`TYPES`), each with one input (its producer's output) and
one output of ``elements`` float32 values: ``2 * ops`` small files a part and side, the many-small-
tensors shape of LLM dumps. Left values are the golden ones plus ``noise`` (relative); ``faulty``
``(rank, iteration, op)`` makes one operator's output wrong (a first divergence to find), and
every ``(rank, iteration)`` in ``unmatched`` exists on the left only (a part that cannot be
compared). Values depend on (seed, rank, iteration, op) only.

Used by the distributed tests (``tests/compare/runs/test_distributed.py``) and ``scripts/bench.py
--ranks N``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Operator types of the chain, in turn.
TYPES = ("MatMul", "Add", "Gelu", "LayerNorm")
#: The network folder name of the trees.
NET = "Net"
BASE_TS = 1704110400000000


def op_name(k: int) -> str:
    """The scope name of the ``k``-th operator (as MindSpore writes it in ``.npy`` names: ``--``)."""
    return f"Default--layer{k // len(TYPES)}--{TYPES[k % len(TYPES)]}-op{k}"


def _file(k: int, kind: str) -> str:
    task = k + 1
    return f"{TYPES[k % len(TYPES)]}.{op_name(k)}.{task}.0.{BASE_TS + 1000 * task}.{kind}.0.DefaultFormat.float32.npy"


def _write_npy(path: Path, data: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, data, allow_pickle=False)


def _part(leaf: Path, values: list[np.ndarray]) -> None:
    """One leaf: operator k reads ``values[k]`` and writes ``values[k + 1]``."""
    leaf.mkdir(parents=True, exist_ok=True)
    for k in range(len(values) - 1):
        _write_npy(leaf / _file(k, "input"), values[k])
        _write_npy(leaf / _file(k, "output"), values[k + 1])


def make_rank_trees(out: str | Path, *, ranks: int = 2, iterations: int = 3, ops: int = 8, elements: int = 64,
                    noise: float = 1e-6, seed: int = 0, faulty: tuple[int, int, int] | None = None,
                    unmatched: tuple[tuple[int, int], ...] = ()) -> dict[str, Path]:
    """Write the two trees (module doc); return ``{"left": root, "right": root}``."""
    out = Path(out)
    roots = {"left": out / "left", "right": out / "right"}
    for rank in range(ranks):
        for side in roots.values():
            order = side / f"rank_{rank}" / "execution_order"
            order.mkdir(parents=True, exist_ok=True)
            (order / "ms_execution_order_graph_0.csv").write_text("".join(op_name(k) + "\n" for k in range(ops)))
        for iteration in range(iterations):
            rng = np.random.default_rng([seed, rank, iteration])
            golden = [rng.standard_normal(elements).astype(np.float32) for _ in range(ops + 1)]
            left = [(g * (1 + noise * rng.standard_normal(elements))).astype(np.float32) for g in golden]
            if faulty is not None and faulty[:2] == (rank, iteration):
                left[faulty[2] + 1] = left[faulty[2] + 1] + np.float32(1.0)
            leaf = Path(NET) / "0" / str(iteration)
            _part(roots["left"] / f"rank_{rank}" / leaf, left)
            if (rank, iteration) not in unmatched:
                _part(roots["right"] / f"rank_{rank}" / leaf, golden)
    return roots


__all__ = ["TYPES", "make_rank_trees", "op_name"]

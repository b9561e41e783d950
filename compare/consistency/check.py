"""One group at one (graph, iteration): every replicated tensor compared across the group's ranks.

:func:`check_part` is a plain function of picklable arguments (a :class:`ConsistencyPart`: leaf
folders, and :class:`ConsistencyOptions`), so a process or a distributed task can run parts of
one tree side by side; it reads the dumps itself and returns a
:class:`~compare.consistency.records.PartCheck`.

For each replicated tensor (:mod:`compare.consistency.tensors`) of any rank of the group:

1. **Identity.** Each rank's value is read and reduced to its :func:`digest` (BLAKE2b-128 of
   dtype, shape and bytes), then let go: one tensor of one rank is in memory at a time.
2. **Reference.** The value most ranks hold is the group's reference; of equally common values,
   the one the lowest rank holds. The reference rank is the lowest rank holding it. The reference
   is a *majority* when more than half of the ranks read hold it; otherwise (two ranks that
   differ, or every rank different) the rows say so: which rank is faulty cannot be told.
3. **Metrics.** Each rank holding another value is read again with the reference and compared by
   :func:`compare.kernels.compare_arrays`: ``MaxAbsoluteError``, ``CosineSimilarity``,
   ``RelativeEuclideanDistance`` (RED, ``||x - ref|| / ||ref||``), the rank's value as the left
   side.
4. **Verdict.** By default a rank agrees only when its bytes equal the reference's (exact:
   floating-point all-reduce and parameter updates are deterministic and give bitwise identical
   replicas on every rank of a healthy group). With a ``tolerance`` a rank also agrees when its
   dtype and shape equal the reference's and ``RED <= tolerance`` (a NaN RED never agrees; the
   value is counted in ``within_tolerance``, no row).

Rows (:class:`~compare.consistency.records.ReplicaRow`) are written for the ranks that differ and for every
value that could not be checked: a group rank without a dump folder for the part (``no dump``),
a dump folder that cannot be scanned, a tensor a rank did not dump while another rank of the group
did (``missing``), a file that cannot be read or decoded, an op whose dump file cannot be parsed,
a tensor with statistics only (``unreadable``, with the reader's diagnosis). Nothing is dropped.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CompareError
from ..kernels import COSINE, MAX_ABS, RED, compare_arrays
from ..loaders.parts import scan_part
from ..loaders.selection import Candidate
from ..records import OpDump, Run, TensorKind, TensorRef
from .records import PartCheck, RankGroup, ReplicaRow, ReplicaStatus, Replicated
from .tensors import TensorRule

#: The metrics computed for a rank whose value differs, in report order.
CHECK_METRICS = (MAX_ABS, COSINE, RED)


@dataclass(frozen=True)
class ConsistencyOptions:
    """How to check: which tensors (``tensors``), the RED ``tolerance`` (None: exact), the dump
    file ``version`` to force (None: detected per file, as ``-v``)."""

    tensors: TensorRule = field(default_factory=TensorRule)
    tolerance: float | None = None
    version: int | None = None


@dataclass(frozen=True)
class ConsistencyPart:
    """One group at one (graph, iteration) of the tree at ``root``: the leaf folder of each group
    rank that has one (a group rank missing from ``leaves`` has no dump folder for the part)."""

    root: Path
    group: RankGroup
    graph: int | None
    iteration: int | None
    leaves: Mapping[int, Candidate]

    @property
    def where(self) -> str:
        """``graph G iteration I`` (the levels the tree has), for reasons."""
        parts = [f"{name} {value}" for name, value in (("graph", self.graph), ("iteration", self.iteration))
                 if value is not None]
        return " ".join(parts) or "the dump"


@dataclass(frozen=True)
class _Wanted:
    """A replicated tensor found on some rank: where to look for it on the others."""

    op_name: str
    kind: TensorKind
    index: int
    tensor_id: str
    op_type: str | None
    why: Replicated


def digest(array: np.ndarray) -> bytes:
    """The identity of a value: BLAKE2b-128 of its dtype (name and byte order), shape and bytes
    (C order). Equal digests mean bitwise-equal values (NaNs with equal bits included)."""
    data = np.ascontiguousarray(array)
    hasher = hashlib.blake2b(digest_size=16)
    hasher.update(f"{data.dtype.name}|{data.dtype.str}|{data.shape}".encode())
    hasher.update(data.reshape(-1).view(np.uint8).data)
    return hasher.digest()


def check_part(part: ConsistencyPart, options: ConsistencyOptions) -> PartCheck:
    """Check one part (module doc); never raises for what it finds in the dumps (rows say it)."""
    result = PartCheck(part.group, part.graph, part.iteration, present=tuple(sorted(part.leaves)))
    row = functools.partial(ReplicaRow, group=part.group.index, graph=part.graph, iteration=part.iteration)

    runs: dict[int, Run] = {}
    for rank in part.group.ranks:
        leaf = part.leaves.get(rank)
        if leaf is None:
            result.rows.append(row(rank=rank, status=ReplicaStatus.NO_DUMP,
                                   reason=f"rank {rank} has no dump folder for {part.where} in {part.root}"))
            continue
        try:
            runs[rank] = scan_part(leaf, root=part.root, version=options.version)
        except CompareError as exc:
            result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE,
                                   reason=f"dump folder {leaf.path} cannot be read: {exc}"))
    wanted = _replicated(runs, options.tensors, result, row)
    result.tensors = len(wanted)
    for tensor in wanted:
        _check_tensor(tensor, runs, options, result, row)
    return result


def _replicated(runs: Mapping[int, Run], rule: TensorRule, result: PartCheck,
                row: Callable[..., ReplicaRow]) -> list[_Wanted]:
    """The replicated tensors of any rank, in the order first met (ranks ascending); an op whose
    dump file could not be parsed and whose tensors no other rank names gets its own row."""
    wanted: dict[str, _Wanted] = {}
    broken: list[tuple[int, OpDump]] = []
    for rank in sorted(runs):
        for op in runs[rank].ops.values():
            if op.error is not None and not op.inputs and not op.outputs:
                if rule.selects_op(op):
                    broken.append((rank, op))
                continue
            for ref in (*op.inputs, *op.outputs):
                why = rule.why(op, ref)
                if why is not None and ref.tensor_id not in wanted:
                    wanted[ref.tensor_id] = _Wanted(op.name, ref.kind, ref.index, ref.tensor_id, op.op_type, why)
    named = {tensor.op_name for tensor in wanted.values()}
    for rank, op in broken:
        if op.name not in named:
            result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE, tensor_id=op.name,
                                   op_type=op.op_type, reason=op.error or ""))
    return list(wanted.values())


def _check_tensor(tensor: _Wanted, runs: Mapping[int, Run], options: ConsistencyOptions, result: PartCheck,
                  row: Callable[..., ReplicaRow]) -> None:
    """Steps 1-4 of the module doc for one tensor: rows appended to ``result``."""
    about = {"tensor_id": tensor.tensor_id, "op_type": tensor.op_type, "why": tensor.why}
    digests: dict[int, bytes] = {}
    refs: dict[int, TensorRef] = {}
    for rank in sorted(runs):
        op = runs[rank].find(tensor.op_name)
        ref = op.tensor(tensor.kind, tensor.index) if op is not None else None
        if ref is None:
            if op is not None and op.error is not None:
                result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE, reason=op.error, **about))
            else:
                what = "the operator" if op is None else f"this {tensor.kind.value} of the operator"
                result.rows.append(row(rank=rank, status=ReplicaStatus.MISSING, **about,
                                       reason=f"rank {rank} did not dump {what}; other ranks of its group did"))
            continue
        try:
            digests[rank] = digest(ref.load())
        except (CompareError, OSError) as exc:
            result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE, reason=str(exc), **about))
            continue
        refs[rank] = ref
    result.checked += len(digests)
    holders: dict[bytes, list[int]] = {}
    for rank, key in digests.items():
        holders.setdefault(key, []).append(rank)
    if len(holders) < 2:
        return
    common = max(holders, key=lambda key: (len(holders[key]), -min(holders[key])))
    reference_rank = min(holders[common])
    count, readable = len(holders[common]), len(digests)
    majority = 2 * count > readable
    try:
        reference = refs[reference_rank].load()
    except (CompareError, OSError) as exc:  # read a moment ago: the file changed or went away
        for rank in sorted(r for r in digests if digests[r] != common):
            result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE, reference_rank=reference_rank,
                                   reason=f"the reference (rank {reference_rank}) cannot be read again: {exc}",
                                   **about))
        return
    for rank in sorted(r for r in digests if digests[r] != common):
        try:
            value = refs[rank].load()
        except (CompareError, OSError) as exc:
            result.rows.append(row(rank=rank, status=ReplicaStatus.UNREADABLE, reason=str(exc), **about))
            continue
        metrics, problems = _measure(value, reference, reference_rank)
        red = metrics.get(RED)
        if (options.tolerance is not None and not problems and red is not None
                and red <= options.tolerance):
            result.within_tolerance += 1
            continue
        if majority:
            verdict = f"differs from rank {reference_rank}, whose value {count} of {readable} ranks hold"
        else:
            verdict = (f"differs from rank {reference_rank}, but no value is held by a majority ({len(holders)} "
                       f"distinct values among {readable} ranks; rank {reference_rank} is the reference only as "
                       f"the lowest rank of the largest set, {count} of {readable}): which rank is faulty cannot "
                       "be told")
        result.rows.append(row(rank=rank, status=ReplicaStatus.DIFFERS, reference_rank=reference_rank,
                               dtype=str(value.dtype), reference_dtype=str(reference.dtype),
                               shape=tuple(value.shape), reference_shape=tuple(reference.shape), metrics=metrics,
                               holders=count, readable=readable, majority=majority,
                               reason="; ".join([verdict, *problems]), **about))


def _measure(value: np.ndarray, reference: np.ndarray,
             reference_rank: int) -> tuple[dict[str, float | None], list[str]]:
    """The :data:`CHECK_METRICS` of ``value`` against ``reference`` (empty when the element counts
    differ or the kernels refuse the pair) and what, besides values, differs: dtype, shape."""
    problems = []
    if value.dtype != reference.dtype:
        problems.append(f"dtype {value.dtype} where rank {reference_rank} has {reference.dtype}")
    if value.shape != reference.shape:
        problems.append(f"shape {tuple(value.shape)} where rank {reference_rank} has {tuple(reference.shape)}")
    if value.size != reference.size:
        return {}, problems
    try:
        computed = compare_arrays(value, reference, metrics=list(CHECK_METRICS))
    except CompareError as exc:
        return {}, [*problems, f"not compared: {exc}"]
    return dict(computed.values), problems


__all__ = ["CHECK_METRICS", "ConsistencyOptions", "ConsistencyPart", "check_part", "digest"]

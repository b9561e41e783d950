"""Cross-rank consistency: within one dump tree, do the replicas of each rank group agree?

Data-parallel ranks hold the same parameters and, after the all-reduce, the same gradients; a rank
whose replicas differ from its group's is the usual sign of a desynchronised or faulty device.
:func:`check_consistency` reads one tree (no second side), compares every replicated tensor
across the ranks of its group and returns a :class:`~compare.replicas.ConsistencyResult` naming
the ranks that disagree, with the tensors and the numbers.

- :mod:`~compare.consistency.groups`: the groups, ``dp:K`` or a rank-group file;
- :mod:`~compare.consistency.tensors`: which tensors are replicas (parameters, outputs of
  AllReduce / AllGather / Broadcast), or a ``--tensors`` pattern;
- :mod:`~compare.consistency.check`: one group at one (graph, iteration): reference value,
  exact equality or a RED tolerance, the rows (:func:`~compare.consistency.check.check_part`, a
  plain function a worker process or a distributed task can run);
- :mod:`~compare.consistency.plan`: the (group, graph, iteration) parts of a tree.

The rules, the report and the command line (``vcompare consistency``) are documented in
docs/consistency.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from ..errors import OptionError
from ..replicas import ConsistencyResult
from .check import CHECK_METRICS, ConsistencyOptions, ConsistencyPart, check_part, digest
from .groups import GroupSpec, parse_groups
from .plan import ConsistencyPlan, plan_consistency
from .tensors import TensorRule


def check_consistency(tree: str | os.PathLike, groups: str | os.PathLike | Sequence[Sequence[int]] | GroupSpec, *,
                      iteration: object = None, graph: object = None, model_name: str | None = None,
                      tensors: str | None = None, tolerance: float | None = None,
                      version: int | None = None) -> ConsistencyResult:
    """Check the replicas of every rank group of ``tree`` (module doc).

    ``groups``: ``"dp:8"``, a rank-group file, or a sequence of rank lists
    (:mod:`~compare.consistency.groups`). ``iteration`` / ``graph`` / ``model_name``: what to read,
    as ``--iteration`` / ``--graph`` / ``--model-name`` (default: the newest iteration; ``"all"``
    checks each). ``tensors``: a regular expression replacing the default choice of replicated
    tensors (:mod:`~compare.consistency.tensors`). ``tolerance``: a rank also agrees when its RED
    against the reference is at most this (default None: bitwise equality). ``version``: the dump
    file version to force (1 protobuf, 2 binary), as ``-v``.

    Raises :class:`~compare.errors.OptionError` for bad groups, patterns, tolerances or
    selections, and for a path that is not a dump tree with ranks. What is wrong inside the dumps
    (unreadable files, missing tensors or ranks) is never raised: it becomes rows.
    """
    if tolerance is not None and (isinstance(tolerance, bool) or not math.isfinite(tolerance) or tolerance < 0):
        raise OptionError(f"--tolerance {tolerance!r}: give a relative Euclidean distance, 0 or more (1e-6)")
    spec = parse_groups(groups)
    options = ConsistencyOptions(TensorRule.of(tensors), tolerance, version)
    plan = plan_consistency(tree, spec, iteration=iteration, graph=graph, model_name=model_name)
    parts = [check_part(part, options) for part in plan.parts]
    return ConsistencyResult(plan.root, spec.text, plan.groups, parts, tensors=options.tensors.text,
                             tolerance=tolerance, notes=plan.notes)


__all__ = ["CHECK_METRICS", "ConsistencyOptions", "ConsistencyPart", "ConsistencyPlan", "GroupSpec", "TensorRule",
           "check_consistency", "check_part", "digest", "parse_groups", "plan_consistency"]

"""Checking a tree's replicas: :func:`check_consistency`, the entry of :mod:`compare.consistency`."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from ..errors import OptionError
from .check import ConsistencyOptions, check_part
from .groups import GroupSpec, parse_groups
from .plan import plan_consistency
from .records import ConsistencyResult
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



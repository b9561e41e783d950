"""Cross-rank consistency: within one dump tree, do the replicas of each rank group agree?

Data-parallel ranks hold the same parameters and, after the all-reduce, the same gradients; a rank
whose replicas differ from its group's is the usual sign of a desynchronised or faulty device.
:func:`~compare.consistency.run.check_consistency` reads one tree (no second side), compares every replicated tensor
across the ranks of its group and returns a :class:`~compare.consistency.records.ConsistencyResult` naming
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

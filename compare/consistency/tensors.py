"""Which tensors of a rank's dump are replicas: the default rule and the ``--tensors`` pattern.

Default rule (no pattern): a tensor is checked when it is

* an output of a **parameter** op -- op type ``Parameter`` (MindSpore dumps every Parameter,
  weights and optimizer states alike, as ``Parameter.{name}...output.0...``); data-parallel
  replicas hold the same parameters;
* an **output** of a **collective whose result is the same on every rank** -- op types
  ``AllReduce``, ``AllGather``, ``Broadcast`` (MindSpore) and ``HcomAllReduce``,
  ``HcomAllGather``, ``HcomBroadcast`` (Ascend / TF-NPU GE dumps). This covers the gradients
  after the data-parallel all-reduce. Their *inputs* (the local gradients of each rank's
  micro-batch) are not checked, and neither is ``ReduceScatter`` (each rank keeps its own shard).

Everything else -- forward activations, local gradients, loss -- legitimately differs between
data-parallel ranks (each computes its own micro-batch) and is not checked. A GE dump holds no
parameter operators (variables are not tasks): there the all-reduced gradients are what is checked.

The op type is the one the dump names (the file-name prefix of ``.npy`` and Ascend-format files;
for MindSpore ``.bin`` dumps, the kernel name ``.../AllReduce-op12``).

``--tensors REGEX`` replaces the default rule: a tensor is checked when the pattern is found
(``re.search``) in its tensor id ``{op name}:{input|output}:{index}`` or in its op type. Examples:
``'AllReduce|Parameter'``, ``'^Gradients/.*:output:'``, ``'optimizer'``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import OptionError
from ..records import OpDump, TensorKind, TensorRef
from .records import Replicated

#: Op types whose every output is a replicated value (parameters).
PARAMETER_TYPES = frozenset({"Parameter"})
#: Op types whose outputs are the same on every rank of the communication group.
COLLECTIVE_TYPES = frozenset({"AllReduce", "AllGather", "Broadcast", "HcomAllReduce", "HcomAllGather",
                              "HcomBroadcast"})


@dataclass(frozen=True)
class TensorRule:
    """The default rule (``pattern`` None) or a user pattern (module doc)."""

    pattern: re.Pattern[str] | None = None

    @classmethod
    def of(cls, text: str | None) -> "TensorRule":
        """The rule for a ``--tensors`` value (None or empty: the default rule); a bad pattern is
        an :class:`OptionError` naming it."""
        if text is None or text == "":
            return cls()
        try:
            return cls(re.compile(text))
        except re.error as exc:
            raise OptionError(f"--tensors {text!r}: not a regular expression: {exc}") from None

    @property
    def text(self) -> str | None:
        return self.pattern.pattern if self.pattern is not None else None

    def why(self, op: OpDump, tensor: TensorRef) -> Replicated | None:
        """Why ``tensor`` of ``op`` is a replica, or None when it is not checked."""
        if self.pattern is not None:
            found = self.pattern.search(tensor.tensor_id) or (op.op_type and self.pattern.search(op.op_type))
            return Replicated.SELECTED if found else None
        if tensor.kind is not TensorKind.OUTPUT:
            return None
        if op.op_type in PARAMETER_TYPES:
            return Replicated.PARAMETER
        if op.op_type in COLLECTIVE_TYPES:
            return Replicated.COLLECTIVE
        return None

    def selects_op(self, op: OpDump) -> bool:
        """Whether some tensor of ``op`` would be checked, judged by its name and type alone (for an
        op whose dump file could not be parsed, which has no tensors to ask :meth:`why` about)."""
        if self.pattern is not None:
            return bool(self.pattern.search(op.name) or (op.op_type and self.pattern.search(op.op_type)))
        return op.op_type in PARAMETER_TYPES or op.op_type in COLLECTIVE_TYPES


__all__ = ["COLLECTIVE_TYPES", "PARAMETER_TYPES", "TensorRule"]

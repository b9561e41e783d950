"""The ``-f`` trap: an NPU dump paired by name with Caffe / TensorFlow goldens (scenario 1 or 5
without ``-f``) looks like a comparison and is not one where the NPU fused layers.

ATC fuses a convolution with the BatchNorm, Scale and ReLU layers after it; the fused operator
keeps the convolution's name (``conv1``) but outputs what the last fused layer outputs
(``conv1_relu``). The fusion rule (``-f``) pairs it with that layer's golden; by name it meets the
convolution's own golden, taken before the normalisation, and fails on correct data. The trace it
leaves in the golden folder: after the golden of ``conv1``, in dump order (the golden files'
timestamps), come goldens no left operator has (``bn_conv1``, ``scale_conv1``, ``conv1_relu``)
before the next golden a left operator has (``pool1``). Goldens named for that next operator
(``res2a_branch1_weight`` before ``res2a_branch1``: its weight) are its own, not fused layers.

:func:`regrouped_goldens` finds these runs of goldens for every left operator whose golden is
followed by one; :mod:`compare.diverge.fusion_doubt` uses them (and the first compared operators
failing) to say that the first divergence of such a run is uncertain. Names are matched as the
by-name pairing matches golden names (:func:`convert.names.keys.normalize_golden_name`).
"""

from __future__ import annotations

from dataclasses import dataclass

from convert.names.keys import normalize_golden_name

from ..records import Run


@dataclass(frozen=True)
class Regrouped:
    """A left operator paired by name whose golden is followed, in the golden folder's dump order,
    by goldens no left operator has (``goldens``, in that order): layers a fusion rule would most
    likely have fused into it."""

    op: str
    goldens: tuple[str, ...]


def regrouped_goldens(left: Run, right: Run) -> tuple[Regrouped, ...]:
    """Every left operator (by its left name) whose golden (same name) is followed by goldens no left operator has,
    in golden dump order (module doc); goldens before the first matched one are nobody's."""
    left_of_key = {normalize_golden_name(name): name for name in left.ops}
    found: dict[str, list[str]] = {}
    current: str | None = None
    for op in sorted(right.ops.values(), key=lambda op: (op.timestamp, op.name)):
        key = normalize_golden_name(op.name)
        matched = left_of_key.get(key)
        if matched is None:
            if current is not None:
                found.setdefault(current, []).append(op.name)
            continue
        if current is not None and current in found:  # the next operator's own goldens (its weight) are not fused
            mine = f"{normalize_golden_name(current)}_"
            found[current] = [g for g in found[current] if not _named_for(normalize_golden_name(g), f"{key}_", mine)]
        current = matched
    return tuple(Regrouped(op, tuple(goldens)) for op, goldens in found.items() if goldens)


def _named_for(golden: str, following: str, mine: str) -> bool:
    """Whether a golden key names the following operator (its prefix) rather than the current one
    (a longer prefix of the current operator's name wins: ``res3b_branch2a_relu`` is
    ``res3b_branch2a``'s, not ``res3b``'s)."""
    return golden.startswith(following) and not (golden.startswith(mine) and len(mine) > len(following))


__all__ = ["Regrouped", "regrouped_goldens"]

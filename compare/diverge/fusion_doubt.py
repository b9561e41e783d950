"""The first divergence of a run that fell into the ``-f`` trap is in doubt (:func:`doubt`).

An NPU dump paired by name with Caffe / TensorFlow goldens (scenario 1 or 5 without ``-f``,
:attr:`compare.pairing.scenarios.Scenario.fusion_missing`) compares a fused operator with the
golden of its first layer (:mod:`compare.pairing.fusion_trap`): the operator "fails" on correct
data and would be named, with confidence, as where the run goes wrong. The first divergence is
marked uncertain when either sign is there:

- its golden is followed, in golden dump order, by goldens no left operator has
  (:attr:`~compare.pairing.scenarios.Scenario.regrouped`: ``bn_conv1``, ``scale_conv1``,
  ``conv1_relu`` after ``conv1``): layers a fusion rule would most likely have grouped with it;
- it is the first operator compared: nothing before it passed, the first rows all fail.

The verdicts stay as judged (the rows are what they are); :attr:`Localisation.uncertain` says why
the first divergence is in doubt and a note of the localisation says it in full. With ``-f``, or
in any other scenario, the localisation is returned as it is.
"""

from __future__ import annotations

from dataclasses import replace

from ..pairing.scenarios import Scenario
from .records import Localisation, OpVerdict, Verdict

#: What the note ends with: the cure.
CURE = "run with -f MODEL.json (the model's fusion rule: atc --mode=1)"
#: How the note :func:`doubt` adds to the localisation begins (the result's notes repeat it).
NOTE_START = "warning: the first divergence"


def doubt(localisation: Localisation, scenario: Scenario | None) -> Localisation:
    """``localisation`` with its first divergence marked uncertain when the run fell into the ``-f``
    trap (module doc), else ``localisation`` itself."""
    first = localisation.first_divergence
    if scenario is None or not scenario.fusion_missing or first is None:
        return localisation
    fused = next((r.goldens for r in scenario.regrouped if r.op == first.op), ())
    if fused:
        shown = ", ".join(fused[:5]) + (f" and {len(fused) - 5} more" if len(fused) > 5 else "")
        why = (f"the golden of {first.op} is followed by {len(fused)} golden(s) no left operator has ({shown}): the "
               f"NPU most likely fused those layers into {first.op}, whose output then meets the golden of the "
               "wrong layer")
    elif _first_compared(localisation, first):
        why = (f"{first.op} is the first operator compared and fails: when the NPU fused layers, by-name pairing "
               "meets the golden of the wrong layer from the first operator on")
    else:
        return localisation
    note = f"{NOTE_START} ({first.op}) is uncertain: paired by name without -f, and {why}; {CURE}"
    return replace(localisation, uncertain="paired by name without -f; run with -f MODEL.json",
                   notes=(*localisation.notes, note))


def _first_compared(localisation: Localisation, first: OpVerdict) -> bool:
    """Whether ``first`` is the first operator of its part that was compared (nothing passed before it)."""
    for verdict in localisation.verdicts:
        if verdict.rank != first.rank or verdict.iteration != first.iteration:
            continue
        if verdict.verdict is not Verdict.NOT_COMPARED:
            return verdict is first
    return False


__all__ = ["CURE", "NOTE_START", "doubt"]

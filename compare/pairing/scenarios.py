"""Which comparisons make sense: the manual's comparison-data table and its checks (spec §3.1).

The manual lists six scenarios (My Output on the left, Ground Truth on the right):

1. NPU dump of the non-quantized offline model vs dump / .npy of the non-quantized Caffe model:
   ``-f``.
2. NPU dump of the quantized offline model vs dump / .npy of the non-quantized Caffe model:
   ``-f`` and ``-q``.
3. dump / .npy of the quantized Caffe model vs dump / .npy of the non-quantized Caffe model:
   ``-q``.
4. NPU dump of the quantized offline model vs dump / .npy of the quantized Caffe model: ``-f``.
5. NPU dump of the non-quantized offline model vs dump / .npy of the non-quantized TensorFlow
   model: ``-f``.
6. NPU dump vs NPU dump: no rule option (``-f`` and ``-cf`` for a fused vs un-fused build).

Folder kinds come from the loaders: OFFLINE (NPU dump), NUMPY (non-quantized ``.npy``),
STANDARD (``.pb``), QUANT (``.quant`` files, or ``.npy`` whose op names carry a quantization
marker); an NPU dump is quantized when one of its op names carries a marker (§2.8). Caffe and
TensorFlow goldens look alike, so scenarios 1 and 5 are one check.

:func:`check_scenario` accepts what the table accepts and raises
:class:`~compare.errors.PairingError` for the rest, naming the row the user needs and the options
it takes. Policy for options that are given but not needed:

- ``-f`` in scenario 3 (quantized vs non-quantized Caffe): accepted, not used, with a note (the
  reference refuses it).
- ``-f`` without ``-cf`` for two NPU dumps: accepted; golden tensors are looked up in the right
  dump by original op name (the reference refuses it). A note says when to add ``-cf`` or leave
  ``-f`` out.
- ``-q`` where nothing is quantized, ``-q`` in scenario 4, ``-cf`` with a golden right side:
  refused (the rule would map names the right side does not have).

vcompare extensions kept from the by-name strategy (no rule option at all, nothing quantized):
two golden folders, or an NPU dump against a golden folder, are paired by op name with a note
saying which table row the user probably wants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from ..errors import PairingError
from ..loaders.ascend import is_quantized_name
from ..records import Run, RunKind
from .fusion_trap import Regrouped, regrouped_goldens

#: The manual's table: row -> (left, right, rule options it needs).
TABLE: dict[int, tuple[str, str, str]] = {
    1: ("Dump data of the non-quantized offline model", "non-quantized Caffe", "-f MODEL.json"),
    2: ("Dump data of the quantized offline model", "non-quantized Caffe", "-f MODEL.json and -q QUANT_RULE.json"),
    3: ("Dump data or .npy of the quantized Caffe model", "non-quantized Caffe", "-q QUANT_RULE.json"),
    4: ("Dump data of the quantized offline model", "quantized Caffe", "-f MODEL.json"),
    5: ("Dump data of the non-quantized offline model", "non-quantized TensorFlow", "-f MODEL.json"),
    6: ("Dump data of a model on the NPU", "dump data of the same model on the NPU",
        "no rule option (or -f MODEL.json and -cf CLOSE_MODEL.json for fused vs un-fused)"),
}

#: Builds the PairingError of a refused combination from the problem text.
Refuse = Callable[[str], PairingError]
#: Builds the first note of an accepted scenario from its row (and an optional remark).
RowNote = Callable[..., str]

_MARKER_HINT = "_quant_layer, _dequant_layer, AscendQuant, AscendDequant, AntiQuant, _quant, _dequant"


class Strategy(str, Enum):
    """How pairing proceeds once the scenario is known."""

    FUSION = "fusion"  # -f: the ATC rule (scenarios 1, 4, 5; two NPU dumps with -f only)
    FUSION_QUANT = "fusion+quant"  # -f -q: merge(offline, quant) (scenario 2)
    QUANT = "quant"  # -q: quantized Caffe vs Caffe, output 0 compared as it is (scenario 3)
    CLOSE_FUSION = "close-fusion"  # -f -cf: merge(open, close) (scenario 6, fused vs un-fused)
    NPU_VS_NPU = "npu-vs-npu"  # scenario 6
    BY_NAME = "by-name"  # vcompare extension, no rule option


@dataclass
class Scenario:
    """The table row a comparison is (``row`` None: a vcompare extension) and what it uses.

    ``use_fusion`` / ``use_quant`` / ``use_close`` say which of the given rule files pairing
    reads; ``notes`` are for the user (the first one names the row). ``fusion_missing``: scenario 1
    or 5 without ``-f`` (paired by name), where a fused NPU operator meets the golden of the wrong
    layer; ``regrouped`` then lists the left operators whose golden is followed by goldens no left
    operator has (:mod:`compare.pairing.fusion_trap`).
    """

    row: int | None
    strategy: Strategy
    use_fusion: bool = False
    use_quant: bool = False
    use_close: bool = False
    notes: list[str] = field(default_factory=list)
    fusion_missing: bool = False
    regrouped: tuple[Regrouped, ...] = ()


def scenario_text(row: int) -> str:
    """``scenario N of the comparison table (LEFT vs RIGHT)`` for messages."""
    left, right, _ = TABLE[row]
    return f"scenario {row} of the comparison table ({left} vs {right})"


def _needs(row: int) -> str:
    return TABLE[row][2]


def _example_marker(run: Run) -> str:
    for op in sorted(run.ops.values(), key=lambda op: (op.timestamp, op.name)):
        if is_quantized_name(op.name):
            return f" (op names such as {op.name!r} carry a quantization marker)"
    return ""


def _is_npy(run: Run) -> bool:
    return any(op.path.suffix == ".npy" for op in run.ops.values())


def describe(run: Run) -> str:
    """What a folder holds, in the table's words (with the evidence for "quantized")."""
    if run.kind is RunKind.OFFLINE:
        if run.quantized:
            return f"a quantized offline-model dump{_example_marker(run)}"
        return "a non-quantized offline-model dump"
    if run.kind is RunKind.QUANT:
        if _is_npy(run):
            return f"a quantized Caffe .npy folder{_example_marker(run)}"
        return "a quantized Caffe dump (.quant files)"
    if run.kind is RunKind.STANDARD:
        return "a non-quantized Caffe .pb dump folder"
    return "a non-quantized Caffe/TensorFlow .npy folder"


def _given(fusion: bool, quant: bool, close: bool) -> str:
    opts = [o for o, on in (("-f", fusion), ("-q", quant), ("-cf", close)) if on]
    return " and ".join(opts) if opts else "no rule option"


def check_scenario(left: Run, right: Run, *, fusion: bool = False, quant: bool = False,
                   close: bool = False) -> Scenario:
    """The scenario of ``left`` vs ``right`` with the rule options given (see the module doc).

    ``fusion`` / ``quant`` / ``close``: whether ``-f`` / ``-q`` / ``-cf`` were given. Raises
    :class:`PairingError` for a combination the table does not support; the message says what
    each folder holds, which row applies and which options it needs.
    """
    sides = f"the left folder holds {describe(left)} and the right {describe(right)}"
    given = _given(fusion, quant, close)

    def refuse(problem: str) -> PairingError:
        return PairingError(f"{sides}: {problem} (given: {given})")

    def row_note(row: int, extra: str = "") -> str:
        return f"{scenario_text(row)}, with {given}{extra}"

    if left.kind is RunKind.OFFLINE:
        if right.kind is RunKind.OFFLINE:
            return _npu_vs_npu(left, right, fusion, quant, close, refuse, row_note)
        if right.kind is RunKind.QUANT:
            return _offline_vs_quant(left, fusion, quant, close, refuse, row_note)
        return _offline_vs_golden(left, right, fusion, quant, close, refuse, row_note)
    if left.kind is RunKind.QUANT:
        if close:
            raise refuse(f"-cf is only for two NPU dumps (scenario 6); this is {scenario_text(3)}, "
                         f"which needs {_needs(3)}")
        if right.kind is RunKind.OFFLINE:
            raise refuse("a quantized Caffe dump is compared with the non-quantized Caffe golden "
                         f"({scenario_text(3)}, {_needs(3)}); did you swap -l and -r? A quantized "
                         f"offline-model dump against the quantized Caffe dump is {scenario_text(4)}, "
                         f"which needs {_needs(4)}")
        if right.kind is RunKind.QUANT:
            raise refuse("both sides are quantized Caffe data, which the comparison table does not cover; "
                         f"compare the quantized Caffe dump with the non-quantized Caffe golden: "
                         f"{scenario_text(3)}, which needs {_needs(3)}")
        if not quant:
            raise refuse(f"that is {scenario_text(3)}; it needs {_needs(3)}")
        scenario = Scenario(3, Strategy.QUANT, use_quant=True, notes=[row_note(3)])
        if fusion:
            scenario.notes.append("-f is not used in scenario 3: the quant rule alone maps the quantized "
                                  "Caffe layers to the original ones")
        return scenario
    # left is a non-quantized golden folder
    if fusion or quant or close:
        raise refuse("the left side (My Output) must be an offline-model dump (scenarios 1, 2, 4, 5, 6) "
                     "or a quantized Caffe dump (scenario 3); did you swap -l and -r?")
    if right.kind is RunKind.QUANT:
        raise refuse(f"a quantized Caffe golden goes with a quantized offline-model dump on the left: "
                     f"{scenario_text(4)}, which needs {_needs(4)}")
    return Scenario(None, Strategy.BY_NAME, notes=[
        "not a row of the comparison table (the left side is not an NPU dump): paired by operator name "
        "and output index (vcompare extension)"])


def _npu_vs_npu(left: Run, right: Run, fusion: bool, quant: bool, close: bool, refuse: Refuse,
                row_note: RowNote) -> Scenario:
    if left.quantized != right.quantized:
        which = "left" if left.quantized else "right"
        raise refuse(f"only the {which} model is quantized; {scenario_text(6)} needs two dumps of models "
                     f"quantized alike. Compare a quantized model's dump with the non-quantized Caffe golden "
                     f"({scenario_text(2)}, {_needs(2)}) or with the quantized Caffe dump "
                     f"({scenario_text(4)}, {_needs(4)})")
    if quant:
        raise refuse(f"-q is not used for two NPU dumps ({scenario_text(6)}, which takes {_needs(6)}); "
                     "-q is for scenarios 2 and 3, whose right side is the non-quantized Caffe golden")
    if close and not fusion:
        raise refuse("-cf (the rule of the model built without fusion) needs -f (the rule of the fused "
                     f"model on the left) as well: {scenario_text(6)} with close fusion takes -f and -cf")
    if close:
        return Scenario(6, Strategy.CLOSE_FUSION, use_fusion=True, use_close=True,
                        notes=[row_note(6, ": fused model (-f) vs the same model built without fusion (-cf)")])
    if fusion:
        return Scenario(6, Strategy.FUSION, use_fusion=True, notes=[row_note(
            6, ": golden tensors are looked up in the right dump by original op name (vcompare extension); "
               "for two dumps of the same model leave -f out, for the model built without fusion add -cf")])
    return Scenario(6, Strategy.NPU_VS_NPU, notes=[row_note(6)])


def _offline_vs_golden(left: Run, right: Run, fusion: bool, quant: bool, close: bool, refuse: Refuse,
                row_note: RowNote) -> Scenario:
    if close:
        raise refuse("-cf is only for two NPU dumps (scenario 6 with close fusion); the right side here is "
                     "golden data")
    if left.quantized:
        if fusion and quant:
            return Scenario(2, Strategy.FUSION_QUANT, use_fusion=True, use_quant=True, notes=[row_note(2)])
        missing = " and ".join(o for o, on in (("-f", not fusion), ("-q", not quant)) if on)
        raise refuse(f"that is {scenario_text(2)}; it needs {_needs(2)} ({missing} missing)")
    if quant:
        raise refuse(f"that is {scenario_text(1)} (or {scenario_text(5)}), which takes -f only; -q is for a "
                     f"quantized left side, and no op name of the left dump carries a quantization marker "
                     f"({_MARKER_HINT})")
    if fusion:
        return Scenario(1, Strategy.FUSION, use_fusion=True,
                        notes=[row_note(1, " (scenario 5 for a TensorFlow golden)")])
    return Scenario(None, Strategy.BY_NAME, notes=[
        f"{scenario_text(1)} (or 5 for TensorFlow) normally takes -f MODEL.json; without it operators are "
        "paired by name and output index (vcompare extension)"], fusion_missing=True,
        regrouped=regrouped_goldens(left, right))


def _offline_vs_quant(left: Run, fusion: bool, quant: bool, close: bool, refuse: Refuse,
                row_note: RowNote) -> Scenario:
    if not left.quantized:
        raise refuse(f"a quantized Caffe golden goes with a quantized offline-model dump ({scenario_text(4)}); "
                     f"compare a non-quantized model with the non-quantized Caffe golden: {scenario_text(1)}, "
                     f"which needs {_needs(1)}")
    if close:
        raise refuse(f"-cf is only for two NPU dumps; this is {scenario_text(4)}, which needs {_needs(4)}")
    if quant:
        raise refuse(f"that is {scenario_text(4)}, which takes -f only: the quantized Caffe dump keeps the "
                     "deploy-model layer names that -f already maps to, and -q would map them to the float "
                     "model's names")
    if not fusion:
        raise refuse(f"that is {scenario_text(4)}; it needs {_needs(4)}")
    return Scenario(4, Strategy.FUSION, use_fusion=True, notes=[row_note(4)])

"""The gated public API: a whole-network comparison as one call (load both runs, pair them,
compare, check the gates) -- :func:`compare_request` of a :class:`~compare.request.CompareRequest`,
or :func:`compare_network` from keywords -- a saved result checked again (:func:`regate`), and two
loaded runs paired as the command line pairs them (:func:`pair_runs`). The work is done by
:mod:`compare.runs`; this module adds the policy, the verdict and the result's outputs.

>>> from compare import compare_network
>>> result = compare_network("dumps/npu", "dumps/caffe", fusion_rule="model.json")  # doctest: +SKIP
>>> result.frame.sort_values("CosineSimilarity").head()                             # doctest: +SKIP
"""

from __future__ import annotations

import calendar
import datetime
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .diverge.fusion_doubt import NOTE_START, doubt
from .diverge.records import Localisation, OpGraph, OpVerdict
from .errors import OptionError
from .pairing.entry import pair
from .pairing.rule_records import FusionRule
from .records import Bound, MetricRow, Pairing, PartReport, Run, SkippedFile, Verdict, count_by_status
from .stats_table import RowColumns
from .reports.divergence import localisation_document, localisation_text
from .reports.files import tool_version
from .reports.frame import frame_of
from .reports.junit import render_junit
from .reports.json_rows import full_document, render_result
from .reports.result_json import (
    EncodedJson,
    decode_float,
    parts_from_document,
    result_document,
    skipped_from_document,
)
from .reports.saved import load_result
from .request import CompareRequest, Mode, PathLike, RuleArg
from .runs.folders import op_choice, run_request
from .runs.localise import localise_network
from .runs.network import NetworkResult, Progress
from .runs.outputs import OutputKind, Target, WriteOptions, write_json_result
from .verdict.gates import evaluate, parse_gate
from .verdict.policy import Policy, gated_metrics
from .verdict.policy_file import load_policy

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .reports.spool import PartSpool


#: The JUnit root suite name of every vcompare report.
JUNIT_SUITE = "vcompare"


def build_policy(policy: "PathLike | Policy | None" = None, gates: Sequence[str | Bound] = ()) -> "Policy | None":
    """The policy of a gated run: a policy file (path) or :class:`~compare.verdict.policy.Policy`, plus
    ``gates`` (``"CosineSimilarity>=0.99"`` texts or :class:`Bound` records) added to it.

    None when neither is given (an ungated run). Raises :class:`OptionError` for a bad gate text
    or policy file.
    """
    bounds = [g if isinstance(g, Bound) else parse_gate(g) for g in gates]
    if policy is None:
        return Policy.from_gates(bounds) if bounds else None
    base = policy if isinstance(policy, Policy) else load_policy(policy)
    return base.with_gates(bounds)


def gate_metrics(policy: "Policy | None") -> list[str]:
    """The metrics a policy needs computed (added to the selected ones)."""
    if policy is None:
        return []

    return gated_metrics(policy)


def check_rows(rows: Sequence[MetricRow], policy: "Policy | None", *, today: "datetime.date | None" = None,
               parts: Sequence[PartReport] = ()) -> Verdict:
    """The verdict of ``rows`` under ``policy`` (:func:`compare.verdict.gates.evaluate`); NOT_GATED for None.
    ``parts``: the parts of a run compared in turn; under a policy, each one not compared (or
    lost) is an incomplete failure, strict or not (docs/policy.md)."""
    return evaluate(rows, policy if policy is not None else Policy(strict=False), today=today, parts=parts)


@dataclass
class ComparisonResult:
    """A comparison (or a re-checked saved one) and its verdict: what the command line writes.

    ``rows`` in report order; ``metrics`` the metric columns; ``verdict`` the gate outcome
    (``Outcome.NOT_GATED`` without ``policy``); ``inputs`` / ``options`` / ``timing`` as written
    in the JSON result (docs/result-json.md); ``network`` the full :class:`NetworkResult` of a live
    run (None for a saved result); ``document`` the JSON document a saved result was read from.
    """

    rows: list[MetricRow]
    metrics: list[str]
    verdict: Verdict
    policy: "Policy | None" = None
    notes: list[str] = field(default_factory=list)
    inputs: dict[str, object] = field(default_factory=dict)
    options: dict[str, object] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    network: NetworkResult | None = None
    document: dict | None = None
    #: Every file of either side that was not used, and why (the JSON result's ``skipped`` list).
    skipped: list[SkippedFile] = field(default_factory=list)
    #: Every part of a compare-each-in-turn run: status, seconds, worker (the JSON result's ``parts``).
    parts: list[PartReport] = field(default_factory=list)

    @property
    def frame(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame (columns: :func:`to_dataframe`)."""
        return frame_of(self.rows, self.metrics)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @cached_property
    def localisation(self) -> Localisation | None:
        """Where it goes wrong (:mod:`compare.diverge`): every operator's verdict in graph order and
        the first divergence, under the run's policy or the built-in data-type bounds (statistics
        rows too). None for a saved result (no graph). Computed on first use. An NPU dump paired
        by name with Caffe / TensorFlow goldens (no ``-f``) may have its first divergence marked
        uncertain (``uncertain``, :mod:`compare.diverge.fusion_doubt`)."""
        if self.network is None:
            return None
        return doubt(localise_network(self.network, self.policy), self.network.scenario)

    @property
    def first_divergence(self) -> OpVerdict | None:
        """The first operator, in graph order, that is wrong itself (``origin``) or meets differing
        data (``input-differs``); None when nothing diverges."""
        return self.localisation.first_divergence if self.localisation is not None else None

    @property
    def verdicts(self) -> tuple[OpVerdict, ...]:
        """Every operator's :class:`~compare.diverge.records.OpVerdict`, in graph order (the records
        are built on first use: a run whose reports only count verdicts builds none)."""
        return tuple(self.localisation.verdicts) if self.localisation is not None else ()

    @property
    def graph(self) -> OpGraph | None:
        """The operator graph the verdicts were judged on (its ``source`` says where it came from)."""
        return self.localisation.graph if self.localisation is not None else None

    @property
    def exit_code(self) -> int:
        """0 passed or not gated, 1 a gate failed, 3 incomplete (the command line's codes)."""
        return self.verdict.exit_code

    @property
    def gated(self) -> bool:
        return self.policy is not None

    def summary(self) -> dict[str, int]:
        """Row counts per status (statistics rows for a statistics-only live run)."""
        if self.network is not None:
            return self.network.summary()
        return count_by_status(RowColumns(self.rows).status)

    def to_json(self) -> str:
        """The JSON result as text: exactly what ``--json`` writes (without ``--overflow``), the
        document of :meth:`to_dict` (docs/result-json.md), its head as :meth:`json_head` has it and
        its rows encoded straight to text (:func:`compare.reports.json_rows.render_result`)."""
        return render_result(self.json_head(), self.rows, self.metrics)

    def to_dict(self, *, with_rows: bool = True) -> dict:
        """The versioned JSON result document as a dict (docs/result-json.md); ``verdict`` is null
        when not gated; ``with_rows=False``: its ``rows`` left empty (``--json`` writes them in turn).
        The rows are the lines of :meth:`to_json` read back (:func:`compare.reports.json_rows.row_documents`:
        one encoder), so the rows of ``json.loads(to_json())`` are those of ``to_dict()``.

        For a saved JSON result re-checked by :func:`regate`, inputs, options, notes, timing and
        creation time are the saved run's, so only the verdict can differ.
        """
        head = self._head(encoded=False)
        return full_document(head, self.rows, self.metrics) if with_rows else head

    def json_head(self) -> dict:
        """The head of the JSON result for a writer: :meth:`to_dict` ``(with_rows=False)`` with the
        localisation block of a live run as its text
        (:class:`~compare.reports.result_json.EncodedJson` of
        :func:`~compare.reports.divergence.localisation_text`, written from the columns of the
        verdicts: the block of a 100,000-row statistics run is ~130,000 objects a dict would make
        and the encoder walk again); the same text once written."""
        return self._head(encoded=True)

    def _head(self, *, encoded: bool) -> dict:
        """The document without rows (:meth:`to_dict`), the localisation as text when ``encoded``."""
        created = None
        version = tool_version()
        localisation: dict | EncodedJson | None
        if self.document is not None:
            saved = self.document.get("localisation")
            localisation = saved if isinstance(saved, dict) else None
            created = _created_seconds(self.document.get("created"))
            tool = self.document.get("tool")
            if isinstance(tool, dict) and isinstance(tool.get("version"), str):
                version = tool["version"]
        elif encoded and self.localisation is not None:
            localisation = EncodedJson(localisation_text(self.localisation))
        else:
            localisation = localisation_document(self.localisation)
        return result_document(self.rows, self.metrics, inputs=self.inputs, options=self.options, notes=self.notes,
                               verdict=self.verdict if self.gated else None, timing=self.timing,
                               tool_version=version, created=created, localisation=localisation,
                               skipped=self.skipped, parts=self.parts)

    def write_json(self, path: "str | os.PathLike[str]") -> Path:
        """Write the JSON result (:meth:`to_json`'s text) to ``path`` through its writer of the output table
        (:func:`compare.runs.outputs.write_json_result`); :class:`OutputError` when it cannot be."""
        return write_json_result(self, Target(OutputKind.JSON, Path(path)), WriteOptions())

    def to_junit(self) -> str:
        """The JUnit XML report (one testcase per row, grouped by operator; ``timing["compare"]`` seconds)."""
        return render_junit(self.rows, self.verdict if self.gated else None, suite_name=JUNIT_SUITE,
                            time_seconds=float(self.timing.get("compare", 0.0) or 0.0))


def _created_seconds(text: object) -> float | None:
    """Seconds since the epoch of a document's ``created`` (``YYYY-mm-ddTHH:MM:SSZ``), or None."""
    if not isinstance(text, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def compare_network(left: PathLike, right: PathLike, fusion_rule: RuleArg | None = None, *,
                    progress: Progress | None = None, on_dashboard: Callable[[str], None] | None = None,
                    spool: "PartSpool | None" = None, **fields: object) -> ComparisonResult:
    """Compare two dump folders operator by operator, check the gates: :func:`compare_request` of
    ``CompareRequest(left=left, right=right, fusion_rule=fusion_rule, **fields)`` (the keywords go
    straight to :class:`~compare.request.CompareRequest`; ``rank="all"``, ``gates=[...]``,
    ``mapping=...``, ``op_range="1,-1,10"`` ...).

    >>> compare_network("npu", "golden", "model.json", gates=["CosineSimilarity>=0.99"])  # doctest: +SKIP
    """
    request = CompareRequest(left=left, right=right, fusion_rule=fusion_rule, **fields)  # type: ignore[arg-type]
    return compare_request(request, progress=progress, on_dashboard=on_dashboard, spool=spool)


def compare_request(request: CompareRequest, *, progress: Progress | None = None,
                    on_dashboard: Callable[[str], None] | None = None,
                    spool: "PartSpool | None" = None) -> ComparisonResult:
    """Compare two dump folders operator by operator, check the gates: a :class:`ComparisonResult`.

    The request is validated first (:meth:`CompareRequest.validate`: the option rules of the
    command line, :class:`OptionError`); a request for another mode (``op``: single-operator,
    ``fusion_rule`` a folder: batch, ``mapping_table``) is refused: see
    :func:`compare.runs.single_op.operator_request`, :func:`compare.runs.batch.run_batch_request`.
    Its output fields (``output``, ``json_out`` ...) are the command line's: nothing is written here.

    ``left`` is "my output" (e.g. an Ascend dump folder or any parent of its
    ``time/device/model/model_id/data_index`` tree, or a quantized Caffe dump), ``right`` the
    ground truth (golden ``.npy`` / ``.pb`` / ``.quant`` folder, or another Ascend dump).
    ``fusion_rule`` is the ATC om->json file (``-f``), ``quant_rule`` the AMCT quantization fusion
    rule (``-q``), ``close_fusion_rule`` the ATC json of the model built with fusion switched off
    (``-cf``); docs/quant.md says which scenario needs which. ``algorithms``: metric names/indices
    (default all ten). ``custom_dir``: plugin root holding ``format_convert/convert_X_to_Y.py``.
    ``dump_version``: force 1 (protobuf) or 2 (binary). ``rank`` ... ``mapping``: see
    :func:`~compare.runs.folders.run_request` (``--rank`` ... ``--mapping``). ``left`` / ``right``
    may be fsspec URLs (``s3://...``; ``vcompare[remote]``), read through a local copy (:mod:`convert.remote`).

    ``gates`` (``"CosineSimilarity>=0.99"`` texts or :class:`Bound`) and ``policy`` (a TOML policy
    file or a :class:`~compare.verdict.policy.Policy`, docs/policy.md) make the run gated: the metrics they
    name are computed too, and ``result.verdict`` / ``result.passed`` / ``result.exit_code`` say
    how the rows fared. A gated comparison of a dump with itself raises :class:`SameDataError`
    unless ``allow_same``; an ungated one gets a note. ``progress(done, total)`` is called after
    each pair. ``result.frame`` is the report as a DataFrame, ``result.to_json()`` the JSON result's text
    (``result.to_dict()`` its document).

    ``cluster="local:N"`` (a Dask LocalCluster of N worker processes on this machine) or
    ``scheduler="tcp://HOST:8786"`` (a running Dask cluster) compare the parts of a multi-part run
    (``rank="all"`` ...) on Dask workers: the same rows and notes as in turn, the JSON ``parts``
    saying where and how long; ``progress`` then counts parts and ``on_dashboard(link)`` gets the
    Dask dashboard's address, and ``spool`` (a :class:`compare.reports.spool.PartSpool`) has
    each part's rows written as the part arrives (docs/distributed.md). Needs ``vcompare[dask]``.

    ``ffts=True`` (``-ffts``): the slice files of an FFTS+ op are compared one by one under their
    raw op names instead of being merged along the cut axis (docs/ffts.md).
    ``op_range`` / ``op_select``: ``--range start,end,step`` / ``--select i1,i2,...`` as text: only
    the fusion groups of those rule ids (docs/modes.md).

    Raises :class:`compare.errors.CompareError` only when the comparison cannot run at all
    (unreadable rule or policy, bad gate, no valid dump, a folder/option combination the
    comparison table does not support); per-operator problems are rows with a FailReason.
    """
    mode = request.validate()
    if mode in (Mode.SINGLE_OP, Mode.BATCH, Mode.MAPPING_TABLE):
        raise OptionError(f"compare_request compares a whole network; this request is {mode.value} mode "
                          "(operator_request / run_batch_request / the command line's -map)")
    started = time.perf_counter()
    checked = build_policy(request.policy, request.gates)
    result = run_request(replace(request, mapping=request.pairing_mapping()), extra_metrics=gate_metrics(checked),
                         progress=progress,
                         refuse_same=checked is not None and not request.allow_same, on_dashboard=on_dashboard,
                         spool=spool)
    compared = time.perf_counter()
    verdict = check_rows(result.rows, checked, parts=result.part_reports)
    notes = list(result.notes)
    if result.same_data is not None:
        notes.append(f"warning: {result.same_data}: every row compares a tensor with itself")
    mapping = request.mapping
    inputs = {"left": request.left, "right": request.right, "fusion_rule": request.fusion_rule,
              "quant_rule": request.quant_rule, "close_fusion_rule": request.close_fusion_rule,
              "mapping": mapping if not isinstance(mapping, list) else None,
              "policy": checked.source if checked is not None else None,
              "left_folder": result.left.path, "right_folder": result.right.path}
    if request.msprobe_flags():  # listed only when given: other results keep their inputs as they were
        inputs.update({"layer_mapping": request.layer_mapping, "api_mapping": request.api_mapping,
                       "data_mapping": request.data_mapping, "cell_mapping": request.cell_mapping,
                       "fuzzy_match": request.fuzzy_match})
    ops = op_choice(request)
    options = {"algorithms": request.algorithms, "dump_version": request.dump_version,
               "max_elements": request.max_elements, "rank": request.rank, "iteration": request.iteration,
               "graph": request.graph, "model_name": request.model_name, "ge_graph": request.ge_graph,
               "gates": [b.text for b in checked.gates] if checked is not None else [],
               "strict": checked.strict if checked is not None else None, "allow_same": request.allow_same,
               "custom_dir": request.custom_dir, "ops": ops.option if ops is not None else None}
    timing = {"compare": compared - started, "gate": time.perf_counter() - compared}
    out = ComparisonResult(result.rows, list(result.metrics), verdict, checked, notes, _inputs_text(inputs),
                           options, timing, network=result, skipped=list(result.skipped),
                           parts=list(result.part_reports))
    if result.scenario is not None and result.scenario.fusion_missing:  # the -f trap: said with the notes
        localisation = out.localisation
        if localisation is not None and localisation.uncertain is not None:
            notes.extend(n for n in localisation.notes if n.startswith(NOTE_START))
    return out


def pair_runs(left: Run, right: Run, *, fusion_rule: RuleArg | None = None, quant_rule: RuleArg | None = None,
              close_fusion_rule: RuleArg | None = None, mapping: PathLike | list | None = None,
              layer_mapping: PathLike | None = None, api_mapping: PathLike | bool | None = None,
              data_mapping: PathLike | None = None, cell_mapping: PathLike | None = None,
              fuzzy_match: bool = False) -> Pairing:
    """Two loaded runs (:func:`compare.loaders.load_run`) paired as the command line pairs them
    (:func:`compare.pairing.entry.pair`): through a mapping file (``--mapping``: its entries first,
    the rest by scope name), through msprobe's mapping files (``layer_mapping`` ... ``fuzzy_match``,
    the ``-lm`` ``-am [FILE]`` ``-dm`` ``-cm`` ``-fm`` options: docs/msprobe-mapping.md; ``api_mapping``
    True for the built-in table alone), MindSpore / msprobe / statistics runs by scope name, the others through
    the comparison table and the rule files (``-f`` / ``-q`` / ``-cf``), with the overflow records
    (``Opdebug``) as rows that are not compared. Raises :class:`OptionError` for a mapping given
    with a rule, :class:`~compare.errors.PairingError` for a combination the table does not
    support or nothing to pair, :class:`~compare.errors.RuleError` for an unreadable rule."""
    request = CompareRequest(left=left.root, right=right.root, fusion_rule=fusion_rule, quant_rule=quant_rule,
                             close_fusion_rule=close_fusion_rule, mapping=mapping, layer_mapping=layer_mapping,
                             api_mapping=api_mapping, data_mapping=data_mapping, cell_mapping=cell_mapping,
                             fuzzy_match=fuzzy_match)
    if request.msprobe_flags():
        request.check_msprobe_mapping(Mode.NETWORK)
    return pair(left, right, fusion_rule=fusion_rule, quant_rule=quant_rule, close_fusion_rule=close_fusion_rule,
                mapping=request.pairing_mapping()).pairing


def _inputs_text(inputs: dict[str, object]) -> dict[str, object]:
    """Inputs with rule objects and paths as text (a loaded FusionRule is named by its type)."""
    out: dict[str, object] = {}
    for key, value in inputs.items():
        if isinstance(value, FusionRule):
            value = f"<loaded {type(value).__name__}>"
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        out[key] = value
    return out


def _mapping(value: object) -> dict[str, object]:
    """An informational object of a saved document (``inputs``, ``options``, ``timing``); anything
    else reads as empty."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def regate(path: PathLike, *, policy: "PathLike | Policy | None" = None, gates: Sequence[str | Bound] = (),
           today: "datetime.date | None" = None) -> ComparisonResult:
    """Check a saved result (``--json`` .json, ``-o`` .csv or .parquet) again without recomputing.

    The rows are read back (:func:`compare.reports.saved.load_result`) and checked against
    ``policy`` plus ``gates``; at least one must be given (:class:`OptionError` otherwise). A JSON
    result gives back the same rows and ``parts``, so the same policy gives the same verdict as the
    live run (a missing part fails it, strict or not); a CSV holds what its cells print, and a CSV
    or parquet table has no ``parts``: a missing part's row is then one more row not compared,
    failed by a strict policy (docs/result-json.md says what each format keeps).
    """
    checked = build_policy(policy, gates)
    if checked is None:
        raise OptionError("nothing to check: give a policy file (--policy FILE) and/or --gate METRIC>=NUMBER")
    saved = load_result(path)
    document = saved.document
    parts = parts_from_document(document.get("parts")) if document is not None else []
    started = time.perf_counter()
    verdict = check_rows(saved.rows, checked, today=today, parts=parts)
    elapsed = time.perf_counter() - started
    if document is None:
        return ComparisonResult(saved.rows, list(saved.metrics), verdict, checked, [],
                                {"saved_result": os.fspath(saved.path)}, {"gates": [b.text for b in checked.gates]},
                                {"gate": elapsed})
    timing: dict[str, float] = {}
    for key, value in _mapping(document.get("timing")).items():
        try:
            number = decode_float(value, f"timing.{key}")
        except ValueError:  # informational: a value that is not a number is left out, like a bad part
            continue
        if number is not None:
            timing[str(key)] = number
    notes = document.get("notes")
    return ComparisonResult(saved.rows, list(saved.metrics), verdict, checked,
                            [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else [],
                            _mapping(document.get("inputs")), _mapping(document.get("options")), timing,
                            document=document, skipped=skipped_from_document(document.get("skipped")),
                            parts=parts)

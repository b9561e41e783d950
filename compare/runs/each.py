"""Several (rank, iteration, graph) parts of a dump tree compared in turn."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path

from ..engine import EngineOptions
from ..errors import CompareError, OptionError, PairingError
from ..loaders import load_run
from ..loaders.ascend import unused_files_note
from ..loaders.parts import (
    claim_parts,
    load_part,
    part_op_names,
    part_trees_text,
    scan_part,
    select_parts,
    selected_part,
)
from ..loaders.selection import Candidate, Selection, parse_spec
from ..records import MetricRow, PartNote, PartReport, PartStatus, Run, SkippedFile, part_name
from ..stats import ordered_stats
from ..stats_table import StatsResult, StatsTable
from .loading import (
    PathLike,
    RuleArg,
    SideIterations,
    choose_models,
    choose_right_model,
    pair_loaded,
    selection_of,
)
from .network import NetworkResult, SameDataError, compare_loaded, report_runs


@dataclass
class EachPlan:
    """Compare-each-in-turn: the left leaves, and how to read the right side for each."""

    left: Path
    right: Path
    left_leaves: list
    right_candidates: list | None
    select: dict
    version: int | None
    notes: list[str]
    #: Graphs are compared in turn (``--graph all`` / a list): rows and notes name the graph.
    by_graph: bool = False
    #: The right side's model_name folder (given, or chosen by :func:`choose_models`).
    right_model: str | None = None
    #: The right run :func:`choose_models` read (a side without levels: used for every part).
    right_probe: Run | None = None
    #: What the walks of the two trees could not read (folders the user may not list, link
    #: loops, broken links): noted and listed once, not per part.
    walked: list[SkippedFile] = field(default_factory=list)
    #: ``-ffts``: FFTS+ slice files kept apart under their raw op names when the leaves are read.
    keep_raw_names: bool = False
    #: The parts the selection keeps on the right that no left part has (a left part missing or
    #: unreadable): each is a part not compared, after the left parts (:func:`right_only_outcomes`).
    right_only: list[Candidate] = field(default_factory=list)


def _is_multi(spec: object) -> bool:
    return spec is not None and (spec.every or spec.single is None)  # type: ignore[attr-defined]


def plan_each(left: PathLike, right: PathLike, select: dict, version: int | None, *,
              keep_raw_names: bool = False) -> EachPlan | None:
    """The compare-each-in-turn plan when ``rank`` / ``graph`` / ``iteration`` select several
    values, else None."""
    rank_spec = parse_spec(select["rank"], "--rank")
    iter_spec = parse_spec(select["iteration"], "--iteration")
    graph_spec = parse_spec(select["graph"], "--graph")
    if not (_is_multi(rank_spec) or _is_multi(iter_spec) or _is_multi(graph_spec)):
        return None
    selection = selection_of(select)
    left_walked: list[tuple[Path, str]] = []
    right_walked: list[tuple[Path, str]] = []
    left_leaves = claim_parts(left, selection, problems=left_walked)
    if left_leaves is None:
        raise OptionError(f"--rank / --graph / --iteration with several values: {left} is not a dump tree with "
                          f"ranks or iterations ({part_trees_text()})")
    choice = choose_models(left, right, select, version, keep_raw_names=keep_raw_names)
    notes = [f"left: {n}" for n in choice.left_notes]
    chosen = select_parts(left_leaves, selection_of(choice.left), where=str(left), notes=notes)
    right_select = choice.right
    if choice.right_open and chosen:
        right_select = choose_right_model(right, right_select, part_op_names(chosen[0]), choice)
    notes += [f"right: {n}" for n in choice.right_notes]
    right_candidates = claim_parts(right, selection, problems=right_walked)
    right_only: list[Candidate] = []
    if right_candidates is None:
        right_walked = []  # the right side is then read by load_run, whose run names them itself
    else:
        if iter_spec is None:
            chosen = _agreed_iterations(left_leaves, chosen, right_candidates, choice.left, right_select, str(left),
                                        str(right), notes)
        right_only = _right_only(chosen, right_candidates, selection_of(right_select), str(right),
                                 by_graph=_is_multi(graph_spec))
    walked = [SkippedFile(side, path, why) for side, found in (("left", left_walked), ("right", right_walked))
              for path, why in found]
    for side, found in (("left", left_walked), ("right", right_walked)):
        unused = unused_files_note(found)
        if unused:
            notes.append(f"{side}: {unused}")
    return EachPlan(Path(left), Path(right), chosen, right_candidates, select, version, notes,
                     by_graph=_is_multi(graph_spec), right_model=right_select.get("model_name"),
                     right_probe=choice.right_probe, walked=walked, keep_raw_names=keep_raw_names,
                     right_only=right_only)


def _agreed_iterations(left_leaves: list[Candidate], chosen: list[Candidate], right_candidates: list[Candidate],
                       left_select: dict, right_select: dict, left_where: str, right_where: str,
                       notes: list[str]) -> list[Candidate]:
    """The parts to compare when ``--iteration`` is not given: each (rank, graph)'s newest
    iteration, as chosen -- or the iteration :class:`~compare.runs.loading.SideIterations` (the
    policy of a single comparison) agrees on for that rank and graph, with its note. A part
    whose rank and graph share no iteration stays as chosen (it is then a part not compared,
    saying why)."""
    every = {**left_select, "iteration": "all"}
    try:
        lefts = select_parts(left_leaves, selection_of(every), where=left_where, notes=[])
        rights = select_parts(right_candidates, selection_of({**right_select, "iteration": "all"}), where=right_where,
                              notes=[])
    except CompareError:
        return chosen

    def by_place(leaves: list[Candidate]) -> dict[tuple[str, str], dict[int, Candidate]]:
        places: dict[tuple[str, str], dict[int, Candidate]] = {}
        for leaf in leaves:
            iteration = leaf.get("iteration")
            if isinstance(iteration, int):
                places.setdefault((str(leaf.get("rank")), str(leaf.get("graph"))), {})[iteration] = leaf
        return places

    left_places, right_places = by_place(lefts), by_place(rights)
    out = []
    for leaf in chosen:
        place = (str(leaf.get("rank")), str(leaf.get("graph")))
        mine, theirs = left_places.get(place, {}), right_places.get(place, {})
        iterations = SideIterations(tuple(sorted(mine)), tuple(sorted(theirs)))
        agreed = iterations.agreed
        if agreed is None or agreed == leaf.get("iteration"):
            out.append(leaf)
            continue
        out.append(mine[agreed])
        rank, graph = leaf.get("rank"), leaf.get("graph")
        where = f"rank {rank}" + (f" graph {graph}" if graph is not None else "")
        notes.append(f"{where}: {iterations.chosen_note()}")
    return out


def _part_key(leaf: Candidate, by_graph: bool) -> tuple[str, str, str]:
    return str(leaf.get("rank")), str(leaf.get("graph")) if by_graph else "", str(leaf.get("iteration"))


def _right_only(left_parts: list[Candidate], right_candidates: list[Candidate], selection: Selection,
                where: str, *, by_graph: bool) -> list[Candidate]:
    """The parts the selection keeps on the right that no left part has: the plan runs over the
    left parts (a left part without a right counterpart is a part not compared, with its reason),
    so these are parts not compared too (a left part missing, or unreadable so that the walk did
    not take it for a part), rather than dropped silently. A selection that keeps nothing on the
    right gives none here (each left part then says why it was not compared)."""
    try:
        right_parts = select_parts(right_candidates, selection, where=where, notes=[])
    except CompareError:
        return []
    left_keys = {_part_key(leaf, by_graph) for leaf in left_parts}
    return [leaf for leaf in right_parts if _part_key(leaf, by_graph) not in left_keys]


def right_only_outcomes(plan: EachPlan, metrics: Sequence[str]) -> Iterator[PartOutcome]:
    """The parts only the right side has (:attr:`EachPlan.right_only`) as outcomes that follow the
    left parts' (indices from ``len(plan.left_leaves)``): not compared, each with its note's reason
    and its row (:meth:`PartOutcome.miss`), as a left part without counterpart is."""
    for offset, leaf in enumerate(plan.right_only):
        rank, graph, iteration, prefix = part_prefix(plan, leaf)
        reason = (f"the left side has no such part (missing, or not readable as a part of its tree); "
                  f"the right side has it: {leaf.describe()} ({leaf.path})")
        yield PartOutcome(len(plan.left_leaves) + offset, rank, graph, iteration, prefix).miss(
            PartStatus.NOT_COMPARED, reason, metrics)


@dataclass
class EachJob:
    """What every part of a compare-each-in-turn run is compared with (the same for all parts):
    the plan, the rules, the mapping, the metrics and the engine options."""

    plan: EachPlan
    fusion_rule: RuleArg | None
    rules: dict
    mapping: object
    metrics: list[str]
    options: EngineOptions
    refuse_same: bool = False


@dataclass
class PartOutcome:
    """One (rank, [graph,] iteration) part, compared or not, as :func:`merge_parts` takes it.

    ``result``: the part compared, its rows tagged with rank / graph / iteration; its notes are the
    pairing's (the runs' own notes and unused files are reported by the merge, in part order,
    each run and folder once). ``error``: why the part could not be compared. ``refused``: the
    :class:`SameDataError` message of a gated run on the same data (the merge raises it when it
    reaches the part, as an in-turn run does). ``rows``: the rows that stand for a part missing
    from the comparison (:meth:`miss`). ``seconds`` / ``worker``: where and how long.
    """

    index: int
    rank: int | None
    graph: int | None
    iteration: int | None
    prefix: str
    result: NetworkResult | None = None
    error: str | None = None
    refused: str | None = None
    status: PartStatus = PartStatus.COMPARED
    rows: list[MetricRow] = field(default_factory=list)
    seconds: float = 0.0
    worker: str | None = None

    def report(self) -> PartReport:
        return PartReport(self.rank, self.graph, self.iteration, self.status, self.seconds, self.worker,
                          self.error)

    def miss(self, status: PartStatus, reason: str, metrics: Sequence[str],
             operator_rows: Sequence[MetricRow] = ()) -> PartOutcome:
        """This part is missing from the comparison (``status`` not compared, or lost) for ``reason``:
        its rows are ``operator_rows`` (a lost part's left operators) then the part's own row
        (:meth:`PartReport.row`), so that the merge, the spool and a gate all see it. Returns self."""
        self.status, self.error = status, reason
        self.rows = [*operator_rows, self.report().row(len(operator_rows), metrics)]
        return self


def part_prefix(plan: EachPlan, leaf: Candidate) -> tuple[int | None, int | None, int | None, str]:
    """``(rank, graph, iteration, prefix)`` of one leaf: the rows' tags and the notes' prefix."""
    rank, iteration = _as_int(leaf.get("rank")), _as_int(leaf.get("iteration"))
    graph = _as_int(leaf.get("graph")) if plan.by_graph else None
    return rank, graph, iteration, f"[{part_name(rank, graph, iteration)}] "


class GoldenSide:
    """The right run used by every part when the right side has no rank / graph / iteration
    levels (a golden folder): the plan's probe, else read at first use (a failed read is that
    part's note, and the next part tries again)."""

    def __init__(self, plan: EachPlan) -> None:
        self.plan = plan
        self.run: Run | None = plan.right_probe if plan.right_candidates is None else None

    def get(self) -> Run:
        if self.run is None:
            self.run = load_run(self.plan.right, version=self.plan.version, keep_raw_names=self.plan.keep_raw_names)
        return self.run


def compare_part(job: EachJob, index: int, golden: GoldenSide, *, counted: list[int] | None = None) -> PartOutcome:
    """Compare the part ``plan.left_leaves[index]``: load both sides, pair, compare.

    A :class:`CompareError` becomes the outcome's ``error``; a :class:`SameDataError` (gated run,
    same data) its ``refused``. ``counted``: pairs done and known so far over every part (the
    progress of an in-turn run counts from the first part).
    """
    plan = job.plan
    started = time.perf_counter()
    leaf = plan.left_leaves[index]
    rank, graph, iteration, prefix = part_prefix(plan, leaf)
    outcome = PartOutcome(index, rank, graph, iteration, prefix)
    try:
        left_run = scan_part(leaf, root=plan.left, version=plan.version, keep_raw_names=plan.keep_raw_names)
        if plan.right_candidates is None:
            right_run = golden.get()
        else:
            ge_graph = plan.select.get("ge_graph")
            selection = Selection(rank=leaf.get("rank"), iteration=leaf.get("iteration"),
                                  graph=graph if plan.by_graph else plan.select.get("graph"),
                                  model_name=plan.right_model,
                                  ge_graph=Path(ge_graph) if ge_graph is not None else None)
            right_run = load_part(plan.right, plan.right_candidates, selection, version=plan.version,
                                  keep_raw_names=plan.keep_raw_names)
        scenario, rule, pairing = pair_loaded(left_run, right_run, job.fusion_rule, mapping=job.mapping, **job.rules)
        options = _part_options(job.options, counted, len(pairing.pairs)) if counted is not None else job.options
        part = compare_loaded(left_run, right_run, scenario, pairing, job.metrics, options, prefix,
                              refuse_same=job.refuse_same, rule=rule, runs_noted=False)
    except SameDataError as exc:
        outcome.refused = str(exc)
    except CompareError as exc:
        outcome.miss(PartStatus.NOT_COMPARED, str(exc), job.metrics)
    else:
        if part.stats is not None:  # the rows are the table's (compare.stats_table)
            part.stats.table.set_place(rank, graph, iteration)
        else:
            for row in part.rows:
                row.rank, row.graph, row.iteration = rank, graph, iteration
        outcome.result = part
    outcome.seconds = time.perf_counter() - started
    return outcome


def compare_each(plan: EachPlan, fusion_rule: RuleArg | None, rules: dict, mapping: object, metrics: list[str],
                  options: EngineOptions, *, refuse_same: bool = False) -> NetworkResult:
    """Run the plan: one comparison per (rank, [graph,] iteration), rows tagged, results concatenated.

    A right side without rank / graph / iteration levels (a golden folder) is read once and used
    for every part; its notes (and its unused-file summary) are reported once.
    """
    job = EachJob(plan, fusion_rule, rules, mapping, metrics, options, refuse_same)
    golden = GoldenSide(plan)
    counted = [0, 0]  # pairs done and pairs known so far, over every part (progress)
    compared = (compare_part(job, index, golden, counted=counted) for index in range(len(plan.left_leaves)))
    return merge_parts(plan, metrics, chain(compared, right_only_outcomes(plan, metrics)))


def merge_parts(plan: EachPlan, metrics: list[str], outcomes: Iterable[PartOutcome], *,
                where: str = "in turn") -> NetworkResult:
    """The parts' outcomes, taken in plan order, as one result (the rows of each part after the
    previous part's; the notes of each run once, see :func:`report_runs`; each part's notes also
    as :class:`PartNote` records, which the terminal groups by kind). The result does not depend
    on where or in which order the parts were compared: an in-turn run and a cluster run give the
    same rows and notes but for the first, which says where they were compared (``where``: ``in
    turn``, ``on 4 workers``, ``on the cluster``). Raises :class:`SameDataError` at a refused part,
    and :class:`PairingError` when no part could be compared.

    Policy for a part missing from the comparison (not compared: unreadable, no counterpart on
    the other side, nothing paired ...; or lost on a cluster): it is never dropped. It has a note,
    its :class:`PartReport` (the JSON ``parts``) and one row of its own in its place among the rows
    (:meth:`PartOutcome.miss`: after a lost part's operator rows), which a gate fails as incomplete
    (:func:`compare.verdict.gates.evaluate`). The parts only the right side has are missing parts too,
    after the left ones (:func:`right_only_outcomes`)."""
    rows: list[MetricRow] = []
    # each part's rows: its table (a statistics part) or its records, for the statistics table
    segments: list[StatsTable | Sequence[MetricRow]] = []
    stat_names: list[str] = []
    notes = list(plan.notes)
    parts: list[tuple[int | None, int | None]] = []
    part_graphs: list[int | None] = []
    part_lefts: list[Run] = []
    skipped: list[SkippedFile] = list(plan.walked)
    reports: list[PartReport] = []
    reported: list[Run] = []
    part_notes: list[PartNote] = []
    last: NetworkResult | None = None
    for outcome in outcomes:
        if outcome.refused is not None:
            raise SameDataError(outcome.refused)
        report = outcome.report()
        reports.append(report)
        part = outcome.result
        if part is None:
            missed = f"{outcome.prefix}not compared: {outcome.error}"
            notes.append(missed)
            part_notes.append(PartNote.of(report.name, missed))
            rows.extend(outcome.rows)
            segments.append(outcome.rows)
            continue
        run_notes, run_skipped = report_runs(part.left, part.right, outcome.prefix, reported)
        if part.stats is not None:
            segments.append(part.stats.table)
            stat_names.extend(n for n in part.stats.stats if n not in stat_names)
        else:
            rows.extend(part.rows)
            segments.append(part.rows)
        notes.extend(run_notes + part.notes)
        part_notes.extend(PartNote.of(report.name, note) for note in run_notes + part.notes)
        skipped.extend(run_skipped + part.skipped)
        parts.append((outcome.rank, outcome.iteration))
        part_lefts.append(part.left)
        if plan.by_graph:
            part_graphs.append(outcome.graph)
        last = part
    if last is None:
        raise PairingError("no rank / iteration could be compared: " + "; ".join(notes[-10:]))
    stats = None
    if any(isinstance(segment, StatsTable) for segment in segments):
        # one statistics table of every part's rows, a missing part's included (kept as records), in row order
        stats = StatsResult(StatsTable.concat(segments, ordered_stats(stat_names)))
        rows = stats.metric_rows()  # type: ignore[assignment]  # the table's rows
        metrics = stats.metrics
    if plan.by_graph:
        headline = (f"compared {len(parts)} (rank, graph, iteration) part(s) {where}: "
                    + ", ".join(part_name(r, g, i) for (r, i), g in zip(parts, part_graphs)))
    else:
        headline = (f"compared {len(parts)} (rank, iteration) part(s) {where}: "
                    + ", ".join(part_name(r, None, i) for r, i in parts))
    missing = [report.name for report in reports if report.missing]
    if missing:
        headline += f"; {len(missing)} part(s) not compared: " + ", ".join(missing)
    notes.insert(0, headline)
    return NetworkResult(rows=rows, metrics=metrics, left=last.left, right=last.right, pairing=last.pairing,
                         notes=notes, scenario=last.scenario, stats=stats, parts=parts, part_graphs=part_graphs,
                         same_data=last.same_data, rule=last.rule, part_lefts=part_lefts, skipped=skipped,
                         part_reports=reports, part_notes=part_notes)


def _part_options(options: EngineOptions, counted: list[int], pairs: int) -> EngineOptions:
    """The options of one part of a compare-each-in-turn run: progress counted from the first part."""
    report = options.progress
    if report is None:
        return options
    base = counted[0]
    counted[1] += pairs

    def progress(done: int, _total: int) -> None:
        counted[0] = base + done
        report(counted[0], counted[1])

    return replace(options, progress=progress)


def selected_folder(path: PathLike, *, rank: object = None, iteration: object = None, graph: object = None,
                    model_name: str | None = None, ge_graph: PathLike | None = None) -> Path:
    """The leaf folder the selection picks in a dump tree a tree reader claims (``path`` itself
    otherwise: :func:`compare.loaders.parts.selected_part`).

    Used where a single folder is needed (single-operator mode). Raises
    :class:`~compare.errors.OptionError` when the selection matches nothing or several
    (rank, iteration) pairs.
    """
    selection = Selection(rank=rank, iteration=iteration, graph=graph, model_name=model_name,
                          ge_graph=Path(ge_graph) if ge_graph is not None else None)
    for spec, flag in zip(selection.specs(), ("--rank", "--iteration", "--graph")):
        if _is_multi(spec):
            raise OptionError(f"{flag} {spec.text}: single-operator mode compares one tensor; give one value")  # type: ignore[union-attr]
    chosen = selected_part(path, selection)
    return chosen.path if chosen is not None else Path(path)


def _as_int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None

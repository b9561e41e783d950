"""Several (rank, iteration, graph) parts of a dump tree compared in turn."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..engine import EngineOptions
from ..errors import CompareError, OptionError, PairingError
from ..loaders import load_run
from ..loaders.ascend import unused_files_note
from ..loaders.selection import Selection, parse_spec
from ..loaders.trees import claim, leaf_op_names, load_selected, scan_candidate
from ..loaders.trees import select
from ..loaders.trees import select as select_leaves
from ..records import MetricRow, Run, SkippedFile
from ..stats import StatsResult, ordered_stats
from .loading import PathLike, RuleArg, choose_models, choose_right_model, pair_loaded, selection_of
from .network import NetworkResult, SameDataError, compare_loaded


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


def _is_multi(spec: object) -> bool:
    return spec is not None and (spec.every or spec.single is None)  # type: ignore[attr-defined]


def plan_each(left: PathLike, right: PathLike, select: dict, version: int | None) -> EachPlan | None:
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
    left_leaves = claim(left, selection, problems=left_walked)
    if left_leaves is None:
        raise OptionError(f"--rank / --graph / --iteration with several values: {left} is not a dump tree with "
                          "ranks or iterations (MindSpore rank_N / device_N / graph / iteration folders, or a "
                          "TF-NPU / GE tree)")
    choice = choose_models(left, right, select, version)
    notes = [f"left: {n}" for n in choice.left_notes]
    chosen = select_leaves(left_leaves, selection_of(choice.left), where=str(left), keep_all=True, notes=notes)
    right_select = choice.right
    if choice.right_open and chosen:
        right_select = choose_right_model(right, right_select, leaf_op_names(chosen[0]), choice)
    notes += [f"right: {n}" for n in choice.right_notes]
    right_candidates = claim(right, selection, problems=right_walked)
    if right_candidates is None:
        right_walked = []  # the right side is then read by load_run, whose run names them itself
    walked = [SkippedFile(side, path, why) for side, found in (("left", left_walked), ("right", right_walked))
              for path, why in found]
    for side, found in (("left", left_walked), ("right", right_walked)):
        unused = unused_files_note(found)
        if unused:
            notes.append(f"{side}: {unused}")
    return EachPlan(Path(left), Path(right), chosen, right_candidates, select, version, notes,
                     by_graph=_is_multi(graph_spec), right_model=right_select.get("model_name"),
                     right_probe=choice.right_probe, walked=walked)


def compare_each(plan: EachPlan, fusion_rule: RuleArg | None, rules: dict, mapping: object, metrics: list[str],
                  options: EngineOptions, *, refuse_same: bool = False) -> NetworkResult:
    """Run the plan: one comparison per (rank, [graph,] iteration), rows tagged, results concatenated.

    A right side without rank / graph / iteration levels (a golden folder) is read once and used
    for every part; its notes (and its unused-file summary) are reported once.
    """
    rows: list[MetricRow] = []
    stats_rows: list = []
    stat_names: list[str] = []
    notes = list(plan.notes)
    parts: list[tuple[int | None, int | None]] = []
    part_graphs: list[int | None] = []
    part_lefts: list[Run] = []
    skipped: list[SkippedFile] = list(plan.walked)
    last: NetworkResult | None = None
    fixed_right: Run | None = plan.right_probe if plan.right_candidates is None else None
    reported: list[Run] = []
    counted = [0, 0]  # pairs done and pairs known so far, over every part (progress)
    for leaf in plan.left_leaves:
        rank, iteration = leaf.get("rank"), leaf.get("iteration")
        graph = _as_int(leaf.get("graph")) if plan.by_graph else None
        where = f"graph {graph} " if plan.by_graph else ""
        prefix = f"[rank {rank} {where}iteration {iteration}] "
        try:
            left_run = scan_candidate(leaf, root=plan.left, version=plan.version)
            if plan.right_candidates is None:
                if fixed_right is None:
                    fixed_right = load_run(plan.right, version=plan.version)
                right_run = fixed_right
            else:
                ge_graph = plan.select.get("ge_graph")
                selection = Selection(rank=rank, iteration=iteration,
                                      graph=graph if plan.by_graph else plan.select.get("graph"),
                                      model_name=plan.right_model,
                                      ge_graph=Path(ge_graph) if ge_graph is not None else None)
                right_run = load_selected(plan.right, plan.right_candidates, selection, version=plan.version)
            scenario, rule, pairing = pair_loaded(left_run, right_run, fusion_rule, mapping=mapping, **rules)
            part = compare_loaded(left_run, right_run, scenario, pairing, metrics,
                                _part_options(options, counted, len(pairing.pairs)), prefix, reported=reported,
                                refuse_same=refuse_same, rule=rule)
        except SameDataError:
            raise
        except CompareError as exc:
            notes.append(f"{prefix}not compared: {exc}")
            continue
        for row in part.rows:
            row.rank, row.graph, row.iteration = _as_int(rank), graph, _as_int(iteration)
        rows.extend(part.rows)
        if part.stats is not None:
            for srow in part.stats.rows:
                srow.rank, srow.graph, srow.iteration = _as_int(rank), graph, _as_int(iteration)
            stats_rows.extend(part.stats.rows)
            stat_names.extend(n for n in part.stats.stats if n not in stat_names)
        notes.extend(part.notes)
        skipped.extend(part.skipped)
        parts.append((_as_int(rank), _as_int(iteration)))
        part_lefts.append(part.left)
        if plan.by_graph:
            part_graphs.append(graph)
        last = part
    if last is None:
        raise PairingError("no rank / iteration could be compared: " + "; ".join(notes[-10:]))
    stats = None
    if stats_rows:
        stats = StatsResult(stats_rows, ordered_stats(stat_names))
    if plan.by_graph:
        notes.insert(0, f"compared {len(parts)} (rank, graph, iteration) part(s) in turn: "
                        + ", ".join(f"rank {r} graph {g} iteration {i}" for (r, i), g in zip(parts, part_graphs)))
    else:
        notes.insert(0, f"compared {len(parts)} (rank, iteration) part(s) in turn: "
                        + ", ".join(f"rank {r} iteration {i}" for r, i in parts))
    return NetworkResult(rows=rows, metrics=metrics, left=last.left, right=last.right, pairing=last.pairing,
                         notes=notes, scenario=last.scenario, stats=stats, parts=parts, part_graphs=part_graphs,
                         same_data=last.same_data, rule=last.rule, part_lefts=part_lefts, skipped=skipped)


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
    """The leaf folder the selection picks in a MindSpore / TF-NPU tree (``path`` itself otherwise).

    Used where a single folder is needed (single-operator mode). Raises
    :class:`~compare.errors.OptionError` when the selection matches nothing or several
    (rank, iteration) pairs.
    """
    selection = Selection(rank=rank, iteration=iteration, graph=graph, model_name=model_name,
                          ge_graph=Path(ge_graph) if ge_graph is not None else None)
    for spec, flag in zip(selection.specs(), ("--rank", "--iteration", "--graph")):
        if _is_multi(spec):
            raise OptionError(f"{flag} {spec.text}: single-operator mode compares one tensor; give one value")  # type: ignore[union-attr]
    leaves = claim(path, selection)
    if leaves is None:
        return Path(path)
    chosen = select(leaves, selection, where=str(path))
    return chosen[0].path if chosen else Path(path)


def _as_int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None

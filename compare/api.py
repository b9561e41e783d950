"""Whole-network comparison as one call: load both runs, pair them, compare, tabulate.

>>> from compare import compare_network
>>> df = compare_network("dumps/npu", "dumps/caffe", fusion_rule="model.json")  # doctest: +SKIP
>>> df.sort_values("CosineSimilarity").head()                                   # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .heap import frozen_heap, paused_gc
from .engine import EngineOptions, compare_pairs
from .pairing.fusion_rule import FusionRule
from .pairing.scenarios import Scenario
from .errors import OptionError
from .records import Bound, MetricRow, Pairing, PairStatus, Run, RunKind, Verdict, count_by_status

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .loaders.selection import Selection
    from .policy import Policy
    from .stats import StatsResult

PathLike = str | os.PathLike[str]
#: ``progress(done, total)``: called after each compared pair (see :func:`run_network`).
Progress = Callable[[int, int], None]
#: A rule option: a path to the JSON file, or a rule already loaded with ``load_fusion_rule``.
RuleArg = PathLike | FusionRule


@dataclass
class NetworkResult:
    """Everything a network comparison produced (rows in report order).

    ``scenario`` is the row of the manual's comparison table the run was (see
    :mod:`compare.pairing.scenarios`); ``scenario.row`` is None for vcompare's by-name extension
    and for MindSpore / TF-NPU / mapping-file pairings. ``stats`` is set (and ``rows`` empty)
    for a statistics-only comparison (a side holds statistics and no tensor data; see
    :mod:`compare.stats`). ``parts`` lists the ``(rank, iteration)`` compared in turn
    (``--rank all`` / ``--iteration all`` / ``--graph all``); ``left`` / ``right`` are then the runs
    of the last one. ``part_graphs`` gives the graph of each part when graphs were compared in turn
    (``--graph all`` or a list), else it is empty.
    """

    rows: list[MetricRow]
    metrics: list[str]
    left: Run
    right: Run
    pairing: Pairing
    notes: list[str] = field(default_factory=list)
    scenario: Scenario | None = None
    stats: "StatsResult | None" = None
    parts: list[tuple[int | None, int | None]] = field(default_factory=list)
    part_graphs: list[int | None] = field(default_factory=list)
    #: Set when both sides are the same dump files (:func:`same_data`): what was found.
    same_data: str | None = None

    def summary(self) -> dict[str, int]:
        """Row counts per status: compared / not comparable / missing on left / missing on right."""
        if self.stats is not None and not self.rows:
            return self.stats.summary()
        return count_by_status(self.rows)

    @property
    def has_npy(self) -> tuple[bool, bool]:
        """Whether each side is a folder of .npy files (the msaccucmp layout then drops Address)."""
        return self.left.kind is RunKind.NUMPY, self.right.kind is RunKind.NUMPY


def is_family_run(run: Run) -> bool:
    """A MindSpore run, or a statistics-only run: paired by scope name, not by the Ascend table."""
    return run.family.startswith("mindspore") or run.stats_only


def pair_loaded(left_run: Run, right_run: Run, fusion_rule: RuleArg | None = None, *,
                quant_rule: RuleArg | None = None, close_fusion_rule: RuleArg | None = None,
                mapping: PathLike | list | None = None):
    """Pair two loaded runs: ``(scenario, rule, pairing)``.

    ``mapping`` (a mapping file or its entries) pairs through the user's names
    (:mod:`compare.pairing.user_mapping`); without rule options a MindSpore or statistics-only
    run is paired by scope name; everything else goes through the comparison table
    (:func:`compare.pairing.match.pair_runs`). Raises :class:`~compare.errors.OptionError` for a
    mapping together with a rule option.
    """
    from .errors import OptionError
    from .pairing.fusion_rule import FusionRule, load_fusion_rule
    from .pairing.match import overflow_rows, pair_runs
    from .pairing.scenarios import check_scenario

    rules = fusion_rule is not None or quant_rule is not None or close_fusion_rule is not None
    if mapping is not None:
        if rules:
            raise OptionError("--mapping pairs operators by the names it lists; it cannot be combined with "
                              "-f / -q / -cf (give one or the other)")
        from .pairing.user_mapping import pair_families

        return None, None, pair_families(left_run, right_run, mapping=mapping)
    if not rules and (is_family_run(left_run) or is_family_run(right_run)):
        from .pairing.user_mapping import pair_families

        return None, None, pair_families(left_run, right_run)
    scenario = check_scenario(left_run, right_run, fusion=fusion_rule is not None, quant=quant_rule is not None,
                              close=close_fusion_rule is not None)
    rule = fusion_rule.result() if isinstance(fusion_rule, BackgroundRule) else fusion_rule
    if rule is not None and not isinstance(rule, FusionRule):
        rule = load_fusion_rule(rule)
    pairing = pair_runs(left_run, right_run, fusion_rule=rule, quant_rule=quant_rule,
                        close_fusion_rule=close_fusion_rule, scenario=scenario)
    start = max((p.index for p in pairing.pairs), default=-1) + 1
    extra = overflow_rows(start, left_run, right_run)
    if extra:
        pairing.pairs.extend(extra)
        pairing.notes.append(f"{len(extra)} overflow record(s) (Opdebug) listed, not compared")
    return scenario, rule, pairing


def load_and_pair(left: PathLike, right: PathLike, fusion_rule: RuleArg | None = None, *,
                  quant_rule: RuleArg | None = None, close_fusion_rule: RuleArg | None = None,
                  dump_version: int | None = None, rank: object = None, iteration: object = None,
                  graph: object = None, model_name: str | None = None, ge_graph: PathLike | None = None,
                  mapping: PathLike | list | None = None):
    """Load both runs, check the scenario, read the rules, pair: ``(left, right, scenario, rule, pairing)``.

    The scenario (row of the manual's comparison table) is checked after both folders are read
    and before any rule file is: an unsupported combination raises
    :class:`~compare.errors.PairingError` naming the row and the options needed. ``rule`` is the
    loaded ATC fusion rule (or ``None``). The selection options (``rank`` ... ``ge_graph``) apply
    to both sides (see :func:`compare.loaders.load_run`); ``mapping`` see :func:`pair_loaded`.
    A large rule file is parsed in a forked process while the dumps are read (:class:`BackgroundRule`).
    """
    select = dict(rank=rank, iteration=iteration, graph=graph, model_name=model_name, ge_graph=ge_graph)
    pending = BackgroundRule.start(fusion_rule)  # a large rule file is parsed while the dumps are read
    try:
        return _load_and_pair(left, right, pending or fusion_rule, select, dump_version, quant_rule=quant_rule,
                              close_fusion_rule=close_fusion_rule, mapping=mapping)
    finally:
        if pending is not None:
            pending.close()


#: A fusion-rule file at least this large is parsed in a forked process while the dumps are read.
BACKGROUND_RULE_BYTES = 1 << 20


class BackgroundRule:
    """A fusion-rule file being parsed in a forked process (:meth:`start`); :meth:`result` gives
    the :class:`FusionRule`. Whatever goes wrong there (a malformed file, a killed process, a
    platform without fork) makes :meth:`result` parse the file here instead, so errors are raised
    exactly where and as they would be without the background parse (after the scenario check).

    Worth it for large rules only: parsing a 8.5 MB rule of 10,000 operators takes ~1.3 s, the
    parsed rule comes back in ~0.4 s, and the dumps are read meanwhile on the other core.
    """

    def __init__(self, path: Path, pool: object, future: object) -> None:
        self.path = path
        self._pool = pool
        self._future = future

    @classmethod
    def start(cls, rule: RuleArg | None) -> BackgroundRule | None:
        """Start parsing ``rule`` in the background when it is a large file and fork exists."""
        import multiprocessing
        import sys

        if rule is None or isinstance(rule, FusionRule) or not sys.platform.startswith("linux"):
            return None
        try:
            path = Path(rule)
            if path.stat().st_size < BACKGROUND_RULE_BYTES:
                return None
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
            return cls(path, pool, pool.submit(_parse_rule_quietly, str(path)))
        except (OSError, TypeError, ValueError, RuntimeError):
            return None

    def result(self) -> FusionRule:
        from .pairing.fusion_rule import load_fusion_rule

        try:
            parsed = self._future.result()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a broken worker: parse here
            parsed = None
        return parsed if isinstance(parsed, FusionRule) else load_fusion_rule(self.path)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[attr-defined]


def _parse_rule_quietly(path: str) -> FusionRule | None:
    """The worker of :class:`BackgroundRule`: the parsed rule, or None on any error (then the
    caller parses it and reports the error itself)."""
    import signal

    from .pairing.fusion_rule import load_fusion_rule

    from .engine import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    try:
        return load_fusion_rule(path)
    except Exception:  # noqa: BLE001 - reported by the caller's own parse
        return None


def _load_and_pair(left: PathLike, right: PathLike, fusion_rule: RuleArg | BackgroundRule | None, select: dict,
                   dump_version: int | None, *, quant_rule: RuleArg | None, close_fusion_rule: RuleArg | None,
                   mapping: PathLike | list | None):
    with paused_gc():
        return _load_and_pair_now(left, right, fusion_rule, select, dump_version, quant_rule=quant_rule,
                                  close_fusion_rule=close_fusion_rule, mapping=mapping)


def _load_and_pair_now(left: PathLike, right: PathLike, fusion_rule: RuleArg | BackgroundRule | None, select: dict,
                       dump_version: int | None, *, quant_rule: RuleArg | None, close_fusion_rule: RuleArg | None,
                       mapping: PathLike | list | None):
    from .loaders import load_run

    choice = choose_models(left, right, select, dump_version)
    left_run = load_run(left, version=dump_version, **choice.left)
    left_run.notes.extend(choice.left_notes)
    right_select, aligned = _align_right(right, choice.right, left_run)
    if choice.right_open:
        right_select = _choose_right_model(right, right_select, list(left_run.ops), choice)
    if choice.right_probe is not None and right_select == choice.probe_select:
        right_run = choice.right_probe  # read once: the folder the model choice looked at is the one to compare
    else:
        right_run = load_run(right, version=dump_version, **right_select)
    right_run.notes.extend(choice.right_notes)
    if aligned:
        right_run.notes.append(f"{aligned} chosen to match the left side")
    scenario, rule, pairing = pair_loaded(left_run, right_run, fusion_rule, quant_rule=quant_rule,
                                          close_fusion_rule=close_fusion_rule, mapping=mapping)
    return left_run, right_run, scenario, rule, pairing


@dataclass
class ModelChoice:
    """The selections of both sides after choosing among several ``model_name`` folders.

    ``left`` / ``right``: the selection dicts to load each side with; ``*_notes``: why a model
    folder was chosen (for the user); ``right_open``: the right side has several model folders
    and the left has one, so the right is chosen once the left is loaded; ``right_probe``: the
    right run read to learn its op names (reused when ``probe_select`` is the final selection).
    """

    left: dict
    right: dict
    left_notes: list[str] = field(default_factory=list)
    right_notes: list[str] = field(default_factory=list)
    right_open: bool = False
    right_probe: Run | None = None
    probe_select: dict | None = None


def _selection(select: dict) -> "Selection":
    """The :class:`~compare.loaders.selection.Selection` of a selection dict (``ge_graph`` as a Path)."""
    from .loaders.selection import Selection

    ge_graph = select.get("ge_graph")
    return Selection(**{**select, "ge_graph": Path(ge_graph) if ge_graph is not None else None})


def _pairing_counts(names: dict[str, list[str]], other: list[str]) -> dict[str, int]:
    """How many ops of each model folder pair by name with ``other`` (every name rule of the
    by-name pairing: :func:`compare.pairing.user_mapping.match_names`)."""
    from .pairing.user_mapping import match_names

    return {model: len(match_names(ops, other)[0]) for model, ops in names.items()}


def _choice_note(other: str, chosen: str, counts: dict[str, int], sizes: dict[str, int]) -> str:
    rest = "; ".join(f"{m}: {n}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if m != chosen)
    return (f"model folder {chosen} chosen: {counts[chosen]} of {sizes[chosen]} ops pair with the {other} side"
            f" (other model folders: {rest}); force one with --model-name or --ge-graph")


def _no_pair_note(other: str, counts: dict[str, int]) -> str:
    return (f"none of the {len(counts)} model folders ({', '.join(sorted(counts))}) has an op that pairs with the "
            f"{other} side by name; the default choice applies (force one with --model-name or --ge-graph)")


def choose_models(left: PathLike, right: PathLike, select: dict, version: int | None) -> ModelChoice:
    """Choose the ``model_name`` folder of a side with several (TF-NPU / GE: GE builds several
    graphs) by what pairs: the folder whose ops pair by name with the other side the most.

    Policy: ``--model-name`` / ``--ge-graph`` given -> nothing to choose. Both sides with several
    model folders -> the pair of folders with the most pairing ops. Only the left -> its folder
    pairing most with the right run (read once, reused). Only the right -> chosen after the left
    is loaded (``right_open``). Ties go to the folder with more ops, then the name. When no
    folder pairs at all, the default choice applies (the most dump files) and a note says so.
    """
    from .errors import CompareError
    from .loaders import load_run
    from .loaders.trees import leaf_op_names, model_folders

    choice = ModelChoice(dict(select), dict(select))
    if select.get("model_name") is not None or select.get("ge_graph") is not None:
        return choice
    selection = _selection(select)
    left_models = model_folders(left, selection)
    right_models = model_folders(right, selection)
    if not left_models:
        choice.right_open = bool(right_models)
        return choice
    left_names = {m: leaf_op_names(c) for m, c in left_models.items()}
    sizes = {m: len(ops) for m, ops in left_names.items()}
    if right_models:
        right_names = {m: leaf_op_names(c) for m, c in right_models.items()}
        table = {(lm, rm): n for rm, ops in right_names.items() for lm, n in _pairing_counts(left_names, ops).items()}
        best = max(table, key=lambda k: (table[k], sizes[k[0]] + len(right_names[k[1]]), k))
        if table[best] == 0:
            choice.left_notes.append(_no_pair_note("right", {m: 0 for m in left_names}))
            return choice
        lm, rm = best
        choice.left["model_name"], choice.right["model_name"] = lm, rm
        choice.left_notes.append(_choice_note("right", lm, {m: table[(m, rm)] for m in left_names}, sizes))
        right_sizes = {m: len(ops) for m, ops in right_names.items()}
        choice.right_notes.append(_choice_note("left", rm, {m: table[(lm, m)] for m in right_names},
                                               right_sizes))
        return choice
    try:
        probe = load_run(right, version=version, **select)
    except CompareError:
        return choice  # the right side's own error comes when it is loaded for the comparison
    choice.right_probe, choice.probe_select = probe, dict(select)
    chosen = _best_model(_pairing_counts(left_names, list(probe.ops)), sizes, "right", choice.left_notes)
    if chosen is not None:
        choice.left["model_name"] = chosen
    return choice


def _choose_right_model(right: PathLike, right_select: dict, left_ops: list[str], choice: ModelChoice) -> dict:
    """The right selection with its model folder chosen by the left run's op names (see
    :func:`choose_models`); notes go to ``choice.right_notes``."""
    from .loaders.trees import leaf_op_names, model_folders

    names = {m: leaf_op_names(c) for m, c in model_folders(right, _selection(right_select)).items()}
    if not names:
        return right_select
    sizes = {m: len(ops) for m, ops in names.items()}
    chosen = _best_model(_pairing_counts(names, left_ops), sizes, "left", choice.right_notes)
    return right_select if chosen is None else {**right_select, "model_name": chosen}


def _best_model(counts: dict[str, int], sizes: dict[str, int], other: str, notes: list[str]) -> str | None:
    """The model folder with the most ops pairing with the ``other`` side (ties: more ops, then the
    name), with its note added to ``notes``; None (and a note) when no folder pairs at all."""
    chosen = max(counts, key=lambda m: (counts[m], sizes[m], m))
    if counts[chosen] == 0:
        notes.append(_no_pair_note(other, counts))
        return None
    notes.append(_choice_note(other, chosen, counts, sizes))
    return chosen


#: Selection keys the right side takes from the left run when the user did not give them.
_ALIGNED = ("rank", "graph", "iteration")


def _align_right(right: PathLike, select: dict, left_run: Run) -> tuple[dict, str]:
    """Selection for the right side: a rank / graph / iteration the user left to the default
    follows the left run's, when the right tree has that value (else the right side's own default
    applies).

    Returns the selection and a text naming what was aligned (empty when nothing was).
    """
    coords = left_run.coords
    if not coords or all(select[k] is not None for k in _ALIGNED):
        return select, ""
    from .loaders.selection import Selection, values_of
    from .loaders.trees import claim

    ge_graph = select.get("ge_graph")
    candidates = claim(right, Selection(**{**select, "ge_graph": Path(ge_graph) if ge_graph is not None else None}))
    if candidates is None:
        return select, ""
    out = dict(select)
    aligned = []
    for key in _ALIGNED:
        value = coords.get(key)
        if select[key] is None and value is not None and str(value) in {str(v) for v in values_of(candidates, key)}:
            out[key] = value
            aligned.append(f"{key} {value}")
    return out, " and ".join(aligned)


def run_network(
    left: PathLike,
    right: PathLike,
    fusion_rule: RuleArg | None = None,
    *,
    quant_rule: RuleArg | None = None,
    close_fusion_rule: RuleArg | None = None,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | None = None,
    dump_version: int | None = None,
    max_elements: int = 0,
    extra_metrics: Sequence[str] = (),
    rank: object = None,
    iteration: object = None,
    graph: object = None,
    model_name: str | None = None,
    ge_graph: PathLike | None = None,
    mapping: PathLike | list | None = None,
    progress: Progress | None = None,
    refuse_same: bool = False,
) -> NetworkResult:
    """Load, pair and compare two dump folders; see :func:`compare_network` for the arguments.

    ``progress(done, total)`` is called after each compared pair (from the calling thread); when
    parts are compared in turn both numbers count from the first part (``total`` grows as each
    part is paired). ``refuse_same``: raise :class:`SameDataError` before comparing when both
    sides are the same dump files (:func:`same_data`); else ``NetworkResult.same_data`` says so.

    The scenario (row of the manual's comparison table) is checked after both folders are read
    and before any rule file is: an unsupported combination raises
    :class:`~compare.errors.PairingError` naming the row and options needed.

    Selection (MindSpore / TF-NPU dump trees): ``rank`` / ``iteration`` take a number, a list, a
    range (``"0|5-8"``) or ``"all"``; several selected values are compared **each in turn** --
    one (rank, iteration) after the other, every row carrying ``rank`` / ``iteration``, notes
    prefixed ``[rank R iteration I]``. The right side is read at the same rank and iteration when
    it has those levels (a golden folder without them is read once and used for all). ``graph``,
    ``model_name``, ``ge_graph``: see :func:`compare.loaders.load_run`. ``mapping``: a
    ``left,right`` names file (see :mod:`compare.pairing.user_mapping`).

    When a side holds statistics and no tensor data the comparison is statistics-only: the result
    has ``stats`` (a :class:`compare.stats.StatsResult`) and no metric rows.
    """
    from convert.layouts import load_plugins

    from .kernels import resolve_algorithms

    metrics = resolve_algorithms(algorithms)
    for name in extra_metrics:
        if name not in metrics:
            metrics.append(name)
    plugins = load_plugins(custom_dir) if custom_dir else None
    options = EngineOptions(algorithms=metrics, plugins=plugins, max_elements=max_elements, progress=progress)
    rules = dict(quant_rule=quant_rule, close_fusion_rule=close_fusion_rule)
    if mapping is not None and not isinstance(mapping, list):
        from .pairing.user_mapping import load_mapping

        mapping = load_mapping(mapping)  # read once (and refused early when malformed)
    select = dict(rank=rank, iteration=iteration, graph=graph, model_name=model_name, ge_graph=ge_graph)
    with frozen_heap():  # the loaded records are not walked by collections while comparing (compare.heap)
        plan = _plan_each(left, right, select, dump_version)
        if plan is None:
            left_run, right_run, scenario, _, pairing = load_and_pair(
                left, right, fusion_rule, dump_version=dump_version, mapping=mapping, **rules, **select)
            return _compare_one(left_run, right_run, scenario, pairing, metrics, options, refuse_same=refuse_same)
        return _compare_each(plan, fusion_rule, rules, mapping, metrics, options, refuse_same=refuse_same)


def run_notes(side: str, run: Run, prefix: str = "", *, unused_files: bool = True) -> list[str]:
    """The notes of one loaded run for the user, then (``unused_files``) the files it did not use
    (count and the first few names with the reason, :func:`compare.loaders.ascend.unused_files_note`)."""
    from .loaders.ascend import unused_files_note

    notes = [f"{prefix}{side}: {n}" for n in run.notes]
    unused = unused_files_note(run.skipped) if unused_files else None
    if unused:
        notes.append(f"{prefix}{side}: {unused}")
    return notes


def _compare_one(left_run: Run, right_run: Run, scenario: Scenario | None, pairing: Pairing, metrics: list[str],
                 options: EngineOptions, prefix: str = "", *, reported: list[Run] | None = None,
                 refuse_same: bool = False) -> NetworkResult:
    """Compare one pairing (metrics, or statistics when a side is statistics-only).

    ``reported``: runs whose notes were already given (a golden side shared by every part of a
    compare-each-in-turn run); their notes are not repeated, nor the unused files of a folder
    already reported (the same right leaf read for several parts). The runs of this call are added.
    """
    reported = reported if reported is not None else []
    same = same_data(left_run, right_run)
    if same is not None and refuse_same:
        raise SameDataError(f"{prefix}{same}: a gate on a run compared with itself proves nothing; compare "
                            "different dumps, or add --allow-same (allow_same=True) if this is deliberate")
    notes: list[str] = []
    for side, run in (("left", left_run), ("right", right_run)):
        if not any(run is seen for seen in reported):
            notes += run_notes(side, run, prefix, unused_files=all(seen.path != run.path for seen in reported))
            reported.append(run)
    notes += [f"{prefix}{n}" for n in pairing.notes]
    # compare.stats.needs_stats_mode, spelled out so that tensor comparisons never import compare.stats
    stats_sides = [side for side, run in (("left", left_run), ("right", right_run))
                   if run.stats_only]
    if stats_sides:
        from .stats import compare_stats

        stats = compare_stats(pairing.pairs)
        which = " and ".join(stats_sides)
        notes.append(f"{prefix}statistics comparison: the {which} side holds tensors with statistics and no tensor "
                     "data, so every pair is compared by its statistics (computed from the data where a side has it)")
        return NetworkResult(rows=[], metrics=metrics, left=left_run, right=right_run, pairing=pairing, notes=notes,
                             scenario=scenario, stats=stats, same_data=same)
    rows = compare_pairs(pairing.pairs, options)
    rows += unpaired_rows(rows, pairing, metrics)
    explain_missing(rows, left_run, right_run)
    return NetworkResult(rows=rows, metrics=metrics, left=left_run, right=right_run, pairing=pairing, notes=notes,
                         scenario=scenario, same_data=same)


class SameDataError(OptionError):
    """Both sides are the same dump files and a gate was asked for (exit 2 on the command line)."""


def _file_ids(run: Run) -> set[tuple[int, int]]:
    """(device, inode) of every dump file of a run (files that cannot be stat'ed are left out)."""
    ids = set()
    for op in run.ops.values():
        for path in op.files or (op.path,):
            try:
                st = os.stat(path)
            except OSError:
                continue
            ids.add((st.st_dev, st.st_ino))
    return ids


def same_data(left: Run, right: Run) -> str | None:
    """What makes the two runs the same dump, or None when they are not.

    Same: both resolve to the same folder (``-l X -r X``, a parent folder whose chosen leaf is
    the other side's folder, a symlinked folder), or both hold exactly the same files (same
    device and inode: hard links or symlinks to the same files). Cost: one ``stat`` per file,
    and only when both sides have as many operators.
    """
    left_dir, right_dir = Path(left.path).resolve(), Path(right.path).resolve()
    if left_dir == right_dir:
        return f"left and right are the same dump ({left_dir})"
    if len(left.ops) != len(right.ops) or not left.ops:
        return None
    ids = _file_ids(left)
    if ids and ids == _file_ids(right):
        return f"left ({left_dir}) and right ({right_dir}) hold the same {len(ids)} dump files"
    return None


@dataclass
class _EachPlan:
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


def _is_multi(spec: object) -> bool:
    return spec is not None and (spec.every or spec.single is None)  # type: ignore[attr-defined]


def _plan_each(left: PathLike, right: PathLike, select: dict, version: int | None) -> _EachPlan | None:
    """The compare-each-in-turn plan when ``rank`` / ``graph`` / ``iteration`` select several
    values, else None."""
    from .errors import OptionError
    from .loaders.selection import parse_spec
    from .loaders.trees import claim
    from .loaders.trees import select as select_leaves

    rank_spec = parse_spec(select["rank"], "--rank")
    iter_spec = parse_spec(select["iteration"], "--iteration")
    graph_spec = parse_spec(select["graph"], "--graph")
    if not (_is_multi(rank_spec) or _is_multi(iter_spec) or _is_multi(graph_spec)):
        return None
    selection = _selection(select)
    left_leaves = claim(left, selection)
    if left_leaves is None:
        raise OptionError(f"--rank / --graph / --iteration with several values: {left} is not a dump tree with "
                          "ranks or iterations (MindSpore rank_N / device_N / graph / iteration folders, or a "
                          "TF-NPU / GE tree)")
    choice = choose_models(left, right, select, version)
    notes = [f"left: {n}" for n in choice.left_notes]
    chosen = select_leaves(left_leaves, _selection(choice.left), where=str(left), keep_all=True, notes=notes)
    right_select = choice.right
    if choice.right_open and chosen:
        from .loaders.trees import leaf_op_names

        right_select = _choose_right_model(right, right_select, leaf_op_names(chosen[0]), choice)
    notes += [f"right: {n}" for n in choice.right_notes]
    return _EachPlan(Path(left), Path(right), chosen, claim(right, selection), select, version, notes,
                     by_graph=_is_multi(graph_spec), right_model=right_select.get("model_name"),
                     right_probe=choice.right_probe)


def _compare_each(plan: _EachPlan, fusion_rule: RuleArg | None, rules: dict, mapping: object, metrics: list[str],
                  options: EngineOptions, *, refuse_same: bool = False) -> NetworkResult:
    """Run the plan: one comparison per (rank, [graph,] iteration), rows tagged, results concatenated.

    A right side without rank / graph / iteration levels (a golden folder) is read once and used
    for every part; its notes (and its unused-file summary) are reported once.
    """
    from .errors import CompareError
    from .loaders import load_run
    from .loaders.selection import Selection
    from .loaders.trees import load_selected, scan_candidate
    from .stats import StatsResult

    rows: list[MetricRow] = []
    stats_rows: list = []
    stat_names: list[str] = []
    notes = list(plan.notes)
    parts: list[tuple[int | None, int | None]] = []
    part_graphs: list[int | None] = []
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
            scenario, _, pairing = pair_loaded(left_run, right_run, fusion_rule, mapping=mapping, **rules)
            part = _compare_one(left_run, right_run, scenario, pairing, metrics,
                                _part_options(options, counted, len(pairing.pairs)), prefix, reported=reported,
                                refuse_same=refuse_same)
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
        parts.append((_as_int(rank), _as_int(iteration)))
        if plan.by_graph:
            part_graphs.append(graph)
        last = part
    if last is None:
        from .errors import PairingError

        raise PairingError("no rank / iteration could be compared: " + "; ".join(notes[-10:]))
    stats = None
    if stats_rows:
        from .stats import ordered_stats

        stats = StatsResult(stats_rows, ordered_stats(stat_names))
    if plan.by_graph:
        notes.insert(0, f"compared {len(parts)} (rank, graph, iteration) part(s) in turn: "
                        + ", ".join(f"rank {r} graph {g} iteration {i}" for (r, i), g in zip(parts, part_graphs)))
    else:
        notes.insert(0, f"compared {len(parts)} (rank, iteration) part(s) in turn: "
                        + ", ".join(f"rank {r} iteration {i}" for r, i in parts))
    return NetworkResult(rows=rows, metrics=metrics, left=last.left, right=last.right, pairing=last.pairing,
                         notes=notes, scenario=last.scenario, stats=stats, parts=parts, part_graphs=part_graphs,
                         same_data=last.same_data)


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
    from .errors import OptionError
    from .loaders.selection import Selection
    from .loaders.trees import claim, select

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


def unpaired_rows(rows: Sequence[MetricRow], pairing: Pairing, metrics: Sequence[str]) -> list[MetricRow]:
    """Rows for operators that no row names yet, so that every operator of both sides appears.

    In fusion mode, a left operator that is not in the rule and a golden operator that the rule
    never refers to (neither compared nor listed in a GroundTruth cell) would otherwise be
    mentioned nowhere; each gets one row saying so, after the rule's rows.
    """
    named_left = {name for row in rows for name in row.left_op.split(",")}
    named_right = {name for row in rows for name in row.right_op.split(",")}
    index = max((row.index for row in rows), default=-1) + 1
    extra = []
    for name in pairing.unmatched_left:
        if name not in named_left:
            extra.append(MetricRow(index, None, name, "*", None, metrics={m: None for m in metrics},
                                   reasons=[f"operator '{name}' of the left dump is not in the fusion rule, so it "
                                            "has no known golden counterpart"], status=PairStatus.MISSING_RIGHT))
            index += 1
    for name in pairing.unmatched_right:
        if name not in named_right:
            extra.append(MetricRow(index, None, "*", name, None, metrics={m: None for m in metrics},
                                   reasons=[f"golden operator '{name}' is not referred to by the fusion rule "
                                            "(no NPU operator maps to it)"], status=PairStatus.MISSING_LEFT))
            index += 1
    return extra if pairing.mode == "fusion" else []


def _skipped_for(run: Run, names: Sequence[str]) -> list[str]:
    """Skipped files whose name -- or whose reason (e.g. a refused mapping.csv row) -- mentions an op."""
    hints = []
    for path, why in run.skipped:
        file_name = Path(path).name
        if any(len(name) >= 3 and (name in file_name or f"'{name}'" in why or f" {name}." in why) for name in names):
            hints.append(f"file {file_name} was not used: {why}")
    return hints


def explain_missing(rows: Sequence[MetricRow], left: Run, right: Run) -> None:
    """Add to each missing-counterpart row the skipped files that probably belonged to it.

    A dump file with a bad name (or a bad task-type field) is skipped by the loader; the row of
    the operator it was meant for then says which file that was and why it was not used, so the
    user does not have to cross-check the log.
    """
    for row in rows:
        if row.status is PairStatus.MISSING_LEFT:
            names = [n for n in row.left_op.split(",") if n and n != "*"] or [row.right_op]
            row.reasons.extend(_skipped_for(left, names))
        elif row.status is PairStatus.MISSING_RIGHT:
            names = [n for n in row.right_op.split(",") if n and n != "*"]
            row.reasons.extend(_skipped_for(right, names))


def to_dataframe(result: NetworkResult) -> "pd.DataFrame":
    """The report of a :class:`NetworkResult` as a pandas DataFrame (see :func:`frame_of`)."""
    return frame_of(result.rows, result.metrics)


def frame_of(rows: Sequence[MetricRow], metrics: Sequence[str]) -> "pd.DataFrame":
    """The report as a pandas DataFrame: the default report's columns, metrics as floats.

    Not-computed metrics are NaN; ``StandardDeviation`` keeps its ``(mean;std),(mean;std)`` text
    and the four numbers are also given as float columns ``LeftMean, LeftStd, RightMean,
    RightStd``; ``Status`` says whether the row was compared (and if not, why in FailReason).
    ``Rank`` and ``Iteration`` follow ``Index`` when ranks / iterations were compared in turn
    (``Rank, Graph, Iteration`` when graphs were).
    """
    import pandas as pd

    from .reports.cells import std_cell
    from .reports.network import header

    nan = float("nan")
    records = []
    with_selection = any(row.rank is not None or row.iteration is not None for row in rows)
    for row in rows:
        rec: dict[str, object] = {
            "Index": row.index,
            "Rank": row.rank,
            "Graph": row.graph,
            "Iteration": row.iteration,
            "OpType": row.op_type,
            "LeftOp": row.left_op,
            "LeftDataType": row.left_dtype,
            "RightOp": row.right_op,
            "RightDataType": row.right_dtype,
            "TensorIndex": row.tensor_id,
            "Shape": list(row.shape) if (row.shape is not None and row.tensor_id) else None,
        }
        for name in metrics:
            if name == "StandardDeviation":
                rec[name] = std_cell(row.std) if row.std is not None else None
            else:
                value = row.metrics.get(name)
                rec[name] = nan if value is None else float(value)
        rec["FailReason"] = "; ".join(row.reasons)
        std = row.std if row.std is not None else (nan, nan, nan, nan)
        rec.update(LeftMean=std[0], LeftStd=std[1], RightMean=std[2], RightStd=std[3], Status=row.status.value)
        records.append(rec)
    columns = header(metrics) + ["LeftMean", "LeftStd", "RightMean", "RightStd", "Status"]
    if any(row.graph is not None for row in rows):
        columns[1:1] = ["Rank", "Graph", "Iteration"]
    elif with_selection:
        columns[1:1] = ["Rank", "Iteration"]
    return pd.DataFrame.from_records(records, columns=columns)


def tool_version() -> str:
    """The installed vcompare version (package metadata), as ``vcompare --version`` prints it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vcompare")
    except PackageNotFoundError:  # a source tree that was never installed
        from . import __version__

        return __version__


#: The JUnit root suite name of every vcompare report.
JUNIT_SUITE = "vcompare"


def build_policy(policy: "PathLike | Policy | None" = None, gates: Sequence[str | Bound] = ()) -> "Policy | None":
    """The policy of a gated run: a policy file (path) or :class:`~compare.policy.Policy`, plus
    ``gates`` (``"CosineSimilarity>=0.99"`` texts or :class:`Bound` records) added to it.

    None when neither is given (an ungated run). Raises :class:`OptionError` for a bad gate text
    or policy file.
    """
    from .gates import parse_gate
    from .policy import Policy, load_policy

    bounds = [g if isinstance(g, Bound) else parse_gate(g) for g in gates]
    if policy is None:
        return Policy.from_gates(bounds) if bounds else None
    base = policy if isinstance(policy, Policy) else load_policy(policy)
    return base.with_gates(bounds)


def gate_metrics(policy: "Policy | None") -> list[str]:
    """The metrics a policy needs computed (added to the selected ones)."""
    if policy is None:
        return []
    from .policy import gated_metrics

    return gated_metrics(policy)


def check_rows(rows: Sequence[MetricRow], policy: "Policy | None", *, today: "datetime.date | None" = None
               ) -> Verdict:
    """The verdict of ``rows`` under ``policy`` (:func:`compare.gates.evaluate`); NOT_GATED for None."""
    from .gates import evaluate
    from .policy import Policy

    return evaluate(rows, policy if policy is not None else Policy(strict=False), today=today)


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

    @property
    def frame(self) -> "pd.DataFrame":
        """The rows as a pandas DataFrame (columns: :func:`to_dataframe`)."""
        return frame_of(self.rows, self.metrics)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

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
        return count_by_status(self.rows)

    def to_json(self) -> dict:
        """The versioned JSON result document (docs/result-json.md); ``verdict`` is null when not gated.

        For a saved JSON result re-checked by :func:`regate`, inputs, options, notes, timing and
        creation time are the saved run's, so only the verdict can differ.
        """
        from .reports.result_json import result_document

        created = None
        version = tool_version()
        if self.document is not None:
            created = _created_seconds(self.document.get("created"))
            tool = self.document.get("tool")
            if isinstance(tool, dict) and isinstance(tool.get("version"), str):
                version = tool["version"]
        return result_document(self.rows, self.metrics, inputs=self.inputs, options=self.options, notes=self.notes,
                               verdict=self.verdict if self.gated else None, timing=self.timing,
                               tool_version=version, created=created)

    def to_junit(self) -> str:
        """The JUnit XML report (one testcase per row, grouped by operator; ``timing["compare"]`` seconds)."""
        from .reports.junit import render_junit

        return render_junit(self.rows, self.verdict if self.gated else None, suite_name=JUNIT_SUITE,
                            time_seconds=float(self.timing.get("compare", 0.0) or 0.0))


def _created_seconds(text: object) -> float | None:
    """Seconds since the epoch of a document's ``created`` (``YYYY-mm-ddTHH:MM:SSZ``), or None."""
    import calendar
    import time

    if not isinstance(text, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def compare_network(
    left: PathLike,
    right: PathLike,
    fusion_rule: RuleArg | None = None,
    *,
    quant_rule: RuleArg | None = None,
    close_fusion_rule: RuleArg | None = None,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | None = None,
    dump_version: int | None = None,
    max_elements: int = 0,
    rank: object = None,
    iteration: object = None,
    graph: object = None,
    model_name: str | None = None,
    ge_graph: PathLike | None = None,
    mapping: PathLike | list | None = None,
    gates: Sequence[str | Bound] = (),
    policy: "PathLike | Policy | None" = None,
    allow_same: bool = False,
    progress: Progress | None = None,
) -> ComparisonResult:
    """Compare two dump folders operator by operator, check the gates: a :class:`ComparisonResult`.

    ``left`` is "my output" (e.g. an Ascend dump folder or any parent of its
    ``time/device/model/model_id/data_index`` tree, or a quantized Caffe dump), ``right`` the
    ground truth (golden ``.npy`` / ``.pb`` / ``.quant`` folder, or another Ascend dump).
    ``fusion_rule`` is the ATC om->json file (``-f``), ``quant_rule`` the AMCT quantization fusion
    rule (``-q``), ``close_fusion_rule`` the ATC json of the model built with fusion switched off
    (``-cf``); docs/quant.md says which scenario needs which. ``algorithms``: metric names/indices
    (default all ten). ``custom_dir``: plugin root holding ``format_convert/convert_X_to_Y.py``.
    ``dump_version``: force 1 (protobuf) or 2 (binary). ``rank`` ... ``mapping``: see
    :func:`run_network` (``--rank`` ... ``--mapping``).

    ``gates`` (``"CosineSimilarity>=0.99"`` texts or :class:`Bound`) and ``policy`` (a TOML policy
    file or a :class:`~compare.policy.Policy`, docs/policy.md) make the run gated: the metrics they
    name are computed too, and ``result.verdict`` / ``result.passed`` / ``result.exit_code`` say
    how the rows fared. A gated comparison of a dump with itself raises :class:`SameDataError`
    unless ``allow_same``; an ungated one gets a note. ``progress(done, total)`` is called after
    each pair. ``result.frame`` is the report as a DataFrame, ``result.to_json()`` the JSON result.

    Raises :class:`compare.errors.CompareError` only when the comparison cannot run at all
    (unreadable rule or policy, bad gate, no valid dump, a folder/option combination the
    comparison table does not support); per-operator problems are rows with a FailReason.
    """
    import time

    started = time.perf_counter()
    checked = build_policy(policy, gates)
    result = run_network(left, right, fusion_rule, quant_rule=quant_rule, close_fusion_rule=close_fusion_rule,
                         algorithms=algorithms, custom_dir=custom_dir, dump_version=dump_version,
                         max_elements=max_elements, extra_metrics=gate_metrics(checked), rank=rank,
                         iteration=iteration, graph=graph, model_name=model_name, ge_graph=ge_graph,
                         mapping=mapping, progress=progress, refuse_same=checked is not None and not allow_same)
    if checked is not None and result.stats is not None and not result.rows:
        raise OptionError("gates check tensor metrics, and this comparison is statistics-only (a side holds "
                          "statistics and no tensor data); compare tensor dumps to use gates")
    compared = time.perf_counter()
    verdict = check_rows(result.rows, checked)
    notes = list(result.notes)
    if result.same_data is not None:
        notes.append(f"warning: {result.same_data}: every row compares a tensor with itself")
    inputs = {"left": left, "right": right, "fusion_rule": fusion_rule, "quant_rule": quant_rule,
              "close_fusion_rule": close_fusion_rule, "mapping": mapping if not isinstance(mapping, list) else None,
              "policy": checked.source if checked is not None else None,
              "left_folder": result.left.path, "right_folder": result.right.path}
    options = {"algorithms": algorithms, "dump_version": dump_version, "max_elements": max_elements,
               "rank": rank, "iteration": iteration, "graph": graph, "model_name": model_name,
               "ge_graph": ge_graph, "gates": [b.text for b in checked.gates] if checked is not None else [],
               "strict": checked.strict if checked is not None else None, "allow_same": allow_same,
               "custom_dir": custom_dir}
    timing = {"compare": compared - started, "gate": time.perf_counter() - compared}
    return ComparisonResult(result.rows, list(result.metrics), verdict, checked, notes, _inputs_text(inputs),
                            options, timing, network=result)


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


def regate(path: PathLike, *, policy: "PathLike | Policy | None" = None, gates: Sequence[str | Bound] = (),
           today: "datetime.date | None" = None) -> ComparisonResult:
    """Check a saved result (``--json`` .json, ``-o`` .csv or .parquet) again without recomputing.

    The rows are read back (:func:`compare.reports.saved.load_result`) and checked against
    ``policy`` plus ``gates``; at least one must be given (:class:`OptionError` otherwise). A JSON
    result gives back the same rows, so the same policy gives the same verdict as the live run;
    a CSV holds what its cells print (docs/result-json.md says what each format keeps).
    """
    import time

    from .reports.result_json import decode_float
    from .reports.saved import load_result

    checked = build_policy(policy, gates)
    if checked is None:
        raise OptionError("nothing to check: give a policy file (--policy FILE) and/or --gate METRIC>=NUMBER")
    saved = load_result(path)
    started = time.perf_counter()
    verdict = check_rows(saved.rows, checked, today=today)
    elapsed = time.perf_counter() - started
    document = saved.document
    if document is None:
        return ComparisonResult(saved.rows, list(saved.metrics), verdict, checked, [],
                                {"saved_result": os.fspath(saved.path)}, {"gates": [b.text for b in checked.gates]},
                                {"gate": elapsed})
    timing: dict[str, float] = {}
    for key, value in (document.get("timing") or {}).items():
        number = decode_float(value, f"timing.{key}")
        if number is not None:
            timing[str(key)] = number
    return ComparisonResult(saved.rows, list(saved.metrics), verdict, checked, list(document.get("notes") or []),
                            dict(document.get("inputs") or {}), dict(document.get("options") or {}), timing,
                            document=document)


# --------------------------------------------------------------------------------------------
# Batch mode (-f names a folder of rule files, spec §3.9).


@dataclass
class BatchItem:
    """One model of a batch run. Unpacks as ``(model_name, result)``.

    ``device``, ``model_id`` and ``step`` come from the dump path
    ``<time>/<device>/<model_name>/<model_id>/<step>``; ``rule`` is the rule file used.
    """

    model_name: str
    result: NetworkResult
    device: str
    model_id: str
    step: str
    rule: Path
    leaf: Path

    def __iter__(self):
        return iter((self.model_name, self.result))

    def output_name(self, timestamp: str) -> str:
        """``{device}_{model_name}_{step}_result_{timestamp}.csv`` (the reference's file name)."""
        return f"{self.device}_{self.model_name}_{self.step}_result_{timestamp}.csv"


class BatchResult(list):
    """The compared models (a list of :class:`BatchItem`), plus what was not compared and why.

    ``notes``: fallback pairings and models without a rule; ``errors``: ``(model folder,
    message)`` of models whose comparison could not run (the others are still compared).
    """

    def __init__(self, items: Sequence[BatchItem] = (), notes: Sequence[str] = (),
                 errors: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(items)
        self.notes = list(notes)
        self.errors = list(errors)


def _digit_runs(name: str) -> list[str]:
    import re

    return re.findall(r"\d+", name)


def _dump_model_name(name: str) -> str:
    """A model name as dump folders spell it: ``.``, ``/``, ``\\`` and spaces become ``_``."""
    for char in "./\\ ":
        name = name.replace(char, "_")
    return name


def _step_key(name: str) -> tuple[int, int, str]:
    return (1, int(name), name) if name.isdigit() else (0, 0, name)


def batch_models(left_root: PathLike) -> list[tuple[str, str, str, str, Path]]:
    """``(device, model_name, model_id, step, leaf)`` of every model under a dump time folder.

    Layout: ``<left_root>/<device>/<model_name>/<model_id>/<step>/files``; per model_id the
    largest step is used (numerically; the reference compares the names as strings, so ``9``
    beats ``10`` there). Raises :class:`~compare.errors.OptionError` when there is none.
    """
    from .errors import OptionError

    root = Path(left_root)
    if not root.is_dir():
        raise OptionError(f"batch mode: {root} is not a folder (give the dump time folder, "
                          "<time>/<device>/<model_name>/<model_id>/<step>/files)")
    found = []
    for device in sorted(p for p in root.iterdir() if p.is_dir()):
        for model in sorted(p for p in device.iterdir() if p.is_dir()):
            for model_id in sorted(p for p in model.iterdir() if p.is_dir()):
                steps = [p for p in model_id.iterdir() if p.is_dir()]
                if steps:
                    step = max(steps, key=lambda p: _step_key(p.name))
                    found.append((device.name, model.name, model_id.name, step.name, step))
    if not found:
        raise OptionError(f"batch mode: no <device>/<model_name>/<model_id>/<step> dump folder under {root} "
                          "(-l must be the dump time folder when -f names a folder of rule files)")
    return found


def _batch_rules(rules_dir: Path) -> dict[str, Path]:
    """Graph name -> rule file, for every ``*.json`` of ``rules_dir`` (first file wins)."""
    from .errors import OptionError
    from .pairing.fusion_rule import load_fusion_rule

    files = sorted(rules_dir.glob("*.json"))
    if not files:
        raise OptionError(f"batch mode: {rules_dir} holds no *.json rule file")
    by_name: dict[str, Path] = {}
    for path in files:
        for name in load_fusion_rule(path).graph_names or [path.stem]:
            by_name.setdefault(name or path.stem, path)
    return by_name


def _match_rule(model: str, rules: dict[str, Path]) -> tuple[str, Path, str | None] | None:
    """(graph name, rule file, fallback note) for a model folder name, or None."""
    for name, path in rules.items():
        if name == model or _dump_model_name(name) == model:
            return name, path, None
    runs = _digit_runs(model)
    if len(runs) == 2:
        for name, path in rules.items():
            other = _digit_runs(name)
            if len(other) == 2 and int(other[1]) == int(runs[1]):
                return name, path, (f"model folder {model!r} paired with graph {name!r} of {path.name} by its id "
                                    f"{runs[1]} (no graph has its exact name)")
    return None


def run_batch(
    left_root: PathLike,
    right: PathLike,
    rules_dir: PathLike,
    *,
    quant_rule: RuleArg | None = None,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | None = None,
    dump_version: int | None = None,
    max_elements: int = 0,
    extra_metrics: Sequence[str] = (),
) -> BatchResult:
    """Compare every model of a dump time folder with its rule from ``rules_dir`` (spec §3.9).

    ``left_root`` is ``<time>`` of ``<time>/<device>/<model_name>/<model_id>/<step>/files``
    (:func:`batch_models`); ``right`` the golden folder every model is compared with;
    ``rules_dir`` the folder of ATC json files. A model folder takes the rule whose
    ``graph[].name`` equals its name (with ``.``, ``/``, ``\\``, space as ``_``), else -- when
    both names hold exactly two digit runs (a timestamp and an id) -- the one with the same second
    run (a note says so). Models without a rule are listed in ``notes``; a model whose comparison
    cannot run is listed in ``errors`` and the others go on. Each item is a :class:`BatchItem`
    (``for model_name, result in run_batch(...)`` works; ``item.output_name(ts)`` is the
    reference's result file name).

    Raises :class:`~compare.errors.OptionError` for a bad layout or an empty rule folder and
    :class:`~compare.errors.PairingError` when no model could be compared at all.
    """
    from .errors import CompareError, PairingError

    rules = _batch_rules(Path(rules_dir))
    batch = BatchResult()
    for device, model, model_id, step, leaf in batch_models(left_root):
        match = _match_rule(model, rules)
        if match is None:
            batch.notes.append(f"model folder {model!r} ({leaf}) has no rule in {rules_dir} (graph names: "
                               f"{', '.join(repr(n) for n in sorted(rules))}): not compared")
            continue
        graph, rule_path, note = match
        if note:
            batch.notes.append(note)
        try:
            result = run_network(leaf, right, rule_path, quant_rule=quant_rule, algorithms=algorithms,
                                 custom_dir=custom_dir, dump_version=dump_version, max_elements=max_elements,
                                 extra_metrics=extra_metrics)
        except CompareError as exc:
            batch.errors.append((str(leaf), str(exc)))
            continue
        batch.append(BatchItem(model, result, device, model_id, step, rule_path, leaf))
    if not batch:
        problems = [f"{leaf}: {message}" for leaf, message in batch.errors] + batch.notes
        raise PairingError("batch mode compared no model: " + "; ".join(problems))
    return batch

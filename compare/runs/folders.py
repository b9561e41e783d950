"""Two dump folders in, a :class:`~compare.runs.network.NetworkResult` out (one part, or each in turn)."""

from __future__ import annotations

from collections.abc import Sequence

from convert.layouts import PluginSet, load_plugins

from ..engine import EngineOptions
from ..heap import frozen_heap
from ..kernels import resolve_algorithms
from ..pairing.mapping_file import load_mapping
from .each import compare_each, plan_each
from .loading import PathLike, RuleArg, load_and_pair
from .network import NetworkResult, Progress, compare_loaded


def run_network(
    left: PathLike,
    right: PathLike,
    fusion_rule: RuleArg | None = None,
    *,
    quant_rule: RuleArg | None = None,
    close_fusion_rule: RuleArg | None = None,
    algorithms: Sequence[str | int] | str | None = None,
    custom_dir: PathLike | PluginSet | None = None,
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

    ``custom_dir``: the ``-custom`` plugin root (or a :class:`convert.layouts.PluginSet` already
    loaded); what was loaded and ignored opens the result's notes. A folder refused by the plugin
    policy raises :class:`convert.layouts.LayoutError`; a plugin failing on a pair is that pair's
    row.
    """
    metrics = resolve_algorithms(algorithms)
    for name in extra_metrics:
        if name not in metrics:
            metrics.append(name)
    plugins = load_plugins(custom_dir) if custom_dir is not None and custom_dir != "" else None
    options = EngineOptions(algorithms=metrics, plugins=plugins, max_elements=max_elements, progress=progress)
    rules = dict(quant_rule=quant_rule, close_fusion_rule=close_fusion_rule)
    if mapping is not None and not isinstance(mapping, list):
        mapping = load_mapping(mapping)  # read once (and refused early when malformed)
    select = dict(rank=rank, iteration=iteration, graph=graph, model_name=model_name, ge_graph=ge_graph)
    with frozen_heap():  # the loaded records are not walked by collections while comparing (compare.heap)
        plan = plan_each(left, right, select, dump_version)
        if plan is None:
            left_run, right_run, scenario, rule, pairing = load_and_pair(
                left, right, fusion_rule, dump_version=dump_version, mapping=mapping, **rules, **select)
            result = compare_loaded(left_run, right_run, scenario, pairing, metrics, options,
                                    refuse_same=refuse_same, rule=rule)
        else:
            result = compare_each(plan, fusion_rule, rules, mapping, metrics, options, refuse_same=refuse_same)
    if plugins is not None:
        result.notes[:0] = plugins.notes
    return result

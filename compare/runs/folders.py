"""Two dump folders in, a :class:`~compare.runs.network.NetworkResult` out (one part, or each in turn)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from convert.layouts import PluginSet, load_plugins
from convert.remote import RemoteRoot, complete, is_url, open_root, outline

from ..engine import EngineOptions
from ..errors import OptionError
from ..heap import frozen_heap
from ..kernels import MSPROBE_METRICS, resolve_algorithms
from ..loaders import is_data_file_name
from ..loaders.parts import model_folders
from ..pairing.mapping_file import load_mapping
from ..records import DumpLayout
from ..reports.spool import PartSpool
from ..request import CompareRequest
from .distributed import ClusterSpec, compare_each_on_cluster, require_dask
from .each import EachJob, compare_each, plan_each
from .loading import PathLike, RuleArg, load_and_pair, selection_of
from .network import NetworkResult, Progress, compare_loaded
from .op_range import OpChoice, parse_range, parse_select, select_pairs


def run_network(left: PathLike, right: PathLike, fusion_rule: RuleArg | None = None, *,
                extra_metrics: Sequence[str] = (), refuse_same: bool = False, progress: Progress | None = None,
                on_dashboard: Callable[[str], None] | None = None, spool: PartSpool | None = None,
                **fields: object) -> NetworkResult:
    """:func:`run_request` of ``CompareRequest(left=left, right=right, fusion_rule=fusion_rule,
    **fields)`` (the keywords go straight to :class:`~compare.request.CompareRequest`)."""
    request = CompareRequest(left=left, right=right, fusion_rule=fusion_rule, **fields)  # type: ignore[arg-type]
    return run_request(request, extra_metrics=extra_metrics, refuse_same=refuse_same, progress=progress,
                       on_dashboard=on_dashboard, spool=spool)


def op_choice(request: CompareRequest) -> OpChoice | None:
    """``--range`` / ``--select`` of the request parsed (:func:`~compare.runs.op_range.parse_range` /
    :func:`~compare.runs.op_range.parse_select`: syntax; their combination with the other options is
    :meth:`CompareRequest.validate`'s); None when neither is given. Raises :class:`OptionError`."""
    if request.op_range is not None:
        return parse_range(request.op_range)
    if request.op_select is not None:
        return parse_select(request.op_select)
    return None


def run_request(request: CompareRequest, *, extra_metrics: Sequence[str] = (), refuse_same: bool = False,
                progress: Progress | None = None, on_dashboard: Callable[[str], None] | None = None,
                spool: PartSpool | None = None) -> NetworkResult:
    """Load, pair and compare two dump folders (the request's ``left`` / ``right``); see
    :func:`compare.api.compare_network` for the fields. The gate fields are :mod:`compare.api`'s: it
    passes ``extra_metrics`` (the metrics the policy needs) and ``refuse_same``.

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
    has ``stats`` (a :class:`compare.stats_table.StatsResult`) and no metric rows.

    ``cluster`` (``"local:N"``: a Dask LocalCluster of N worker processes here) or ``scheduler``
    (a Dask scheduler's address, ``tcp://HOST:8786``, or its scheduler file): the parts of a
    compare-each-in-turn run are compared on that cluster (:mod:`compare.runs.distributed`, docs/distributed.md) -- the same
    rows and notes as in turn, ``progress`` then counts parts, and ``on_dashboard(link)`` is
    called with the Dask dashboard's address; ``spool`` (:class:`~compare.reports.spool.PartSpool`)
    gets each part's rows as the part arrives. A single part is compared here (a note says so).
    Needs ``vcompare[dask]`` (:class:`~compare.errors.OptionError` without it).

    ``ffts``: FFTS+ slice files kept apart under their raw op names (the loaders'
    ``keep_raw_names``), instead of one op merged from its slices.
    ``op_range`` / ``op_select``: ``--range`` / ``--select`` (:func:`op_choice`): only the rows of the fusion
    groups of the operators with those rule ids are compared; a note says how many were selected.
    One model only (not with several ranks / iterations / graphs).
    ``left`` / ``right`` may be fsspec URLs (``s3://...``, ``file://...``; needs ``vcompare[remote]``):
    read through a local copy (:mod:`convert.remote`). On a cluster the client copies the trees'
    metadata and plans from the names (data files as placeholders, :func:`_outline`), and each
    worker copies the data of the part it compares (docs/distributed.md).

    ``custom_dir``: the ``-custom`` plugin root (or a :class:`convert.layouts.PluginSet` already
    loaded); what was loaded and ignored opens the result's notes. A folder refused by the plugin
    policy raises :class:`convert.layouts.LayoutError`; a plugin failing on a pair is that pair's
    row.
    """
    ops = op_choice(request)
    spec = ClusterSpec.parse(request.cluster, request.scheduler)
    if spec is not None:
        require_dask()  # before any work: without Dask the option cannot run
    metrics = resolve_algorithms(request.algorithms)
    for name in extra_metrics:
        if name not in metrics:
            metrics.append(name)
    custom_dir, dump_version, ffts = request.custom_dir, request.dump_version, request.ffts
    plugins = load_plugins(custom_dir) if custom_dir is not None and custom_dir != "" else None
    options = EngineOptions(algorithms=metrics, plugins=plugins, max_elements=request.max_elements, progress=progress)
    fusion_rule = request.fusion_rule
    rules = dict(quant_rule=request.quant_rule, close_fusion_rule=request.close_fusion_rule)
    mapping = request.mapping
    if mapping is not None and not isinstance(mapping, list):
        mapping = load_mapping(mapping)  # read once (and refused early when malformed)
    select = request.select
    left_remote, right_remote = _listed(request.left), _listed(request.right)
    left = left_remote.path if left_remote is not None else request.left
    right = right_remote.path if right_remote is not None else request.right
    with frozen_heap():  # the loaded records are not walked by collections while comparing (compare.heap)
        outlined = spec is not None and _outline(left_remote, right_remote, left, right, select)
        if not outlined:
            _complete(left_remote, right_remote)
        plan = plan_each(left, right, select, dump_version, keep_raw_names=ffts)
        if plan is not None and ops is not None:
            raise OptionError(f"{ops.option} selects operators of one model: not with several ranks, iterations or "
                              "graphs")
        if outlined and plan is None:
            _complete(left_remote, right_remote)  # one part: compared here
        elif outlined and plan is not None and plan.right_candidates is None:
            _complete(right_remote)  # a golden side without levels: read here, sent to the workers
        if plan is not None:
            metrics, options = _graded_metrics(request, metrics, options, [leaf.layout for leaf in plan.left_leaves])
        if plan is None:
            left_run, right_run, scenario, rule, pairing = load_and_pair(
                left, right, fusion_rule, dump_version=dump_version, mapping=mapping, keep_raw_names=ffts, **rules,
                **select)
            metrics, options = _graded_metrics(request, metrics, options, (left_run.family, right_run.family))
            if ops is not None:
                pairing, _ = select_pairs(pairing, rule, ops)
            result = compare_loaded(left_run, right_run, scenario, pairing, metrics, options,
                                    refuse_same=refuse_same, rule=rule)
            if spec is not None:
                result.notes.append(f"{spec.describe()}: one part to compare (no --rank / --iteration / --graph "
                                    "with several values): compared here, not on the Dask cluster")
        elif spec is not None:
            job = EachJob(plan, fusion_rule, rules, mapping, metrics, options, refuse_same)
            result = compare_each_on_cluster(job, spec, custom_dir=_plugin_root(plugins),
                                             progress=progress, on_dashboard=on_dashboard, spool=spool,
                                             remotes=(left_remote, right_remote))
        else:
            result = compare_each(plan, fusion_rule, rules, mapping, metrics, options, refuse_same=refuse_same)
    if plugins is not None:
        result.notes[:0] = plugins.notes
    for side, remote in (("right", right_remote), ("left", left_remote)):  # inserted first: left, right
        if remote is not None:
            result.notes.insert(0, f"{side}: {remote.url} read through its local copy {remote.local} "
                                   f"({len(remote.files)} file(s))")
    return result


def _graded_metrics(request: CompareRequest, metrics: list[str], options: EngineOptions,
                    layouts: Iterable[DumpLayout]) -> tuple[list[str], EngineOptions]:
    """msprobe's own metrics (:data:`~compare.kernels.MSPROBE_METRICS`: EucDist and the two error
    ratios) join the default selection when a run is graded msprobe's way
    (:attr:`~compare.records.DumpLayout.graded`): its tables have msprobe's columns. Only for the
    default selection (no ``-alg``, or ``-alg all``): never when ``-alg`` names other metrics."""
    if request.algorithms not in (None, "all") or not any(layout.graded for layout in layouts):
        return metrics, options
    metrics = metrics + [name for name in MSPROBE_METRICS if name not in metrics]
    return metrics, replace(options, algorithms=metrics)


def _listed(path: PathLike) -> RemoteRoot | None:
    """The listed root of a URL (:func:`convert.remote.open_root`; nothing copied yet), None for a path."""
    return open_root(str(path)) if is_url(path) else None


def _complete(*remotes: RemoteRoot | None) -> None:
    """Every file of the URL sides copied (:func:`convert.remote.complete`)."""
    for remote in remotes:
        if remote is not None:
            complete(remote)


def _outline(left_remote: RemoteRoot | None, right_remote: RemoteRoot | None, left: PathLike, right: PathLike,
             select: dict) -> bool:
    """For a cluster run: the URL sides outlined (metadata copied, data files as placeholders,
    :func:`convert.remote.outline`), so that the client plans from names and each worker copies
    the data of its own part. False (the caller copies everything) when there is no URL side, or
    when the plan would read tensors: a tree with several model folders whose choice goes by the
    operators (no ``--model-name`` / ``--ge-graph``)."""
    remotes = [r for r in (left_remote, right_remote) if r is not None]
    if not remotes:
        return False
    for remote in remotes:
        outline(remote, lambda relative: is_data_file_name(relative.rsplit("/", 1)[-1]))
    if select.get("model_name") is None and select.get("ge_graph") is None:
        selection = selection_of(select)
        if model_folders(left, selection) or model_folders(right, selection):
            return False
    return True


def _plugin_root(plugins: PluginSet | None) -> Path | None:
    """The ``-custom`` root a worker loads the plugins from again (loaded modules do not travel)."""
    return plugins.folder.parent if plugins is not None and plugins.folder is not None else None

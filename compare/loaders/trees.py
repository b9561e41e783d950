"""Dump trees of the MindSpore and TensorFlow-NPU families: finding leaves, selecting, scanning.

:func:`claim` walks a user-given path (up to :data:`MAX_DEPTH` levels down, hidden folders,
``graphs/``, ``execution_order/`` and ``constants/`` skipped) for *leaf folders* -- folders that
directly hold dump files -- and says whether the tree is one this module reads. Each leaf is
classified by what it holds (:func:`classify_leaf`) and placed by the names of its ancestors
(:func:`locate`); the given path may itself be a leaf, whose ancestors still name it.

Layouts (leaf folder, named from its ancestors -> coordinates):

* ``mindspore-sync``: ``{net}/device_{d}/iteration_{n}`` (CPU: ``{net}/iteration_{n}``) ->
  rank d, iteration n;
* ``mindspore-npy``: ``rank_{r}/{net}/{graph}/{iteration}`` -> rank, graph, iteration;
* ``mindspore-async``: ``{device}/{net}_graph_{g}/{g}/{iteration}`` -> rank (the device),
  graph, iteration;
* ``mindspore-o2``: ``{step}/{time}/{device}/{model_name}/{model_id}/{iteration}`` -> step,
  time, rank, model_name, model_id, iteration;
* ``ge`` (TF NPU, GE dumps): ``{time}/{device}/{model_name}/{model_id}/{data_index}`` -> time,
  rank, model_name, model_id, iteration;
* ``single-op`` (single-operator model, seed 004): ``{device_id}/{op_name}/`` -> rank; every op
  folder of the device is read, together forming one run (one candidate: the device folder);
* ``plain``: any other leaf (no coordinates).

The tree is claimed when a leaf is a MindSpore or single-op layout, holds ``.bin`` / MindSpore
``.npy`` / statistics / overflow files, or when a selection option is given for a ``ge`` tree.
Plain Ascend trees without selection options, and golden folders, are left to the other readers
(so their behaviour does not change).

Selection order (:func:`select`): rank, model name (``--ge-graph`` / ``--model-name``), the
newest ``step`` and ``time`` folders (per rank: each device of a multi-device run may write its
own time folder), graph, iteration (per graph: graphs number their iterations independently);
then, should several leaves remain for one (rank, graph, iteration), the largest ``model_id`` and
then the newest folder. Every default choice adds a note.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from convert.names.ascend import OfflineName, classify_name, stats_csv_name
from convert.names.hashed import is_hashed_name, read_mapping
from convert.names.mindspore import is_ignored_name, is_overflow_name, parse_npy_name, parse_sync_name
from convert.tree import walk_leaves

from ..errors import CompareError, OptionError
from ..records import MINDSPORE_LAYOUTS, DumpLayout, Run, RunKind
from .ascend import clean_op_name
from .listing import cached_listing
from .mindspore import constants_folder, scan_npy, scan_sync
from .ms_order import apply_order, order_files, read_execution_order, read_global_order
from .ms_ir import names_note, recorded_ir_graph
from .reader import MAX_SNIFF, OpenRequest, RecordedGraph, TreeReader
from .selection import (
    Candidate,
    Selection,
    filter_by,
    newest_per_rank,
    order_number,
    pick_graph,
    pick_iteration,
    values_of,
)
from .tf_npu import check_model_folder, first_graph_name, merged_listing, scan_binary

#: How deep the walk goes below the given path.
MAX_DEPTH = 8

_SKIP_DIRS = frozenset({"graphs", "execution_order", "constants"})
_ITER_RE = re.compile(r"iteration_(\d+)")
_DEVICE_RE = re.compile(r"device_(\d+)")
_RANK_RE = re.compile(r"rank_(\d+)")
_TIME_RE = re.compile(r"\d{14}")



@dataclass
class LeafInfo:
    """What a folder holds: counts per file kind (``sync``, ``npy``, ``offline``, ``stats_csv``,
    ``statistic``, ``overflow``, ``golden``, ``hashed``) and the resulting ``kind``."""

    counts: Counter = field(default_factory=Counter)

    @property
    def kind(self) -> str | None:
        c = self.counts
        if c["sync"]:
            return "sync"
        if c["npy"]:
            return "npy"
        if c["offline"] or c["stats_csv"]:
            return "offline"
        if c["statistic"]:
            return "stats"
        if c["overflow"]:
            return "offline"
        if c["golden"]:
            return "golden"
        return None

    @property
    def total(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "golden")

    @property
    def special(self) -> bool:
        """Holds something only this module reads (statistics, overflow records)."""
        c = self.counts
        return bool(c["stats_csv"] or c["statistic"] or c["overflow"])


def _classify_name(name: str) -> str | None:
    if name == "statistic.csv":
        return "statistic"
    if is_overflow_name(name):
        return "overflow"
    if is_ignored_name(name):
        return None
    if name.endswith(".bin") and parse_sync_name(name) is not None:
        return "sync"
    if name.endswith(".npy") and parse_npy_name(name) is not None:
        return "npy"
    if stats_csv_name(name) is not None:
        return "stats_csv"
    kind, parsed, _ = classify_name(name)
    if parsed is None:
        return None
    return "offline" if kind == "offline" else "golden"


def is_data_file_name(name: str) -> bool:
    """Whether a file of this name holds dump data (a tensor, statistics, overflow records, or a
    hashed name that ``mapping.csv`` resolves): what the tree walk counts, by the name alone. The
    other files of a tree (``mapping.csv``, ``acl.json``, graphs, kernel arguments) are metadata."""
    return is_hashed_name(name) or _classify_name(name) is not None


def classify_leaf(folder: Path) -> LeafInfo:
    """Classify (up to :data:`~compare.loaders.reader.MAX_SNIFF`) files of ``folder``; hashed names via ``mapping.csv``."""
    info = LeafInfo()
    hashed: list[str] = []
    try:
        with os.scandir(folder) as it:
            for number, entry in enumerate(it):
                if number >= MAX_SNIFF:
                    break
                try:
                    if not entry.is_file():
                        continue
                except OSError:
                    continue
                if is_hashed_name(entry.name):
                    hashed.append(entry.name)
                    continue
                kind = _classify_name(entry.name)
                if kind:
                    info.counts[kind] += 1
    except OSError:
        return info
    if hashed:

        mapping, _ = read_mapping(folder)
        for name in hashed[:64]:
            real = mapping.get(name) or mapping.get(name[:-4] if name.endswith(".npy") else name + ".npy")
            kind = _classify_name(real) if real else None
            if kind:
                info.counts[kind] += 1
    return info


def find_leaves(root: Path, max_depth: int = MAX_DEPTH, *,
                problems: list[tuple[Path, str]] | None = None) -> list[tuple[Path, LeafInfo]]:
    """Folders at most ``max_depth`` levels below ``root`` (``root`` included) holding dump files.

    A folder holding dump files is not searched further; symlink loops are cut. Entries that
    could not be walked (link loops, broken links, folders that cannot be listed) go to
    ``problems`` when given (:func:`convert.tree.walk_leaves`).
    """

    def classify(folder: Path) -> LeafInfo | None:
        info = classify_leaf(folder)
        return info if info.kind is not None else None

    return walk_leaves(root, max_depth, classify, skip_dir=lambda name: name.startswith(".") or name in _SKIP_DIRS,
                       problems=problems)


def locate(leaf: Path, kind: str) -> tuple[DumpLayout, dict[str, object]]:
    """The layout of a leaf and its coordinates, from the names of the leaf and its ancestors."""
    parts = Path(os.path.abspath(leaf)).parts
    name = parts[-1]

    def part(i: int) -> str:
        return parts[-i] if len(parts) >= i else ""

    if kind == "sync":
        match = _ITER_RE.fullmatch(name)
        coords: dict[str, object] = {"iteration": int(match.group(1))} if match else {}
        device = _DEVICE_RE.fullmatch(part(2))
        if device:
            coords = {"rank": int(device.group(1)), **coords, "net": part(3)}
        elif match:
            coords["net"] = part(2)
        return DumpLayout.MINDSPORE_SYNC, coords
    digit = str.isdigit
    if digit(name) and digit(part(2)) and _RANK_RE.fullmatch(part(4)):
        rank = int(_RANK_RE.fullmatch(part(4)).group(1))  # type: ignore[union-attr]
        return DumpLayout.MINDSPORE_NPY, {"rank": rank, "net": part(3), "graph": int(part(2)), "iteration": int(name)}
    if digit(name) and digit(part(2)) and part(3).endswith(f"_graph_{part(2)}") and digit(part(4)):
        return DumpLayout.MINDSPORE_ASYNC, {"rank": int(part(4)), "net": part(3)[: -len(f"_graph_{part(2)}")],
                                   "graph": int(part(2)), "iteration": int(name)}
    if digit(name) and digit(part(2)) and digit(part(4)) and _TIME_RE.fullmatch(part(5)):
        coords = {"time": part(5), "rank": int(part(4)), "model_name": part(3), "model_id": int(part(2)),
                  "iteration": int(name)}
        if digit(part(6)) and not _TIME_RE.fullmatch(part(6)):
            return DumpLayout.MINDSPORE_O2, {"step": int(part(6)), **coords}
        return DumpLayout.GE, coords
    return DumpLayout.PLAIN, {}


def _is_op_folder(leaf: Path, layout: DumpLayout, kind: str) -> bool:
    """A leaf of a single-operator-model dump, ``{dump_path}/{device_id}/{op_name}/`` (seed 004): an
    Ascend-format leaf whose own name is not a number and whose parent is a device-id number."""
    parent = Path(os.path.abspath(leaf)).parent.name
    return (layout == DumpLayout.PLAIN and kind == "offline" and not leaf.name.isdigit() and parent.isdigit()
            and not _TIME_RE.fullmatch(parent))


def _single_op_devices(leaves: list[Candidate]) -> list[Candidate]:
    """One ``single-op`` candidate per device folder holding two or more op folders.

    Seed 004: a single-operator model is dumped to ``{dump_path}/{device_id}/{op_name}/``, every
    operator in its own folder; together they are one run (read by :func:`scan_candidate` as one).
    A device folder with a single op folder stays a plain leaf (the Ascend reader's, as before).
    """
    by_device: dict[Path, list[Candidate]] = {}
    for c in leaves:
        by_device.setdefault(c.path.parent, []).append(c)
    out = []
    for device, group in by_device.items():
        if len(group) < 2:
            out.extend(group)
            continue
        rank = int(Path(os.path.abspath(device)).name)
        out.append(Candidate(path=device, layout=DumpLayout.SINGLE_OP, coords={"rank": rank}, kind="offline",
                             files=sum(c.files for c in group), special=any(c.special for c in group),
                             folders=tuple(c.path for c in group)))
    return out


def _candidates(root: Path, problems: list[tuple[Path, str]] | None = None) -> list[Candidate]:
    out = []
    op_folders = []
    for leaf, info in find_leaves(root, problems=problems):
        kind = info.kind
        if kind is None or kind == "golden":
            continue
        layout, coords = locate(leaf, kind)
        candidate = Candidate(path=leaf, layout=layout, coords=coords, kind=kind, files=info.total,
                              special=info.special)
        (op_folders if _is_op_folder(leaf, layout, kind) else out).append(candidate)
    return out + _single_op_devices(op_folders)


def claim(path: str | os.PathLike, selection: Selection | None = None, *,
          problems: list[tuple[Path, str]] | None = None) -> list[Candidate] | None:
    """The leaves of ``path`` when this module should read it (see the module doc), else None.

    ``problems`` (when given) receives what the walk could not use, whether the tree is claimed
    or not (:func:`find_leaves`).
    """
    root = Path(path)
    if not root.is_dir():
        return None
    candidates = _candidates(root, problems)
    if not candidates:
        return None
    for c in candidates:
        if (c.layout in MINDSPORE_LAYOUTS or c.layout == DumpLayout.SINGLE_OP or c.kind in ("sync", "npy", "stats")
                or c.special):
            return candidates
    if selection is not None and selection.given and any(c.layout == DumpLayout.GE for c in candidates):
        return candidates
    return None


# --------------------------------------------------------------------------------------------
# Selection
# --------------------------------------------------------------------------------------------


def _where(root: Path) -> str:
    return str(root)


def _pick_model(candidates: list[Candidate], selection: Selection, where: str, notes: list[str]) -> list[Candidate]:
    names = [str(v) for v in values_of(candidates, "model_name")]
    if selection.ge_graph is not None:
        graph = first_graph_name(selection.ge_graph)
        if not names:
            notes.append(f"--ge-graph ignored: {where} has no model_name level")
            return candidates
        chosen = check_model_folder(names, graph, f"--ge-graph {selection.ge_graph} (first graph {graph!r})")
        notes.append(f"model_name {chosen} (first graph of {Path(selection.ge_graph).name})")
    elif selection.model_name is not None:
        if not names:
            notes.append(f"--model-name ignored: {where} has no model_name level")
            return candidates
        chosen = check_model_folder(names, selection.model_name, f"--model-name {selection.model_name}")
    elif len(names) > 1:
        sizes = Counter()
        for c in candidates:
            sizes[str(c.get("model_name"))] += c.files
        chosen = max(names, key=lambda n: (sizes[n], n))
        notes.append(f"{where}: {len(names)} model_name folders ({', '.join(names)}); using {chosen}, the one "
                     "with the most dump files -- name the graph with --ge-graph ge_proto_*_Build.txt or "
                     "--model-name")
    else:
        return candidates
    return [c for c in candidates if c.get("model_name") is None or str(c.get("model_name")) == chosen]


def select(candidates: list[Candidate], selection: Selection, *, where: str, keep_all: bool = False,
           notes: list[str] | None = None) -> list[Candidate]:
    """Apply the selection to the leaves (order in the module doc); one leaf per (rank, graph, iteration).

    ``keep_all``: keep every rank / graph / iteration the specs select (compare-each-in-turn
    mode); otherwise one rank, one graph and one iteration remain. ``step`` and ``time`` folders
    are chosen per rank (:func:`~compare.loaders.selection.newest_per_rank`). Raises :class:`OptionError` when a spec
    selects nothing (the message lists what there is).
    """
    notes = notes if notes is not None else []
    rank_spec, _, _ = selection.specs()
    chosen = list(candidates)
    chosen = filter_by(chosen, "rank", rank_spec, option="--rank", where=where, default="min", notes=notes,
                       keep_all=keep_all)
    chosen = _pick_model(chosen, selection, where, notes)
    chosen = newest_per_rank(chosen, "step", where=where, notes=notes)
    chosen = newest_per_rank(chosen, "time", where=where, notes=notes)
    before_graph = chosen
    chosen = pick_graph(chosen, selection, where, notes, keep_all=keep_all)
    chosen = pick_iteration(chosen, before_graph, selection, where, notes, keep_all=keep_all)
    groups: dict[tuple[object, object, object], list[Candidate]] = {}
    for c in chosen:
        groups.setdefault((c.get("rank"), c.get("graph"), c.get("iteration")), []).append(c)
    out = []
    for key, group in groups.items():
        if len(group) > 1:
            group.sort(key=lambda c: (int(c.get("model_id") or 0), _mtime(c.path), str(c.path)))
            pick = group[-1]
            notes.append(f"{where}: {len(group)} dump folders for {pick.describe()}; using {pick.path} "
                         f"(largest model_id, then newest)")
            group = [pick]
        out.extend(group)
    out.sort(key=lambda c: (order_number(c.get("rank")), order_number(c.get("graph")), order_number(c.get("iteration")), str(c.path)))
    return out



def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


# --------------------------------------------------------------------------------------------
# Scanning a chosen leaf
# --------------------------------------------------------------------------------------------


def scan_candidate(candidate: Candidate, *, root: Path, version: int | None = None, fusion_rule: bool = False,
                   keep_raw_names: bool = False):
    """Read one leaf as a :class:`~compare.records.Run` with its family fields (its notes say which)."""
    c = candidate
    coords = dict(c.coords)
    if c.kind == "sync":
        run = scan_sync(c.path, root=root, coords=coords)
    elif c.kind == "npy" or (c.kind == "stats" and c.layout in (DumpLayout.MINDSPORE_NPY, DumpLayout.MINDSPORE_O2, DumpLayout.PLAIN)):
        constants = constants_folder(c.path) if c.layout == DumpLayout.MINDSPORE_NPY else None
        family = c.layout if c.layout in (DumpLayout.MINDSPORE_O2, DumpLayout.GE) else DumpLayout.MINDSPORE_NPY
        run = scan_npy(c.path, root=root, coords=coords, constants=constants, family=family)
    elif c.layout == DumpLayout.SINGLE_OP:
        run = scan_binary(c.path, version=version, root=root, coords=coords, family=DumpLayout.GE,
                          fusion_rule=fusion_rule, keep_raw_names=keep_raw_names, listing=merged_listing(c.path, c.folders))
        run.notes.append(f"single-operator model dump: {len(c.folders)} operator folders of device {c.get('rank')} "
                         f"read as one run ({', '.join(f.name for f in c.folders[:5])}"
                         f"{', ...' if len(c.folders) > 5 else ''})")
    else:
        family = c.layout if c.layout in (DumpLayout.MINDSPORE_ASYNC, DumpLayout.MINDSPORE_O2) else DumpLayout.GE
        run = scan_binary(c.path, version=version, root=root, coords=coords, family=family,
                          fusion_rule=fusion_rule, keep_raw_names=keep_raw_names)
        if run.stats_only and c.layout == DumpLayout.PLAIN:
            run.family = DumpLayout.STATS
    described = c.describe()
    run.notes.insert(0, f"using {c.layout} dump folder {c.path}" + (f" ({described})" if described != str(c.path) else ""))
    depth = {DumpLayout.MINDSPORE_NPY: 3, DumpLayout.MINDSPORE_SYNC: 1, DumpLayout.MINDSPORE_ASYNC: 3}.get(c.layout)
    if depth is not None:
        local, global_ = order_files(c.path, coords.get("graph"), depth)
        if local is not None:
            apply_order(run, read_execution_order(local))
        if global_ is not None:
            run.ran_iterations = read_global_order(global_)
            iteration = coords.get("iteration")
            if iteration is not None and run.ran_iterations and int(iteration) not in run.ran_iterations:  # type: ignore[arg-type]
                run.notes.append(f"{global_.name} does not list iteration {iteration} (the graph ran in "
                                 f"{', '.join(str(i) for i in run.ran_iterations[:20])})")
        graph = coords.get("graph")
        unnamed = names_note(c.path, graph if isinstance(graph, int) else None)
        if unnamed is not None:
            run.notes.append(unnamed)
    return run


# --------------------------------------------------------------------------------------------
# Several model_name folders: what each holds (for choosing the one that pairs with the other side)
# --------------------------------------------------------------------------------------------


def model_folders(path: str | os.PathLike, selection: Selection) -> dict[str, Candidate]:
    """The leaf each ``model_name`` folder of a TF-NPU / GE / O2 tree gives under ``selection``.

    Empty unless ``path`` holds two or more model_name folders. The selection is applied with
    each model name forced in turn (``--model-name`` / ``--ge-graph`` of ``selection`` are
    ignored here); a model folder the selection matches nothing in is left out.
    """
    root = Path(path)
    if not root.is_dir():
        return {}
    candidates = [c for c in _candidates(root) if c.get("model_name") is not None]
    names = [str(n) for n in values_of(candidates, "model_name")]
    if len(names) < 2:
        return {}
    out: dict[str, Candidate] = {}
    for name in names:
        forced = Selection(rank=selection.rank, iteration=selection.iteration, graph=selection.graph,
                           model_name=name)
        try:
            chosen = select(candidates, forced, where=str(root), notes=[])
        except OptionError:
            continue
        if chosen:
            out[name] = chosen[0]
    return out


def leaf_op_names(candidate: Candidate) -> list[str]:
    """The op names a leaf's run will have, from its file names where they tell (Ascend-format
    dumps and per-operator stats CSVs: cleaned as :func:`compare.loaders.ascend.clean_op_name`
    does without a fusion rule); other leaves are scanned (metadata only)."""
    if candidate.kind != "offline":
        return list(scan_candidate(candidate, root=candidate.path).ops)
    names: dict[str, None] = {}
    for item in cached_listing(candidate.path).files:
        parsed = stats_csv_name(item.entry.name) or item.parsed
        if not isinstance(parsed, OfflineName) or is_overflow_name(item.entry.name):
            continue
        name = clean_op_name(parsed.op_name)
        if name:
            names[name] = None
    return list(names)


def load_selected(path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
                  version: int | None = None, fusion_rule: bool = False, keep_raw_names: bool = False):
    """One run: :func:`select` (single mode) then :func:`scan_candidate`; notes say what was used."""
    root = Path(path)
    notes: list[str] = []
    chosen = select(candidates, selection, where=_where(root), notes=notes)
    if not chosen:
        raise CompareError(f"{root}: no dump folder left after the selection")
    run = scan_candidate(chosen[0], root=root, version=version, fusion_rule=fusion_rule,
                         keep_raw_names=keep_raw_names)
    run.notes[1:1] = notes
    return run


#: The layouts of the leaves :func:`claim` finds (the candidates this module's reader owns).
TREE_LAYOUTS = frozenset({*MINDSPORE_LAYOUTS, DumpLayout.GE, DumpLayout.PLAIN, DumpLayout.SINGLE_OP})


class TreesReader(TreeReader):
    """The ``mindspore`` reader: MindSpore and TensorFlow-NPU dump trees (the module doc). Asked
    before the Ascend folder resolution: its selection options choose among the leaves of the
    whole tree. What its walk could not read is the tree's own: kept whether it claims or not."""

    name = "mindspore"
    kinds = (RunKind.NUMPY, RunKind.OFFLINE)
    part_trees = ("MindSpore rank_N / device_N / graph / iteration folders", "a TF-NPU / GE tree")
    replica_trees = "MindSpore (rank_N / device_N folders) and TF-NPU / GE ({time}/{device}/...)"
    aligns = True

    def guess_can_open(self, folder: Path) -> bool:
        return claim(folder) is not None

    def explain(self, folder: Path) -> str:
        return ("no MindSpore dump (.bin / {op_type}.{op_name}...{input|output}.{slot}.{format}.npy / "
                "statistic.csv) and no rank_N, device_N, iteration_N or stats-CSV tree")

    def open(self, folder: Path, request: OpenRequest) -> Run:
        candidates = claim(folder)
        if candidates is None:
            raise CompareError(f"{folder}: {self.explain(folder)}")
        return load_selected(request.root, candidates, Selection(), version=request.version)

    def claim_tree(self, path: str | os.PathLike, request: OpenRequest,
                   problems: list[tuple[Path, str]]) -> list[Candidate] | None:
        return claim(path, request.selection, problems=problems)

    def open_tree(self, path: str | os.PathLike, candidates: list[Candidate], request: OpenRequest) -> Run:
        return load_selected(path, candidates, request.selection, version=request.version,
                             fusion_rule=request.fusion_rule, keep_raw_names=request.keep_raw_names)

    def tree_kind(self, path: str | os.PathLike, candidates: list[Candidate]) -> RunKind:
        """OFFLINE when the leaf the default selection picks holds Ascend-format dump files, else NUMPY."""
        chosen = select(candidates, Selection(), where=str(path))
        return RunKind.OFFLINE if chosen and chosen[0].kind == "offline" else RunKind.NUMPY

    def is_data_file_name(self, name: str) -> bool:
        """Dump files of every name grammar this walk counts (Ascend and golden names included):
        :func:`is_data_file_name`."""
        return is_data_file_name(name)

    def graph(self, run: Run, ops: Collection[str], notes: list[str]) -> RecordedGraph | None:
        """The MindSpore ``.ir`` graph above the run's folder, in its execution order
        (:func:`compare.loaders.ms_ir.recorded_ir_graph`): looked for above any run's folder, so
        that a leaf given directly keeps its graph."""
        return recorded_ir_graph(run, ops, notes)

    def owns(self, candidate: Candidate) -> bool:
        return candidate.layout in TREE_LAYOUTS

    def select_one(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection) -> Candidate | None:
        chosen = select(candidates, selection, where=str(path))
        return chosen[0] if chosen else None

    def select_parts(self, candidates: list[Candidate], selection: Selection, *, where: str,
                     notes: list[str]) -> list[Candidate]:
        return select(candidates, selection, where=where, keep_all=True, notes=notes)

    def scan_part(self, candidate: Candidate, *, root: Path, version: int | None = None,
                  keep_raw_names: bool = False) -> Run:
        return scan_candidate(candidate, root=root, version=version, keep_raw_names=keep_raw_names)

    def load_part(self, path: str | os.PathLike, candidates: list[Candidate], selection: Selection, *,
                  version: int | None = None, keep_raw_names: bool = False) -> Run:
        return load_selected(path, candidates, selection, version=version, keep_raw_names=keep_raw_names)

    def part_op_names(self, candidate: Candidate) -> list[str]:
        return leaf_op_names(candidate)

    def model_folders(self, path: str | os.PathLike, selection: Selection) -> dict[str, Candidate]:
        return model_folders(path, selection)


#: The MindSpore / TF-NPU tree reader (:data:`compare.loaders.READERS`).
READER = TreesReader()


__all__ = ["READER", "TREE_LAYOUTS", "LeafInfo", "TreesReader", "claim", "classify_leaf", "find_leaves", "leaf_op_names",
           "load_selected", "locate", "model_folders", "scan_candidate", "select"]

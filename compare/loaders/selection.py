"""Choosing what to read in a dump tree: rank/device, iteration, graph, model name.

Dump trees hold one leaf folder per (rank or device, graph or model, iteration); the options
``--rank``, ``--iteration``, ``--graph``, ``--model-name`` and ``--ge-graph`` say which ones to
compare. This module parses those options and applies them to the candidate leaves a loader
found (:class:`Candidate`); the layouts themselves are in :mod:`compare.loaders.mindspore` and
:mod:`compare.loaders.tf_npu`.

Spec syntax (``--rank`` / ``--iteration`` / ``--graph``):

* ``N`` -- one value; ``N,M`` or ``N|M`` -- a list; ``A-B`` -- a range, both ends included;
  combinations such as ``0|5-8|100-120`` (the MindSpore ``iteration`` syntax) work;
* ``all`` -- every candidate, compared each in turn;
* not given -- the only candidate, or else the newest (largest iteration / data index, latest
  ``time`` folder) and, for ranks, devices and graphs, the smallest id; a note says what was used
  and what else was there.

Edge-case policy: a spec that matches no candidate is an :class:`OptionError` listing the
candidates; a spec that names several values while a single comparison is asked for (a list
without ``all`` in :func:`pick_one`) uses the largest and says so in a note.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionError
from ..records import DumpLayout

_TOKEN_RE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


@dataclass(frozen=True)
class Spec:
    """A parsed ``--rank`` / ``--iteration`` / ``--graph`` value.

    ``every`` is True for ``all``; otherwise ``ranges`` holds inclusive ``(low, high)`` pairs.
    ``text`` is the value as given (for messages).
    """

    text: str
    every: bool = False
    ranges: tuple[tuple[int, int], ...] = ()

    def matches(self, value: int) -> bool:
        return self.every or any(low <= value <= high for low, high in self.ranges)

    @property
    def single(self) -> int | None:
        """The value when the spec names exactly one number, else ``None``."""
        if not self.every and len(self.ranges) == 1 and self.ranges[0][0] == self.ranges[0][1]:
            return self.ranges[0][0]
        return None


def parse_spec(value: object, what: str) -> Spec | None:
    """Parse ``value`` (int, str, list of ints, ``"all"`` or ``None``) as a selection spec.

    ``what`` names the option in error messages (``--iteration``). Raises :class:`OptionError`
    for text that is neither ``all`` nor numbers, lists and ranges.
    """
    if value is None:
        return None
    if isinstance(value, Spec):
        return value
    if isinstance(value, bool):
        raise OptionError(f"{what} must be a number, a list, a range or 'all', not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise OptionError(f"{what} must not be negative, got {value}")
        return Spec(str(value), ranges=((value, value),))
    if isinstance(value, (list, tuple, set, frozenset)):
        return parse_spec(",".join(str(v) for v in value), what)
    text = str(value).strip()
    if text.lower() == "all":
        return Spec(text, every=True)
    if not text:
        raise OptionError(f"{what} is empty: give a number, a list (0,3), a range (5-8) or 'all'")
    ranges: list[tuple[int, int]] = []
    for token in re.split(r"[|,]", text):
        match = _TOKEN_RE.fullmatch(token)
        if match is None:
            raise OptionError(
                f"{what} {text!r}: {token.strip()!r} is not a number or a range A-B "
                "(examples: 3, 0,3, 0|5-8, all)"
            )
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise OptionError(f"{what} {text!r}: range {low}-{high} runs backwards")
        ranges.append((low, high))
    return Spec(text, ranges=tuple(ranges))


@dataclass
class Candidate:
    """One leaf folder of a dump tree and where it sits.

    ``coords`` holds what the folder names say: ``rank`` (``rank_N`` / ``device_N`` / the
    device-id folder), ``iteration`` (``iteration_N``, the iteration or ``data_index`` folder),
    ``graph`` (MindSpore graph id), ``model_name``, ``model_id``, ``time``, ``step`` -- only the
    keys the layout has. ``layout`` names the layout (see :mod:`compare.loaders.trees`),
    ``kind`` what the leaf holds (``sync``, ``npy``, ``offline``, ``stats``) and ``files`` how
    many dump files it holds (counted up to a limit); ``special`` whether it holds statistics or
    overflow records. ``folders``: for a single-operator-model device folder (layout
    ``single-op``, ``path`` the device folder), its op folders, read together as one run.
    """

    path: Path
    layout: DumpLayout
    coords: dict[str, object] = field(default_factory=dict)
    kind: str = ""
    files: int = 0
    special: bool = False
    folders: tuple[Path, ...] = ()

    def get(self, key: str) -> object | None:
        return self.coords.get(key)

    def describe(self) -> str:
        parts = [f"{k} {v}" for k, v in self.coords.items() if v is not None and k != "net"]
        return ", ".join(parts) or str(self.path)


@dataclass
class Selection:
    """The selection options of one comparison (``None`` = default choice).

    ``rank`` / ``iteration`` / ``graph``: spec text, int or :class:`Spec`. ``model_name``: the
    model_name folder to read (TF NPU / GE / O2 layouts). ``ge_graph``: a ``ge_proto_*_Build.txt``
    file whose first graph name is the model_name folder to read.
    """

    rank: object = None
    iteration: object = None
    graph: object = None
    model_name: str | None = None
    ge_graph: Path | None = None

    def specs(self) -> tuple[Spec | None, Spec | None, Spec | None]:
        return (parse_spec(self.rank, "--rank"), parse_spec(self.iteration, "--iteration"),
                parse_spec(self.graph, "--graph"))

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.rank, self.iteration, self.graph, self.model_name, self.ge_graph))


def _int_or_none(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def values_of(candidates: Iterable[Candidate], key: str) -> list[object]:
    """Distinct values of ``key`` among the candidates, sorted (numbers numerically)."""
    seen = {c.get(key) for c in candidates if c.get(key) is not None}
    return sorted(seen, key=lambda v: (0, _int_or_none(v), "") if _int_or_none(v) is not None else (1, 0, str(v)))


def listing_text(values: Sequence[object]) -> str:
    """Up to 20 values, comma-separated, then how many more (for messages)."""
    shown = ", ".join(str(v) for v in values[:20])
    return shown + (f" (+{len(values) - 20} more)" if len(values) > 20 else "")


def filter_by(candidates: list[Candidate], key: str, spec: Spec | None, *, option: str, where: str,
              default: str, notes: list[str], keep_all: bool = False) -> list[Candidate]:
    """Keep the candidates whose ``key`` the spec selects (see the module doc for defaults).

    ``default`` is ``"max"`` (newest: iterations, data indexes, times) or ``"min"`` (ranks,
    devices). ``keep_all`` keeps every value the spec selects (``all`` or a list, for the
    compare-each-in-turn mode); otherwise one value is kept. Candidates without ``key`` are kept
    as they are. Raises :class:`OptionError` when the spec matches nothing.
    """
    with_key = [c for c in candidates if c.get(key) is not None]
    if not with_key:
        if spec is not None and not spec.every:
            notes.append(f"{option} {spec.text} ignored: {where} has no {key} level")
        return candidates
    values = values_of(with_key, key)
    numeric = all(_int_or_none(v) is not None for v in values)
    if spec is None:
        if len(values) == 1:
            chosen = [values[0]]
        else:
            pick = values[-1] if default == "max" else values[0]
            chosen = [pick]
            notes.append(f"{where}: {len(values)} {key}s ({listing_text(values)}); using {key} {pick} "
                         f"({'the newest' if default == 'max' else 'the first'}; choose with {option})")
    else:
        if not numeric:
            raise OptionError(f"{option} {spec.text}: the {key} folders of {where} are not numbered "
                              f"({listing_text(values)})")
        chosen = [v for v in values if spec.matches(int(v))]  # type: ignore[arg-type]
        if not chosen:
            raise OptionError(f"{option} {spec.text} selects nothing in {where}: it has {key} "
                              f"{listing_text(values)}")
        if len(chosen) > 1 and not keep_all:
            notes.append(f"{option} {spec.text} selects {len(chosen)} {key}s ({listing_text(chosen)}); "
                         f"using {chosen[-1]} (add 'all' to compare each in turn)")
            chosen = [chosen[-1]]
    keep = {str(v) for v in chosen}
    return [c for c in candidates if c.get(key) is None or str(c.get(key)) in keep]


def newest(candidates: list[Candidate], key: str, *, where: str, notes: list[str], why: str = "") -> list[Candidate]:
    """Keep the candidates with the largest ``key`` (a ``time`` or ``step`` folder), with a note."""
    values = values_of([c for c in candidates if c.get(key) is not None], key)
    if len(values) <= 1:
        return candidates
    pick = values[-1]
    notes.append(f"{where}: {len(values)} {key} folders ({listing_text(values)}); using the newest, {pick}{why}")
    return [c for c in candidates if c.get(key) is None or c.get(key) == pick]


def order_number(value: object) -> int:
    """A coordinate as a number to order by: the value as an int, -1 when it is none or not a number."""
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return -1


# Selection steps of a MindSpore / TF-NPU tree (:func:`compare.loaders.trees.select` applies them in order)


def pick_graph(candidates: list[Candidate], selection: Selection, where: str, notes: list[str], *,
                keep_all: bool = False) -> list[Candidate]:
    """Keep the graph(s) the ``--graph`` spec selects; by default the graph with the most dump files.

    ``keep_all`` keeps every graph a list or ``all`` selects (compare-each-in-turn mode).
    """
    spec = parse_spec(selection.graph, "--graph")
    if spec is not None:
        return filter_by(candidates, "graph", spec, option="--graph", where=where, default="min", notes=notes,
                         keep_all=keep_all)
    graphs = values_of(candidates, "graph")
    if len(graphs) <= 1:
        return candidates
    sizes = Counter()
    for c in candidates:
        sizes[c.get("graph")] += c.files
    chosen = max(graphs, key=lambda g: (sizes[g], -int(g)))  # type: ignore[arg-type]
    notes.append(f"{where}: {len(graphs)} graphs ({', '.join(str(g) for g in graphs)}); using graph {chosen}, the "
                 "one with the most dump files (choose with --graph, or --graph all to compare each in turn)")
    return [c for c in candidates if c.get("graph") is None or c.get("graph") == chosen]


def newest_per_rank(candidates: list[Candidate], key: str, *, where: str, notes: list[str]) -> list[Candidate]:
    """:func:`~compare.loaders.selection.newest` for each rank on its own.

    In a multi-device run each device may write its own ``{time}`` folder (seed 003: the
    processes do not start at the same time), so rank 0 can sit in one time folder and rank 1 in
    another: every rank is kept, each from the newest ``key`` folder that holds it; a rank found
    in several such folders takes the newest, with a note.
    """
    ranks = values_of(candidates, "rank")
    if len(ranks) <= 1:
        return newest(candidates, key, where=where, notes=notes)
    kept: list[Candidate] = []
    for rank in ranks:
        group = [c for c in candidates if c.get("rank") == rank]
        values = values_of([c for c in group if c.get(key) is not None], key)
        if len(values) > 1:
            notes.append(f"{where}: rank {rank} is in {len(values)} {key} folders ({', '.join(map(str, values))}); "
                         f"using the newest, {values[-1]}")
        kept.extend(c for c in group if c.get(key) is None or c.get(key) == values[-1])
    kept.extend(c for c in candidates if c.get("rank") is None)
    folders = values_of([c for c in kept if c.get(key) is not None], key)
    if len(folders) > 1:
        notes.append(f"{where}: the ranks are in {len(folders)} {key} folders ({', '.join(map(str, folders))}; "
                     "one per device process): each rank is read from its own")
    return kept


def _iteration_missing(before_graph: list[Candidate], chosen: list[Candidate], spec: Spec, where: str,
                       graph_given: bool) -> OptionError:
    """The error for an ``--iteration`` spec that selects nothing in the chosen graph.

    Names the graph that was looked at (and how it was chosen), what iterations it has, and which
    other graphs do have the iteration (so the user can add ``--graph``).
    """
    graph = values_of(chosen, "graph")
    have = listing_text(values_of(chosen, "iteration"))
    how = "given with --graph" if graph_given else "chosen by default: the one with the most dump files"
    text = (f"--iteration {spec.text} selects nothing in graph {', '.join(map(str, graph))} of {where} ({how}): "
            f"it has iteration {have}")
    others = []
    for g in values_of(before_graph, "graph"):
        if g in graph:
            continue
        its = [v for v in values_of([c for c in before_graph if c.get("graph") == g], "iteration")
               if order_number(v) >= 0 and spec.matches(order_number(v))]
        if its:
            others.append((g, its))
    if others:
        where_it_is = "; ".join(f"graph {g} has iteration {listing_text(its)}" for g, its in others)
        text += f"; {where_it_is} -- add --graph {others[0][0]} (or --graph all to compare each graph in turn)"
    else:
        per_graph = "; ".join(
            f"graph {g}: {listing_text(values_of([c for c in before_graph if c.get('graph') == g], 'iteration'))}"
            for g in values_of(before_graph, "graph"))
        text += f"; no graph has it ({per_graph})"
    return OptionError(text)


def pick_iteration(candidates: list[Candidate], before_graph: list[Candidate], selection: Selection, where: str,
                    notes: list[str], *, keep_all: bool) -> list[Candidate]:
    """The ``--iteration`` filter, applied to each kept graph on its own (graphs number their
    iterations independently: training graph 0 has 0, 1 and an inference graph 1 has 2).

    One graph: a spec matching nothing raises the error of :func:`_iteration_missing`. Several
    graphs (``--graph all`` / a list): a graph without the iteration is left out with a note; an
    error only when no graph has it.
    """
    _, iter_spec, graph_spec = selection.specs()
    graphs = values_of(candidates, "graph")
    if len(graphs) <= 1:
        try:
            return filter_by(candidates, "iteration", iter_spec, option="--iteration", where=where, default="max",
                             notes=notes, keep_all=keep_all)
        except OptionError:
            if not graphs or len(values_of(before_graph, "graph")) <= 1 or iter_spec is None:
                raise
            raise _iteration_missing(before_graph, candidates, iter_spec, where, graph_spec is not None) from None
    kept: list[Candidate] = [c for c in candidates if c.get("graph") is None]
    missing = []
    for graph in graphs:
        group = [c for c in candidates if c.get("graph") == graph]
        try:
            kept.extend(filter_by(group, "iteration", iter_spec, option="--iteration", where=f"{where} graph {graph}",
                                  default="max", notes=notes, keep_all=keep_all))
        except OptionError:
            missing.append(f"graph {graph} has iteration {listing_text(values_of(group, 'iteration'))}")
    if missing and iter_spec is not None:
        if not any(c.get("graph") is not None for c in kept):
            raise OptionError(f"--iteration {iter_spec.text} selects nothing in {where}: " + "; ".join(missing))
        notes.append(f"--iteration {iter_spec.text}: not in every selected graph ({'; '.join(missing)}); "
                     "those graphs are not compared")
    return kept


__all__ = ["Candidate", "Selection", "Spec", "filter_by", "listing_text", "newest", "newest_per_rank", "order_number",
           "parse_spec", "pick_graph", "pick_iteration", "values_of"]

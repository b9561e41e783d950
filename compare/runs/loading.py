"""Both sides of a comparison loaded and paired: model choice, rule files, the pairing dispatch."""

from __future__ import annotations

import gc
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import die_with_parent
from ..errors import CompareError, PairingError
from ..heap import paused_gc
from ..loaders import load_run
from ..loaders.parts import (
    aligned_candidates,
    claim_parts,
    model_folders,
    part_op_names,
    select_parts,
)
from ..loaders.selection import Selection, listing_text, values_of
from ..pairing.entry import Paired, pair
from ..pairing.fusion_rule import load_fusion_rule
from ..pairing.names import match_names
from ..pairing.rule_records import FusionRule
from ..records import Run
from ..request import PathLike, RuleArg


def pair_loaded(left_run: Run, right_run: Run, fusion_rule: RuleArg | BackgroundRule | None = None, *,
                quant_rule: RuleArg | None = None, close_fusion_rule: RuleArg | None = None,
                mapping: PathLike | list | None = None) -> Paired:
    """Pair two loaded runs with :func:`compare.pairing.pair` (a rule parsing in the background is
    waited for only once the scenario is known to be supported)."""
    source = fusion_rule.result if isinstance(fusion_rule, BackgroundRule) else fusion_rule
    return pair(left_run, right_run, fusion_rule=source, quant_rule=quant_rule, close_fusion_rule=close_fusion_rule,
                mapping=mapping)


def load_and_pair(left: PathLike, right: PathLike, fusion_rule: RuleArg | None = None, *,
                  quant_rule: RuleArg | None = None, close_fusion_rule: RuleArg | None = None,
                  dump_version: int | None = None, rank: object = None, iteration: object = None,
                  graph: object = None, model_name: str | None = None, ge_graph: PathLike | None = None,
                  mapping: PathLike | list | None = None, keep_raw_names: bool = False):
    """Load both runs, check the scenario, read the rules, pair: ``(left, right, scenario, rule, pairing)``.

    The scenario (row of the manual's comparison table) is checked after both folders are read
    and before any rule file is: an unsupported combination raises
    :class:`~compare.errors.PairingError` naming the row and the options needed. ``rule`` is the
    loaded ATC fusion rule (or ``None``). The selection options (``rank`` ... ``ge_graph``) apply
    to both sides (see :func:`compare.loaders.load_run`); ``mapping`` see :func:`pair_loaded`;
    ``keep_raw_names`` (``-ffts``): FFTS+ slice files kept apart (:func:`compare.loaders.load_run`).
    A large rule file is parsed in a forked process while the dumps are read (:class:`BackgroundRule`).
    """
    select = dict(rank=rank, iteration=iteration, graph=graph, model_name=model_name, ge_graph=ge_graph)
    pending = BackgroundRule.start(fusion_rule)  # a large rule file is parsed while the dumps are read
    try:
        return _load_and_pair(left, right, pending or fusion_rule, select, dump_version, quant_rule=quant_rule,
                              close_fusion_rule=close_fusion_rule, mapping=mapping, keep_raw_names=keep_raw_names)
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
        import multiprocessing  # here: only when worker processes are used (~5 ms)

        if rule is None or isinstance(rule, FusionRule) or not sys.platform.startswith("linux"):
            return None
        try:
            path = Path(rule)
            if path.stat().st_size < BACKGROUND_RULE_BYTES:
                return None

            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
            return cls(path, pool, pool.submit(_parse_rule_quietly, str(path)))
        except (OSError, TypeError, ValueError, RuntimeError):
            return None

    def result(self) -> FusionRule:
        try:
            parsed = self._future.result()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a broken worker: parse here
            parsed = None
        return parsed if isinstance(parsed, FusionRule) else load_fusion_rule(self.path)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[attr-defined]


def _parse_rule_quietly(path: str) -> FusionRule | None:
    """The worker of :class:`BackgroundRule`: the parsed rule, or None on any error (then the
    caller parses it and reports the error itself).

    The cyclic collector is off in this process (forked for this one parse, shut down after it):
    it would walk the parse's objects, and then the same objects again while the result is
    pickled, to find no garbage -- the 8.5 MB rule of 10,000 operators took 1.17 s to parse and
    0.25 s to pickle with it, 0.48 s and 0.13 s without.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    gc.disable()
    try:
        return load_fusion_rule(path)
    except Exception:  # noqa: BLE001 - reported by the caller's own parse
        return None


def _load_and_pair(left: PathLike, right: PathLike, fusion_rule: RuleArg | BackgroundRule | None, select: dict,
                   dump_version: int | None, *, quant_rule: RuleArg | None, close_fusion_rule: RuleArg | None,
                   mapping: PathLike | list | None, keep_raw_names: bool = False):
    with paused_gc():
        return _load_and_pair_now(left, right, fusion_rule, select, dump_version, quant_rule=quant_rule,
                                  close_fusion_rule=close_fusion_rule, mapping=mapping, keep_raw_names=keep_raw_names)


def _load_and_pair_now(left: PathLike, right: PathLike, fusion_rule: RuleArg | BackgroundRule | None, select: dict,
                       dump_version: int | None, *, quant_rule: RuleArg | None, close_fusion_rule: RuleArg | None,
                       mapping: PathLike | list | None, keep_raw_names: bool = False):
    choice = choose_models(left, right, select, dump_version, keep_raw_names=keep_raw_names)
    iterations = side_iterations(left, right, choice) if select["iteration"] is None else None
    if iterations is not None and iterations.agreed is not None:
        choice.left["iteration"] = choice.right["iteration"] = iterations.agreed
    left_run = load_run(left, version=dump_version, keep_raw_names=keep_raw_names, **choice.left)
    left_run.notes.extend(choice.left_notes)
    right_select, aligned = _align_right(right, choice.right, left_run)
    if choice.right_open:
        right_select = choose_right_model(right, right_select, list(left_run.ops), choice)
    if choice.right_probe is not None and right_select == choice.probe_select:
        right_run = choice.right_probe  # read once: the folder the model choice looked at is the one to compare
    else:
        right_run = load_run(right, version=dump_version, keep_raw_names=keep_raw_names, **right_select)
    right_run.notes.extend(choice.right_notes)
    if aligned:
        right_run.notes.append(f"{aligned} chosen to match the left side")
    if iterations is not None:
        note = iterations.note(left_run, right_run)
        if note:
            left_run.notes.append(note)
    try:
        scenario, rule, pairing = pair_loaded(left_run, right_run, fusion_rule, quant_rule=quant_rule,
                                              close_fusion_rule=close_fusion_rule, mapping=mapping)
    except PairingError as exc:
        if iterations is None or iterations.shared or iterations.agreed is not None:
            raise
        raise PairingError(f"{exc}; {iterations.none_shared(left_run, right_run, 'was')} -- --iteration N applies "
                           "to both sides, so to compare other iterations give each side's iteration folder as "
                           "-l / -r") from None
    return left_run, right_run, scenario, rule, pairing


@dataclass(frozen=True)
class SideIterations:
    """The iterations each side could be compared at when ``--iteration`` is not given: those of
    the rank, graph and model folder its default selection picks (:func:`side_iterations`).

    Policy (``--iteration`` not given, both sides with iterations): when the newest iterations
    differ, the newest one both sides have is compared on both (:attr:`agreed`, a note says so and
    what else each side has) -- the default "newest on each side" would compare different steps
    of the run, whose operators may not even be the same (a MindSpore GPU dump writes some
    kernels only in some iterations: ``../shared/real/mindspore`` has iterations 2 and 3 on the
    left, 2 on the right, and iteration 3 shares no operator with 2). When they share none, each
    side's newest is compared as before, with a note; a pairing that then finds no common
    operator says so in its error (:meth:`none_shared`). Equal newest iterations: nothing changes.
    """

    left: tuple[int, ...]
    right: tuple[int, ...]

    @property
    def shared(self) -> tuple[int, ...]:
        """The iterations both sides have, in order."""
        return tuple(sorted(set(self.left) & set(self.right)))

    @property
    def agreed(self) -> int | None:
        """The iteration to compare on both sides: the newest shared one when the sides' newest
        iterations differ; None otherwise (each side's own default applies)."""
        if not self.left or not self.right or self.left[-1] == self.right[-1] or not self.shared:
            return None
        return self.shared[-1]

    def _listing(self) -> str:
        return f"left has {listing_text(self.left)}; right has {listing_text(self.right)}"

    def note(self, left_run: Run, right_run: Run) -> str | None:
        """The note on the choice (None when the sides' newest iterations are the same)."""
        if self.agreed is not None:
            return self.chosen_note()
        if self.left and self.right and not self.shared:
            return self.none_shared(left_run, right_run, "is")
        return None

    def chosen_note(self) -> str:
        """The note on :attr:`agreed` (asked only when there is one)."""
        return (f"iteration {self.agreed} chosen: the newest iteration both sides have ({self._listing()}); "
                "choose another with --iteration")

    def none_shared(self, left_run: Run, right_run: Run, verb: str) -> str:
        """What was compared when the sides share no iteration (``verb``: ``is`` / ``was``)."""
        return (f"the two sides share no iteration ({self._listing()}): left iteration "
                f"{left_run.coords.get('iteration')} {verb} compared with right iteration "
                f"{right_run.coords.get('iteration')}")


def side_iterations(left: PathLike, right: PathLike, choice: ModelChoice) -> SideIterations | None:
    """Each side's iterations under its selection (:class:`SideIterations`); None when a side's
    model folder is still to be chosen (``right_open``: chosen once the left side is read)."""
    if choice.right_open:
        return None
    return SideIterations(_iterations_of(left, choice.left), _iterations_of(right, choice.right))


def _iterations_of(path: PathLike, select: dict) -> tuple[int, ...]:
    """The iterations of the part the selection picks at ``path`` (its rank, graph and model
    folder as the default selection chooses them), in order; empty when the path is no tree with
    iterations (a golden folder, one dump folder), when the selection picks several ranks or
    graphs, or when it picks nothing (the side's own load then says why)."""
    try:
        candidates = claim_parts(path, selection_of(select))
        if candidates is None:
            return ()
        parts = select_parts(candidates, selection_of({**select, "iteration": "all"}), where=str(path), notes=[])
    except CompareError:
        return ()
    if len({(c.get("rank"), c.get("graph")) for c in parts}) > 1:
        return ()
    return tuple(sorted({value for value in values_of(parts, "iteration") if isinstance(value, int)}))


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


def selection_of(select: dict) -> "Selection":
    """The :class:`~compare.loaders.selection.Selection` of a selection dict (``ge_graph`` as a Path)."""
    ge_graph = select.get("ge_graph")
    return Selection(**{**select, "ge_graph": Path(ge_graph) if ge_graph is not None else None})


def _pairing_counts(names: dict[str, list[str]], other: list[str]) -> dict[str, int]:
    """How many ops of each model folder pair by name with ``other`` (every name rule of the
    by-name pairing: :func:`compare.pairing.names.match_names`)."""
    return {model: len(match_names(ops, other)[0]) for model, ops in names.items()}


def _choice_note(other: str, chosen: str, counts: dict[str, int], sizes: dict[str, int]) -> str:
    rest = "; ".join(f"{m}: {n}" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if m != chosen)
    return (f"model folder {chosen} chosen: {counts[chosen]} of {sizes[chosen]} ops pair with the {other} side"
            f" (other model folders: {rest}); force one with --model-name or --ge-graph")


def _no_pair_note(other: str, counts: dict[str, int]) -> str:
    return (f"none of the {len(counts)} model folders ({', '.join(sorted(counts))}) has an op that pairs with the "
            f"{other} side by name; the default choice applies (force one with --model-name or --ge-graph)")


def choose_models(left: PathLike, right: PathLike, select: dict, version: int | None, *,
                  keep_raw_names: bool = False) -> ModelChoice:
    """Choose the ``model_name`` folder of a side with several (TF-NPU / GE: GE builds several
    graphs) by what pairs: the folder whose ops pair by name with the other side the most.

    Policy: ``--model-name`` / ``--ge-graph`` given -> nothing to choose. Both sides with several
    model folders -> the pair of folders with the most pairing ops. Only the left -> its folder
    pairing most with the right run (read once, reused). Only the right -> chosen after the left
    is loaded (``right_open``). Ties go to the folder with more ops, then the name. When no
    folder pairs at all, the default choice applies (the most dump files) and a note says so.
    ``keep_raw_names`` (``-ffts``): how the right run probed here is read (it may be reused).
    """
    choice = ModelChoice(dict(select), dict(select))
    if select.get("model_name") is not None or select.get("ge_graph") is not None:
        return choice
    selection = selection_of(select)
    left_models = model_folders(left, selection)
    right_models = model_folders(right, selection)
    if not left_models:
        choice.right_open = bool(right_models)
        return choice
    left_names = {m: part_op_names(c) for m, c in left_models.items()}
    sizes = {m: len(ops) for m, ops in left_names.items()}
    if right_models:
        right_names = {m: part_op_names(c) for m, c in right_models.items()}
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
        probe = load_run(right, version=version, keep_raw_names=keep_raw_names, **select)
    except CompareError:
        return choice  # the right side's own error comes when it is loaded for the comparison
    choice.right_probe, choice.probe_select = probe, dict(select)
    chosen = _best_model(_pairing_counts(left_names, list(probe.ops)), sizes, "right", choice.left_notes)
    if chosen is not None:
        choice.left["model_name"] = chosen
    return choice


def choose_right_model(right: PathLike, right_select: dict, left_ops: list[str], choice: ModelChoice) -> dict:
    """The right selection with its model folder chosen by the left run's op names (see
    :func:`choose_models`); notes go to ``choice.right_notes``."""
    names = {m: part_op_names(c) for m, c in model_folders(right, selection_of(right_select)).items()}
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
    follows the left run's, when the right tree has that value and its reader aligns
    (:func:`compare.loaders.parts.aligned_candidates`; else the right side's own default applies).

    Returns the selection and a text naming what was aligned (empty when nothing was).
    """
    coords = left_run.coords
    if not coords or all(select[k] is not None for k in _ALIGNED):
        return select, ""

    candidates = aligned_candidates(right, selection_of(select))
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

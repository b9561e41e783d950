"""Batch mode (``-f`` names a folder of rule files, spec §3.9): every model of a dump root in turn."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convert.layouts import load_plugins

from ..errors import CompareError, OptionError, PairingError
from ..pairing.fusion_rule import load_fusion_rule
from ..request import CompareRequest, PathLike
from .folders import run_request
from .network import NetworkResult


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


def run_batch(left_root: PathLike, right: PathLike, rules_dir: PathLike, *, extra_metrics: Sequence[str] = (),
              **fields: object) -> BatchResult:
    """:func:`run_batch_request` of ``CompareRequest(left=left_root, right=right,
    fusion_rule=rules_dir, **fields)`` (the keywords go straight to
    :class:`~compare.request.CompareRequest`)."""
    request = CompareRequest(left=left_root, right=right, fusion_rule=rules_dir, **fields)  # type: ignore[arg-type]
    return run_batch_request(request, extra_metrics=extra_metrics)


def run_batch_request(request: CompareRequest, *, extra_metrics: Sequence[str] = ()) -> BatchResult:
    """Compare every model of a dump time folder with its rule from the folder of rules (spec §3.9).

    The request's ``left`` is ``<time>`` of ``<time>/<device>/<model_name>/<model_id>/<step>/files``
    (:func:`batch_models`); ``right`` the golden folder every model is compared with;
    ``fusion_rule`` the folder of ATC json files. Each model is compared with the request's
    ``quant_rule``, ``algorithms``, ``custom_dir``, ``dump_version``, ``max_elements`` and ``ffts``
    (plus ``extra_metrics``, the metrics a policy needs); the other fields do not apply to it.

    A model folder takes the rule whose ``graph[].name`` equals its name (with ``.``, ``/``,
    ``\\``, space as ``_``), else -- when both names hold exactly two digit runs (a timestamp and
    an id) -- the one with the same second run (a note says so). Models without a rule are listed
    in ``notes``; a model whose comparison cannot run is listed in ``errors`` and the others go
    on. Each item is a :class:`BatchItem` (``for model_name, result in run_batch(...)`` works;
    ``item.output_name(ts)`` is the reference's result file name).

    ``custom_dir``: plugins are loaded once for all models; what was loaded and ignored is in
    ``notes``. ``ffts`` (``-ffts``): see :func:`~compare.runs.folders.run_request`. Raises
    :class:`~compare.errors.OptionError` for a bad layout or an empty rule folder,
    :class:`~compare.errors.PairingError` when no model could be compared at all and
    :class:`convert.layouts.LayoutError` for a refused plugin folder.
    """
    rules_dir = request.fusion_rule
    if not isinstance(rules_dir, (str, os.PathLike)):
        raise OptionError("batch mode: -f names a folder of rule files, not a loaded rule")
    rules = _batch_rules(Path(rules_dir))
    batch = BatchResult()
    custom_dir = request.custom_dir
    plugins = load_plugins(custom_dir) if custom_dir is not None and custom_dir != "" else None
    if plugins is not None:  # loaded (and its code run) once, said once
        batch.notes.extend(plugins.notes)
    for device, model, model_id, step, leaf in batch_models(request.left):
        match = _match_rule(model, rules)
        if match is None:
            batch.notes.append(f"model folder {model!r} ({leaf}) has no rule in {rules_dir} (graph names: "
                               f"{', '.join(repr(n) for n in sorted(rules))}): not compared")
            continue
        graph, rule_path, note = match
        if note:
            batch.notes.append(note)
        try:
            model_request = CompareRequest(left=leaf, right=request.right, fusion_rule=rule_path,
                                           quant_rule=request.quant_rule, algorithms=request.algorithms,
                                           custom_dir=plugins, dump_version=request.dump_version,
                                           max_elements=request.max_elements, ffts=request.ffts)
            result = run_request(model_request, extra_metrics=extra_metrics)
        except CompareError as exc:
            batch.errors.append((str(leaf), str(exc)))
            continue
        batch.append(BatchItem(model, result, device, model_id, step, rule_path, leaf))
    if not batch:
        problems = [f"{leaf}: {message}" for leaf, message in batch.errors] + batch.notes
        raise PairingError("batch mode compared no model: " + "; ".join(problems))
    return batch

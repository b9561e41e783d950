"""The HTML report of a live run (:func:`write_html_report`) and what it needs that only a live
run can give: the element errors of the worst operators, read again and prepared exactly as the
engine compared them (:func:`compare.engine.prepare.prepare`), sampled to a bounded size.

Which tensors: the failing outputs of the first divergence, then the failing outputs of the
``origin`` / ``input-differs`` operators, then of the others, worst error first, at most
``tensors`` of them. Each is sampled evenly (every k-th element, k = ceil(n / limit)) to at
most ``limit`` elements, so a histogram of a 100-million-element tensor costs what one of
100,000 does. A tensor that cannot be read again is skipped with a note (the report says so).
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..diverge.records import Localisation, OpVerdict, Verdict
from ..engine.prepare import prepare
from ..errors import CompareError, OptionError, OutputError
from ..records import Pair
from ..reports.files import tool_version
from ..reports.html import ElementErrors, HtmlReport, write_html
from .network import NetworkResult

if TYPE_CHECKING:  # pragma: no cover
    from ..api import ComparisonResult

#: Tensors whose element errors the report plots, and the elements sampled from each.
WORST_TENSORS = 6
SAMPLE_LIMIT = 100_000


def check_html() -> None:
    """Refuse ``--html`` at once (before comparing) when matplotlib is not installed."""
    if importlib.util.find_spec("matplotlib") is None:  # found, not imported: a signal during a slow
        # import would otherwise surface as an ImportError and be reported as a missing extra
        raise OptionError("--html needs matplotlib: pip install 'vcompare[html]'")


def _real(array: np.ndarray) -> np.ndarray:
    """Complex data as interleaved (real, imaginary) values, as the kernels compare it."""
    array = np.ravel(array)
    if np.iscomplexobj(array):
        return np.ascontiguousarray(array).view(array.real.dtype)
    return array


def _candidates(localisation: Localisation) -> list[tuple[OpVerdict, str, float]]:
    """(verdict, tensor id, error) of failing outputs, in the module doc's order."""
    def rank(verdict: OpVerdict) -> int:
        if verdict is localisation.first_divergence:
            return 0
        return 1 if verdict.verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS) else 2

    out = []
    for verdict in localisation.verdicts:
        for check in verdict.outputs:
            if check.passed is False:
                error = check.error if check.error is not None and not math.isnan(check.error) else math.inf
                out.append((verdict, check.tensor_id, error))
    out.sort(key=lambda item: (rank(item[0]), -item[2]))
    return out


def sample_errors(network: NetworkResult, localisation: Localisation | None, *, tensors: int = WORST_TENSORS,
                  limit: int = SAMPLE_LIMIT) -> tuple[list[ElementErrors], list[str]]:
    """The sampled element errors of the worst tensors (module doc) and notes on what was skipped.

    Only the pairs of the last compared part are at hand (a run of several ranks / iterations
    keeps the pairs of its last part): tensors of other parts are skipped with a note.
    """
    if localisation is None:
        return [], []
    if network.stats is not None:  # statistics only: no tensor data to sample
        return [], ["element errors not plotted: a statistics comparison has no tensor data"]
    pairs: dict[str, Pair] = {p.tensor_id: p for p in network.pairing.pairs if p.tensor_id}
    out: list[ElementErrors] = []
    notes: list[str] = []
    seen: set[str] = set()
    for verdict, tensor_id, _ in _candidates(localisation):
        if len(out) >= tensors:
            break
        if tensor_id in seen:
            continue
        seen.add(tensor_id)
        pair = pairs.get(tensor_id)
        if pair is None or pair.left is None or pair.right is None:
            notes.append(f"{tensor_id}: element errors not plotted (its pair is not at hand)")
            continue
        try:
            prepared = prepare(pair, pair.left.load(), pair.right.load())
        except (CompareError, ValueError) as exc:
            notes.append(f"{tensor_id}: element errors not plotted ({exc})")
            continue
        x_all, y_all = _real(prepared.x), _real(prepared.y)
        count = int(x_all.size)
        step = max(1, math.ceil(count / limit))
        x = np.asarray(x_all[::step], dtype=np.float64)
        y = np.asarray(y_all[::step], dtype=np.float64)
        out.append(ElementErrors(tensor_id=tensor_id, op=verdict.op, abs_error=np.abs(x - y), golden=np.abs(y),
                                 left_dtype=pair.left.dtype, right_dtype=pair.right.dtype, elements=count))
    return out, notes


def write_html_report(result: "ComparisonResult", path: Path) -> Path:
    """``--html``: the self-contained report of a live run (the worst tensors' element errors
    read again and sampled, :func:`sample_errors`). A saved result has no tensors to read again:
    :class:`OutputError`."""

    network = result.network
    if network is None:
        raise OutputError(path, "an HTML report needs a live comparison (a saved result has no tensors to plot)")
    errors, notes = sample_errors(network, result.localisation)
    options = {k: str(v) for k, v in result.options.items() if v not in (None, [], (), False)}
    if notes:
        options["element errors"] = "; ".join(notes)
    report = HtmlReport(rows=result.rows, localisation=result.localisation, element_errors=errors,
                        inputs={k: str(v) for k, v in result.inputs.items() if v is not None}, options=options,
                        title=f"vcompare: {result.inputs.get('left')} vs {result.inputs.get('right')}",
                        tool_version=tool_version(), created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    write_html(path, report)
    return path


__all__ = ["SAMPLE_LIMIT", "WORST_TENSORS", "check_html", "sample_errors", "write_html_report"]

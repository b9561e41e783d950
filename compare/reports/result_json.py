"""``--json result.json``: the whole run as one versioned JSON document (docs/result-json.md).

The document is built from the raw records, so every number is the float64 the engine computed:
a metric is a JSON number written with Python's shortest round-trip text (``repr``), ``null`` when
it was not computed. JSON has no NaN or infinity; those values are written as the strings
``"nan"``, ``"inf"`` and ``"-inf"`` (:func:`encode_float`) and read back by
:func:`decode_float`. The same encoding applies to every float of the document (std values,
gate values and bounds, timing).

``schema`` is always :data:`SCHEMA_ID` and ``version`` :data:`SCHEMA_VERSION`. Version policy:
adding a key is not a new version (readers ignore keys they do not know); renaming or removing a
key, or changing a value's meaning or type, is. :func:`compare.reports.saved.load_result` refuses
a document of a newer version than it knows, naming both.

Text from file names that are not valid UTF-8 (surrogate escapes in Python) is kept exactly:
the file is written with ``ensure_ascii`` so such characters become ``\\udcXX`` escapes, which
Python's reader turns back into the same string.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from convert.jsonsafe import MAX_DEPTH, deeper_than, load_json, too_deep

from ..errors import DumpFormatError
from ..records import Bound, CheckFailure, MetricRow, PartReport, PartStatus, SkippedFile, Verdict, count_by_status
from ..stats_table import RowColumns
from .files import atomic_write_bytes

SCHEMA_ID = "vcompare-result"
SCHEMA_VERSION = 2
STD_NAME = "StandardDeviation"
STD_KEYS = ("left_mean", "left_std", "right_mean", "right_std")
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

JsonFloat = float | str | None


def encode_float(value: float | None) -> JsonFloat:
    """A float for JSON: the number itself, ``"nan"`` / ``"inf"`` / ``"-inf"``, or None (null)."""
    if value is None or (type(value) is float and value - value == 0.0):  # None, or a finite float: as it is
        return value
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def decode_float(value: object, where: str = "value") -> float | None:
    """The inverse of :func:`encode_float`; anything else raises ``ValueError`` naming ``where``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where}: expected a number, null, \"nan\", \"inf\" or \"-inf\", not {value!r}")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # a whole number of more than 308 digits
            raise ValueError(f"{where}: a whole number of {len(str(abs(value)))} digits is beyond float64's "
                             "range") from None
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    raise ValueError(f"{where}: expected a number, null, \"nan\", \"inf\" or \"-inf\", not {value!r}")


def bound_document(bound: Bound | None) -> dict[str, Any] | None:
    """A gate bound as its JSON object (docs/result-json.md), or None."""
    if bound is None:
        return None
    return {"metric": bound.metric, "op": bound.op, "value": encode_float(bound.value), "source": bound.source,
            "text": bound.text}


def failure_document(failure: CheckFailure) -> dict[str, Any]:
    """A gate failure as its JSON object (docs/result-json.md)."""
    return {
        "row": failure.row,
        "tensor_id": failure.tensor_id,
        "op_type": failure.op_type,
        "left_op": failure.left_op,
        "right_op": failure.right_op,
        "metric": failure.metric,
        "value": encode_float(failure.value),
        "bound": bound_document(failure.bound),
        "message": failure.message,
        "incomplete": failure.incomplete,
        "waived_by": failure.waived_by,
        "part": failure.part,
    }


def verdict_document(verdict: Verdict | None) -> dict[str, Any] | None:
    """The gate outcome, or None for a run without gates."""
    if verdict is None:
        return None
    return {
        "outcome": verdict.outcome.value,
        "passed": verdict.passed,
        "exit_code": verdict.exit_code,
        "checked": verdict.checked,
        "bounds": [bound_document(b) for b in verdict.bounds],
        "failures": [failure_document(f) for f in verdict.failures],
        "waived": [failure_document(f) for f in verdict.waived],
        "errors": list(verdict.errors),
        "expected_gaps": verdict.expected_gaps,
        "undefined": verdict.undefined,
    }


def status_counts(rows: Sequence[MetricRow]) -> dict[str, int]:
    """Rows per :class:`PairStatus` value (every status present, zeros included) and ``total``."""
    return {**count_by_status(RowColumns(rows).status), "total": len(rows)}


def _plain(value: object) -> Any:
    """Options / inputs made JSON-safe: paths as text, tuples and sets as lists, enums as their
    value, records (dataclasses) as objects, floats encoded; anything else as its text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return encode_float(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [_plain(v) for v in items]
    if isinstance(value, Enum):
        return _plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def skipped_document(skipped: Sequence[SkippedFile]) -> list[dict[str, str]]:
    """The ``skipped`` list: every file a run did not use, ``{side, path, reason}``."""
    return [{"side": item.side, "path": os.fspath(item.path), "reason": item.reason} for item in skipped]


def skipped_from_document(value: object) -> list[SkippedFile]:
    """The ``skipped`` list of a saved document read back; entries that are not objects with
    text ``path`` and ``reason`` are left out (an older document has no list: empty)."""
    out: list[SkippedFile] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("reason"), str):
            side = item.get("side")
            out.append(SkippedFile(side if isinstance(side, str) else "", Path(item["path"]), item["reason"]))
    return out


def part_document(part: PartReport) -> dict[str, Any]:
    """One entry of the ``parts`` list: a part of a compare-each-in-turn run."""
    return {"rank": part.rank, "graph": part.graph, "iteration": part.iteration, "status": part.status.value,
            "seconds": encode_float(part.seconds), "worker": part.worker, "reason": part.reason}


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parts_from_document(value: object) -> list[PartReport]:
    """The ``parts`` list of a saved document read back; entries that are not objects with a known
    ``status`` are left out (an older document has no list: empty)."""
    out: list[PartReport] = []
    statuses = {s.value: s for s in PartStatus}
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or item.get("status") not in statuses:
            continue
        try:
            seconds = decode_float(item.get("seconds"), "parts.seconds") or 0.0
        except ValueError:
            seconds = 0.0
        worker, reason = item.get("worker"), item.get("reason")
        out.append(PartReport(_whole(item.get("rank")), _whole(item.get("graph")), _whole(item.get("iteration")),
                              statuses[item["status"]], seconds,
                              worker if isinstance(worker, str) else None, reason if isinstance(reason, str) else None))
    return out


@dataclass(frozen=True)
class EncodedJson:
    """A value of the document already written as compact JSON text (what :data:`ROW_ENCODER`
    writes of it): :func:`head_and_tail` takes the text as it is (a large block, the localisation
    of 100,000 rows, written from columns without making its objects:
    :func:`compare.reports.divergence.localisation_text`); :meth:`value` reads it back."""

    text: str

    def value(self) -> Any:
        """The value the text writes (``json.loads``)."""
        return json.loads(self.text)


def result_document(rows: Sequence[MetricRow], metrics: Sequence[str], *, inputs: Mapping[str, object],
                    options: Mapping[str, object], notes: Sequence[str], verdict: Verdict | None,
                    timing: Mapping[str, float], tool_version: str,
                    created: float | None = None, localisation: Mapping[str, Any] | EncodedJson | None = None,
                    skipped: Sequence[SkippedFile] = (), parts: Sequence[PartReport] = ()) -> dict[str, Any]:
    """The JSON result document of one run (keys and types: docs/result-json.md) without its rows:
    ``rows`` is left empty, everything else (the counts included) is of ``rows``. The rows are
    encoded by the one row encoder, :mod:`compare.reports.json_rows`: streamed after this head
    (:func:`~compare.reports.json_rows.write_result`), or read back as dicts into it
    (:func:`~compare.reports.json_rows.full_document`).

    ``inputs``: what was compared (``left``, ``right``, ``fusion_rule`` ... as resolved paths);
    ``options``: the options that shaped the result; both are copied with paths as text.
    ``skipped``: every file of either side that was not used, with why (the notes count them and
    name the first few; this is the whole list).
    ``parts``: every part of a compare-each-in-turn run (``--rank all`` ...), with its status,
    seconds and worker (empty for a single comparison).
    ``created``: seconds since the epoch (now when None), written as ISO 8601 UTC.
    ``localisation``: the block of :func:`compare.reports.divergence.localisation_document` (null
    when the run has none, e.g. a saved result read back), or its text (:class:`EncodedJson`, for
    a writer: :meth:`compare.api.ComparisonResult.json_head`); for a statistics comparison its checks
    name the statistics metrics that broke their bounds (``MaxRelDiff`` ...).
    """
    stamp = time.gmtime(time.time() if created is None else created)
    return {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "tool": {"name": "vcompare", "version": tool_version},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp),
        "inputs": _plain(dict(inputs)),
        "options": _plain(dict(options)),
        "notes": list(notes),
        "skipped": skipped_document(skipped),
        "counts": status_counts(rows),
        "metrics": list(metrics),
        "rows": [],
        "verdict": verdict_document(verdict),
        "localisation": (None if localisation is None
                         else localisation if isinstance(localisation, EncodedJson) else dict(localisation)),
        "timing": {str(k): encode_float(v) for k, v in timing.items()},
        "parts": [part_document(p) for p in parts],
    }


#: One encoder for every row line (``json.dumps`` with options builds a new one per call).
ROW_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))
#: A top-level value whose compact text is longer than this is written compact, on one line (the
#: localisation block or the failures of a run of 200,000 rows), not indented.
_INDENT_LIMIT = 65536


def head_and_tail(document: Mapping[str, Any]) -> tuple[str, str]:
    """The text before the first row line and after the last (the rows go last, one compact
    object per line, so the file stays readable and diffable); :mod:`compare.reports.json_rows`
    writes the row lines between them."""
    parts = []
    for key, value in document.items():
        if key == "rows":
            continue
        encoded = isinstance(value, EncodedJson)
        text = value.text if encoded else ROW_ENCODER.encode(value)  # C-accelerated; indent=1 is pure Python
        if len(text) <= _INDENT_LIMIT:
            text = json.dumps(value.value() if encoded else value, ensure_ascii=True, allow_nan=False,
                              indent=1).replace("\n", "\n ")
        parts.append(f" {ROW_ENCODER.encode(key)}: {text}")
    return "{\n" + ",\n".join(parts) + ',\n "rows": [\n', "\n ]\n}\n"


def dumps(document: Mapping[str, Any]) -> str:
    """The document as JSON text: one row per line, no NaN literals (``allow_nan=False``)."""
    rows = document.get("rows", [])
    if not rows:
        plain = {key: value.value() if isinstance(value, EncodedJson) else value for key, value in document.items()}
        return json.dumps(plain, ensure_ascii=True, allow_nan=False, indent=1) + "\n"
    head, tail = head_and_tail(document)
    encode = ROW_ENCODER.encode
    return head + ",\n".join("  " + encode(r) for r in rows) + tail


def write_json(document: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write :func:`dumps` of ``document`` atomically (umask honoured); :class:`OutputError` when it
    cannot be. A run's result with its rows as records is streamed instead
    (:func:`compare.reports.json_rows.write_result`: the same bytes, never the whole document)."""
    return atomic_write_bytes(Path(path), dumps(document).encode("ascii"))


def load_document(path: str | os.PathLike[str], text: str) -> dict[str, Any]:
    """Parse a result document's text; :class:`DumpFormatError` naming the file and line.

    Read by :func:`convert.jsonsafe.load_json`: nesting deeper than 100 levels (outside the rows,
    which are checked one by one; inside them, deeper than Python's recursion limit), whole
    numbers of more than 4,300 digits and numbers beyond float64's range (``1e400``; vcompare
    writes infinities as ``"inf"``) or ``NaN`` / ``Infinity`` literals are refused, line and column.
    """
    document = load_json(text, path, max_depth=None)
    if isinstance(document, dict):  # the rows are checked row by row; everything else kept as read
        for key, value in document.items():
            if key != "rows" and deeper_than(value, MAX_DEPTH - 1):
                raise too_deep(text, path)
    if not isinstance(document, dict) or document.get("schema") != SCHEMA_ID:
        raise DumpFormatError(path, f"not a vcompare result document (no \"schema\": \"{SCHEMA_ID}\" key)")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DumpFormatError(path, f"\"version\" must be a positive whole number, not {version!r}")
    if version > SCHEMA_VERSION:
        raise DumpFormatError(path, f"result schema version {version} is newer than this vcompare reads "
                                    f"({SCHEMA_VERSION}); upgrade vcompare")
    return document

"""The localisation as text and JSON: the first-divergence lines printed at the end of a run, the
``--explain OP`` chain, the ``localisation`` block of the JSON result and the opt-in ``Verdict``
column of the table (values: :class:`compare.diverge.records.Verdict`).

Numbers are written as Python's ``repr`` of the float64 (the shortest text that reads back
exactly), as the gate messages are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _string  # the compact encoder's own writer of a text
from typing import Any

import numpy as np

from ..diverge.records import (
    CheckColumns,
    Localisation,
    OpVerdict,
    SourceLine,
    TensorCheck,
    Verdict,
    VerdictList,
    VerdictTable,
    verdict_table,
)
from ..heap import paused_gc
from .float_text import repr_texts
from .result_json import ROW_ENCODER, JsonFloat, encode_float

#: Key of a row's operator in :func:`verdict_map`: (rank, iteration, left op name).
VerdictKey = tuple[int | None, int | None, str]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return repr(float(value))


def _where(verdict: OpVerdict) -> str:
    part = []
    if verdict.rank is not None:
        part.append(f"rank {verdict.rank}")
    if verdict.iteration is not None:
        part.append(f"iteration {verdict.iteration}")
    return f" ({', '.join(part)})" if part else ""


def _failed_text(check: TensorCheck) -> str:
    if check.failed:
        return ", ".join(f"{metric} = {_num(value)}" for metric, value in check.failed)
    return f"error {_num(check.error)}"


def _input_text(check: TensorCheck) -> str:
    state = {True: "passes", False: "FAILS", None: "not compared"}[check.passed]
    origin = ""
    edge = check.producer
    if edge is not None and (edge.name or edge.producer):
        origin = f" <- {edge.name or edge.producer} ({edge.role})"
    value = f": {_failed_text(check)}" if check.passed is False else (
        f": error {_num(check.error)}" if check.error is not None else "")
    return f"{check.tensor_id}{origin} {state}{value}"


def divergence_lines(localisation: Localisation | None) -> list[str]:
    """The lines printed at the end of every network run: the first divergence (or that there is
    none), its worst failing output, its inputs, its source line; the first NaN/Inf tensor."""
    if localisation is None:
        return []
    first = localisation.first_divergence
    lines: list[str] = []
    if first is None:
        compared = len(localisation.verdicts) - localisation.counts[Verdict.NOT_COMPARED]
        lines.append(f"first divergence: none ({compared} operator(s) within {_bounds_short(localisation)})")
    else:
        kind = "wrong itself (origin)" if first.verdict is Verdict.ORIGIN else "its data input differs (input-differs)"
        op_type = f" [{first.op_type}]" if first.op_type else ""
        lines.append(f"first divergence: {first.op}{op_type}{_where(first)}, operator {first.position} in "
                     f"{localisation.graph.source.order}: {kind}")
        worst = next((c for c in first.outputs if c.passed is False), None)
        if worst is not None:
            lines.append(f"  output {worst.tensor_id}: {_failed_text(worst)}")
        for check in first.inputs:
            lines.append(f"  input {_input_text(check)}")
        if first.blame and first.verdict is Verdict.INPUT_DIFFERS:
            lines.append(f"  differing data: {', '.join(first.blame)}")
        if first.source is not None:
            lines.append(f"  source: {_source_text(first.source)}")
        counts = _counts(localisation)
        lines.append(f"  verdicts: {counts}; bounds: {_bounds_short(localisation)}")
    if localisation.first_nonfinite is not None:
        lines.append(f"first NaN/Inf: {localisation.first_nonfinite} (left side)")
    if first is not None and localisation.uncertain is not None:  # the -f trap (compare.diverge.fusion_doubt)
        rest = lines[0].removeprefix("first divergence:")
        lines[0] = f"first divergence (uncertain: {localisation.uncertain}):{rest}"
    return lines


def _bounds_short(localisation: Localisation) -> str:
    return "the gate policy" if localisation.bounds.startswith("the gate policy") else "the built-in data-type bounds"


def _counts(localisation: Localisation) -> str:
    return ", ".join(f"{n} {v}" for v, n in localisation.counts.items() if n)


def _source_text(source: SourceLine) -> str:
    return f"{source.file}:{source.line}" + (f"  {source.code}" if source.code else "")


def explain_lines(op: str, chain: Sequence[OpVerdict]) -> list[str]:
    """``--explain OP``: the chain from ``op`` back to where its error came from, one block per
    operator: its verdict and errors, then each output and each input with whether it passes and,
    when it fails, the metrics (statistics) that broke their bounds with their values (``chain``:
    :func:`compare.diverge.verdicts.chain`, never empty)."""
    lines = [f"explain {op}: {len(chain)} operator(s) back to "
             + ("the origin" if chain[-1].verdict in (Verdict.ORIGIN, Verdict.INPUT_DIFFERS) else "the last judged one")]
    for step, verdict in enumerate(chain):
        op_type = f" [{verdict.op_type}]" if verdict.op_type else ""
        lines.append(f"{step + 1}. {verdict.op}{op_type}{_where(verdict)}: {verdict.verdict}, {_errors_text(verdict)}")
        for check in verdict.outputs:
            lines.append(f"   output {_input_text(check)}")
        for check in verdict.inputs:
            lines.append(f"   input {_input_text(check)}")
        if verdict.source is not None:
            lines.append(f"   source: {_source_text(verdict.source)}")
    return lines


def _errors_text(verdict: OpVerdict) -> str:
    """An operator's output error against its worst input error for ``--explain``: their ratio (the
    amplification), or, when the inputs are exact and the output is not (an infinite ratio: the
    JSON's ``"inf"``), that the error starts at this operator."""
    if verdict.amplification is not None and math.isinf(verdict.amplification):
        return f"inputs exact, output error {_num(verdict.error)}: the error starts here"
    return (f"output error {_num(verdict.error)}, worst input error {_num(verdict.input_error)}, amplification "
            f"{_num(verdict.amplification)}")


def verdict_map(localisation: Localisation | None) -> dict[VerdictKey, str]:
    """(rank, iteration, op) -> verdict text, for the ``Verdict`` column (empty without localisation)."""
    if localisation is None:
        return {}
    return {key: verdict.value for key, verdict in localisation.labels.items()}


# ------------------------------------------------------------------------------ JSON


def _source(source: SourceLine | None) -> dict[str, Any] | None:
    return None if source is None else {"file": source.file, "line": source.line, "code": source.code}


def _floats(values: list[float | None]) -> list[JsonFloat]:
    """:func:`~compare.reports.result_json.encode_float` of each value; None and finite floats (the
    usual case) are kept as they are without a call."""
    return [value if value is None or (type(value) is float and value - value == 0.0) else encode_float(value)
            for value in values]


def _check_documents(checks: CheckColumns) -> list[dict[str, Any]]:
    """Each check as its JSON object (docs/result-json.md), in order. An edge's object is made
    once and copied for each check it feeds (no two checks share an object)."""
    edges: dict[int, dict[str, Any]] = {}
    for edge in checks.producer:
        if edge is not None and id(edge) not in edges:
            edges[id(edge)] = {"producer": edge.producer, "output": edge.output, "role": edge.role.value,
                               "name": edge.name}
    return [{"tensor_id": tensor_id, "passed": passed, "error": error,
             "failed": [{"metric": m, "value": encode_float(v)} for m, v in failed] if failed else [],
             "nan": nan, "inf": inf, "saturated": saturated,
             "producer": None if producer is None else edges[id(producer)].copy()}
            for tensor_id, passed, error, failed, nan, inf, saturated, producer
            in zip(checks.tensor_id, checks.passed, _floats(checks.error), checks.failed, checks.nan, checks.inf,
                   checks.saturated, checks.producer)]


#: Each verdict's JSON text (an enum member's ``value`` is a slow attribute read, this a dict look-up).
_VERDICT_VALUE = {verdict: verdict.value for verdict in Verdict}


def verdict_documents(table: VerdictTable) -> list[dict[str, Any]]:
    """Each operator's verdict as its JSON object (docs/result-json.md), in order, from the
    verdicts as columns (:class:`~compare.diverge.records.VerdictTable`); a float is written by
    :func:`~compare.reports.result_json.encode_float` (a finite one, the usual case, as it is)."""
    checks = _check_documents(table.checks)
    starts = table.starts
    return [{"op": op, "op_type": op_type, "position": position, "verdict": _VERDICT_VALUE[verdict], "rank": rank,
             "iteration": iteration,
             "error": error, "input_error": input_error, "amplification": amplification,
             "blame": list(blame), "source": None if source is None else _source(source),
             "outputs": checks[start:middle], "inputs": checks[middle:end]}
            for op, op_type, position, verdict, rank, iteration, error, input_error, amplification, blame, source,
            start, middle, end
            in zip(table.op, table.op_type, table.position, table.verdict, table.rank, table.iteration,
                   _floats(table.error), _floats(table.input_error), _floats(table.amplification), table.blame, table.source, starts, table.inputs,
                   starts[1:])]


def verdict_document(verdict: OpVerdict) -> dict[str, Any]:
    """One operator's verdict as its JSON object (docs/result-json.md)."""
    return verdict_documents(verdict_table([verdict]))[0]


def localisation_document(localisation: Localisation | None) -> dict[str, Any] | None:
    """The ``localisation`` block of the JSON result, or None. The verdicts are written from their
    columns (:meth:`~compare.diverge.records.VerdictList.table`: a localisation on columns builds
    no record an operator for it). Built with the cyclic collector paused
    (:func:`compare.heap.paused_gc`): its ~5 dicts and lists an operator (130,000 for a
    100,000-row statistics run) all live until the document is written, and the collections their
    allocation would set off walk the whole heap of the run to find no garbage."""
    if localisation is None:
        return None
    first = localisation.first_divergence
    verdicts = localisation.verdicts
    with paused_gc():
        table = verdicts.table() if isinstance(verdicts, VerdictList) else verdict_table(verdicts)
        return {
            "graph_source": localisation.graph.source.value,
            "graph_edges": localisation.graph.edges,
            "bounds": localisation.bounds,
            "first_divergence": None if first is None else verdict_document(first),
            "first_nonfinite": localisation.first_nonfinite,
            "notes": list(localisation.notes),
            "verdicts": verdict_documents(table),
        }


# ------------------------------------------------------------------------------ JSON text


def _json_text(value: str | None) -> str:
    """A text or None as the compact encoder writes it."""
    return "null" if value is None else _string(value)


def _json_int(value: int | None) -> str:
    """A whole number or None as the compact encoder writes it (anything else: by the encoder itself)."""
    if value is None:
        return "null"
    return int.__repr__(value) if type(value) is int else ROW_ENCODER.encode(value)


def _int_texts(values: Sequence[int | None]) -> list[str]:
    """:func:`_json_int` of each value, each distinct value written once when all are whole numbers
    or None (a ``bool`` equals 0 or 1 as a key but is written ``true`` / ``false``: then one by one)."""
    if not set(map(type, values)) <= _INT_OR_NONE:
        return list(map(_json_int, values))
    texts = {value: _json_int(value) for value in dict.fromkeys(values)}
    return list(map(texts.__getitem__, values))


_INT_OR_NONE = frozenset({int, type(None)})
#: :func:`~compare.reports.result_json.encode_float` 's strings, as JSON text.
_NON_FINITE_TEXT = {"nan": '"nan"', "inf": '"inf"', "-inf": '"-inf"'}


def _float_texts(values: Sequence[float | None]) -> list[str]:
    """Each value as :func:`~compare.reports.result_json.encode_float` and the compact encoder
    write it: ``null``, the float's ``repr`` (:func:`~compare.reports.float_text.repr_texts`, a
    column at a time), ``"nan"`` / ``"inf"`` / ``"-inf"`` as strings."""
    numbers = [value if type(value) is float else float(value) for value in values if value is not None]
    texts = repr_texts(numbers)
    for i in np.flatnonzero(~np.isfinite(np.asarray(numbers, dtype=np.float64))).tolist():
        texts[i] = _NON_FINITE_TEXT[texts[i]]
    if len(numbers) == len(values):
        return texts
    found = iter(texts).__next__
    return ["null" if value is None else found() for value in values]


_CHECK_TEMPLATE = ('{"tensor_id":%s,"passed":%s,"error":%s,"failed":%s,"nan":%s,"inf":%s,"saturated":%s,'
                   '"producer":%s}')
_VERDICT_TEMPLATE = ('{"op":%s,"op_type":%s,"position":%s,"verdict":%s,"rank":%s,"iteration":%s,"error":%s,'
                     '"input_error":%s,"amplification":%s,"blame":%s,"source":%s,"outputs":[%s],"inputs":[%s]}')
_PASSED_TEXT = {None: "null", True: "true", False: "false"}


def _check_texts(checks: CheckColumns) -> list[str]:
    """Each check as :func:`_check_documents` 's object written by the compact encoder, in order."""
    edges: dict[int, str] = {}
    for edge in checks.producer:
        if edge is not None and id(edge) not in edges:
            edges[id(edge)] = (f'{{"producer":{_json_text(edge.producer)},"output":{_json_int(edge.output)},'
                               f'"role":{_string(edge.role.value)},"name":{_string(edge.name)}}}')
    values = iter(_float_texts([value for broken in checks.failed for _, value in broken])).__next__
    failed = ["[]" if not broken else
              "[" + ",".join([f'{{"metric":{_string(metric)},"value":{values()}}}' for metric, _ in broken]) + "]"
              for broken in checks.failed]
    return list(map(_CHECK_TEMPLATE.__mod__, zip(
        map(_string, checks.tensor_id), map(_PASSED_TEXT.__getitem__, checks.passed), _float_texts(checks.error),
        failed, _int_texts(checks.nan), _int_texts(checks.inf), _int_texts(checks.saturated),
        ["null" if edge is None else edges[id(edge)] for edge in checks.producer])))


def verdict_texts(table: VerdictTable) -> list[str]:
    """Each operator's verdict as :func:`verdict_documents` 's object written by the compact
    encoder (:data:`~compare.reports.result_json.ROW_ENCODER`), in order: the same text, written
    from the columns with no object made (``--json``: :func:`localisation_text`)."""
    checks = _check_texts(table.checks)
    starts = table.starts
    sources = {id(source): (f'{{"file":{_string(source.file)},"line":{_json_int(source.line)},'
                            f'"code":{_string(source.code)}}}') for source in table.source if source is not None}
    return list(map(_VERDICT_TEMPLATE.__mod__, zip(
        map(_string, table.op), map(_json_text, table.op_type), _int_texts(table.position),
        [_VERDICT_TEXT[verdict] for verdict in table.verdict], _int_texts(table.rank), _int_texts(table.iteration), _float_texts(table.error), _float_texts(table.input_error),
        _float_texts(table.amplification),
        ["[]" if not blame else "[" + ",".join(map(_string, blame)) + "]" for blame in table.blame],
        ["null" if source is None else sources[id(source)] for source in table.source],
        [",".join(checks[start:middle]) for start, middle in zip(starts, table.inputs)],
        [",".join(checks[middle:end]) for middle, end in zip(table.inputs, starts[1:])])))


#: Each verdict's JSON text.
_VERDICT_TEXT = {verdict: _string(verdict.value) for verdict in Verdict}


def localisation_text(localisation: Localisation) -> str:
    """The ``localisation`` block as compact JSON text: ``ROW_ENCODER.encode(localisation_document(
    localisation))``, written from the columns of the verdicts (:func:`verdict_texts`) without
    making the block's ~130,000 objects of a 100,000-row run (the block of :func:`localisation_document`
    stays for the API: a result's ``to_dict``; a test holds the two equal)."""
    first = localisation.first_divergence
    verdicts = localisation.verdicts
    with paused_gc():  # ~10 lists and 130,000 texts made: collections would walk the run's heap (localisation_document)
        table = verdicts.table() if isinstance(verdicts, VerdictList) else verdict_table(verdicts)
        first_text = "null" if first is None else verdict_texts(verdict_table([first]))[0]
        texts = verdict_texts(table)
    return (f'{{"graph_source":{_string(localisation.graph.source.value)},'
            f'"graph_edges":{ROW_ENCODER.encode(localisation.graph.edges)},"bounds":{_string(localisation.bounds)},'
            f'"first_divergence":{first_text},"first_nonfinite":{_json_text(localisation.first_nonfinite)},'
            f'"notes":[{",".join(map(_string, localisation.notes))}],"verdicts":[{",".join(texts)}]}}')


def count_verdicts(localisation: Localisation | None) -> Mapping[str, int]:
    """Operators per verdict (every verdict listed, zeros included)."""
    if localisation is None:
        return {v.value: 0 for v in Verdict}
    return {v.value: n for v, n in localisation.counts.items()}


__all__ = ["count_verdicts", "divergence_lines", "explain_lines", "localisation_document", "localisation_text",
           "verdict_document", "verdict_documents", "verdict_map", "verdict_texts"]

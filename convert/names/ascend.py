"""Ascend dump-folder file names (§2.8 of the reference-tool spec; a folder's top level only).

* **Offline (NPU) dump**: ``{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}`` and the
  longer ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{task_type}.{context_id}.
  {thread_id}.{x}`` variants. ``op_type`` and ``op_name`` are ``[A-Za-z0-9_-]+``, every other
  field is digits. Only a *prefix* has to match (as in the reference tool): the text after the
  last digit field is kept in :attr:`OfflineName.trailing`.
* **Golden** files (:mod:`convert.names.golden`). :func:`classify_name` classifies a name by its
  suffix first (``.npy``, ``.pb``, ``.quant``), every other name by the offline rule -- exactly as
  the reference tool does.
* ``mapping.csv`` and ``convert_failed_file_list.txt`` are not dump files (:data:`IGNORED_FILES`).
* **Per-operator statistics CSV** (``dump_data=stats``): ``{dump file name}.csv``
  (:func:`stats_csv_name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .golden import GOLDEN_SUFFIXES, explain_golden_name, parse_golden_name

#: Files of a dump folder that are never dump files.
IGNORED_FILES = frozenset({"mapping.csv", "convert_failed_file_list.txt"})

#: Valid values of the task-type field of the long offline names.
TASK_TYPES = {0: "AICORE", 1: "AICPU", 2: "DEBUG", 3: "HCCL", 4: "FFTSPLUS"}

#: Only timestamps of exactly this many digits sort by value; all others sort as 0.
TIMESTAMP_DIGITS = 16

OFFLINE_FORM = "{op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}"

_OFFLINE_RE = re.compile(r"([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)((?:\.[0-9]+)+)")
_WORD_RE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class OfflineName:
    """The fields of an offline dump file name.

    ``timestamp_digits`` is the timestamp field as written; ``timestamp`` its integer value.
    ``task_type`` is the field at position -4 of names with more than five fields (``None``
    otherwise); it is *not* validated here (see :attr:`task_type_problem`). ``extra`` holds the
    digit fields that are not task id, stream id or timestamp (task type, context id, thread id,
    ...), and ``trailing`` the text after the matched prefix (``''`` for a clean name).
    """

    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp: int
    timestamp_digits: str
    task_type: int | None = None
    extra: tuple[str, ...] = ()
    trailing: str = ""

    @property
    def sort_key(self) -> int:
        """Timestamp used to pick the latest file: its value if it has 16 digits, else 0."""
        return self.timestamp if len(self.timestamp_digits) == TIMESTAMP_DIGITS else 0

    @property
    def thread_id(self) -> int | None:
        """The thread id of the long layout (field -2, ``...task_type.context.thread.x``); None
        for names of fewer than 8 fields."""
        return int(self.extra[-2]) if self.task_type is not None and len(self.extra) >= 4 else None

    @property
    def ffts(self) -> bool:
        """Whether the task-type field says FFTS+ (4)."""
        return self.task_type == 4

    @property
    def task_type_problem(self) -> str | None:
        """Why the task-type field is invalid, or ``None`` when it is absent or valid."""
        if self.task_type is None or self.task_type in TASK_TYPES:
            return None
        valid = ", ".join(f"{code} {name}" for code, name in TASK_TYPES.items())
        return (
            f"task-type field (4th from the end) is {self.task_type}, not one of {valid}; the "
            "reference tool aborts the whole run for this (exit 37), vcompare skips only this file"
        )


def parse_offline_name(name: str) -> OfflineName | None:
    """Parse an offline dump file name, or return ``None`` when it matches no offline form.

    Forms (``op_type``/``op_name`` ``[A-Za-z0-9_-]+``, the rest digit fields):

    * 4 fields ``type.name.task.timestamp``;
    * 5 fields ``type.name.task.stream.timestamp``;
    * 8 or more fields, the long layout ``type.name.task[.stream].timestamp.task_type.context.
      thread.x``: the timestamp is field -5 and the task type field -4. (The reference tool sorts
      these by their *last* field, which is not a timestamp; vcompare uses the real one.)
    * 6 or 7 fields (no documented layout): timestamp = the last field, task type = field -4, as
      the reference tool reads them.

    Only a prefix must match; the rest (e.g. ``.npy.tmp``) is kept in ``trailing``. Fields are
    counted in the matched prefix only.
    """
    match = _OFFLINE_RE.match(name)
    if match is None:
        return None
    op_type, op_name, digit_part = match.group(1), match.group(2), match.group(3)
    digits = digit_part[1:].split(".")
    if len(digits) < 2:
        return None
    fields = len(digits) + 2
    ts_pos = len(digits) - 5 if fields >= 8 else len(digits) - 1  # index into ``digits``
    stream: int | None = int(digits[1]) if ts_pos >= 2 else None
    used = {0, ts_pos} | ({1} if stream is not None else set())
    extra = tuple(d for i, d in enumerate(digits) if i not in used)
    task_type = int(digits[-4]) if fields > 5 else None
    return OfflineName(
        op_type=op_type,
        op_name=op_name,
        task_id=int(digits[0]),
        stream_id=stream,
        timestamp=int(digits[ts_pos]),
        timestamp_digits=digits[ts_pos],
        task_type=task_type,
        extra=extra,
        trailing=name[match.end():],
    )


def explain_offline_name(name: str) -> str:
    """Why ``name`` is not an offline dump name (for ``Run.skipped`` and error messages)."""
    fields = name.split(".")
    expected = f"expected {OFFLINE_FORM}"
    if len(fields) < 4:
        return f"name matches no dump naming rule: {len(fields)} dot-separated field(s), {expected}"
    for pos, label in ((0, "op_type"), (1, "op_name")):
        if not _WORD_RE.fullmatch(fields[pos]):
            return (
                f"name matches no dump naming rule: {label} {fields[pos]!r} is not "
                f"[A-Za-z0-9_-]+, {expected}"
            )
    for pos in (2, 3):
        if not fields[pos].isdigit():
            label = "task_id" if pos == 2 else "timestamp/stream_id"
            return (
                f"name matches no dump naming rule: {label} field {fields[pos]!r} is not digits, "
                f"{expected}"
            )
    return f"name matches no dump naming rule, {expected}"  # pragma: no cover - defensive



def classify_name(name: str) -> tuple[str, object | None, str | None]:
    """Classify a file name by suffix, then by rule: ``(kind, parsed or None, reason or None)``.

    ``kind`` is ``offline`` or a golden kind (``npy``, ``pb``, ``quant``); ``parsed`` an
    :class:`OfflineName` or a :class:`convert.names.golden.GoldenName`.
    """
    for kind, suffix in GOLDEN_SUFFIXES.items():
        if name.endswith(suffix):
            parsed = parse_golden_name(name)
            if parsed is None:
                return kind, None, explain_golden_name(name)
            return kind, parsed, None
    offline = parse_offline_name(name)
    if offline is None:
        return "offline", None, explain_offline_name(name)
    return "offline", offline, None


def stats_csv_name(name: str) -> OfflineName | None:
    """The dump name of a per-operator stats CSV (``{dump file name}.csv``), or None."""
    if not name.endswith(".csv") or name == "statistic.csv":
        return None
    parsed = parse_offline_name(name[: -len(".csv")])
    if parsed is None or parsed.trailing:
        return None
    return parsed

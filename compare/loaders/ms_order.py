"""MindSpore execution-order files: which kernel ran when, to put a run's operators in the order
the graph executed them (``ms_execution_order_graph_{N}.csv``, the global order file, and the
dump timestamps of kernels the files do not list)."""

from __future__ import annotations

import bisect
import csv
import re
from pathlib import Path

from convert.names.keys import name_key
from convert.names.mindspore import scope_name

from ..records import Run

#: Header texts of execution order files (lower case; MindSpore 2.x writes
#: ``NodeExecutionOrder-FullNameWithScope``).
_ORDER_HEADERS = frozenset({"nodeexecutionorder-fullnamewithscope", "op_name", "name", "kernel", "kernel_name",
                            "node_name", "op", "fullnamewithscope"})


_OP_ID_TAIL = re.compile(r"-op\d+$")


def _is_order_header(cell: str) -> bool:
    """A first row that names the column: a known header text, or a cell that is neither a
    scoped name (no ``/``) nor a kernel name (no ``-op{N}`` at the end)."""
    text = cell.strip()
    if text.lower().replace(" ", "_") in _ORDER_HEADERS or text.lower() in _ORDER_HEADERS:
        return True
    return "/" not in text and _OP_ID_TAIL.search(text) is None


def read_execution_order(path: Path) -> list[str]:
    """Kernel names of ``ms_execution_order_graph_{id}.csv`` in execution order.

    The first cell of every non-empty row is a name (the last one when the row starts with a
    number). The first row is a header, and skipped, when :func:`_is_order_header` says so
    (MindSpore 2.x writes ``NodeExecutionOrder-FullNameWithScope``). Unreadable, or a field over
    ``csv.field_size_limit()`` -> ``[]``.
    """
    names: list[str] = []
    first = True
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            for row in csv.reader(handle):
                cells = [c.strip() for c in row if c.strip()]
                if not cells:
                    continue
                cell = cells[-1] if len(cells) > 1 and cells[0].isdigit() else cells[0]
                if first:
                    first = False
                    if _is_order_header(cell):
                        continue
                names.append(scope_name(cell))
    except (OSError, csv.Error):  # csv.Error: e.g. a field over csv.field_size_limit()
        return []
    return names


def read_global_order(path: Path) -> tuple[int, ...]:
    """The iterations listed in ``ms_global_execution_order_graph_{id}.csv`` (sorted, unique)."""
    found: set[int] = set()
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    text = cell.strip()
                    if text.isdigit():
                        found.add(int(text))
                        break
    except (OSError, csv.Error):
        return ()
    return tuple(sorted(found))


def order_files(leaf: Path, graph: object, depth: int) -> tuple[Path | None, Path | None]:
    """``(execution order csv, global execution order csv)`` for a leaf, or ``None`` each.

    Looked up in ``execution_order/`` of the ancestors up to ``depth`` levels above the leaf
    (``rank_N/execution_order`` for npy dumps, depth 3; ``device_N/execution_order`` for sync
    dumps, depth 1; ``{device_id}/execution_order`` for r1.x asynchronous dumps, whose leaf is
    ``{device_id}/{net}_graph_{g}/{g}/{iteration}``, depth 3 -- the manuals' layout).
    For an unknown graph id the only ``ms_execution_order_graph_*.csv`` is used.
    """
    folder = leaf
    for _ in range(depth + 1):
        order_dir = folder / "execution_order"
        if order_dir.is_dir():
            if graph is not None:
                local = order_dir / f"ms_execution_order_graph_{graph}.csv"
                glob = order_dir / f"ms_global_execution_order_graph_{graph}.csv"
                return (local if local.is_file() else None, glob if glob.is_file() else None)
            # regular files only: a FIFO under an order file's name is never opened (it would block)
            locals_ = sorted(p for p in order_dir.glob("ms_execution_order_graph_*.csv") if p.is_file())
            globals_ = sorted(p for p in order_dir.glob("ms_global_execution_order_graph_*.csv") if p.is_file())
            return (locals_[0] if len(locals_) == 1 else None, globals_[0] if len(globals_) == 1 else None)
        if folder.parent == folder:
            break
        folder = folder.parent
    return None, None


def apply_order(run: Run, names: list[str]) -> None:
    """Give **every** op of the run a position in ``run.order`` (0, 1, ... in report order).

    Policy:

    * an op listed in the execution order (its name matched exactly or normalised, see
      :func:`convert.names.keys.name_key`; the first listing counts) takes its place
      in the file;
    * an op the file does not list -- Parameters are never listed, and MindSpore may give a kernel
      another ``-opN`` id in the order file than in its file names -- is placed by its **first
      dump timestamp** (``OpDump.timestamp``, the earliest timestamp of its files): right after
      the listed op dumped last at or before that time (before every listed op when none was);
      several such ops after one listed op go by timestamp. It is never matched to an order
      entry by guessing its ``-opN`` id (the ids are not reliable, and the timestamp places it
      where it ran). The order file and the dump times can disagree (on CPU the runtime
      launches independent kernels, e.g. optimizer updates, before their place in the file):
      listed ops keep the file's order;
    * an op without a dump timestamp (``0``: synchronous ``.bin`` names have none) goes after
      all the others, by name.

    A note says how many ops were found in the file and how the others were placed. An empty
    ``names`` changes nothing.
    """
    if not names:
        return
    by_key: dict[str, int] = {}
    for position, name in enumerate(names):
        by_key.setdefault(name_key(name), position)
    listed = {name: by_key[name_key(name)] for name in run.ops if name_key(name) in by_key}
    anchors = _order_anchors([(run.ops[n].timestamp, p) for n, p in listed.items() if run.ops[n].timestamp > 0])
    keys: dict[str, tuple[int, int, int, str]] = {}
    by_time = untimed = 0
    for name, op in run.ops.items():
        if name in listed:
            keys[name] = (listed[name], 0, op.timestamp, name)
        elif op.timestamp > 0:
            keys[name] = (_anchor_before(anchors, op.timestamp), 1, op.timestamp, name)
            by_time += 1
        else:
            keys[name] = (len(names), 2, 0, name)
            untimed += 1
    run.order.clear()
    for rank, name in enumerate(sorted(keys, key=keys.__getitem__)):
        run.order[name] = rank
    note = f"operators ordered by the execution order file ({len(listed)} of {len(run.ops)} found in it"
    if by_time:
        note += (f"; the other {by_time} (Parameters, or kernels listed under another -opN id) placed by their "
                 "first dump timestamp, each after the listed operator dumped last before it")
    if untimed:
        note += f"; {untimed} without a dump timestamp put last, by name"
    run.notes.append(note + ")")


def _order_anchors(timed: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """``(timestamps, order positions)`` of the listed ops, by timestamp (then position)."""
    ordered = sorted(timed)
    return [t for t, _ in ordered], [p for _, p in ordered]


def _anchor_before(anchors: tuple[list[int], list[int]], timestamp: int) -> int:
    """The order position of the listed op dumped last at or before ``timestamp`` (on a tie of
    timestamps the largest position); -1 when every listed op was dumped after it."""
    times, positions = anchors
    found = bisect.bisect_right(times, timestamp)
    return positions[found - 1] if found else -1

"""Dask worker plugins that break a cluster run on purpose, for the distributed tests
(``tests/compare/runs/test_distributed.py``). They live here, in an importable module, because a
plugin is sent to the worker processes by reference. Needs ``dask[distributed]``.

- :class:`KillOnce`: the first worker that starts a given vcompare task dies (``os._exit``),
  once (a marker file says it happened; the task is then rescheduled by Dask elsewhere).
- :class:`BreakPart`: every attempt at one part raises (an unexpected error, not a
  CompareError), so its task fails every retry and the part is lost.
"""

from __future__ import annotations

import os
from pathlib import Path

from distributed import Worker, WorkerPlugin


class KillOnce(WorkerPlugin):
    """Kill the worker that starts the task of part ``first`` (the task key
    ``vcompare-parts-{first}-...``), the first time only: ``marker`` is created before it dies."""

    def __init__(self, marker: str | Path, first: int = 0) -> None:
        self.marker = str(marker)
        self.prefix = f"vcompare-parts-{first}-"

    def transition(self, key: object, start: str, finish: str, **kwargs: object) -> None:
        if finish != "executing" or not str(key).startswith(self.prefix):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)


class BreakPart(WorkerPlugin):
    """Make every attempt at part ``index`` raise ``RuntimeError`` on this worker."""

    def __init__(self, index: int) -> None:
        self.index = index

    def setup(self, worker: Worker) -> None:
        from compare.runs import distributed as module  # here: patched in the worker process only

        real = module.compare_part
        broken = self.index

        def compare_part(job, index, golden, **kwargs):  # type: ignore[no-untyped-def]
            if index == broken:
                raise RuntimeError(f"part {index} breaks on purpose")
            return real(job, index, golden, **kwargs)

        module.compare_part = compare_part  # type: ignore[assignment]


__all__ = ["BreakPart", "KillOnce"]

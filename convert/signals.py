"""Interrupting a run: SIGINT (Ctrl-C) and SIGTERM end it cleanly, with no partial result.

The handlers raise :class:`Interrupted`, a ``BaseException``: it passes through the engine's
per-pair guard (which turns ``Exception``s into report rows) and through click's own Ctrl-C
handling, so every atomic writer removes its temporary file and the command-line entry point
prints one line and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM). A
result file that already existed is left as it was.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Interrupted(BaseException):
    """The run was stopped by a signal."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"stopped by {self.name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


#: Result files completed (renamed into place) during this run, for an accurate stop message.
written: list[str] = []


def note_written(path: object) -> None:
    """Record a result file as written (named by :func:`stop_message` if the run is stopped)."""
    written.append(str(path))


def stop_message(stop: Interrupted) -> str:
    """What an interrupted run says: the files written so far, or that none was written or changed."""
    if written:
        return f"{stop} after writing {', '.join(written)} (complete)"
    return f"{stop}: no result file was written or changed"


def _raise(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted`; handlers restored after."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for sig in previous:
            signal.signal(sig, _raise)
    except ValueError:  # not the main thread (e.g. called from a library user's worker thread)
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

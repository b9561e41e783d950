"""Interrupting a run: SIGINT (Ctrl-C) and SIGTERM end it cleanly, with no partial result.

The handlers raise :class:`Interrupted`, a ``BaseException``: it passes through the engine's
per-pair guard (which turns ``Exception``s into report rows) and through click's own Ctrl-C
handling, so every atomic writer removes its temporary file and the command-line entry point
prints one line and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM). A
result file that already existed is left as it was.

A few steps must not be cut in the middle -- swapping a set of result files in, by a handful of
renames: :func:`held` keeps SIGINT and SIGTERM for the end of such a block, then delivers them.

**No interrupt is lost.** Python runs a signal handler between two bytecodes of the main thread,
wherever that is -- also inside a ``__del__``, a weakref or garbage-collector callback (matplotlib
makes many while the ``--html`` figures are drawn), or a library's ``except BaseException: pass``.
There the exception cannot propagate: Python prints "Exception ignored ... Interrupted" and
carries on, and the run would complete with exit 0. So the handler also *records* the signal, and
the record outlives the exception: :func:`check_interrupted` raises :class:`Interrupted` again at
the next safe point -- before any output file is renamed into place (every atomic writer calls
it), after each compared pair (the command line's progress callback), and when the
:func:`interruptible` block ends. An interrupted run therefore always ends with 130 / 143 and
writes no file after the signal. Within the block, an :class:`Interrupted` that Python could not
propagate is not printed (``sys.unraisablehook``): it is delivered at that next safe point.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_HELD = (signal.SIGINT, signal.SIGTERM)


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


#: The signals that arrived within the current :func:`interruptible` block (in order, each once):
#: cleared when the block is left, so it never grows with the process.
_arrived: list[int] = []


def _raise(signum: int, _frame: object) -> None:
    if signum not in _arrived:
        _arrived.append(signum)  # recorded first: the exception below may be swallowed
    raise Interrupted(signum)


def check_interrupted() -> None:
    """Raise :class:`Interrupted` if a signal arrived in the current :func:`interruptible` block
    (its exception may have been swallowed where it was raised: a ``__del__``, a callback); a
    no-op otherwise, and outside such a block. Cheap: called before every output rename and
    after every compared pair."""
    if _arrived:
        raise Interrupted(_arrived[0])


def _quiet_unraisable(previous: Callable[..., object]) -> Callable[..., object]:
    """A ``sys.unraisablehook`` that drops :class:`Interrupted` (recorded, delivered at the next
    safe point) and passes everything else to ``previous``."""

    def hook(unraisable: object) -> None:
        if isinstance(getattr(unraisable, "exc_value", None), Interrupted):
            return
        previous(unraisable)

    return hook


@contextmanager
def _installed(handler: Callable[[int, object], None]) -> Iterator[None]:
    """``handler`` for SIGINT and SIGTERM within the block, the previous handlers restored after.

    A handler installed outside Python (``getsignal`` gives ``None``) is left alone: that signal
    keeps it. Off the main thread nothing is installed (handlers can be set only there, and
    Python runs them only there).
    """
    previous: dict[int, object] = {}
    try:
        for sig in _HELD:
            old = signal.getsignal(sig)
            if old is not None:
                signal.signal(sig, handler)
                previous[sig] = old
    except ValueError:  # not the main thread (e.g. called from a library user's worker thread)
        for sig, old in previous.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        previous = {}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)  # type: ignore[arg-type]


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted`; handlers restored after
    (:func:`_installed`: a handler set outside Python is left alone).

    A signal whose exception was swallowed on the way (see the module docstring) is raised again
    by :func:`check_interrupted` at the next safe point, at the latest when the block ends: the
    block never ends normally after a signal.
    """
    outer = list(_arrived)  # empty unless nested: an enclosing block keeps its own record
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _quiet_unraisable(previous_hook)
    try:
        with _installed(_raise):
            yield
            check_interrupted()
    finally:
        sys.unraisablehook = previous_hook
        _arrived[:] = outer


@contextmanager
def held() -> Iterator[None]:
    """Within the block SIGINT and SIGTERM are held; at its end they are delivered.

    For a few steps that must not be cut in the middle (renaming a set of result files into
    place). A held signal is raised again with the handler that was in force before the block
    (:func:`interruptible`'s, Python's ``KeyboardInterrupt``, the default action...), so it acts
    as if it had arrived just after the block. Policy for the edge cases:

    - not in the main thread (signal handlers cannot be set there): nothing is held -- and nothing
      needs to be, Python runs signal handlers in the main thread only, never in this one;
    - a handler installed outside Python (``getsignal`` gives ``None``) is left alone: that
      signal is not held;
    - the block itself ends with an exception: the held signal is still delivered, and its
      exception (e.g. :class:`Interrupted`) replaces the block's;
    - a signal that arrives several times is delivered once; SIGINT and SIGTERM both arrived:
      in their order, and when the first one's handler raises, the second is dropped (the run
      is ending anyway).

    SIGKILL cannot be held by anyone; see ``compare.reports.staging`` for how its leftovers are
    completed or removed.
    """
    arrived: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        if signum not in arrived:
            arrived.append(signum)

    try:
        with _installed(hold):
            yield
    finally:  # the handlers in force before the block are back: deliver what arrived to them
        for sig in arrived:
            signal.raise_signal(sig)

"""Atomic file writing for every report: a temporary file in the target folder, then a rename.

Policy:

- an interrupted run never leaves a half-written result, and an existing result is replaced only
  as a whole: on any failure (or Ctrl-C) the temporary file is removed and the previous file is
  left exactly as it was;
- every operating-system failure to write (read-only folder, disk full, permission denied, the
  target is a directory, a parent that is a file or cannot be created ...) raises one
  :class:`~compare.errors.OutputError` whose one-line message names the path and the OS reason;
- a result file gets the mode an ordinary ``open(path, "w")`` would give it, ``0o666 & ~umask``
  (``mkstemp`` alone creates ``0600``, unreadable for a CI uploader running as another user);
- the path is looked at first (:func:`convert.atomic.output_target`): a symbolic link is
  followed and the file it points to is replaced (the link stays); a character device or a FIFO
  (``/dev/null``, ``/dev/stdout`` on a pipe or a terminal, a named pipe with its reader) is
  written through -- the content made in full in memory, then written -- never renamed over; a
  block device, a socket, a link loop and a FIFO without a reader are refused (OutputError);
- a signal whose exception was swallowed while the content was made (``__del__``, a callback:
  :mod:`convert.signals`) stops the write before the rename: no output appears after a signal;
- the temporary file is named ``.vcmp-XXXXXXXX.tmp`` and is locked (``flock``, exclusive) from
  its creation until it is renamed or removed, so that the cleaning of a later run
  (:mod:`compare.reports.staging`) can tell the temporary of a live run, which it keeps, from the
  leftover of a killed one, which it removes.

Before a run, :func:`preflight` refuses an output that could not be written (the output plan of
:mod:`compare.runs.outputs` calls it for every target); :func:`tool_version` is the version every
written result records.
"""

from __future__ import annotations

import fcntl
import io
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from convert.atomic import TargetKind, output_target, write_through
from convert.signals import check_interrupted, note_written

from .. import __version__
from ..errors import OutputError

_UMASK_LOCK = threading.Lock()
#: Longest file name (bytes) most file systems allow: writers that derive a name from a dump
#: name shorten it to fit.
NAME_MAX = 255
#: The time stamp of the files named after their run (``result_{stamp}.csv`` ...), as the reference.
STAMP_FORMAT = "%Y%m%d%H%M%S"
#: Temporary names: the prefix and suffix around ``mkstemp``'s 8 random characters.
TEMP_PREFIX = ".vcmp-"
TEMP_SUFFIX = ".tmp"


def current_umask() -> int:
    """The process umask, read without changing it where the system allows.

    Linux publishes it in ``/proc/self/status`` (``Umask:`` line); elsewhere it is read by
    setting and restoring it, under a lock so no two threads of vcompare race on it.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode of a newly written result file: ``0o666 & ~umask``."""
    return 0o666 & ~current_umask()


def os_reason(exc: OSError, *, temporary: str | None = None) -> str:
    """The operating system's reason, one line; a file name other than the target is kept."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    for name in (exc.filename, exc.filename2):
        if name is not None and os.fspath(name) != temporary:
            reason = f"{reason} ({os.fsdecode(name)})"
            break
    return " ".join(reason.split())


def _prepare_parent(path: Path) -> None:
    if path.is_dir():
        raise OutputError(path, "is a directory (give a file name, or the folder alone for a timestamped result)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(path, f"cannot create its folder: {os_reason(exc)}") from None
    if not path.parent.is_dir():
        raise OutputError(path, f"{path.parent} is not a folder")


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Create ``path`` by calling ``write(handle)`` on a temporary file, then renaming it (over
    the file a symbolic link points to; a device or FIFO is written through). Returns ``path``
    as given.

    Raises :class:`OutputError` for any ``OSError`` on the way (see the module docstring).
    """
    named = Path(path)
    if named.is_dir():
        _prepare_parent(named)  # raises: a folder in the way
    target = output_target(named)
    if target.kind is TargetKind.STREAM:
        buffer = io.BytesIO()
        write(buffer)
        check_interrupted()
        write_through(target, buffer.getvalue())
        note_written(named)
        return named
    path = target.path
    _prepare_parent(path)
    # short fixed-length temporary names: the final name may already be close to NAME_MAX
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise OutputError(path, os_reason(exc)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until fd is closed, after the rename
        except OSError:
            pass  # no locks on this file system: the cleaning goes by age alone
        with os.fdopen(os.dup(fd), "wb") as handle:  # closed (and its errors seen) before the rename
            write(handle)
        os.chmod(tmp, file_mode())
        check_interrupted()  # a signal swallowed while writing (a __del__, a callback) ends the run here
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(path, os_reason(exc, temporary=tmp)) from None
        raise
    finally:
        os.close(fd)
    note_written(named)
    return named


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`); returns the path."""
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> Path:
    """UTF-8 text, written exactly (no newline translation)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_chunks(path: Path, chunks: Iterable[str]) -> Path:
    """UTF-8 text written as it is made, chunk by chunk (no newline translation): a large table's
    text is never whole in memory (:func:`atomic_write`)."""
    return atomic_write(path, lambda handle: handle.writelines(chunk.encode("utf-8") for chunk in chunks))


def is_stream(path: Path) -> bool:
    """Whether ``path`` is written through (:func:`convert.atomic.output_target`): a character
    device, a FIFO, a descriptor link such as ``/dev/stdout`` (or a link to one) -- never taken
    for a folder, even without a suffix."""
    if not os.path.lexists(path):
        return False
    try:
        return output_target(path).kind is TargetKind.STREAM
    except OutputError:
        return False


def file_stamp(now: time.struct_time | None = None) -> str:
    """``YYYYmmddHHMMSS`` of ``now`` (default: the local time now), the stamp of the files named
    after their run (``result_{stamp}.csv``, ``mapping_{stamp}.csv``, ``file_result_{stamp}.txt`` ...)."""
    return time.strftime(STAMP_FORMAT, now or time.localtime())


def stamped_in_folder(output: "str | os.PathLike[str] | None", prefix: str, *,
                      now: time.struct_time | None = None) -> Path | None:
    """``{folder}/{prefix}_{stamp}.csv`` when ``-o`` names a folder -- none given (the current
    folder), an existing folder, a path ending in a separator or one without a suffix; None when
    ``-o`` names a file (its extension is the caller's to check) or a character device or FIFO
    (:func:`is_stream`, e.g. ``/dev/stdout``)."""
    if output is None or os.fspath(output) == "":
        return Path.cwd() / f"{prefix}_{file_stamp(now)}.csv"
    text = os.fspath(output)
    path = Path(text)
    if is_stream(path):
        return None
    if path.is_dir() or text.endswith(("/", os.sep)) or path.suffix == "":
        return path / f"{prefix}_{file_stamp(now)}.csv"
    return None


def preflight(path: Path) -> None:
    """Refuse, before any work, an output that cannot be written: a folder in its place, a block
    device, a socket or a link loop (:func:`convert.atomic.output_target`), or a nearest existing
    ancestor that is not a folder or not writable (:class:`OutputError`). A character device or a
    FIFO (``--json /dev/stdout``) is written through, so its folder need not be writable; a
    symbolic link is checked at the file it points to. Creates nothing; the write itself still
    reports any later failure (disk full, a FIFO without a reader ...)."""
    if path.is_dir():
        raise OutputError(path, "is a directory (give a file name)")
    target = output_target(path)
    if target.kind is TargetKind.STREAM:
        return
    path = target.path
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(path, f"{parent} is a file, not a folder")
    if parent.is_dir() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(path, f"permission denied: folder {parent} is not writable")


def tool_version() -> str:
    """The installed vcompare version (package metadata), as ``vcompare --version`` prints it and
    every written result records it."""
    from importlib.metadata import PackageNotFoundError, version  # here: only --version and results read it

    try:
        return version("vcompare")
    except PackageNotFoundError:  # a source tree that was never installed

        return __version__

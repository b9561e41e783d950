"""Where an output file goes: what is renamed over, what is written through, what is refused.

Every writer of vcompare and vconvert writes a result to a temporary file beside it and renames
it into place (:func:`compare.reports.files.atomic_write`, :func:`convert.tool.batch.write_atomically`):
a stopped run never leaves half a file under the result's name. A rename replaces *the directory
entry*, whatever it was, so before renaming, the entry is looked at (:func:`output_target`).
Policy (docs/reliability.md, "Where outputs go"):

- **a regular file, or nothing yet**: replaced atomically (temporary file + rename);
- **a symbolic link**: followed, never replaced: the file it (finally) points to is replaced
  atomically, in *its* folder, and the link stays as it was; a dangling link creates its target;
  a link loop is refused;
- **a character device or a FIFO** (``/dev/null``, a terminal, ``/dev/stdout`` on a pipe, a named
  pipe): written through -- opened and written, never renamed over, never created. The content
  is made in full first and written in one go. A FIFO must have its reader already (it is opened
  without waiting: a FIFO nobody reads is refused, never a hang);
- **a file-descriptor link** (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``), whatever it
  points to: written through, never renamed over -- a descriptor of this process through that
  very descriptor (``vcompare --json /dev/stdout > out.txt``: the JSON lands in ``out.txt``
  among the other lines printed, in order), another process's by opening it (a regular file
  behind it is appended to);
- **a block device or a socket**: refused (:class:`~convert.errors.OutputError`) -- vcompare
  never writes over a disk, and a socket cannot be opened as a file;
- **a folder**: the writer's own refusal ("is a directory").

Nothing here writes; :func:`output_target` only looks (``stat`` / ``readlink``) and
:func:`write_through` writes the bytes of a made result to a stream.
"""

from __future__ import annotations

import enum
import errno
import os
import re
import stat
import sys
from pathlib import Path
from typing import NamedTuple

from .errors import OutputError

#: How many symbolic links are followed before a chain is taken for a loop (Linux's own limit).
MAX_LINKS = 40
_FD_LINK = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd/(\d+)")


class TargetKind(enum.Enum):
    """How an output reaches its target."""

    #: A regular file or a new one: a temporary file in the target's folder, renamed over it.
    REPLACE = "replace"
    #: A character device, a FIFO, or a file-descriptor link: opened and written, never renamed over.
    STREAM = "stream"


class OutputTarget(NamedTuple):
    """Where the bytes of an output go: ``path`` (the final target of a link for REPLACE; the
    path as given for STREAM, opened through its links) and how (``kind``); ``append``: a
    regular file behind another process's file-descriptor link, added to rather than truncated;
    ``fd``: the descriptor of this process the path names (``/dev/stdout`` is 1), written
    through that very descriptor so the bytes land where the process's own output goes."""

    path: Path
    kind: TargetKind
    append: bool = False
    fd: int | None = None


def _fd_link(path: Path) -> tuple[bool, int | None]:
    """Whether following ``path`` goes through a ``/proc/<pid>/fd/<n>`` link (``/dev/stdout``,
    ``/dev/fd/1``, ``/proc/self/fd/1`` ...), and ``n`` when ``pid`` is this process. Only
    ``readlink`` / ``realpath`` are used."""
    current = os.path.abspath(path)
    for _ in range(MAX_LINKS):
        parent = os.path.realpath(os.path.dirname(current))
        current = os.path.join(parent, os.path.basename(current))
        found = _FD_LINK.fullmatch(current)
        if found:
            return True, int(found.group(2)) if int(found.group(1)) == os.getpid() else None
        if not os.path.islink(current):
            return False, None
        current = os.path.join(parent, os.readlink(current))
    return False, None


def output_target(path: str | os.PathLike[str]) -> OutputTarget:
    """Where and how the output ``path`` is written (the module docstring's policy).

    Raises :class:`OutputError` for a block device, a socket (or a link to one) and a symbolic
    link loop. A folder is returned as REPLACE: the writers refuse it in their own words.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling link: its target is created, the link stays
            return OutputTarget(Path(os.path.realpath(path)), TargetKind.REPLACE)
        return OutputTarget(path, TargetKind.REPLACE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(path, "a symbolic link loop (never replaced)") from None
        return OutputTarget(path, TargetKind.REPLACE)  # e.g. a parent that cannot be entered: the write says why
    mode = info.st_mode
    link = os.path.islink(path)
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        what = "a block device" if stat.S_ISBLK(mode) else "a socket"
        if link:
            what = f"a symbolic link to {what}"
        raise OutputError(path, f"{what}: vcompare writes results to regular files, character devices "
                                "(/dev/null, a terminal) and pipes only")
    is_fd_link, own_fd = _fd_link(path) if link else (False, None)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return OutputTarget(path, TargetKind.STREAM, fd=own_fd)
    if not link or stat.S_ISDIR(mode):
        return OutputTarget(path, TargetKind.REPLACE)
    if is_fd_link:
        return OutputTarget(path, TargetKind.STREAM, append=stat.S_ISREG(mode), fd=own_fd)
    real = Path(os.path.realpath(path))
    try:
        same = os.stat(real)
    except OSError:
        same = None
    if same is None or (same.st_dev, same.st_ino) != (info.st_dev, info.st_ino):
        return OutputTarget(path, TargetKind.STREAM)  # a link realpath cannot follow: written in place
    return OutputTarget(real, TargetKind.REPLACE)


def write_through(target: OutputTarget, data: bytes) -> None:
    """Write ``data`` to a STREAM target: opened (never created, never renamed over) and written.

    A FIFO is opened without waiting; one without a reader raises :class:`OutputError` (``a FIFO
    (named pipe) with no reader``) instead of hanging. A regular file reached this way is
    truncated, or appended to when ``target.append``. Any ``OSError`` raises :class:`OutputError`.
    """
    path = target.path
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if target.fd is not None:
        _write_own(target.fd, path, data)
        return
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputError(path, "a FIFO (named pipe) with no reader: start its reader first") from None
        raise OutputError(path, " ".join((exc.strerror or str(exc)).split())) from None
    try:
        os.set_blocking(fd, True)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            if target.append:
                os.lseek(fd, 0, os.SEEK_END)
            else:
                os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            done = os.write(fd, view)
            view = view[done:]
    except OSError as exc:
        raise OutputError(path, " ".join((exc.strerror or str(exc)).split())) from None
    finally:
        os.close(fd)


def _write_own(fd: int, path: Path, data: bytes) -> None:
    """Write ``data`` through this process's descriptor ``fd`` (``--json /dev/stdout``): at its
    current offset, after what the process already wrote there (its Python streams are flushed
    first), so ``vcompare --json /dev/stdout > out.txt`` keeps every line, in order."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise OutputError(path, " ".join((exc.strerror or str(exc)).split())) from None


__all__ = ["MAX_LINKS", "OutputTarget", "TargetKind", "output_target", "write_through"]

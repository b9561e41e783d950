"""A set of result files swapped in whole, and the cleaning of what killed runs left behind.

The unit of atomicity is **the set of files of one result** -- e.g. a single-operator result:
the summary, detail and top-N files (and ``.npy``) of one tensor -- inside a folder the user
shares with other results and files of their own. The files keep their documented names and
places; only the way they get there is staged:

1. :class:`ResultStage` makes a fresh folder ``.vcmp-XXXXXXXX.stage`` inside the destination
   folder (same file system, so the files can be renamed; mode 0700), with a lock file
   ``.vcmp-lock`` locked (``flock``) for as long as the stage lives;
2. every file of the result is written into the stage under its final name;
3. :meth:`ResultStage.commit` -- with SIGINT / SIGTERM held (:func:`convert.signals.held`) --
   lists the *stale* files (those of the same result in the folder that this result does not
   write again: ``belongs(name)`` says which names are of the result), writes a journal
   ``.vcmp-journal`` into the stage (the files to move, with their inode numbers, and the stale
   files), renames each file into the folder, removes the stale files, then the stage;
4. an exception or a signal before the commit removes the stage: the folder is as it was.

Commits into one folder are serialised by an exclusive ``flock`` on the folder itself (taken
before the signals are held, so Ctrl-C still works while waiting; where folders cannot be locked,
as on NFS, they are not serialised): two runs writing the same tensor into the same folder at the
same time leave one complete result or the other, never their files interleaved.

A file of the result whose name is taken in the folder by a symbolic link, a FIFO, a device or
a socket makes the commit fail before any rename (:class:`~compare.errors.OutputError`): the
set is never split over folders nor written through, and the entry is never replaced.

So after SIGINT or SIGTERM at any moment the folder holds the complete old result or the complete
new one (a signal during the commit is delivered once the commit is done). A result is never
half-old on disk unless the process dies in the commit itself (SIGKILL, a crash): the journal is
there for that case, and the next sweep completes the commit. Nothing is ``fsync``-ed: a power cut
is not covered.

Cleaning (:func:`sweep_leftovers`, run at the start of every run writing a result into a folder)
looks only at entries directly in the folder whose names are ours, exactly:
``.vcmp-`` + 8 characters of ``[a-z0-9_]`` + ``.tmp`` (the temporary files of
:func:`compare.reports.files.atomic_write`, a regular file) or + ``.stage`` (a staging folder, a
real folder), owned by the current user. Links, other types, other names, other owners are never
touched. Such an entry is in use while its writer lives, because the writer holds an exclusive
``flock`` on it (on the lock file, for a stage) from its creation until it is renamed or removed,
and the kernel drops the lock when the process ends, however it ends. An entry is

- **kept** when its lock is held (a live vcompare, in this process or another one, also on
  another machine when the file system passes locks on, as NFS does);
- **kept** when it changed at or after the moment given as ``before`` (the start of this run):
  a run that started after this one, or the instants between creating the file and locking it;
- **removed** otherwise (a temporary of a vcompare killed with SIGKILL, or of a version before
  the locks, whose temporaries are never locked);
- on a file system without ``flock`` (the lock cannot even be tried), removed only when it has not
  changed for :data:`STALE_AFTER` seconds (24 h): a run is never that long on one file.

A dead stage whose journal shows that some files were already renamed is **completed** instead of
removed -- unless one of those files has been replaced since (its inode is not the one the journal
recorded: a later result of the same tensor was swapped in), in which case the stage is removed.
Removing a stage removes the regular files and links directly in it, then the folder; anything
else in it (which we never create) keeps the stage where it is.
"""

from __future__ import annotations

import enum
import errno
import fcntl
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, NamedTuple

from convert.signals import check_interrupted, held, note_written

from ..errors import OutputError
from .files import TEMP_PREFIX, TEMP_SUFFIX, os_reason

STAGE_SUFFIX = ".stage"
LOCK_NAME = ".vcmp-lock"
JOURNAL_NAME = ".vcmp-journal"
_JOURNAL_VERSION = 1
#: Seconds after which a leftover is removed on a file system where locks cannot be tried.
STALE_AFTER = 24 * 3600
_LEFTOVER = re.compile(re.escape(TEMP_PREFIX) + r"[a-z0-9_]{8}(" + re.escape(TEMP_SUFFIX) + "|"
                       + re.escape(STAGE_SUFFIX) + ")")


class Sweep(NamedTuple):
    """What :func:`sweep_leftovers` did in one folder."""

    #: Temporary files and staging folders removed.
    removed: tuple[Path, ...]
    #: Files renamed into the folder to complete the commit of a run killed during it.
    completed: tuple[Path, ...]


class _Lock(enum.Enum):
    FREE = "free"  # taken by the prober: the writer is gone (or never locked)
    HELD = "held"  # a live writer holds it
    UNKNOWN = "unknown"  # locks cannot be tried on this file system


# ------------------------------------------------------------------------------ staging


class ResultStage:
    """A staging folder for the files of one result, swapped in by :meth:`commit` (module doc).

    Use it as a context manager: leaving the block without a commit (an exception, a signal)
    removes the stage and leaves the destination folder as it was. Raises :class:`OutputError`
    for every operating-system failure, naming the final path.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        try:
            self.path = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, suffix=STAGE_SUFFIX, dir=self.folder))
        except OSError as exc:
            raise OutputError(self.folder, f"cannot create a temporary folder in it: {os_reason(exc)}") from None
        self._names: list[str] = []
        self._open = True
        try:
            self._lock: int | None = _create_lock(self.path / LOCK_NAME)
        except OSError as exc:
            self._lock = None
            self.discard()
            raise OutputError(self.folder, f"cannot create a temporary file in it: {os_reason(exc)}") from None

    def __enter__(self) -> ResultStage:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._open:
            self.discard()

    def write(self, name: str, write: Callable[[BinaryIO], object]) -> Path:
        """Create the file ``name`` of the result in the stage with ``write(handle)``.

        Returns its final path in the folder. ``name`` must be a plain file name, not written
        before in this stage. The file gets the mode ``open(path, "w")`` would give it.
        """
        if name in self._names or name.startswith((LOCK_NAME, JOURNAL_NAME)) or not _plain(name):
            raise ValueError(f"not a new plain file name of this result: {name!r}")
        target, staged = self.folder / name, self.path / name
        try:
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            self._names.append(name)
            with os.fdopen(fd, "wb") as handle:
                write(handle)
        except OSError as exc:
            raise OutputError(target, os_reason(exc, temporary=os.fspath(staged))) from None
        return target

    def write_bytes(self, name: str, data: bytes) -> Path:
        """:meth:`write` of ``data``."""
        return self.write(name, lambda handle: handle.write(data))

    def commit(self, belongs: Callable[[str], bool]) -> list[Path]:
        """Swap the staged files in; remove the folder's other files of the result. Returns those.

        ``belongs(name)`` is true for the names of the folder's files that are part of this result
        (whichever run wrote them). Signals are held during the commit. When a rename fails after
        the first one, the stage and its journal are kept (the next sweep completes the commit)
        and :class:`OutputError` says so; any earlier failure leaves the folder as it was.
        """
        if not self._open:
            raise ValueError("this stage was already committed or discarded")
        check_interrupted()  # a signal swallowed while the files were made: nothing is swapped in
        with _folder_locked(self.folder), held():
            names = set(self._names)
            try:
                stale = sorted(n for n in os.listdir(self.folder) if belongs(n) and n not in names)
                for name in self._names:
                    target = self.folder / name
                    if target.is_dir() and not target.is_symlink():
                        raise OutputError(target, "is a directory")
                    problem = _not_replaceable(target)
                    if problem is not None:
                        raise OutputError(target, problem)
                moves = [(name, os.lstat(self.path / name).st_ino) for name in self._names]
                _write_journal(self.path, moves, stale)
            except OSError as exc:
                raise OutputError(self.folder, os_reason(exc)) from None
            for count, name in enumerate(self._names):
                try:
                    os.replace(self.path / name, self.folder / name)
                except OSError as exc:
                    self._close(keep=count > 0)  # once a file is in, only completing it restores a whole result
                    reason = os_reason(exc, temporary=os.fspath(self.path / name))
                    if count > 0:
                        reason += (f"; {count} file(s) of the new result are in place, the next run writing "
                                   f"into this folder finishes the swap-in")
                    raise OutputError(self.folder / name, reason) from None
            removed, failed = _remove_files(self.folder, stale)
            for name in self._names:
                note_written(self.folder / name)
            self._close(keep=False)
            if failed:
                path, reason = failed[0]
                raise OutputError(path, f"a file of an earlier run of this result could not be removed: {reason}")
        return removed

    def discard(self) -> None:
        """Remove the stage and everything written into it (signals held); nothing else changes."""
        with held():
            self._close(keep=False)

    def _close(self, *, keep: bool) -> None:
        self._open = False
        if not keep:
            _remove_stage(self.path)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


@contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder for the block (waits; a signal ends the wait).

    Where the folder cannot be opened or locked (NFS refuses an exclusive lock on a read-only
    descriptor) the block runs unlocked.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


def _not_replaceable(target: Path) -> str | None:
    """Why the folder entry ``target`` must not be renamed over by a result's file (None: it is a
    regular file, or nothing). A result's files are swapped in as one set, by renames inside one
    folder, so they are never written through: a symbolic link (the link would be replaced, or the
    set split over two folders) or a FIFO, device or socket in their place is refused, with the
    folder left as it was."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return os_reason(exc)
    if stat.S_ISLNK(info.st_mode):
        return (f"a symbolic link (to {os.readlink(target)}) is in the place of a file of this result; the "
                "result's files are swapped in together and never replace a link: remove it or choose another folder")
    if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
        return ("a FIFO, device or socket is in the place of a file of this result; the result's files are "
                "swapped in together and never replace one: remove it or choose another folder")
    return None


def _create_lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # readable and writable by the cleaner whatever the umask
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # no locks on this file system: the cleaner falls back on the age (module doc)
    return fd


def _write_journal(stage: Path, moves: list[tuple[str, int]], stale: list[str]) -> None:
    """The journal (names as hex of their bytes: any file name survives JSON), written then renamed."""
    record = {"version": _JOURNAL_VERSION,
              "move": [[os.fsencode(name).hex(), ino] for name, ino in moves],
              "remove": [os.fsencode(name).hex() for name in stale]}
    tmp = stage / (JOURNAL_NAME + ".tmp")
    with open(tmp, "w", encoding="ascii") as handle:
        json.dump(record, handle)
    os.replace(tmp, stage / JOURNAL_NAME)


def _read_journal(stage: Path) -> tuple[list[tuple[str, int]], list[str]] | None:
    """``(moves, stale)`` of a stage's journal; ``None`` when there is none or it is not ours."""
    try:
        with open(stage / JOURNAL_NAME, encoding="ascii") as handle:
            record = json.load(handle)
        if record.get("version") != _JOURNAL_VERSION:
            return None
        moves = [(os.fsdecode(bytes.fromhex(name)), int(ino)) for name, ino in record["move"]]
        stale = [os.fsdecode(bytes.fromhex(name)) for name in record["remove"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if any(not _plain(name) for name, _ in moves) or any(not _plain(name) for name in stale):
        return None
    return moves, stale


def _plain(name: str) -> bool:
    """A file name directly in a folder: no separator, not empty, not ``.`` / ``..``."""
    return bool(name) and name not in (".", "..") and "/" not in name and os.sep not in name


def _remove_files(folder: Path, names: list[str]) -> tuple[list[Path], list[tuple[Path, str]]]:
    removed: list[Path] = []
    failed: list[tuple[Path, str]] = []
    for name in names:
        path = folder / name
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed.append((path, os_reason(exc)))
    return removed, failed


def _remove_stage(stage: Path) -> bool:
    """Remove the regular files and links directly in ``stage``, then the folder; True when gone."""
    try:
        entries = list(os.scandir(stage))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    for entry in entries:
        try:
            if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
        except OSError:
            pass
    try:
        os.rmdir(stage)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


# ------------------------------------------------------------------------------ cleaning


def sweep_leftovers(folder: str | os.PathLike[str], *, before: float) -> Sweep:
    """Complete or remove the temporaries of dead vcompare runs in ``folder`` (module doc).

    ``before``: the start of the calling run (``time.time()``); entries changed at or after it
    are kept. Never raises for a file it cannot read, lock or remove: that entry is kept (the
    next run tries again). Signals are held while one entry is completed or removed.
    """
    base = Path(folder)
    removed: list[Path] = []
    completed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return Sweep((), ())
    uid = os.geteuid()
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_uid != uid:
            continue
        path = Path(entry.path)
        if match.group(1) == TEMP_SUFFIX and stat.S_ISREG(info.st_mode):
            if _sweep_file(path, info, before):
                removed.append(path)
        elif match.group(1) == STAGE_SUFFIX and stat.S_ISDIR(info.st_mode):
            gone, done = _sweep_stage(base, path, before)
            completed += done
            if gone:
                removed.append(path)
    return Sweep(tuple(removed), tuple(completed))


def _probe(path: Path, ino: int | None = None) -> tuple[_Lock, int | None]:
    """Try the writer's lock on ``path``: ``(state, fd)``; the caller closes ``fd`` (lock taken).

    ``FREE`` with ``fd=None``: there is no such file. A file that is not the regular file of
    inode ``ino`` (when given) counts as ``HELD``: it is not the one that was looked at.
    """
    fd = None
    for flags in (os.O_RDWR, os.O_RDONLY):
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except FileNotFoundError:
            return _Lock.FREE, None
        except PermissionError:
            continue
        except OSError:
            return _Lock.HELD, None
    if fd is None:
        return _Lock.UNKNOWN, None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (ino is not None and info.st_ino != ino):
        os.close(fd)
        return _Lock.HELD, None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return _Lock.HELD, None
        return _Lock.UNKNOWN, None
    return _Lock.FREE, fd


def _expired(state: _Lock, changed: float, before: float) -> bool:
    if state is _Lock.FREE:
        return changed < before
    if state is _Lock.UNKNOWN:
        return changed < time.time() - STALE_AFTER
    return False


def _sweep_file(path: Path, info: os.stat_result, before: float) -> bool:
    state, fd = _probe(path, info.st_ino)
    try:
        if not _expired(state, info.st_mtime, before):
            return False
        with held():
            try:
                if os.lstat(path).st_ino != info.st_ino:  # renamed and replaced meanwhile
                    return False
                path.unlink()
            except OSError:
                return False
        return True
    finally:
        if fd is not None:
            os.close(fd)


def _sweep_stage(folder: Path, stage: Path, before: float) -> tuple[bool, list[Path]]:
    """``(removed, completed files)`` for one staging folder."""
    state, fd = _probe(stage / LOCK_NAME)
    try:
        if not _expired(state, _last_change(stage), before):
            return False, []
        with _folder_locked(folder), held():
            finished, done = _complete(folder, stage)
            return finished and _remove_stage(stage), done
    finally:
        if fd is not None:
            os.close(fd)


def _last_change(stage: Path) -> float:
    """The newest modification time of the stage and the entries directly in it."""
    try:
        newest = os.lstat(stage).st_mtime
        for entry in os.scandir(stage):
            try:
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
            except OSError:
                continue
    except OSError:
        return time.time()  # unreadable: treated as changed just now (kept)
    return newest


def _complete(folder: Path, stage: Path) -> tuple[bool, list[Path]]:
    """Finish a dead stage's commit when it had begun and nothing replaced its files since.

    Returns ``(the stage can be removed, files renamed into the folder)``: a rename that fails
    keeps the stage for the next sweep.
    """
    journal = _read_journal(stage)
    if journal is None:
        return True, []
    moves, stale = journal
    pending = [name for name, _ in moves if os.path.lexists(stage / name)]
    moved = [(name, ino) for name, ino in moves if name not in pending]
    if not moved:
        return True, []  # the commit had not begun: the old result is whole
    for name, ino in moved:
        try:
            if os.lstat(folder / name).st_ino != ino:
                return True, []  # a later result replaced it: this one is out of date
        except OSError:
            return True, []
    done: list[Path] = []
    for name in pending:
        try:
            os.replace(stage / name, folder / name)
        except OSError:
            return False, done
        done.append(folder / name)
    _remove_files(folder, stale)
    return True, done


__all__ = ["JOURNAL_NAME", "LOCK_NAME", "STAGE_SUFFIX", "STALE_AFTER", "ResultStage", "Sweep", "sweep_leftovers"]

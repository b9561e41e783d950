"""What a folder entry is, told without opening it: a regular file, a folder, or something to
name and pass over.

Dump folders come from other tools and other users; a FIFO opened for reading blocks until a
writer comes, ``/dev/zero`` never ends, ``ln -s loop loop`` makes every ``stat`` fail, and a link
may point into a folder the user cannot enter. Policy (docs/reliability.md): such an entry is
never opened, never hides its siblings, and is named with what it is --
:func:`entry_problem` for an entry of a listed folder, :func:`special_file_problem` for a path
the user gives (a rule, a mapping, a policy, a dump file), :func:`os_problem` for an ``OSError``.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

#: ``(path, reason)``: a file or folder that was not used, and why (``Run.skipped`` rows).
Problem = tuple[Path, str]


def special_kind(mode: int) -> str | None:
    """What a ``st_mode`` is when it is neither a regular file nor a folder (``a FIFO (named
    pipe)``, ``a character device``, ``a block device``, ``a socket``); None for those two."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def os_problem(exc: OSError, path: Path | str) -> str:
    """An ``OSError`` about ``path`` as a diagnosis: ``permission denied: PATH``, ``symbolic link
    loop: PATH`` (``ELOOP``), else ``PATH: <the system's reason>``."""
    if isinstance(exc, PermissionError):
        return f"permission denied: {path}"
    if exc.errno == errno.ELOOP:
        return f"symbolic link loop: {path}"
    return f"{path}: {exc.strerror or exc}"


def _target(path: Path) -> str:
    """Where the symbolic link ``path`` points, as written (``?`` when it cannot be read)."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def entry_problem(path: Path) -> tuple[str, bool] | None:
    """Why the folder entry ``path`` is neither a regular file nor a folder (nor a link to one),
    and whether it is a special file (True: a FIFO, a device, a socket, or a link to one; False:
    a link that cannot be followed); None when it is a file or a folder. Nothing is opened: only
    ``stat`` / ``readlink``.

    Reasons: ``a FIFO (named pipe), not a regular file: never opened`` (and the other
    :func:`special_kind` kinds), ``a symbolic link to /dev/zero, a character device, not a
    regular file: never opened``, ``a broken symbolic link (its target X does not exist)``,
    ``a symbolic link loop (it points to X)``, ``permission denied: PATH`` (a link into a folder the user
    cannot enter), or the system's reason.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"a broken symbolic link (its target {_target(path)} does not exist)", False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a symbolic link loop (it points to {_target(path)})", False
        link = f" (a symbolic link to {_target(path)})" if os.path.islink(path) else ""
        return os_problem(exc, path) + link, False
    kind = special_kind(info.st_mode)
    if kind is None:
        return None
    what = f"a symbolic link to {_target(path)}, {kind}" if os.path.islink(path) else kind
    return f"{what}, not a regular file: never opened", True


def special_file_problem(path: Path | str) -> str | None:
    """Why the path a user named (a rule, a mapping, a policy, a dump file) must not be read: it
    is (or links to) a FIFO, a device or a socket -- ``a FIFO (named pipe), not a regular file:
    vcompare reads no pipes or devices``. None for a regular file, a folder, or a path that cannot
    be looked at (the reader's own open then says why). Nothing is opened: a FIFO would block
    until a writer comes, ``/dev/zero`` would be read until memory runs out."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    kind = special_kind(info.st_mode)
    if kind is None:
        return None
    link = f" (a symbolic link to {_target(Path(path))})" if os.path.islink(path) else ""
    return f"{kind}{link}, not a regular file: vcompare reads no pipes or devices"


@dataclass(frozen=True)
class FolderEntries:
    """One folder's entries, told apart without opening any (each tuple sorted by name).

    ``files``: regular files (or links to one); ``folders``: folders (or links to one);
    ``special``: FIFOs, devices, sockets (or links to one) with why; ``unresolved``: entries that
    cannot be followed -- broken links, link loops, links into folders that cannot be entered --
    with why (:func:`entry_problem`).
    """

    files: tuple[os.DirEntry, ...]
    folders: tuple[os.DirEntry, ...]
    special: tuple[Problem, ...]
    unresolved: tuple[Problem, ...]

    @property
    def problems(self) -> tuple[Problem, ...]:
        """Every entry that is neither a file nor a folder, with why (special, then unresolved)."""
        return self.special + self.unresolved


def list_entries(folder: Path) -> FolderEntries:
    """The entries of ``folder`` (:class:`FolderEntries`). One bad entry never hides the others.

    Raises ``OSError`` when the folder itself cannot be listed.
    """
    files: list[os.DirEntry] = []
    folders: list[os.DirEntry] = []
    special: list[Problem] = []
    unresolved: list[Problem] = []
    with os.scandir(folder) as it:
        for entry in sorted(it, key=lambda e: e.name):
            try:
                if entry.is_file():
                    files.append(entry)
                    continue
                if entry.is_dir():
                    folders.append(entry)
                    continue
            except OSError:
                pass  # a link loop, or a link into a folder that cannot be entered: said below
            found = entry_problem(Path(entry.path))
            if found is not None:
                why, is_special = found
                (special if is_special else unresolved).append((Path(entry.path), why))
    return FolderEntries(tuple(files), tuple(folders), tuple(special), tuple(unresolved))

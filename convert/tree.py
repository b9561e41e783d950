"""Dump trees: the bounded folder walk, and the leaf folder of an Ascend dump tree.

The dump tree of an Ascend run is ``{time}/{device_id}/{model_name}/{model_id}/{data_index}/``
with ``time`` formatted ``YYYYMMDDhhmmss``; :func:`resolve_dump_folder` finds the leaf that holds
the dump files. :func:`walk_leaves` is the one walk every loader uses to find leaf folders under
a user-given root (bounded in depth, symlink loops never followed twice).

Hostile trees (docs/reliability.md): a folder entry that cannot be told apart -- a symbolic link
to itself (``ln -s loop loop``), a link into a folder the user cannot enter, a broken link -- is
one entry passed over with its reason, never the end of its folder's listing; a folder that
cannot be listed is named (``permission denied: PATH``). What each entry is comes from
:mod:`convert.entries` (nothing is opened).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .entries import Problem, list_entries, os_problem, special_file_problem
from .errors import CompareError
from .names.ascend import IGNORED_FILES, classify_name
from .names.hashed import is_hashed_name

T = TypeVar("T")

#: How deep :func:`resolve_dump_folder` walks below the given folder.
MAX_SEARCH_DEPTH = 6

_TIME_DIR_RE = re.compile(r"[0-9]{14}")

def walk_leaves(root: Path, max_depth: int, classify: Callable[[Path], T | None], *,
                skip_dir: Callable[[str], bool] = lambda name: False,
                problems: list[Problem] | None = None) -> list[tuple[Path, T]]:
    """Folders at most ``max_depth`` levels below ``root`` (``root`` included) that ``classify`` accepts.

    ``classify(folder)`` returns something (kept with the folder) for a leaf, ``None`` otherwise; a
    leaf is not searched further. Sub-folders are visited in sorted order; ``skip_dir(name)``
    prunes by name; symlink loops are cut (each folder is visited once, by device and inode).

    Edge cases: an entry that cannot be told apart (``ln -s loop loop``, a link into a folder
    that cannot be entered) or a broken link is passed over and its siblings are still walked; a
    folder that cannot be listed is passed over. Each goes to ``problems`` (when given) with its
    reason (``permission denied: PATH``, ``a symbolic link loop ...``); FIFOs and other special
    files are left to the listing of the leaf that holds them.
    """
    found: list[tuple[Path, T]] = []
    seen: set[tuple[int, int]] = set()

    def note(path: Path, why: str) -> None:
        if problems is not None and all(p != path for p, _ in problems):
            problems.append((path, why))

    def walk(folder: Path, depth: int) -> None:
        try:
            stat_ = folder.stat()
        except OSError as exc:
            note(folder, os_problem(exc, folder))
            return
        key = (stat_.st_dev, stat_.st_ino)
        if key in seen:
            return
        seen.add(key)
        info = classify(folder)
        if info is not None:
            found.append((folder, info))
            return
        if depth >= max_depth:
            return
        try:
            entries = list_entries(folder)
        except OSError as exc:
            note(folder, os_problem(exc, folder))
            return
        for path, why in entries.unresolved:
            if not skip_dir(path.name):
                note(path, why)  # a link loop, a broken link, a link that cannot be followed
        for entry in entries.folders:
            if not skip_dir(entry.name):
                walk(Path(entry.path), depth + 1)

    walk(Path(root), 0)
    return found


def is_file_entry(entry: os.DirEntry) -> bool:
    """Whether a listed entry is a regular file (or a link to one); False when it cannot be told."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_folder_entry(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _holds_dump_files(folder: Path) -> bool:
    """Whether ``folder`` directly holds an entry other than a folder named by a dump naming rule
    (or a hashed name): a FIFO or a broken link under a dump file's name makes a leaf too, whose
    listing names it. False when the folder cannot be listed (the walk names it)."""
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name in IGNORED_FILES or _is_folder_entry(entry):
                    continue
                if is_hashed_name(entry.name) or classify_name(entry.name)[1] is not None:
                    return True
    except OSError:
        return False
    return False


def find_dump_folders(root: Path, max_depth: int = MAX_SEARCH_DEPTH, *,
                      problems: list[Problem] | None = None) -> list[Path]:
    """Folders at most ``max_depth`` levels below ``root`` that directly hold dump files.

    A folder that holds dump files is not searched further; what could not be walked goes to
    ``problems`` (see :func:`walk_leaves`).
    """
    return [folder for folder, _ in walk_leaves(root, max_depth, lambda f: True if _holds_dump_files(f) else None,
                                                problems=problems)]


def _newness(folder: Path, root: Path) -> tuple:
    """Sort key of a candidate dump folder: ``time`` dir, then numeric ``data_index``, then mtime."""
    try:
        rel = folder.relative_to(root.parent).parts
    except ValueError:
        rel = folder.parts
    times = [part for part in rel if _TIME_DIR_RE.fullmatch(part)]
    time = times[-1] if times else ""
    index = int(folder.name) if folder.name.isdigit() else -1
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return (time, index, mtime, str(folder))


def resolve_dump_folder(path: str | os.PathLike, *,
                        problems: list[Problem] | None = None) -> tuple[Path, list[str]]:
    """The folder that holds the dump files of ``path``, and notes on how it was chosen.

    ``path`` may be the leaf folder holding the dump files or any parent of
    ``{time}/{device_id}/{model_name}/{model_id}/{data_index}``. If ``path`` itself holds dump
    files it is used. Otherwise folders up to :data:`MAX_SEARCH_DEPTH` levels below are searched;
    of several, the newest is used -- by the ``time`` folder (``YYYYMMDDhhmmss``), then by the
    numeric ``data_index``, then by modification time -- and a note names it and how many were
    found. When nothing below holds dump files, ``path`` itself is returned (so that the error
    about its files, or its emptiness, names it).

    ``problems`` (when given) receives the entries of the walk that could not be used and why: a
    link loop or a broken link is passed over (its siblings are still searched), a folder that
    cannot be listed is named (``permission denied: PATH``).

    Raises :class:`CompareError` if ``path`` does not exist, is not a folder, or is a FIFO or a
    device.
    """
    root = Path(path)
    if not root.exists():
        raise CompareError(f"dump folder {root} does not exist")
    if not root.is_dir():
        special = special_file_problem(root)
        if special is not None:
            raise CompareError(f"dump folder {root}: {special}")
        raise CompareError(f"{root} is a file, not a dump folder; give the folder that holds it")
    if _holds_dump_files(root):
        return root, []
    candidates = find_dump_folders(root, problems=problems)
    if not candidates:
        return root, []
    if len(candidates) == 1:
        return candidates[0], [f"using dump folder {candidates[0]} (found under {root})"]
    chosen = max(candidates, key=lambda f: _newness(f, root))
    return chosen, [f"using dump folder {chosen} (newest of {len(candidates)} found under {root})"]

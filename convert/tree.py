"""Dump trees: the bounded folder walk, and the leaf folder of an Ascend dump tree.

The dump tree of an Ascend run is ``{time}/{device_id}/{model_name}/{model_id}/{data_index}/``
with ``time`` formatted ``YYYYMMDDhhmmss``; :func:`resolve_dump_folder` finds the leaf that holds
the dump files. :func:`walk_leaves` is the one walk every loader uses to find leaf folders under
a user-given root (bounded in depth, symlink loops never followed twice).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import CompareError
from .names.ascend import IGNORED_FILES, classify_name
from .names.hashed import is_hashed_name

T = TypeVar("T")

#: How deep :func:`resolve_dump_folder` walks below the given folder.
MAX_SEARCH_DEPTH = 6

_TIME_DIR_RE = re.compile(r"[0-9]{14}")



def walk_leaves(root: Path, max_depth: int, classify: Callable[[Path], T | None], *,
                skip_dir: Callable[[str], bool] = lambda name: False) -> list[tuple[Path, T]]:
    """Folders at most ``max_depth`` levels below ``root`` (``root`` included) that ``classify`` accepts.

    ``classify(folder)`` returns something (kept with the folder) for a leaf, ``None`` otherwise; a
    leaf is not searched further. Sub-folders are visited in sorted order; ``skip_dir(name)``
    prunes by name; symlink loops are cut (each folder is visited once, by device and inode);
    unreadable folders are passed over.
    """
    found: list[tuple[Path, T]] = []
    seen: set[tuple[int, int]] = set()

    def walk(folder: Path, depth: int) -> None:
        try:
            stat = folder.stat()
        except OSError:
            return
        key = (stat.st_dev, stat.st_ino)
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
            with os.scandir(folder) as entries:
                subs = sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=True) and not skip_dir(e.name))
        except OSError:
            return
        for sub in subs:
            walk(sub, depth + 1)

    walk(Path(root), 0)
    return found


def is_file_entry(entry: os.DirEntry) -> bool:
    """Whether a listed entry is a regular file (or a link to one); False when it cannot be told."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _holds_dump_files(folder: Path) -> bool:
    """Whether ``folder`` directly holds a file named by a dump naming rule (or a hashed name)."""
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name in IGNORED_FILES or not is_file_entry(entry):
                    continue
                if is_hashed_name(entry.name) or classify_name(entry.name)[1] is not None:
                    return True
    except OSError:
        return False
    return False


def find_dump_folders(root: Path, max_depth: int = MAX_SEARCH_DEPTH) -> list[Path]:
    """Folders at most ``max_depth`` levels below ``root`` that directly hold dump files.

    A folder that holds dump files is not searched further.
    """
    return [folder for folder, _ in walk_leaves(root, max_depth, lambda f: True if _holds_dump_files(f) else None)]


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


def resolve_dump_folder(path: str | os.PathLike) -> tuple[Path, list[str]]:
    """The folder that holds the dump files of ``path``, and notes on how it was chosen.

    ``path`` may be the leaf folder holding the dump files or any parent of
    ``{time}/{device_id}/{model_name}/{model_id}/{data_index}``. If ``path`` itself holds dump
    files it is used. Otherwise folders up to :data:`MAX_SEARCH_DEPTH` levels below are searched;
    of several, the newest is used -- by the ``time`` folder (``YYYYMMDDhhmmss``), then by the
    numeric ``data_index``, then by modification time -- and a note names it and how many were
    found. When nothing below holds dump files, ``path`` itself is returned (so that the error
    about its files, or its emptiness, names it).

    Raises :class:`CompareError` if ``path`` does not exist or is not a folder.
    """
    root = Path(path)
    if not root.exists():
        raise CompareError(f"dump folder {root} does not exist")
    if not root.is_dir():
        raise CompareError(f"{root} is a file, not a dump folder; give the folder that holds it")
    if _holds_dump_files(root):
        return root, []
    candidates = find_dump_folders(root)
    if not candidates:
        return root, []
    if len(candidates) == 1:
        return candidates[0], [f"using dump folder {candidates[0]} (found under {root})"]
    chosen = max(candidates, key=lambda f: _newness(f, root))
    return chosen, [f"using dump folder {chosen} (newest of {len(candidates)} found under {root})"]



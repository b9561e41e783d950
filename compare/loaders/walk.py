"""The one bounded folder walk used to find dump leaf folders under a user-given root."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


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

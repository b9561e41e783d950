"""Atomic file writing for every report: a temporary file in the target folder, then a rename.

An interrupted run therefore never leaves a half-written result, and an existing result is
replaced only as a whole.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ..signals import note_written


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Create ``path`` by calling ``write(handle)`` on a temporary file, then renaming it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # short fixed-length temporary names: the final name may already be close to NAME_MAX
    fd, tmp = tempfile.mkstemp(prefix=".vcmp-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
        note_written(path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> Path:
    """UTF-8 text, written exactly (no newline translation)."""
    return atomic_write_bytes(path, text.encode("utf-8"))

"""Who may have written a file that vcompare is about to execute.

One rule for everything vcompare loads as code -- ``-custom`` converter plugins
(:mod:`convert.layouts.plugins`), the compiled kernel objects and numba's on-disk cache
(:mod:`compare.kernels.native`, :mod:`compare.kernels.native.jit`): the folder and the file must be
owned by the current user or by root and writable by nobody else. Whoever can write a folder can
replace the files in it, so a group- or world-writable folder (a shared ``/tmp/cache``) is refused
even when its files look right. The functions return the problem as text (None when there is
none); callers word the refusal and decide what happens next. On a platform without
``os.getuid`` (Windows) ownership is not checked.
"""

from __future__ import annotations

import os
import stat

#: The bytes of a kernel object or index are read at most up to this size (a larger file is refused).
MAX_CODE_BYTES = 64 * 2**20


def owner_problem(info: os.stat_result) -> str | None:
    """``"owned by uid N, not ..."`` unless the current user or root owns it."""
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid not in (getuid(), 0):
        return f"owned by uid {info.st_uid}, not by the current user (uid {getuid()}) or root"
    return None


def writable_problem(info: os.stat_result) -> str | None:
    """``"it is world-writable"`` / ``"it is group-writable"``, or None."""
    if info.st_mode & stat.S_IWOTH:
        return "it is world-writable"
    if info.st_mode & stat.S_IWGRP:
        return "it is group-writable"
    return None


def folder_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why code must not be loaded from ``folder`` (None: it may): it cannot be examined, is not
    a folder, is writable by others, or is owned by another user."""
    try:
        info = os.stat(folder)
    except OSError as exc:
        return f"cannot stat it ({exc.strerror or exc})"
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    return writable_problem(info) or owner_problem(info)


def file_problem(info: os.stat_result) -> str | None:
    """Why an opened file (its ``fstat``) must not be loaded as code, or None."""
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    return writable_problem(info) or owner_problem(info)


def read_trusted(folder: str | os.PathLike[str], name: str, limit: int = MAX_CODE_BYTES) -> bytes:
    """The bytes of file ``name`` in ``folder``, checked on the open file itself.

    ``name`` must be a bare file name (no separator, not ``.``/``..``); the file is opened without
    following a symbolic link, must pass :func:`file_problem` and hold at most ``limit`` bytes.
    Raises :class:`PermissionError` (the reason in its message) or :class:`OSError`. The folder
    itself is the caller's to check (:func:`folder_problem`).
    """
    if not name or name in (".", "..") or "/" in name or (os.sep in name) or (os.altsep and os.altsep in name):
        raise PermissionError(f"{name!r} is not a bare file name")
    path = os.path.join(os.fspath(folder), name)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        problem = file_problem(os.fstat(handle.fileno()))
        if problem:
            raise PermissionError(f"{path}: {problem}")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise PermissionError(f"{path}: more than {limit} bytes")
    return data


__all__ = ["MAX_CODE_BYTES", "file_problem", "folder_problem", "owner_problem", "read_trusted", "writable_problem"]

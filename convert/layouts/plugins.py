"""User converter plugins: ``<custom_dir>/format_convert/convert_<FROM>_to_<TO>.py``.

Contract (as the reference tool's manual describes it):

- FROM and TO match ``[A-Za-z0-9_]{1,128}`` and are format names (``NCHW``, ``FRACTAL_Z``...).
- The module defines ``convert(shape_from, shape_to, array)`` returning a numpy array; ``array``
  is the flat 1-D data and the shapes are lists. Modules whose name contains ``to_FRACTAL_Z``
  take a 4th parameter, ``group``. The parameter count is checked exactly; a module with the
  wrong count (or without ``convert``) is skipped and a warning is recorded.
- A plugin overrides the built-in converter for the same pair.

Security policy (checked before anything is executed; a failure is a LayoutError whose message
says what to fix, and nothing of the plugin runs):

- the plugin folder ``custom_dir`` and its ``format_convert`` folder must be owned by the
  current user or by root and must not be group- or world-writable (whoever can write a folder
  can swap the files in it);
- each plugin file must be a regular file (a symbolic link is refused: its target may live in a
  folder nobody checked), owned by the current user or root, not group- or world-writable, and
  at most 1 MiB.

The file is opened once (``O_NOFOLLOW``), the checks are made on that open file (``fstat``) and
the bytes executed are the bytes read from it: the file cannot be swapped between the check and
the import. The module is compiled from those bytes and executed as ``format_convert.<stem>``;
``sys.path`` and ``sys.modules`` are left untouched. The reference tool's whole-tree walk (every
file under ``-c`` checked, at most 1000 files, 50 levels) is not needed: vcompare reads nothing
under ``custom_dir`` but the ``format_convert/convert_*.py`` files.
"""

from __future__ import annotations

import inspect
import os
import re
import stat
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..trust import owner_problem, writable_problem
from .shapes import LayoutError

#: Largest plugin file accepted, in bytes.
MAX_PLUGIN_BYTES = 1 << 20

PLUGIN_FOLDER = "format_convert"
_PLUGIN_NAME = re.compile(r"convert_([A-Za-z0-9_]{1,128}?)_to_([A-Za-z0-9_]{1,128})\.py")


@dataclass(frozen=True)
class PluginConverter:
    """A converter loaded from a plugin file; calling it calls the module's ``convert``."""

    function: Callable[..., np.ndarray]
    path: Path
    src: str
    dst: str

    def __call__(self, *args: object) -> np.ndarray:
        return self.function(*args)


class PluginSet(dict):
    """``{(FROM, TO): PluginConverter}`` (upper-case names) plus what was skipped and why.

    ``warnings`` holds one sentence per skipped file; ``folder`` is the folder that was scanned.
    """

    def __init__(self, folder: Path | None = None) -> None:
        super().__init__()
        self.folder = folder
        self.warnings: list[str] = []


_owner_problem = owner_problem  # the one rule of convert.trust
_writable_problem = writable_problem


def check_plugin_folder(folder: Path) -> None:
    """Refuse (LayoutError) a plugin folder that someone else owns or could write into."""
    try:
        info = os.stat(folder)
    except OSError as exc:
        raise LayoutError(f"refusing converter plugins in {folder}: cannot stat it ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise LayoutError(f"refusing converter plugins in {folder}: not a folder")
    writable = _writable_problem(info)
    if writable:
        fix = "chmod go-w" if writable.startswith("it is world") else "chmod g-w"
        raise LayoutError(
            f"refusing converter plugins in {folder}: {writable}, so others could replace the plugins "
            f"({fix} {folder} to use it)"
        )
    owner = _owner_problem(info)
    if owner:
        raise LayoutError(f"refusing converter plugins in {folder}: the folder is {owner}")


def _check_info(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise LayoutError(f"refusing converter plugin {path}: not a regular file")
    if info.st_mode & stat.S_IWOTH:
        raise LayoutError(f"refusing converter plugin {path}: it is world-writable (chmod o-w to use it)")
    if info.st_mode & stat.S_IWGRP:
        raise LayoutError(f"refusing converter plugin {path}: it is group-writable (chmod g-w to use it)")
    owner = _owner_problem(info)
    if owner:
        raise LayoutError(f"refusing converter plugin {path}: {owner}")
    if info.st_size > MAX_PLUGIN_BYTES:
        raise LayoutError(f"refusing converter plugin {path}: {info.st_size} bytes, more than {MAX_PLUGIN_BYTES}")


def check_plugin_file(path: Path) -> None:
    """Refuse (LayoutError) a plugin file that others could have written, a link, or one too large."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise LayoutError(f"refusing converter plugin {path}: cannot stat it ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise LayoutError(f"refusing converter plugin {path}: it is a symbolic link (copy the file itself there)")
    _check_info(path, info)


def _read_checked(path: Path) -> bytes:
    """The bytes of a plugin file, read from the very file descriptor the checks were made on."""
    check_plugin_file(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LayoutError(f"refusing converter plugin {path}: cannot open it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as handle:
        _check_info(path, os.fstat(handle.fileno()))
        data = handle.read(MAX_PLUGIN_BYTES + 1)
    if len(data) > MAX_PLUGIN_BYTES:
        raise LayoutError(f"refusing converter plugin {path}: more than {MAX_PLUGIN_BYTES} bytes")
    return data


def _import_file(path: Path) -> object:
    """Check, read, compile and execute one plugin file as module ``format_convert.<stem>``."""
    source = _read_checked(path)
    name = f"{PLUGIN_FOLDER}.{path.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - the user's own plugin, checked above
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported the same way
        raise LayoutError(f"converter plugin {path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _parameter_count(function: Callable[..., object]) -> int | None:
    try:
        return len(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def load_plugins(custom_dir: str | os.PathLike[str]) -> PluginSet:
    """Load every ``convert_<FROM>_to_<TO>.py`` under ``custom_dir/format_convert``.

    Returns a :class:`PluginSet` (a dict keyed by upper-case ``(FROM, TO)``); files skipped for
    their name or signature are explained in its ``warnings``. A missing ``format_convert``
    folder gives an empty set with a warning. Raises LayoutError for a refused folder (see the
    module policy) or a refused or broken file.
    """
    root = Path(custom_dir)
    folder = root / PLUGIN_FOLDER
    plugins = PluginSet(folder)
    check_plugin_folder(root)
    if not folder.is_dir():
        plugins.warnings.append(f"no {PLUGIN_FOLDER} folder in {custom_dir}: no converter plugins loaded")
        return plugins
    check_plugin_folder(folder)
    for path in sorted(folder.iterdir()):
        if path.suffix != ".py":
            continue
        match = _PLUGIN_NAME.fullmatch(path.name)
        if match is None:
            plugins.warnings.append(
                f"{path.name}: ignored, a converter plugin is named convert_<FROM>_to_<TO>.py"
            )
            continue
        src, dst = match.group(1), match.group(2)
        module = _import_file(path)
        function = getattr(module, "convert", None)
        if not callable(function):
            plugins.warnings.append(f"{path}: ignored, it defines no convert() function")
            continue
        expected = 4 if "to_FRACTAL_Z" in path.stem else 3
        count = _parameter_count(function)
        if count != expected:
            wanted = "(shape_from, shape_to, array, group)" if expected == 4 else "(shape_from, shape_to, array)"
            plugins.warnings.append(
                f"{path}: ignored, convert() takes {count} parameters but must take {expected} {wanted}"
            )
            continue
        plugins[(src.upper(), dst.upper())] = PluginConverter(function, path, src, dst)
    return plugins

"""User converter plugins: ``<custom_dir>/format_convert/convert_<FROM>_to_<TO>.py``.

Contract (as the reference tool's manual describes it):

- FROM and TO match ``[A-Za-z0-9_]{1,128}`` and are format names (``NCHW``, ``FRACTAL_Z``...).
- The module defines ``convert(shape_from, shape_to, array)`` returning a numpy array; ``array``
  is the flat 1-D data and the shapes are lists. Modules whose name contains ``to_FRACTAL_Z``
  take a 4th parameter, ``group``. The parameter count is checked exactly; a module with the
  wrong count (or without ``convert``) is skipped and a warning is recorded.
- A plugin overrides the built-in converter for the same pair.

Security policy (checked before anything is imported): the file must be owned by the current
user or by root, must not be group- or world-writable, and must be at most 1 MiB. A file that
fails is refused with a LayoutError -- nothing of it is executed. Modules are imported from
their file path with importlib; ``sys.path`` and ``sys.modules`` are left untouched.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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


def check_plugin_file(path: Path) -> None:
    """Refuse (LayoutError) a plugin file that others could have written, or that is too large."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise LayoutError(f"refusing converter plugin {path}: not a regular file")
    if info.st_mode & stat.S_IWOTH:
        raise LayoutError(f"refusing converter plugin {path}: it is world-writable (chmod o-w to use it)")
    if info.st_mode & stat.S_IWGRP:
        raise LayoutError(f"refusing converter plugin {path}: it is group-writable (chmod g-w to use it)")
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid not in (getuid(), 0):
        raise LayoutError(
            f"refusing converter plugin {path}: owned by uid {info.st_uid}, not by the current user or root"
        )
    if info.st_size > MAX_PLUGIN_BYTES:
        raise LayoutError(f"refusing converter plugin {path}: {info.st_size} bytes, more than {MAX_PLUGIN_BYTES}")


def _import_file(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(f"{PLUGIN_FOLDER}.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise LayoutError(f"cannot import converter plugin {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
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
    folder gives an empty set with a warning. Raises LayoutError for a refused or broken file.
    """
    folder = Path(custom_dir) / PLUGIN_FOLDER
    plugins = PluginSet(folder)
    if not folder.is_dir():
        plugins.warnings.append(f"no {PLUGIN_FOLDER} folder in {custom_dir}: no converter plugins loaded")
        return plugins
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
        check_plugin_file(path)
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

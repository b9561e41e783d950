"""User converter plugins: ``<custom_dir>/format_convert/convert_<FROM>_to_<TO>.py``.

Contract (as the reference tool's manual describes it):

- FROM and TO match ``[A-Za-z0-9_]{1,128}`` and are format names (``NCHW``, ``FRACTAL_Z``...).
- The module defines ``convert(shape_from, shape_to, array)`` returning a numpy array; ``array``
  is the flat 1-D data and the shapes are lists. Modules whose name contains ``to_FRACTAL_Z``
  take a 4th parameter, ``group`` (always given, 1 for an ungrouped tensor). The signature is
  checked when the plugin is loaded (:func:`inspect.signature`): exactly 3 (or 4) positional
  parameters -- ``*args`` does not count -- and no keyword-only parameter without a default.
- A plugin overrides the built-in converter for the same pair.

What the loader says (:attr:`PluginSet.notes`, which vcompare puts in the run's notes -- printed
on stderr and kept in the JSON result -- and vconvert prints as ``note:`` lines): which folder was
read, each plugin loaded (and whether it replaces a built-in converter), and each entry of
``format_convert/`` that was ignored and why -- a name that is not ``convert_<FROM>_to_<TO>.py``,
a sub-folder, a module without ``convert()``, a ``convert()`` of the wrong signature (at most
:data:`MAX_NOTED` of them are listed one by one; Python's own ``__pycache__`` is passed over
silently). A ``-custom`` folder without ``format_convert/`` is refused (LayoutError): it would
load nothing, and the user expects converters.

A plugin that fails while it runs -- any exception, ``SystemExit`` (``sys.exit()`` in a plugin)
included; only ``KeyboardInterrupt`` and :class:`convert.signals.Interrupted` pass through -- is a
LayoutError of that one conversion: in a network comparison the pair becomes a row with the
reason, in vconvert the file fails; the run goes on. The same failure while the module is
imported refuses the plugin (LayoutError, the run cannot start).

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

from ..signals import Interrupted
from ..textcells import encodable, escape_line_breaks
from ..trust import owner_problem, writable_problem
from .registry import LAYOUTS
from .shapes import LayoutError, format_key, format_spelling, shape_text

#: Largest plugin file accepted, in bytes.
MAX_PLUGIN_BYTES = 1 << 20

PLUGIN_FOLDER = "format_convert"
#: Ignored entries of ``format_convert/`` listed one by one in the notes (the rest are counted).
MAX_NOTED = 20
#: Exceptions a plugin may not turn into a failure of its conversion: the user's and the OS's stop.
_STOPS = (KeyboardInterrupt, Interrupted)
_PLUGIN_NAME = re.compile(r"convert_([A-Za-z0-9_]{1,128}?)_to_([A-Za-z0-9_]{1,128})\.py")


@dataclass(frozen=True)
class PluginConverter:
    """A converter loaded from a plugin file; calling it calls the module's ``convert``.

    ``takes_group``: a ``to_FRACTAL_Z`` plugin, called with the group as a 4th argument.
    """

    function: Callable[..., np.ndarray]
    path: Path
    src: str
    dst: str
    takes_group: bool = False

    @property
    def replaces_built_in(self) -> bool:
        return (format_key(self.src), format_key(self.dst)) in LAYOUTS

    def __call__(self, shape_from: list[int], shape_to: list[int], array: np.ndarray, group: int = 1) -> np.ndarray:
        """``convert(shape_from, shape_to, array[, group])``, guarded.

        Raises LayoutError naming the file when the plugin raises anything (``SystemExit``
        included; ``KeyboardInterrupt`` and :class:`~convert.signals.Interrupted` pass through),
        returns something other than an ndarray, or is given a group it takes no parameter for.
        """
        what = f"converter plugin {self.path}"
        if group >= 2 and not self.takes_group:
            raise LayoutError(f"{what} takes no group parameter, but the tensor is grouped (group {group})")
        args: tuple[object, ...] = (shape_from, shape_to, array) + ((int(group),) if self.takes_group else ())
        try:
            out = self.function(*args)
        except _STOPS:
            raise
        except BaseException as exc:  # noqa: BLE001 - user code: every failure, sys.exit() too, is this pair's
            raise LayoutError(f"{what} failed on {format_spelling(self.src)}->{format_spelling(self.dst)} "
                              f"{shape_text(shape_from)}->{shape_text(shape_to)}: {_failure(exc)}") from exc
        if not isinstance(out, np.ndarray):
            raise LayoutError(f"{what} returned {type(out).__name__}, not a numpy array")
        return out


def _failure(exc: BaseException) -> str:
    """``SystemExit: 0 (the plugin called sys.exit())`` / ``RuntimeError: boom``."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SystemExit):
        text += " (the plugin called sys.exit(); a converter must return an array or raise)"
    return text


class PluginSet(dict):
    """``{(FROM, TO): PluginConverter}`` (upper-case names) plus what was ignored and why.

    ``folder``: the ``format_convert`` folder read; ``ignored``: ``(entry name, why)`` for every
    entry that is not a loaded plugin; :attr:`notes`: the lines for the user (module doc).
    """

    def __init__(self, folder: Path | None = None) -> None:
        super().__init__()
        self.folder = folder
        self.ignored: list[tuple[str, str]] = []

    @property
    def notes(self) -> list[str]:
        """One line for the folder, one per loaded plugin, one per ignored entry (at most
        :data:`MAX_NOTED`, then a count), each starting ``-custom:``."""
        loaded: list[PluginConverter] = list(self.values())
        lines = [f"-custom: {len(loaded)} converter plugin(s) loaded from {self.folder}"
                 + (f", {len(self.ignored)} entr{'y' if len(self.ignored) == 1 else 'ies'} ignored"
                    if self.ignored else "")]
        for plugin in loaded:
            replaces = ", replaces the built-in converter" if plugin.replaces_built_in else ""
            lines.append(f"-custom: {plugin.path.name} loaded: {format_spelling(plugin.src)} -> "
                         f"{format_spelling(plugin.dst)}{replaces}")
        for name, why in self.ignored[:MAX_NOTED]:  # a file name may hold anything: one note, one line
            lines.append(f"-custom: {encodable(escape_line_breaks(name))} ignored: {why}")
        if len(self.ignored) > MAX_NOTED:
            lines.append(f"-custom: ... and {len(self.ignored) - MAX_NOTED} more entries ignored")
        return lines


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
    except _STOPS:
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of user code, sys.exit() too, is reported
        raise LayoutError(f"converter plugin {path} failed to import: {_failure(exc)}") from exc
    return module


def _signature_problem(function: Callable[..., object], takes_group: bool) -> str | None:
    """Why ``convert`` cannot be called as ``convert(shape_from, shape_to, array[, group])``, or None."""
    wanted = "(shape_from, shape_to, array, group)" if takes_group else "(shape_from, shape_to, array)"
    expected = 4 if takes_group else 3
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return f"the signature of convert() cannot be read; it must be convert{wanted}"
    positional = [p for p in parameters
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(positional) != expected:
        return f"convert() takes {len(positional)} parameters but must take {expected} {wanted}"
    keywords = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty]
    if keywords:
        return f"convert() also needs keyword-only parameter(s) {', '.join(keywords)}, which are never given"
    return None


def load_plugins(custom_dir: str | os.PathLike[str] | PluginSet) -> PluginSet:
    """Load every ``convert_<FROM>_to_<TO>.py`` under ``custom_dir/format_convert``.

    Returns a :class:`PluginSet` (a dict keyed by upper-case ``(FROM, TO)``) whose ``ignored``
    and ``notes`` say what was not loaded and why (module doc); a PluginSet given as
    ``custom_dir`` is returned as it is (loaded once, used by several comparisons). Raises
    LayoutError for a refused folder (see the module policy), a ``custom_dir`` without
    ``format_convert/``, or a refused or broken file.
    """
    if isinstance(custom_dir, PluginSet):
        return custom_dir
    root = Path(custom_dir)
    folder = root / PLUGIN_FOLDER
    plugins = PluginSet(folder)
    check_plugin_folder(root)
    if not folder.is_dir():
        other = " (it holds algorithm/: vcompare loads converter plugins only)" if (root / "algorithm").is_dir() else ""
        raise LayoutError(f"{root} has no {PLUGIN_FOLDER} folder{other}: converter plugins are read from "
                          f"{folder}/convert_<FROM>_to_<TO>.py")
    check_plugin_folder(folder)
    for path in sorted(folder.iterdir()):
        if path.name == "__pycache__":
            continue
        match = _PLUGIN_NAME.fullmatch(path.name)
        if path.is_dir() and not path.is_symlink():
            plugins.ignored.append((path.name, "a folder (plugins are read from format_convert/ itself)"))
            continue
        if match is None:
            plugins.ignored.append((path.name, "not named convert_<FROM>_to_<TO>.py (FROM, TO: 1-128 letters, "
                                               "digits or _)"))
            continue
        src, dst = match.group(1), match.group(2)
        module = _import_file(path)
        function = getattr(module, "convert", None)
        if not callable(function):
            plugins.ignored.append((path.name, "it defines no convert() function"))
            continue
        takes_group = "to_FRACTAL_Z" in path.stem
        problem = _signature_problem(function, takes_group)
        if problem is not None:
            plugins.ignored.append((path.name, problem))
            continue
        plugins[(src.upper(), dst.upper())] = PluginConverter(function, path, src, dst, takes_group)
    return plugins

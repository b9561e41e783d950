"""Dump folders at an fsspec URL (``s3://``, ``gs://``, ``file://``, ``memory://`` ...), read
through a local mirror.

The readers read local files with ``pread`` / ``mmap``, and they find operators, ranks and
iterations by file and folder names. So a URL root is **localised**: it is listed once with
fsspec (:func:`open_root`: every file with its size and, where the store gives one, its
modification time) and the files are copied, with their folder layout, into a mirror folder of
the local cache (:func:`materialise`). The readers then read the mirror as a plain dump folder.

Where: ``$VCOMPARE_REMOTE_CACHE`` if set, else ``$XDG_CACHE_HOME/vcompare/remote`` (default
``~/.cache/vcompare/remote``); one folder a URL, named by the first 16 hex digits of the URL's
SHA-256, so the same URL gives the same folder in every process and run (a Dask worker on
another machine mirrors the files of its part to the same path; a later run fetches nothing
that is already there).

Policy:

- **A local path never imports fsspec**: :func:`is_url` decides by the text alone
  (``scheme://`` with a scheme of two letters or more, or an fsspec chain ``a::b``), and only a
  URL loads fsspec; without it the message says how to install it (:data:`INSTALL`).
- **What is fetched**: a file is fetched when the mirror has no file of its listed size at its
  place (so a file cut short by a killed run is fetched again); it is fetched into a staging
  folder beside the mirror (``<mirror>.fetch-XXXXXXXX``, unique to the fetch, removed after; one
  left by a killed fetch is outside the mirror, where no reader looks) and renamed into place,
  so a reader never sees half a file, and two processes fetching the same file each rename a
  whole copy. The listed modification time, when the store gives one (``mtime``,
  ``LastModified``, ``updated``, ``created``), is set on the copy, for the readers'
  newest-folder choices; otherwise the copy's is the time of the fetch.
- **Why not fsspec's caching filesystems** (``simplecache::`` / ``filecache::``): they name a
  cached file by a hash of its URL or by its base name (``BasenameCacheMapper`` joins a few
  folder levels with ``_@_``), while the readers need the folder layout and the file names
  themselves; and their cache check is the file's existence, which takes a file cut short by a
  killed run for a whole one. The copying itself is fsspec's (``fs.get`` with lists of paths:
  concurrent on the asynchronous stores, S3, GCS, HTTP).
- **Placeholders** (:func:`outline`): for a cluster run the client copies the metadata of a
  tree and gives each data file an empty placeholder of its name, which is all the tree walk
  and the plan read; each worker then copies the data of the part it compares
  (compare.runs.distributed), so the data is read once, by the worker that compares it.
- **Refused**: a listed name that would land outside the mirror (``..``, an absolute part) is
  not fetched and is reported (:attr:`Materialised.refused`); a URL that cannot be listed (no
  such bucket or folder, no credentials, an unknown protocol or its missing package) is an
  :class:`~convert.errors.OptionError` naming the URL and the reason.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from types import ModuleType

from .errors import OptionError

#: How to install the optional dependency (the message of every "fsspec is missing" error).
INSTALL = "pip install 'vcompare[remote]'"
#: The environment variable naming the cache folder.
CACHE_ENV = "VCOMPARE_REMOTE_CACHE"
#: ``scheme://``: two characters at least, so that a Windows drive (``C:/``) is never a URL.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")
#: Listing keys that carry a file's modification time, by store.
_MTIME_KEYS = ("mtime", "LastModified", "updated", "created")


def is_url(path: object) -> bool:
    """Whether ``path`` is an fsspec URL (a ``str``: ``scheme://...`` or a chain ``a::b``)."""
    return isinstance(path, str) and (_URL.match(path) is not None or "::" in path)


def require_fsspec(url: str) -> ModuleType:
    """``fsspec``, or :class:`OptionError` saying how to install it."""
    try:
        import fsspec  # here: fsspec is an optional extra, loaded only for a URL
    except ImportError as exc:
        raise OptionError(f"{url}: reading dumps from a URL needs fsspec, which is not installed ({exc}): "
                          f"{INSTALL} (and the package of the store, e.g. s3fs or gcsfs)") from None
    return fsspec


def cache_base() -> Path:
    """The cache folder (module doc: *Where*)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vcompare" / "remote"


@dataclass(frozen=True)
class RemoteFile:
    """One listed file: its path below the root (``/``-separated), size and modification time
    (seconds since the epoch, None when the store gives none)."""

    relative: str
    size: int
    mtime: float | None = None


@dataclass(frozen=True)
class RemoteRoot:
    """A listed URL root and the local folder that mirrors it (plain data: it travels to Dask
    workers, which open the store again from ``url``)."""

    url: str
    local: Path
    files: tuple[RemoteFile, ...]
    #: The file the URL names when it names one file (its name in the mirror), else "" (a folder).
    entry: str = ""

    @property
    def path(self) -> Path:
        """What the URL names, in the mirror: the mirror folder, or the one file in it."""
        return self.local / self.entry if self.entry else self.local

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """``path`` (inside the mirror) relative to the mirror, ``/``-separated; None outside it."""
        try:
            return Path(path).relative_to(self.local).as_posix()
        except ValueError:
            return None


@dataclass(frozen=True)
class Materialised:
    """What :func:`materialise` did: files fetched, files already there, names refused."""

    fetched: int
    present: int
    refused: tuple[str, ...] = ()


def _filesystem(url: str) -> tuple[object, str]:
    fsspec = require_fsspec(url)
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # an unknown protocol, or its package missing (s3fs ...)
        raise OptionError(f"{url}: fsspec cannot open this URL ({exc})") from None


def _mtime(info: dict) -> float | None:
    for key in _MTIME_KEYS:
        value = info.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def open_root(url: str, *, cache: Path | None = None) -> RemoteRoot:
    """List the URL root (every file below it) and name its mirror folder (nothing is fetched).

    Raises :class:`OptionError` when fsspec is missing or the URL cannot be listed or holds no
    file.
    """
    fs, root = _filesystem(url)
    try:
        listing = fs.find(root, detail=True, withdirs=False)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        raise OptionError(f"{url}: cannot list it ({type(exc).__name__}: {exc})") from None
    prefix = root.rstrip("/") + "/"
    files = []
    entry = ""
    for path, info in sorted(listing.items()):
        if path.startswith(prefix):
            relative = path[len(prefix):]
        else:  # the URL names this file itself
            relative = entry = PurePosixPath(path).name
        files.append(RemoteFile(relative, int(info.get("size") or 0), _mtime(info)))
    if not files:
        raise OptionError(f"{url}: no file below this URL (a folder that does not exist, or an empty one)")
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return RemoteRoot(url, (cache if cache is not None else cache_base()) / digest, tuple(files), entry)


def _inside(relative: str) -> bool:
    parts = PurePosixPath(relative).parts
    return bool(parts) and not PurePosixPath(relative).is_absolute() and ".." not in parts


def materialise(root: RemoteRoot, wanted: Callable[[str], bool] = lambda relative: True) -> Materialised:
    """Fetch the listed files that ``wanted(relative)`` accepts and the mirror lacks (module doc).

    Raises :class:`OptionError` when the store or the cache folder fails (the URL or the path,
    and the reason).
    """
    chosen = [f for f in root.files if wanted(f.relative)]
    refused = tuple(f.relative for f in chosen if not _inside(f.relative))
    missing = []
    for item in chosen:
        if not _inside(item.relative):
            continue
        target = root.local / item.relative
        try:
            if target.stat().st_size == item.size:
                continue
        except OSError:
            pass
        missing.append(item)
    if missing:
        _fetch(root, missing)
    return Materialised(len(missing), len(chosen) - len(missing) - len(refused), refused)


def outline(root: RemoteRoot, is_data: Callable[[str], bool]) -> Materialised:
    """The mirror as a plan reads it, without the dump data: a file that ``is_data(relative)``
    says holds data gets an empty **placeholder** (its name, and its listed modification time)
    where the mirror has nothing at its place; every other file is copied (:func:`materialise`).

    A placeholder is never taken for the file: :func:`materialise` copies a file whose size is
    not the listed one, so the worker that compares a part fetches its data over the placeholder.
    ``fetched`` counts the files copied, ``present`` the files already there or outlined.
    """
    copied = materialise(root, lambda relative: not is_data(relative))
    outlined = 0
    for item in root.files:
        if not is_data(item.relative) or not _inside(item.relative):
            continue
        target = root.local / item.relative
        if os.path.lexists(target):
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
            if item.mtime is not None:
                os.utime(target, (item.mtime, item.mtime))
        except OSError as exc:
            raise OptionError(f"{root.url}: cannot write its outline into {root.local}: {exc}") from None
        outlined += 1
    refused = copied.refused + tuple(f.relative for f in root.files if is_data(f.relative) and not _inside(f.relative))
    return Materialised(copied.fetched, copied.present + outlined, refused)


def _fetch(root: RemoteRoot, missing: list[RemoteFile]) -> None:
    """Copy ``missing`` into a staging folder beside the mirror (never inside it: the readers
    would list a leftover as a file of the dump), then rename each into place."""
    fs, base = _filesystem(root.url)
    remote = [base if root.entry else f"{base.rstrip('/')}/{item.relative}" for item in missing]
    try:
        root.local.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{root.local.name}.fetch-", dir=root.local.parent))
    except OSError as exc:
        raise OptionError(f"{root.url}: cannot copy its files into {root.local}: {exc}") from None
    temporary = [staging / item.relative for item in missing]
    try:
        for path in (*temporary, *(root.local / item.relative for item in missing)):
            path.parent.mkdir(parents=True, exist_ok=True)
        fs.get(remote, [str(p) for p in temporary])  # type: ignore[attr-defined]
        for item, path in zip(missing, temporary):
            if item.mtime is not None:
                os.utime(path, (item.mtime, item.mtime))
            os.replace(path, root.local / item.relative)
    except OSError as exc:
        raise OptionError(f"{root.url}: cannot copy its files into {root.local}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        raise OptionError(f"{root.url}: fetching its files failed ({type(exc).__name__}: {exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def complete(root: RemoteRoot) -> RemoteRoot:
    """Copy every file of the root the mirror lacks (placeholders included); :class:`OptionError`
    for names that would land outside the mirror."""
    done = materialise(root)
    if done.refused:
        raise OptionError(f"{root.url}: file names that would land outside the cache folder: "
                          + ", ".join(done.refused[:5]))
    return root


def localise(url: str, *, cache: Path | None = None) -> RemoteRoot:
    """List the URL root and mirror every file of it (a run in this process reads them all)."""
    return complete(open_root(url, cache=cache))


def local_path(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """``path`` itself, or for a URL its local copy (every file fetched): the folder, or the file
    when the URL names one file."""
    return localise(path).path if is_url(path) else path  # type: ignore[arg-type]


__all__ = ["CACHE_ENV", "INSTALL", "Materialised", "RemoteFile", "RemoteRoot", "cache_base", "complete", "is_url",
           "local_path", "localise", "materialise", "open_root", "outline", "require_fsspec"]

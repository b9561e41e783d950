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

**Trust** (the rule of the kernel cache and of ``-custom`` plugins, :mod:`convert.trust`): a file
of the mirror is compared as the dump, so whoever can write the mirror chooses the numbers. The
cache folder must be owned by the current user or root and writable by nobody else; one that is
not (a shared ``/tmp/vcompare-cache`` of mode 1777, a folder of another user) is not used: a
private ``vcompare-uid<N>`` folder inside it is (mode 0700), and when that one fails the rule too
the run stops (:class:`~convert.errors.OptionError`, ``set $VCOMPARE_REMOTE_CACHE``). Below it,
every folder of the mirror (created with mode 0700) must pass the same rule (else the run stops
and names the folder), and a file of the mirror is reused only when it is a regular file (not a
link) owned and protected the same way; any other file at its place is fetched again over it.

**Permissions**: a copy gets at most the mode bits of its source, never wider: for a store whose
listing gives a file's ``mode`` (``file://``, sftp) the source's read / write bits, less the
group's and others' write bits and every execute bit (``mode & 0o644``); for a store without
modes (``memory://``, S3, GCS, HTTP ...) 0600. Folders of the mirror are 0700.

**Freshness**: a copy is reused only when its size is the listed size and its modification time
is the listed one (the keys of :data:`_MTIME_KEYS`, within :data:`MTIME_TOLERANCE_NS`; the copy
is given that time when it is fetched). A store whose listing gives no modification time (HTTP)
cannot be checked and is fetched again each time. No etag or checksum is kept: the copy has no
place for it beside the file (a side file in the mirror would be listed as a file of the dump),
and the modification time changes with the content on every store that lists one.

**URLs accepted** (:func:`check_url`): one store's URL. Refused before anything is opened: a
chain (``a::b``: the mirror is already a local cache, and a chain such as
``zip://x::file:///etc/passwd`` reads a local file through another protocol), and the protocols
whose filesystem reads another filesystem or files named in its arguments (:data:`INDIRECT`:
archives ``zip`` / ``tar`` / ``libarchive``, ``reference``, the caching ones ``simplecache`` /
``filecache`` / ``blockcache``, ``dir``, ``generic``, the async wrapper, ``dask``). Any failure
to open, connect to or list a store is one :class:`~convert.errors.OptionError` naming the URL
and the cause (a traceback never), and text that a native library prints while a store is
opened (libhdfs's ``dlopen`` lines) is held back and its first line put in that message.
**Bounds**: a server must accept the connection within :data:`CONNECT_TIMEOUT` seconds (ftp, sftp /
ssh, smb, http / https; for ftp, ftplib's ``timeout`` bounds every later wait on its sockets too);
an http(s) read waits at most :data:`READ_TIMEOUT` seconds for data (no bound on a whole transfer:
dump files are large). Other stores keep their package's own timeouts.

Policy:

- **A local path never imports fsspec**: :func:`is_url` decides by the text alone
  (``scheme://`` with a scheme of two letters or more, or an fsspec chain ``a::b``), and only a
  URL loads fsspec; without it the message says how to install it (:data:`INSTALL`).
- **What is fetched**: a file is fetched when the mirror has no current, trusted copy at its
  place (*Freshness*, *Trust*; so a file cut short by a killed run is fetched again); it is
  fetched into a staging folder beside the mirror (``<mirror>.fetch-XXXXXXXX``, unique to the
  fetch, removed after; one left by a killed fetch is outside the mirror, where no reader looks)
  and renamed into place, so a reader never sees half a file, and two processes fetching the same
  file each rename a whole copy. The listed modification time, when the store gives one
  (``mtime``, ``LastModified``, ``updated``, ``created``), is set on the copy, for the freshness
  check and the readers' newest-folder choices; otherwise the copy's is the time of the fetch.
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
  such bucket or folder, no credentials, a server that cannot be reached, an unknown protocol or
  its missing package) is an :class:`~convert.errors.OptionError` naming the URL and the reason
  (a connection failure is named as such, not as an empty folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from .errors import OptionError
from .trust import folder_problem, owner_problem, writable_problem

#: How to install the optional dependency (the message of every "fsspec is missing" error).
INSTALL = "pip install 'vcompare[remote]'"
#: The environment variable naming the cache folder.
CACHE_ENV = "VCOMPARE_REMOTE_CACHE"
#: Seconds a store's server has to accept the connection (ftp, sftp / ssh, smb, http / https).
CONNECT_TIMEOUT = 10.0
#: Seconds an http(s) read may wait for data (a whole transfer is not bounded: dump files are large).
READ_TIMEOUT = 60.0
#: A copy is current when its modification time is the listed one within this many nanoseconds
#: (the listed time is a float: its rounding, not a change of the file).
MTIME_TOLERANCE_NS = 1_000
#: The mode bits of a source file a copy may keep (read / write, never others' write, never execute).
KEPT_MODE = 0o644
#: A copy's mode when the store gives none, and every folder's mode in the mirror.
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700
#: Protocols refused (module doc: *URLs accepted*): their filesystem reads another filesystem or
#: files named in its arguments.
INDIRECT = ("zip", "tar", "libarchive", "reference", "simplecache", "filecache", "blockcache", "cached", "dir",
            "generic", "async_wrapper", "asyncwrapper", "dask")
#: The same by class (a third-party name for one of them): ``module.QualName`` in a class's MRO.
_INDIRECT_CLASSES = frozenset({
    "fsspec.archive.AbstractArchiveFileSystem", "fsspec.implementations.reference.ReferenceFileSystem",
    "fsspec.implementations.cached.CachingFileSystem", "fsspec.implementations.dirfs.DirFileSystem",
    "fsspec.implementations.asyn_wrapper.AsyncFileSystemWrapper", "fsspec.generic.GenericFileSystem",
    "fsspec.implementations.dask.DaskWorkerFileSystem"})
#: ``scheme://``: two characters at least, so that a Windows drive (``C:/``) is never a URL.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")
#: Listing keys that carry a file's modification time, by store.
_MTIME_KEYS = ("mtime", "LastModified", "updated", "created")
#: At most this many characters of a store's error in a message.
_CAUSE_CHARS = 300


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
    """The cache folder as configured (module doc: *Where*); :func:`trusted_cache` is the one used."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vcompare" / "remote"


def _private_name() -> str:
    getuid = getattr(os, "getuid", None)
    return f"vcompare-uid{getuid() if getuid is not None else 0}"


def trusted_cache(base: Path | None = None) -> Path:
    """The folder the mirrors go in (module doc: *Trust*): ``base`` (default :func:`cache_base`),
    created with mode 0700 if missing, when it passes :func:`convert.trust.folder_problem`; else
    its private ``vcompare-uid<N>`` folder. :class:`OptionError` when neither can be used."""
    base = cache_base() if base is None else base
    try:
        base.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"cannot create the URL cache folder {base} ({exc.strerror or exc}); "
                          f"set {CACHE_ENV} to a folder of your own") from None
    problem = folder_problem(base)
    if problem is None:
        return base
    private = base / _private_name()
    try:
        private.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"URL cache folder {base}: {problem}, and a private folder cannot be made in it "
                          f"({exc.strerror or exc}); set {CACHE_ENV} to a folder of your own") from None
    inner = _folder_problem(private)
    if inner is not None:
        raise OptionError(f"URL cache folder {base}: {problem}; its private folder {private}: {inner}, so others "
                          f"could plant files there; set {CACHE_ENV} to a folder of your own")
    return private


@dataclass(frozen=True)
class RemoteFile:
    """One listed file: its path below the root (``/``-separated), size, modification time
    (seconds since the epoch, None when the store gives none) and permission bits (None when the
    store gives none)."""

    relative: str
    size: int
    mtime: float | None = None
    mode: int | None = None

    @property
    def copy_mode(self) -> int:
        """The mode of its copy (module doc: *Permissions*)."""
        return PRIVATE_FILE if self.mode is None else stat.S_IMODE(self.mode) & KEPT_MODE


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


def _cause(exc: BaseException) -> str:
    """``Kind: message`` on one line, at most _CAUSE_CHARS characters; the first cause in the
    chain that is not a bare FileNotFoundError (HTTP's ``info`` wraps a connection failure in one)."""
    seen = exc
    while isinstance(seen, FileNotFoundError) and seen.__cause__ is not None:
        seen = seen.__cause__
    text = " ".join(f"{type(seen).__name__}: {seen}".split())
    return text if len(text) <= _CAUSE_CHARS else text[:_CAUSE_CHARS - 3] + "..."


def check_url(url: str) -> str:
    """The protocol of ``url`` when vcompare reads it (module doc: *URLs accepted*), else
    :class:`OptionError` saying why not; nothing is opened."""
    if "::" in url:
        raise OptionError(f"{url}: chained URLs (a::b) are not read: the local mirror is already a cache, and a "
                          "chain can read local files through another protocol; give the store's URL itself")
    fsspec = require_fsspec(url)
    protocol = fsspec.core.split_protocol(url)[0] or "file"
    if protocol in INDIRECT:
        raise OptionError(f"{url}: the {protocol}:// protocol reads other files or filesystems (archives, "
                          "references, caches, wrappers) and is not read; give the store's URL itself")
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except Exception as exc:  # noqa: BLE001 - unknown protocol (ValueError), its package missing (ImportError) ...
        raise OptionError(f"{url}: fsspec cannot open this URL ({_cause(exc)})") from None
    if any(f"{c.__module__}.{c.__qualname__}" in _INDIRECT_CLASSES for c in cls.__mro__):
        raise OptionError(f"{url}: the {protocol}:// protocol ({cls.__name__}) reads other files or filesystems "
                          "and is not read; give the store's URL itself")
    return protocol


def _connect_options(protocol: str) -> dict[str, Any]:
    """The options that bound the connection time of ``protocol`` (module doc: *Bounds*)."""
    if protocol in ("ftp", "smb"):
        return {"timeout": CONNECT_TIMEOUT}
    if protocol in ("sftp", "ssh"):
        return {"timeout": CONNECT_TIMEOUT}  # paramiko's connect(timeout=): the TCP connection
    if protocol in ("http", "https"):
        import aiohttp  # here: present whenever fsspec's HTTP filesystem loaded (check_url)

        return {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT,
                                                                   sock_read=READ_TIMEOUT)}}
    return {}


@contextlib.contextmanager
def _held_stderr(said: list[str]) -> Iterator[None]:
    """Hold back what native code writes to file descriptor 2 (libhdfs's ``dlopen ... failed``
    lines); its lines go into ``said``, and they are written out after all when the block succeeds."""
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2: nothing to hold back
        saved = -1
    if saved < 0:
        yield
        return
    with tempfile.TemporaryFile() as held:
        ok = False
        try:
            os.dup2(held.fileno(), 2)
            try:
                yield
                ok = True
            finally:
                os.dup2(saved, 2)
        finally:
            os.close(saved)
            held.seek(0)
            text = held.read()
            if ok and text:
                os.write(2, text)
            said.extend(line for line in text.decode("utf-8", "replace").splitlines() if line.strip())


def _filesystem(url: str) -> tuple[Any, str]:
    """The store of ``url`` and the path in it, its connection time bounded; :class:`OptionError`
    naming the URL and the cause when it is refused (:func:`check_url`) or cannot be opened."""
    protocol = check_url(url)
    fsspec = require_fsspec(url)
    said: list[str] = []
    try:
        with _held_stderr(said):
            return fsspec.core.url_to_fs(url, **_connect_options(protocol))
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        also = f"; it printed: {' '.join(said[0].split())[:200]}" if said else ""
        raise OptionError(f"{url}: cannot open it ({_cause(exc)}{also})") from None


def _mtime(info: dict[str, Any]) -> float | None:
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


def _mode(info: dict[str, Any]) -> int | None:
    value = info.get("mode")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def open_root(url: str, *, cache: Path | None = None) -> RemoteRoot:
    """List the URL root (every file below it) and name its mirror folder in the trusted cache
    folder (:func:`trusted_cache`; nothing is fetched).

    Raises :class:`OptionError` when fsspec is missing, the URL is refused, the store cannot be
    opened or listed, the URL holds no file, or no trusted cache folder can be had.
    """
    fs, root = _filesystem(url)
    try:
        listing = fs.find(root, detail=True, withdirs=False)
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        raise OptionError(f"{url}: cannot list it ({_cause(exc)})") from None
    prefix = root.rstrip("/") + "/"
    files = []
    entry = ""
    for path, info in sorted(listing.items()):
        if path.startswith(prefix):
            relative = path[len(prefix):]
        else:  # the URL names this file itself
            relative = entry = PurePosixPath(path).name
        files.append(RemoteFile(relative, int(info.get("size") or 0), _mtime(info), _mode(info)))
    if not files:
        _why_empty(fs, root, url)
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return RemoteRoot(url, trusted_cache(cache) / digest, tuple(files), entry)


def _why_empty(fs: Any, root: str, url: str) -> None:
    """:class:`OptionError` for a URL whose listing is empty: the store's own failure when asking
    for the root itself fails otherwise than "not found" (a listing swallows a connection error:
    fsspec's walk omits a folder it cannot list), else "no file below this URL"."""
    try:
        fs.info(root)
    except FileNotFoundError as exc:
        if exc.__cause__ is not None and not isinstance(exc.__cause__, FileNotFoundError):
            raise OptionError(f"{url}: cannot reach it ({_cause(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        raise OptionError(f"{url}: cannot reach it ({_cause(exc)})") from None
    raise OptionError(f"{url}: no file below this URL (a folder that does not exist, or an empty one)")


def _inside(relative: str) -> bool:
    """Whether a listed name stays inside the mirror and can be a local file name: relative, no
    ``..``, no NUL byte, and encodable as a file name (a lone surrogate is not); other names are
    refused (``Materialised.refused``), never opened."""
    if "\x00" in relative:
        return False
    try:
        os.fsencode(relative)
    except UnicodeError:
        return False
    parts = PurePosixPath(relative).parts
    return bool(parts) and not PurePosixPath(relative).is_absolute() and ".." not in parts


def _folder_problem(path: Path) -> str | None:
    """Why a folder of the mirror must not be used (module doc: *Trust*): not a folder (a link
    counts as not one), writable by others, owned by another user; None when it may."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder (a link or a file)"
    return writable_problem(info) or owner_problem(info)


def _mirror_folders(root: RemoteRoot, items: Iterable[RemoteFile]) -> None:
    """Create (mode 0700) and check every folder that ``items`` go in, the mirror folder included,
    the cache folder it is in first (:class:`OptionError` naming a folder that fails the rule)."""
    folders = {""}
    for item in items:
        head = item.relative.rpartition("/")[0]
        while head and head not in folders:
            folders.add(head)
            head = head.rpartition("/")[0]
    base = root.local.parent
    try:
        base.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
        problem = folder_problem(base)
    except OSError as exc:
        raise OptionError(f"{root.url}: cannot create its cache folder {base} ({exc.strerror or exc})") from None
    if problem is not None:
        raise OptionError(f"{root.url}: its cache folder {base}: {problem}, so others could plant files there; "
                          f"set {CACHE_ENV} to a folder of your own")
    for relative in sorted(folders, key=lambda f: (f.count("/"), f) if f else (-1, f)):
        path = root.local / relative if relative else root.local
        try:
            with contextlib.suppress(FileExistsError):
                path.mkdir(mode=PRIVATE_FOLDER)
            problem = _folder_problem(path)
        except OSError as exc:
            raise OptionError(f"{root.url}: cannot create its mirror folder {path} ({exc.strerror or exc})") from None
        if problem is not None:
            raise OptionError(f"{root.url}: its mirror folder {path}: {problem}, so others could have planted "
                              "files in it; remove it and run again")


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _current(target: Path, item: RemoteFile) -> bool:
    """Whether the mirror's ``target`` is a current, trusted copy of ``item`` (module doc:
    *Trust*, *Freshness*); a copy wider than its mode (a copy of an older vcompare) is narrowed."""
    try:
        info = os.lstat(target)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or writable_problem(info) or owner_problem(info):
        return False
    if info.st_size != item.size or item.mtime is None or abs(info.st_mtime_ns - _ns(item.mtime)) > MTIME_TOLERANCE_NS:
        return False
    mode = stat.S_IMODE(info.st_mode)
    if mode & ~item.copy_mode:
        try:
            os.chmod(target, mode & item.copy_mode)
        except OSError:
            return False
    return True


def materialise(root: RemoteRoot, wanted: Callable[[str], bool] = lambda relative: True) -> Materialised:
    """Fetch the listed files that ``wanted(relative)`` accepts and the mirror has no current,
    trusted copy of (module doc).

    Raises :class:`OptionError` when the store or the cache folder fails, or a folder of the
    mirror fails the trust rule (the URL or the path, and the reason).
    """
    chosen = [f for f in root.files if wanted(f.relative)]
    refused = tuple(f.relative for f in chosen if not _inside(f.relative))
    inside = [f for f in chosen if _inside(f.relative)]
    _mirror_folders(root, inside)
    missing = [item for item in inside if not _current(root.local / item.relative, item)]
    if missing:
        _fetch(root, missing)
    return Materialised(len(missing), len(chosen) - len(missing) - len(refused), refused)


def outline(root: RemoteRoot, is_data: Callable[[str], bool]) -> Materialised:
    """The mirror as a plan reads it, without the dump data: a file that ``is_data(relative)``
    says holds data gets an empty **placeholder** (its name, and its listed modification time)
    where the mirror has no trusted file at its place; every other file is copied
    (:func:`materialise`).

    A placeholder is never taken for the file: :func:`materialise` copies a file whose size or
    time is not the listed one, so the worker that compares a part fetches its data over the
    placeholder. ``fetched`` counts the files copied, ``present`` the files already there or
    outlined.
    """
    copied = materialise(root, lambda relative: not is_data(relative))
    data = [item for item in root.files if is_data(item.relative) and _inside(item.relative)]
    _mirror_folders(root, data)
    outlined = 0
    for item in data:
        target = root.local / item.relative
        try:
            info = os.lstat(target)
            if stat.S_ISREG(info.st_mode) and not (writable_problem(info) or owner_problem(info)):
                continue
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OptionError(f"{root.url}: cannot write its outline into {root.local}: {exc}") from None
        try:  # a new empty file renamed over whatever untrusted thing is there
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            os.close(fd)
            os.chmod(name, item.copy_mode)
            if item.mtime is not None:
                os.utime(name, ns=(_ns(item.mtime), _ns(item.mtime)))
            os.replace(name, target)
        except OSError as exc:
            raise OptionError(f"{root.url}: cannot write its outline into {root.local}: {exc}") from None
        outlined += 1
    refused = copied.refused + tuple(f.relative for f in root.files if is_data(f.relative) and not _inside(f.relative))
    return Materialised(copied.fetched, copied.present + outlined, refused)


def _fetch(root: RemoteRoot, missing: list[RemoteFile]) -> None:
    """Copy ``missing`` into a staging folder beside the mirror (never inside it: the readers
    would list a leftover as a file of the dump; mode 0700, in the trusted cache folder), give
    each copy its mode and listed time, then rename each into place (its folder made and checked
    by :func:`_mirror_folders`)."""
    fs, base = _filesystem(root.url)
    remote = [base if root.entry else f"{base.rstrip('/')}/{item.relative}" for item in missing]
    try:
        staging = Path(tempfile.mkdtemp(prefix=f"{root.local.name}.fetch-", dir=root.local.parent))
    except OSError as exc:
        raise OptionError(f"{root.url}: cannot copy its files into {root.local}: {exc}") from None
    temporary = [staging / item.relative for item in missing]
    try:
        for path in temporary:
            path.parent.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
        fs.get(remote, [str(p) for p in temporary])
        for item, path in zip(missing, temporary):
            os.chmod(path, item.copy_mode)
            if item.mtime is not None:
                os.utime(path, ns=(_ns(item.mtime), _ns(item.mtime)))
            os.replace(path, root.local / item.relative)
    except OSError as exc:
        raise OptionError(f"{root.url}: cannot copy its files into {root.local}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - every store raises its own kinds; the message is the diagnosis
        raise OptionError(f"{root.url}: fetching its files failed ({_cause(exc)})") from None
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


__all__ = ["CACHE_ENV", "CONNECT_TIMEOUT", "INDIRECT", "INSTALL", "KEPT_MODE", "MTIME_TOLERANCE_NS", "Materialised",
           "READ_TIMEOUT", "RemoteFile", "RemoteRoot", "cache_base", "check_url", "complete", "is_url", "local_path",
           "localise", "materialise", "open_root", "outline", "require_fsspec", "trusted_cache"]

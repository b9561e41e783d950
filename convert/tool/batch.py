"""What every ``vconvert`` operation shares: finding the input files, running them (in worker
processes), writing outputs under the 255-byte name rule, and the per-run report.

Input policy (:func:`collect_sources`):

* ``paths`` is one path, a comma-separated string of paths, or a sequence of them. Each is a file
  or a folder; a folder contributes its top-level regular files, sorted by name (no recursion).
  ``mapping.csv`` and ``convert_failed_file_list.txt`` are never inputs.
* A folder without files but with an Ascend dump tree below it
  (``{time}/{device}/{model}/{model_id}/{data_index}``) is replaced by the newest leaf, with a note.
* An all-digit file name (or digits + ``.npy``) listed in the folder's ``mapping.csv`` is named by
  its real name in the outputs (the dump tools hash names of 255 bytes or more).
* A path that does not exist, and a second input with the same file name as an earlier one (its
  outputs would overwrite the first one's), are reported as failed; the others still run.
* Nothing usable at all raises :class:`convert.errors.OptionError` (the CLI's exit 2).

Report policy: a file "fails" when it cannot be read or when any of its tensors cannot be written;
its other tensors are still written. Failed files are listed, one line each
(``{path}: {reason}``; line breaks as ``\\r`` / ``\\n`` escapes and file names that are
not UTF-8 as ``\\xff``: :mod:`convert.textcells`), in ``OUT/convert_failed_file_list.txt``; a
stale list from an earlier run is removed when nothing failed. Renamed long names are appended
to ``OUT/mapping.csv``.

Output policy (:func:`write_atomically`, a full disk): every file -- each output, ``mapping.csv``
and the failed-file list -- is written to a temporary file in ``OUT`` and renamed into place, so
a failed write (ENOSPC, EDQUOT, EIO ...) or Ctrl-C leaves no half-written file under an output's
name and an output of an earlier run whole. A failed output fails its input file with
``cannot write OUT/NAME: No space left on device (ENOSPC)`` (the path and the OS error with its
errno name) and the run goes on with the next output and the next file: a disk that fills up
fails what comes after, never the run. ``mapping.csv`` that cannot be written is itself listed
as failed, with the hashed names it would have recorded. A failed-file list that cannot be written
is not lost: the report keeps the reason (:attr:`ConvertReport.failed_list_error`), an earlier
run's list is removed, and the command line prints every failed file on stderr; the exit code
stays 1 (some files failed).

Parallel policy (:func:`run_files`): the files of a run are converted by
``min(usable CPUs, number of files, workers)`` workers (``workers`` None or 0: as many as there
are usable CPUs); one worker, or one file, runs serially in the calling process. Workers are
processes of a :class:`~concurrent.futures.ProcessPoolExecutor` started with ``fork`` (the
per-file job, plugins included, is inherited, never pickled; the items go out in about
:data:`CHUNKS_PER_WORKER` chunks per worker and only the outcomes travel back). Where
``fork`` is not the platform's safe default (anything but Linux) a thread pool is used instead.
Results come back in input order. A job that raises unexpectedly fails its own file (with the
exception as the reason); a worker process that dies fails the files it had not reported (its
chunk, and those of chunks not yet finished), with a message saying so, and the run goes on to
its report. The measurements behind the choice of
processes over threads are in ``docs/convert.md``.
"""

from __future__ import annotations

import csv
import errno
import io
import itertools
import math
import multiprocessing
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, Union

from ..atomic import TargetKind, output_target, write_through
from ..errors import CompareError, DumpFormatError, OptionError, OutputError
from ..names.hashed import is_hashed_name, read_mapping
from ..signals import check_interrupted
from ..textcells import encodable, escape_line_breaks, neutralise_text
from ..tree import is_file_entry, resolve_dump_folder
from .naming import FAILED_LIST_FILE, MAPPING_FILE, physical_name

PathLike = Union[str, "os.PathLike[str]"]
Sources = Union[PathLike, Sequence[PathLike]]

#: Files that are never conversion inputs.
NOT_INPUTS = frozenset({MAPPING_FILE, FAILED_LIST_FILE})

#: Pool used for several files: ``"process"`` (fork; Linux only, else threads) or ``"thread"``.
DEFAULT_POOL = "process"

T = TypeVar("T")


@dataclass(frozen=True)
class SourceFile:
    """An input file: where it is, and the name its outputs are named after."""

    path: Path
    name: str


@dataclass
class FileOutcome:
    """What converting one input file produced."""

    source: SourceFile
    written: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)

    def save(self, out_dir: Path, name: str, write: Callable[[Path], None]) -> Path | None:
        """Write one output through ``write(path)`` under its physical (maybe hashed) name, atomically
        (:func:`write_atomically`).

        An OSError (disk full, permissions) becomes an error of this file naming the output and the
        OS error (``cannot write OUT/x.npy: No space left on device (ENOSPC)``); nothing is left
        under the output's name and None is returned. Other exceptions of ``write`` propagate.
        """
        physical = physical_name(name)
        path = out_dir / physical
        try:
            write_atomically(path, write)
        except OSError as exc:
            self.errors.append(f"cannot write {path}: {os_problem(exc)}")
            return None
        if physical != name:
            self.renamed.append((physical, name))
        self.written.append(path)
        return path


@dataclass
class ConvertReport:
    """The result of one ``vconvert`` operation.

    ``failed`` maps an input path to the reasons it failed (in input order); ``notes`` are
    warnings worth showing (skipped tensors, degraded conversions, plugin warnings...).
    """

    out_dir: Path
    sources: int = 0
    written: list[Path] = field(default_factory=list)
    failed: dict[Path, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    failed_list: Path | None = None
    mapping: Path | None = None
    #: Why the failed-file list could not be written (then ``failed_list`` is None and the caller
    #: must show every failure itself); None when it was written or nothing failed.
    failed_list_error: str | None = None

    @property
    def all_converted(self) -> bool:
        return not self.failed

    def fail(self, path: Path, reason: str) -> None:
        self.failed.setdefault(path, []).append(reason)

    def add(self, outcome: FileOutcome) -> None:
        self.written.extend(outcome.written)
        self.notes.extend(outcome.notes)
        self.renamed.extend(outcome.renamed)
        for reason in outcome.errors:
            self.fail(outcome.source.path, reason)

    def summary(self) -> str:
        """One line: how many files, how many outputs, how many failed and where they are listed."""
        text = f"{self.sources} file(s) read, {len(self.written)} file(s) written to {self.out_dir}"
        if self.failed:
            where = f" (listed in {self.failed_list})" if self.failed_list else ""
            if self.failed_list_error:
                where = f" (listed on stderr: {self.failed_list_error})"
            text += f"; {len(self.failed)} file(s) failed{where}"
        if self.mapping:
            text += f"; {len(self.renamed)} long name(s) hashed, see {self.mapping}"
        return text


def os_problem(exc: OSError) -> str:
    """The operating system's reason, one line, with the errno's name when there is one:
    ``No space left on device (ENOSPC)``."""
    reason = " ".join((exc.strerror or str(exc) or type(exc).__name__).split())
    name = errno.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None
    return f"{reason} ({name})" if name and name not in reason else reason


_TEMPORARY_IDS = itertools.count()
#: Temporary files are named ``.vconvert-{pid}-{n}.tmp`` in the output folder (short: an output
#: name may take 254 of the 255 bytes a file name may have).
TEMPORARY_PREFIX = ".vconvert-"


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Create ``path`` by ``write(temporary)`` on a new temporary file of its folder, then a rename.

    Policy: on any failure of ``write`` or of the rename -- an OSError such as ENOSPC, any other
    exception, Ctrl-C -- the temporary file is removed, ``path`` is left as it was (an output of
    an earlier run stays whole, nothing half-written appears under its name) and the exception
    is raised. Where the output goes is :func:`convert.atomic.output_target`'s rule: a symbolic
    link is followed and the file it points to replaced (the link stays); a character device or
    a FIFO with its reader is written through (made in a private temporary file first), never
    renamed over; a block device, a socket, a link loop or a FIFO without a reader raise
    ``OSError`` with the reason. A signal swallowed while the output was made
    (:func:`convert.signals.check_interrupted`) stops it before the rename.
    """
    try:
        target = output_target(path)
    except OutputError as exc:
        raise OSError(None, exc.reason) from None
    if target.kind is TargetKind.STREAM:
        fd, name = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, suffix=".tmp")
        os.close(fd)
        try:
            write(Path(name))
            check_interrupted()
            write_through(target, Path(name).read_bytes())
        except OutputError as exc:
            raise OSError(None, exc.reason) from None
        finally:
            os.unlink(name)
        return
    path = target.path
    temporary = path.parent / f"{TEMPORARY_PREFIX}{os.getpid()}-{next(_TEMPORARY_IDS)}.tmp"
    try:
        write(temporary)
        check_interrupted()
        os.replace(temporary, path)
    except BaseException:
        try:
            temporary.unlink()
        except OSError:
            pass
        raise


def problem_of(exc: Exception) -> str:
    """The diagnosis of ``exc`` without the file path when the message starts with it."""
    if isinstance(exc, DumpFormatError):
        return exc.problem if exc.offset is None else f"{exc.problem} (byte {exc.offset})"
    return str(exc) or type(exc).__name__


def split_paths(paths: Sources) -> list[Path]:
    """``paths`` as a list: a string is split on commas (empty items dropped)."""
    if isinstance(paths, (str, os.PathLike)):
        items: Iterable[PathLike] = [p for p in str(paths).split(",") if p.strip()]
    else:
        items = paths
    return [Path(str(p).strip()) for p in items]


def _real_names(folder: Path) -> dict[str, str]:
    mapping, _bad = read_mapping(folder)
    return mapping


def _lookup(name: str, mapping: dict[str, str]) -> str:
    if not mapping or not is_hashed_name(name):
        return name
    if name in mapping:
        return mapping[name]
    stem = name[:-4] if name.endswith(".npy") else name
    real = mapping.get(stem) or mapping.get(stem + ".npy")
    if real is None:
        return name
    if name.endswith(".npy") and not real.endswith(".npy"):
        return real + ".npy"
    return real


def _folder_files(folder: Path, notes: list[str]) -> list[SourceFile]:
    try:
        with os.scandir(folder) as scan:
            # is_file_entry: one link loop must not end the listing (it is passed over)
            entries = sorted((e for e in scan if is_file_entry(e) and e.name not in NOT_INPUTS), key=lambda e: e.name)
    except OSError as exc:
        raise CompareError(f"{folder}: cannot list the folder ({exc.strerror or exc})") from None
    if not entries:
        leaf, how = resolve_dump_folder(folder)
        if leaf != folder:
            notes.extend(how)
            return _folder_files(leaf, notes)
        return []
    mapping = _real_names(folder) if (folder / MAPPING_FILE).is_file() else {}
    return [SourceFile(Path(e.path), _lookup(e.name, mapping)) for e in entries]


def collect_sources(paths: Sources, report: ConvertReport, *, what: str = "dump") -> list[SourceFile]:
    """Input files of ``paths`` (see the module policy); bad items are recorded in ``report``.

    Raises :class:`OptionError` when no path gives any file.
    """
    items = split_paths(paths)
    if not items:
        raise OptionError(f"no input path given (expected a {what} file or folder)")
    files: list[SourceFile] = []
    problems: list[str] = []
    for item in items:
        if item.is_dir():
            found = _folder_files(item, report.notes)
            if not found:
                problems.append(f"{item}: the folder holds no files")
                if len(items) > 1:
                    report.fail(item, "the folder holds no files")
            files.extend(found)
        elif item.is_file():
            mapping = _real_names(item.parent) if (item.parent / MAPPING_FILE).is_file() else {}
            files.append(SourceFile(item, _lookup(item.name, mapping)))
        else:
            why = "no such file or folder" if not item.exists() else "not a regular file or folder"
            problems.append(f"{item}: {why}")
            if len(items) > 1:
                report.fail(item, why)
    if not files:
        raise OptionError("; ".join(problems) if problems else f"no {what} files found")
    seen: dict[str, Path] = {}
    unique: list[SourceFile] = []
    for source in files:
        first = seen.setdefault(source.name, source.path)
        if first != source.path:
            report.fail(source.path, f"same file name as {first}; its outputs would overwrite that file's, not converted")
            continue
        unique.append(source)
    report.sources = len(unique)
    return unique


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_count(requested: int | None, jobs: int) -> int:
    """``min(usable CPUs, jobs, requested)``; ``requested`` None or 0 means "as many as CPUs".

    Raises :class:`OptionError` for a negative ``requested``.
    """
    if requested is not None and requested < 0:
        raise OptionError(f"--workers {requested}: give 0 (one per CPU) or a positive number")
    cpus = usable_cpus()
    return max(1, min(cpus, jobs, requested or cpus))


#: Process mode: the items are sent to the workers in about this many chunks per worker (fewer
#: round trips for folders of many small files, still balanced when a few files are large).
CHUNKS_PER_WORKER = 4

#: Jobs of the running process pools, by token: forked workers find theirs here (inherited).
_FORKED: dict[int, tuple[Callable[[object], FileOutcome], Sequence[object], Callable[[object], SourceFile]]] = {}
_TOKENS = itertools.count()


def _failed(source: SourceFile, exc: BaseException) -> FileOutcome:
    outcome = FileOutcome(source)
    if isinstance(exc, BrokenProcessPool):
        outcome.errors.append("not converted: a worker process died while converting this file or another one "
                              "(out of memory?); run again with --workers 1 to find the file")
    else:
        outcome.errors.append(f"unexpected error: {type(exc).__name__}: {exc}")
    return outcome


def _guarded(job: Callable[[T], FileOutcome], source_of: Callable[[T], SourceFile], item: T) -> FileOutcome:
    """``job(item)``; an exception fails that item's file instead of the run."""
    try:
        return job(item)
    except Exception as exc:  # noqa: BLE001 - a bug on one file fails that file only
        return _failed(source_of(item), exc)


def _run_forked(token: int, start: int, stop: int) -> list[FileOutcome]:
    """In a forked worker: items ``start:stop`` of the job registered under ``token``."""
    job, items, source_of = _FORKED[token]
    return [_guarded(job, source_of, items[i]) for i in range(start, stop)]


def _fork_available() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _as_source(item: object) -> SourceFile:
    if isinstance(item, SourceFile):
        return item
    raise TypeError(f"run_files: give source_of for items of type {type(item).__name__}")


def run_files(items: Sequence[T], job: Callable[[T], FileOutcome], workers: int | None = None, *,
              pool: str | None = None, source_of: Callable[[T], SourceFile] = _as_source) -> list[FileOutcome]:
    """``job(item)`` for every item, in parallel when there are several; outcomes in input order.

    ``workers``: see :func:`worker_count`. ``pool``: ``"process"`` or ``"thread"`` (default
    :data:`DEFAULT_POOL`; ``"process"`` falls back to threads where fork is not used). An item
    whose job raises gets an outcome (for ``source_of(item)``) failed with the exception; see the
    module's parallel policy.
    """
    items = list(items)
    count = worker_count(workers, len(items))
    kind = pool or DEFAULT_POOL
    if kind not in ("process", "thread"):
        raise ValueError(f"pool {kind!r} is not 'process' or 'thread'")
    if count <= 1:
        return [_guarded(job, source_of, item) for item in items]
    if kind == "thread" or not _fork_available():
        with ThreadPoolExecutor(max_workers=count) as threads:
            return list(threads.map(lambda item: _guarded(job, source_of, item), items))
    size = max(1, math.ceil(len(items) / (count * CHUNKS_PER_WORKER)))
    spans = [(start, min(start + size, len(items))) for start in range(0, len(items), size)]
    token = next(_TOKENS)
    _FORKED[token] = (job, items, source_of)  # type: ignore[assignment]
    executor = ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork"))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning)
            futures: list[Future[list[FileOutcome]]] = [executor.submit(_run_forked, token, a, b) for a, b in spans]
        outcomes: list[FileOutcome] = []
        for (start, stop), future in zip(spans, futures):
            try:
                outcomes.extend(future.result())
            except Exception as exc:  # noqa: BLE001 - a dead worker: its files are reported
                outcomes.extend(_failed(source_of(items[i]), exc) for i in range(start, stop))
        return outcomes
    except BaseException:
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        executor.shutdown(wait=True)
        _FORKED.pop(token, None)


def prepare_out_dir(out_dir: PathLike) -> Path:
    """Create the output folder (with parents); an existing non-folder is an OptionError."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OptionError(f"{out}: the output path exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"{out}: cannot create the output folder ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK):
        raise OptionError(f"{out}: the output folder is not writable")
    return out


def start(paths: Sources, out_dir: PathLike, *, what: str = "dump") -> tuple[ConvertReport, list[SourceFile]]:
    """Collect the inputs, then create the output folder (so a bad input leaves nothing behind)."""
    report = ConvertReport(out_dir=Path(out_dir))
    sources = collect_sources(paths, report, what=what)
    report.out_dir = prepare_out_dir(out_dir)
    return report, sources


def finish(report: ConvertReport) -> ConvertReport:
    """Write ``mapping.csv``, then ``convert_failed_file_list.txt`` (or remove a stale one).

    Never raises for a file it cannot write (see the module's output policy): ``mapping.csv``
    that cannot be written is listed as failed, with the rows it would have held; a list that
    cannot be written sets ``report.failed_list_error`` and an earlier run's list is removed.
    """
    try:
        report.mapping = update_mapping(report.out_dir, report.renamed)
    except OSError as exc:
        path = report.out_dir / MAPPING_FILE
        rows = ", ".join(f"{hashed} = {real}" for hashed, real in dict.fromkeys(report.renamed))
        report.fail(path, f"cannot write {path}: {os_problem(exc)}; the long names it would record: {rows}")
    failed_path = report.out_dir / FAILED_LIST_FILE
    if report.failed:
        text = "".join(encodable(escape_line_breaks(f"{path}: {'; '.join(reasons)}")) + "\n"
                       for path, reasons in report.failed.items())
        try:
            write_atomically(failed_path, lambda path: path.write_text(text, encoding="utf-8"))
            report.failed_list = failed_path
        except OSError as exc:
            report.failed_list_error = f"cannot write {failed_path}: {os_problem(exc)}"
            _remove(failed_path, report)
    else:
        _remove(failed_path, report)
    return report


def _remove(stale: Path, report: ConvertReport) -> None:
    """Remove an earlier run's file (a note when it cannot be removed)."""
    try:
        stale.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        report.notes.append(f"cannot remove {stale} of an earlier run: {os_problem(exc)}")


def update_mapping(out_dir: Path, rows: Iterable[tuple[str, str]]) -> Path | None:
    """Add the ``(hashed, real)`` rows not yet in ``out_dir/mapping.csv`` (written atomically: the
    rows already there, then the new ones); return its path when there are rows. Raises OSError.

    The cells follow :mod:`convert.textcells`: a real name a spreadsheet could take for a formula
    (``=x...npy``) is written ``'=x...npy`` (vcompare's mapping reader removes the ``'``), line
    breaks as ``\\r`` escapes, so one row stays one line."""
    rows = list(rows)
    if not rows:
        return None
    path = out_dir / MAPPING_FILE
    old = path.read_bytes() if path.is_file() else b""
    known = {(r[0], r[1]) for r in csv.reader(io.StringIO(old.decode("utf-8", "replace"), newline="")) if len(r) == 2}
    safe = [(neutralise_text(hashed), neutralise_text(real)) for hashed, real in rows]  # convert.textcells
    new = [row for row in dict.fromkeys(safe) if row not in known]
    if new:
        text = io.StringIO(newline="")
        csv.writer(text, lineterminator="\n").writerows(new)
        content = old + (b"\n" if old and not old.endswith(b"\n") else b"") + text.getvalue().encode("utf-8")
        write_atomically(path, lambda target: target.write_bytes(content))
    return path

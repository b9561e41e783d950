"""The manual's "handle exceptions in the generated .npy file names in batches": rename golden
``.npy`` files (saved by tfdbg, or by hand) to ``{op_name}.{output_index}.{timestamp}.npy``.

Which files: every ``.npy`` file under the folder, subfolders included -- tfdbg's ``pt ... -w``
turns the ``/`` of a tensor name into folders (``a/b/Conv2D:0.npy``). Symlinked folders are not
followed. The renamed files go to the folder's top level, where ``vcompare`` reads goldens;
folders emptied by the move are left as they are. Other files are ignored.

Already valid (left alone): a top-level file whose name :func:`convert.names.golden.
parse_golden_name` accepts with a 16-digit timestamp.

The new name of any other file, from its path below the folder without ``.npy``:

1. ``/`` (and ``\\``) become ``_`` and ``:`` becomes ``.`` (``a/b/Conv2D:0`` -> ``a_b_Conv2D.0``);
2. the trailing all-digit ``.``-fields decide the rest:

   * two or more, the last of :data:`MIN_TIMESTAMP_DIGITS` digits or more: the last is the
     timestamp and the one before it the output index. A 16-digit timestamp is kept; any other
     (``1589195081588``, milliseconds) is replaced by the run's, and the rename says so;
   * otherwise, the last field of fewer digits is the output index and the run's timestamp is
     appended (``Conv2D.0`` -> ``Conv2D.0.1700000000000000``; ``block.1.0``: op ``block.1``,
     index 0);
   * no such field, or only one long one (``op.1589195081588018``): there is no output index
     and the file is refused -- which output it holds cannot be guessed;

3. the op name must then hold only ``A-Za-z0-9_.-`` and the name stay under 255 bytes, or the
   file is refused; the result is checked with ``parse_golden_name``.

A subfolder that cannot be listed is reported (refused) and the rest goes on.

The run's timestamp is the current time in microseconds (16 digits), the same for every file of
the run, as tfdbg's recipe does.

Collisions are refused, never resolved by overwriting: every file of a group that would get the
same name, and a file whose new name already exists, stay where they are and are reported; the
other files are renamed. A rename never replaces a file (hard link + unlink, or a checked rename
where links are not supported).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OptionError
from ..names.golden import parse_golden_name
from .naming import MAX_NAME_BYTES

#: Digits of a valid timestamp.
TIMESTAMP_DIGITS = 16

#: A trailing number this long or longer is a timestamp, a shorter one an output index.
MIN_TIMESTAMP_DIGITS = 4

_OP_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def run_timestamp() -> str:
    """The current time in microseconds, as the 16 digits of a golden name."""
    stamp = str(time.time_ns() // 1000)
    if len(stamp) != TIMESTAMP_DIGITS:  # pragma: no cover - before 2001 or after 2286
        raise OptionError(f"the clock gives the timestamp {stamp}, not {TIMESTAMP_DIGITS} digits")
    return stamp


def is_valid_name(name: str) -> bool:
    """A golden ``.npy`` name with a 16-digit timestamp (``parse_golden_name``'s rule)."""
    parsed = parse_golden_name(name)
    return parsed is not None and parsed.kind == "npy" and len(parsed.timestamp_digits) == TIMESTAMP_DIGITS


@dataclass(frozen=True)
class NewName:
    """The golden name of a file (``name``), or why there is none (``refused``); ``note`` says what
    was replaced (an old timestamp)."""

    name: str | None
    note: str | None = None
    refused: str | None = None


def golden_name_for(relative: str, timestamp: str) -> NewName:
    """The golden name for the file at ``relative`` (``/``-separated, ending in ``.npy``)."""
    if not relative.endswith(".npy"):
        return NewName(None, refused="not a .npy file")
    stem = relative[: -len(".npy")].replace("\\", "_").replace("/", "_").replace(":", ".")
    fields = stem.split(".")
    count = 0
    while count < len(fields) - 1 and fields[-1 - count].isdigit() and fields[-1 - count].isascii():
        count += 1
    note = None
    if count >= 2 and len(fields[-1]) >= MIN_TIMESTAMP_DIGITS:
        op, index, old = ".".join(fields[:-2]), fields[-2], fields[-1]
        if len(old) == TIMESTAMP_DIGITS:
            stamp = old
        else:
            stamp = timestamp
            note = f"timestamp {old} has {len(old)} digits, not {TIMESTAMP_DIGITS}: replaced"
    elif count >= 1 and len(fields[-1]) < MIN_TIMESTAMP_DIGITS:
        op, index, stamp = ".".join(fields[:-1]), fields[-1], timestamp
    elif count == 1:
        return NewName(None, refused=f"no output index: the only number, {fields[-1]}, is a timestamp "
                                     f"(expected {{op}}.{{index}}[.{{timestamp}}] or {{op}}:{{index}})")
    else:
        return NewName(None, refused="no output index (expected {op}.{index}[.{timestamp}] or {op}:{index})")
    if not op:
        return NewName(None, refused="no op name before the output index")
    bad = sorted(set(op) - _OP_CHARS)
    if bad:
        shown = "".join(bad)
        return NewName(None, refused=f"the op name {op!r} has characters outside A-Za-z0-9_.- ({shown!r}); "
                                     f"rename it by hand")
    name = f"{op}.{index}.{stamp}.npy"
    size = len(name.encode("utf-8"))
    if size >= MAX_NAME_BYTES:
        return NewName(None, refused=f"the new name would have {size} bytes (the limit is {MAX_NAME_BYTES - 1})")
    if not is_valid_name(name):  # pragma: no cover - the rules above only build valid names
        return NewName(None, refused=f"{name} is still not a golden name")
    return NewName(name, note)


@dataclass(frozen=True)
class Move:
    """One rename: ``old`` -> ``new`` (paths), with a note about what was replaced."""

    old: Path
    new: Path
    note: str | None = None


@dataclass
class RenameReport:
    """What :func:`rename_npy` did (or, with ``dry_run``, would do)."""

    folder: Path
    timestamp: str
    dry_run: bool
    renamed: list[Move] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)
    valid: list[Path] = field(default_factory=list)

    @property
    def all_renamed(self) -> bool:
        return not self.refused

    def summary(self) -> str:
        verb = "would be renamed" if self.dry_run else "renamed"
        text = f"{len(self.renamed)} file(s) {verb}, {len(self.valid)} already valid"
        if self.refused:
            text += f", {len(self.refused)} refused"
        return text + f" (timestamp {self.timestamp}) in {self.folder}"


def _npy_files(folder: Path, unreadable: list[tuple[Path, str]]) -> Iterator[Path]:
    def note(exc: OSError) -> None:
        why = exc.strerror or str(exc)
        unreadable.append((Path(exc.filename), f"cannot list the folder ({why}); its files are not renamed"))

    for root, dirs, files in os.walk(folder, onerror=note, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".npy"):
                yield Path(root) / name


def _move(old: Path, new: Path) -> str | None:
    """Rename without ever replacing a file; the reason when it cannot be done, else None."""
    try:
        os.link(old, new, follow_symlinks=False)
    except FileExistsError:
        return f"{new.name} already exists"
    except OSError:  # no hard links here (some file systems): a checked rename
        if os.path.lexists(new):
            return f"{new.name} already exists"
        try:
            os.rename(old, new)
        except OSError as exc:
            return f"cannot rename it ({exc.strerror or exc})"
        return None
    try:
        os.unlink(old)
    except OSError as exc:
        os.unlink(new)
        return f"cannot remove the old name ({exc.strerror or exc})"
    return None


def rename_npy(folder: str | Path, *, dry_run: bool = False, timestamp: str | None = None) -> RenameReport:
    """Rename the ``.npy`` files under ``folder`` to golden names (rules in the module doc).

    ``timestamp``: the 16 digits given to files without a valid one (default: now, in
    microseconds). ``dry_run``: decide everything, rename nothing. Raises OptionError when the
    folder is missing or holds no ``.npy`` file (nothing can run).
    """
    root = Path(folder)
    if not root.is_dir():
        why = "no such folder" if not root.exists() else "not a folder (give the folder of .npy files)"
        raise OptionError(f"{root}: {why}")
    stamp = timestamp if timestamp is not None else run_timestamp()
    if len(stamp) != TIMESTAMP_DIGITS or not stamp.isdigit() or not stamp.isascii():
        raise OptionError(f"timestamp {stamp!r} is not {TIMESTAMP_DIGITS} digits")
    report = RenameReport(root, stamp, dry_run)
    unreadable: list[tuple[Path, str]] = []
    files = list(_npy_files(root, unreadable))
    if not files:
        why = f" ({unreadable[0][1]})" if unreadable else ""
        raise OptionError(f"{root}: no .npy files in the folder or below it{why}")
    report.refused.extend(unreadable)
    planned: dict[str, list[tuple[Path, NewName]]] = {}
    for path in files:
        relative = path.relative_to(root).as_posix()
        if path.parent == root and is_valid_name(path.name):
            report.valid.append(path)
            continue
        new = golden_name_for(relative, stamp)
        if new.name is None:
            report.refused.append((path, new.refused or "no golden name"))
            continue
        planned.setdefault(new.name, []).append((path, new))
    for name, group in planned.items():
        target = root / name
        if len(group) > 1:
            others = ", ".join(str(p.relative_to(root)) for p, _ in group)
            for path, _new in group:
                report.refused.append((path, f"{len(group)} files would become {name} ({others}); rename them by hand"))
            continue
        path, new = group[0]
        if os.path.lexists(target):
            report.refused.append((path, f"{name} already exists"))
            continue
        if not dry_run:
            problem = _move(path, target)
            if problem is not None:
                report.refused.append((path, problem))
                continue
        report.renamed.append(Move(path, target, new.note))
    order = {path: k for k, path in enumerate(files)}
    report.refused.sort(key=lambda item: order.get(item[0], -1))
    return report


__all__ = ["Move", "NewName", "RenameReport", "golden_name_for", "is_valid_name", "rename_npy", "run_timestamp"]

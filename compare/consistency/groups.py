"""Rank groups: ``dp:K`` or a rank-group file, resolved against the ranks of a dump tree.

Syntax (the ``--groups`` option, the ``groups`` argument of
:func:`compare.consistency.check_consistency`):

* ``dp:K`` -- consecutive blocks of ``K`` ranks (``K >= 2``): ``[0 .. K-1]``, ``[K .. 2K-1]``,
  ... up to the block holding the largest rank of the tree. This is data parallelism as the
  outermost dimension (ranks ``0 .. K-1`` replicate each other). Layouts that interleave
  (Megatron-style tensor parallelism inside data parallelism: replicas ``r, r+T, r+2T ...``)
  are written as a group file.
* a **group file**, text: one group per line, ranks separated by commas and/or spaces, ranges
  ``A-B`` (both ends included) allowed: ``0,1,2,3`` / ``4-7`` / ``0 8 16 24``; blank lines and
  ``#`` comments are ignored;
* a **group file**, JSON (a ``.json`` name, or text starting with ``[`` or ``{``): a list of
  lists of ranks, ``[[0, 1, 2, 3], [4, 5, 6, 7]]``, or ``{"groups": [[...], ...]}``.
* from Python, also a sequence of sequences of ranks.

Edge-case policy (each an :class:`~compare.errors.OptionError` whose message names the file and
line): a rank listed twice (in one group or two), a group of fewer than two ranks (nothing to
compare it with), no group at all, a token that is not a rank or a range, a file that is not a
regular file or is larger than :data:`MAX_GROUP_FILE` bytes, a rank above :data:`MAX_RANK`
(131,071: ranks are ``0 .. 131,071``, so a group holds at most 131,072 ranks; ``dp:K`` takes
``2 <= K <= 131,072``; a range ``A-B`` is checked before it is spelled out), JSON nested deeper
than 100 levels or holding a whole number of more than 4,300 digits
(:func:`convert.jsonsafe.load_json`). A ``dp:K`` over a tree with a rank folder above
:data:`MAX_RANK` is refused when the groups are resolved. A group rank the tree has no dump
for is not an error: it is reported as a row (``no dump``). Ranks of the tree in no group are
named in a note and not checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from convert.entries import special_file_problem
from convert.jsonsafe import load_json

from ..errors import DumpFormatError, OptionError
from .records import RankGroup

#: A group file larger than this is refused (a rank list of 100,000 ranks is well below it).
MAX_GROUP_FILE = 1 << 20
#: The largest rank number (2**17 - 1): ranks are ``0 .. MAX_RANK``, a group holds at most
#: ``MAX_RANK + 1`` = 131,072 ranks (well above today's largest jobs; a report of that many
#: ``no dump`` rows takes seconds).
MAX_RANK = (1 << 17) - 1
#: Digits a rank token may have before it is converted (``MAX_RANK`` has 6).
_RANK_DIGITS = len(str(MAX_RANK))

_DP_RE = re.compile(r"\s*dp\s*:\s*(\d+)\s*", re.IGNORECASE)
_TOKEN_RE = re.compile(r"(\d+)(?:-(\d+))?")


@dataclass(frozen=True)
class GroupSpec:
    """Parsed groups: ``block`` ranks per group (``dp:K``), or the explicit ``groups``.

    ``text`` is the spec as given (``dp:8``, the file's path) for messages and reports."""

    text: str
    block: int = 0
    groups: tuple[tuple[int, ...], ...] = ()

    def resolve(self, ranks: Iterable[int]) -> tuple[RankGroup, ...]:
        """The groups over the ranks of a tree (``ranks``: those that have a dump folder)."""
        if not self.block:
            return tuple(RankGroup(i, tuple(sorted(g))) for i, g in enumerate(self.groups))
        found = sorted(set(ranks))
        if not found:
            return ()
        if found[-1] > MAX_RANK:
            raise OptionError(f"--groups {self.text}: the tree has rank {found[-1]}; dp:K covers ranks 0 .. "
                              f"{MAX_RANK} (write a group file for the ranks to check)")
        count = found[-1] // self.block + 1
        return tuple(RankGroup(i, tuple(range(i * self.block, (i + 1) * self.block))) for i in range(count))


def parse_groups(value: str | os.PathLike | Sequence[Sequence[int]] | GroupSpec) -> GroupSpec:
    """``dp:K``, a group file's path, or a sequence of rank sequences -> :class:`GroupSpec` (module doc)."""
    if isinstance(value, GroupSpec):
        return value
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        match = _DP_RE.fullmatch(text) if isinstance(value, str) else None
        if match is not None:
            digits = match.group(1)
            block = int(digits) if len(digits) <= _RANK_DIGITS + 1 else MAX_RANK + 2
            if block < 2:
                raise OptionError(f"--groups {text}: a data-parallel group needs at least 2 ranks")
            if block > MAX_RANK + 1:
                raise OptionError(f"--groups {_shown(text)}: a data-parallel group holds at most {MAX_RANK + 1} "
                                  f"ranks (ranks are 0 .. {MAX_RANK})")
            return GroupSpec(text.strip(), block=block)
        if isinstance(value, str) and text.lower().startswith("dp"):
            raise OptionError(f"--groups {text!r}: write dp:K, K ranks per data-parallel group (dp:8)")
        return _read_file(Path(text))
    if isinstance(value, Sequence):
        groups = []
        for number, group in enumerate(value, start=1):
            if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
                raise OptionError(f"groups: group {number} is {group!r}, not a sequence of ranks")
            groups.append((f"group {number}", [_rank(r, f"group {number}") for r in group]))
        return _checked("groups", groups)
    raise OptionError(f"groups: {value!r} is neither dp:K, a group file nor a sequence of rank lists")


def _shown(text: str) -> str:
    """A long token shortened for a message (a 5,000-digit number is named by its length)."""
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _rank(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionError(f"{where}: {_shown(repr(value))} is not a rank (a whole number, 0 or more)")
    if value > MAX_RANK:
        raise OptionError(f"{where}: rank {_shown(str(value))} is above {MAX_RANK} (ranks are 0 .. {MAX_RANK})")
    return value


def _rank_token(digits: str, where: str) -> int:
    """A rank of a text group file, its length checked before it is converted."""
    if len(digits) > _RANK_DIGITS:
        raise OptionError(f"{where}: rank {_shown(digits)} is above {MAX_RANK} (ranks are 0 .. {MAX_RANK})")
    return _rank(int(digits), where)


def _read_file(path: Path) -> GroupSpec:
    special = special_file_problem(path)
    if special is not None:
        raise OptionError(f"--groups {path}: {special}")
    if not path.is_file():
        raise OptionError(f"--groups {path}: neither dp:K (dp:8) nor an existing group file")
    try:
        if path.stat().st_size > MAX_GROUP_FILE:
            raise OptionError(f"--groups {path}: {path.stat().st_size} bytes; a group file may hold at most "
                              f"{MAX_GROUP_FILE}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(f"--groups {path}: cannot be read: {exc}") from None
    stripped = text.lstrip()
    if path.suffix.lower() == ".json" or stripped.startswith(("[", "{")):
        return _from_json(path, text)
    groups = []
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        where = f"{path} line {number}"
        ranks: list[int] = []
        for token in re.split(r"[,\s]+", body):
            if not token:
                continue
            match = _TOKEN_RE.fullmatch(token)
            if match is None:
                raise OptionError(f"{where}: {_shown(repr(token))} is not a rank or a range A-B (a line is a group: "
                              "0,1,2,3)")
            low = _rank_token(match.group(1), where)
            high = _rank_token(match.group(2), where) if match.group(2) is not None else low
            if high < low:
                raise OptionError(f"{where}: range {token} runs backwards")
            ranks.extend(range(low, high + 1))
        groups.append((where, ranks))
    return _checked(str(path), groups)


def _from_json(path: Path, text: str) -> GroupSpec:
    try:
        document = load_json(text, path)
    except DumpFormatError as exc:
        raise OptionError(f"--groups {exc}") from None
    if isinstance(document, dict):
        document = document.get("groups")
    if not isinstance(document, list):
        raise OptionError(f'{path}: JSON groups are a list of rank lists ([[0,1],[2,3]] or {{"groups": [...]}})')
    groups = []
    for number, group in enumerate(document):
        where = f"{path} groups[{number}]"
        if not isinstance(group, list):
            raise OptionError(f"{where}: {group!r} is not a list of ranks")
        groups.append((where, [_rank(r, where) for r in group]))
    return _checked(str(path), groups)


def _checked(text: str, groups: list[tuple[str, list[int]]]) -> GroupSpec:
    """Refuse repeated ranks, groups of fewer than two ranks and no group (module doc)."""
    if not groups:
        raise OptionError(f"{text}: no group (write one group per line: 0,1,2,3)")
    seen: dict[int, str] = {}
    for where, ranks in groups:
        if len(set(ranks)) < 2:
            raise OptionError(f"{where}: a group needs at least 2 different ranks, got {ranks}")
        for rank in ranks:
            if rank in seen:
                again = "twice" if seen[rank] == where else f"also in {seen[rank]}"
                raise OptionError(f"{where}: rank {rank} is listed {again}: a rank belongs to one group")
            seen[rank] = where
    return GroupSpec(text, groups=tuple(tuple(ranks) for _, ranks in groups))


__all__ = ["GroupSpec", "MAX_GROUP_FILE", "MAX_RANK", "parse_groups"]

"""The one by-name matcher: left op names to right op names, by a ladder of rules.

:func:`match_names` applies the rules it is given, in this order, each to the names the rules
before it left unmatched; every right name is used once:

1. ``EXACT`` -- the name as written;
2. ``GOLDEN_KEY`` -- :func:`convert.names.keys.normalize_golden_name` (``/`` and ``.`` as ``_``:
   a tfdbg / Caffe golden file name), the first free right name with that key;
3. ``SCOPE_KEY`` -- :func:`convert.names.keys.name_key` (``--`` read as ``/``, then ``/ . \\``
   and spaces as ``_``: a MindSpore scope name against an Ascend-format dump), the first free
   right name with that key;
4. ``KERNEL_ID`` -- the scope key without its trailing kernel id ``-op{N}``, only where that key
   is unique among the names not matched exactly, on each side;
5. ``MIXED_PRECISION`` -- the scope key with the scope changes of
   ``ms.amp.auto_mixed_precision`` read back (:func:`amp_key`), only where it identifies one op
   on each side and one of the two names lies in such a scope;
6. ``SHORT_NAME`` -- a short O0/O1 kernel name (``Conv2D-op12``) with the one scoped name of the
   other side ending in ``_Conv2D-op12`` (:func:`kernel_tail`), only where that ``{Type}-op{N}``
   identifies one op on each side; two scoped names never pair by this rule;
7. ``MSPROBE_API`` -- msprobe data names of two frameworks: the same
   :func:`convert.names.msprobe.api_key` (``Torch.matmul.0.forward`` and
   ``Mint.matmul.0.forward`` both ``matmul.0.forward``; ``Module.fc.Linear.forward.0`` and
   ``Cell.fc.Dense.forward.0`` both ``cell:fc.forward.0``), only where that key identifies one op
   on each side.

The Ascend by-name pairing uses :data:`GOLDEN_RULES` (rules 1-2), the MindSpore family pairing
:data:`SCOPE_RULES` (1, 3-6). The counts per rule feed the notes that say how names matched.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from typing import NamedTuple

from convert.names.keys import name_key, normalize_golden_name, without_kernel_id
from convert.names.msprobe import api_key

#: In a :func:`name_key`: the scope parts ``ms.amp.auto_mixed_precision`` inserts (see :func:`amp_key`).
_AMP_WRAP_RE = re.compile(r"-_OutputTo(?:16|32)__backbone-")
_AMP_MARK_RE = re.compile(r"(?:^|[-_])_OutputTo(?:16|32)(?:_|$)")
#: ... and the cell classes its O1 level (through mindspore.rewrite) renames ``{Class}Opt[_{N}]``.
_AMP_CLASS_RE = re.compile(r"-([A-Za-z][A-Za-z0-9]*)Opt(?:_\d+)?(?=_)")
#: The ``{Type}-op{N}`` end of a normalised kernel name (the whole of a short O0/O1 name).
_TAIL_RE = re.compile(r"(?:^|_)([A-Za-z][A-Za-z0-9]*-op\d+)$")


class NameRule(str, Enum):
    """A rung of the ladder; the value is the label the counts (and the notes) use."""

    EXACT = "exact"
    GOLDEN_KEY = "golden key"
    SCOPE_KEY = "normalised"
    KERNEL_ID = "kernel id"
    MIXED_PRECISION = "mixed precision"
    SHORT_NAME = "short name"
    MSPROBE_API = "msprobe api"


#: Ascend dumps against golden folders (tfdbg / Caffe file names).
GOLDEN_RULES: tuple[NameRule, ...] = (NameRule.EXACT, NameRule.GOLDEN_KEY)
#: MindSpore / cross-family scope names.
SCOPE_RULES: tuple[NameRule, ...] = (NameRule.EXACT, NameRule.SCOPE_KEY, NameRule.KERNEL_ID,
                                     NameRule.MIXED_PRECISION, NameRule.SHORT_NAME, NameRule.MSPROBE_API)


class NameMatch(NamedTuple):
    """``matched``: left name -> right name; ``used``: how many names each rule matched (by label)."""

    matched: dict[str, str]
    used: Counter


def amp_key(key: str) -> str:
    """A normalised name with the scope changes of mixed precision read back (rule 5).

    ``ms.amp.auto_mixed_precision`` O2/O3 wraps a cell ``attr-Class`` in an ``_OutputTo16`` /
    ``_OutputTo32`` cell that keeps it as ``_backbone``: the scope ``attr-Class`` becomes
    ``attr-_OutputTo32/_backbone-Class``; every ``-_OutputTo16__backbone-`` /
    ``-_OutputTo32__backbone-`` of ``key`` (a :func:`name_key`) is read back as ``-``. Its O1 level
    rewrites the network and renames each cell class ``Class`` to ``ClassOpt`` (``ClassOpt_1``,
    ``ClassOpt_2`` ... for further copies): every scope part ``-ClassOpt[_N]`` followed by ``_``
    is read back as ``-Class``.
    """
    return _AMP_CLASS_RE.sub(r"-\1", _AMP_WRAP_RE.sub("-", key))


def is_amp_name(name: str) -> bool:
    """Whether an op name lies in a scope mixed precision changed (``_OutputTo16`` / ``_OutputTo32``
    scopes, or a cell class renamed ``ClassOpt[_N]`` by the O1 level)."""
    key = name_key(name)
    return _AMP_MARK_RE.search(key) is not None or _AMP_CLASS_RE.search(key) is not None


def kernel_tail(key: str) -> str | None:
    """``{Type}-op{N}``, the last scope part of a normalised name, or None when it has no such end.

    ``Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12`` and the short
    O0/O1 name ``Conv2D-op12`` both end in ``Conv2D-op12``.
    """
    found = _TAIL_RE.search(key)
    return found.group(1) if found else None


def _unique_keys(names: Iterable[str], key_of: Callable[[str], str | None]) -> dict[str, str | None]:
    """key -> the one name having it (None when several names share it; names whose key is None skipped)."""
    out: dict[str, str | None] = {}
    for name in names:
        key = key_of(name)
        if key is not None:
            out[key] = None if key in out else name
    return out


def _amp_rule_key(name: str) -> str:
    return amp_key(name_key(name))


def _tail_of(name: str) -> str | None:
    return kernel_tail(name_key(name))


def _stripped_key(name: str) -> str:
    return without_kernel_id(name_key(name))


def _is_short(name: str) -> bool:
    """A short O0/O1 kernel name (``Conv2D-op12``): no scope, only ``{Type}-op{N}``."""
    return _tail_of(name) == name_key(name)


class _State:
    """The matching so far: ``matched`` left -> right, ``taken`` right names, counts per rule."""

    def __init__(self, left: Sequence[str], right: Sequence[str]) -> None:
        self.left, self.right = left, right
        self.matched: dict[str, str] = {}
        self.taken: set[str] = set()
        self.used: Counter = Counter()
        self.exact: set[str] = set()  # names (the same on both sides) matched by EXACT

    def take(self, name: str, other: str, rule: NameRule) -> None:
        self.matched[name] = other
        self.taken.add(other)
        self.used[rule.value] += 1
        if rule is NameRule.EXACT:
            self.exact.add(name)

    def free_left(self) -> list[str]:
        return [n for n in self.left if n not in self.matched]

    def free_right(self) -> list[str]:
        return [n for n in self.right if n not in self.taken]


def _exact(state: _State) -> None:
    right = set(state.right)
    for name in state.left:
        if name in right and name not in state.taken:
            state.take(name, name, NameRule.EXACT)


def _first_by_key(state: _State, key_of: Callable[[str], str], rule: NameRule) -> None:
    by_key: dict[str, str] = {}
    for name in state.free_right():
        by_key.setdefault(key_of(name), name)
    for name in state.free_left():
        other = by_key.get(key_of(name))
        if other is not None and other not in state.taken:
            state.take(name, other, rule)


def _kernel_id(state: _State) -> None:
    # Unique among the names not matched exactly (names a key rule matched still count: a
    # stripped key two ops share identifies neither).
    right = _unique_keys([n for n in state.right if n not in state.exact], _stripped_key)
    left = Counter(_stripped_key(n) for n in state.left if n not in state.exact)
    for name in state.free_left():
        key = _stripped_key(name)
        other = right.get(key)
        if other is not None and other not in state.taken and left[key] == 1:
            state.take(name, other, NameRule.KERNEL_ID)


def _mixed_precision(state: _State) -> None:
    if not (any(map(is_amp_name, state.left)) or any(map(is_amp_name, state.right))):
        return
    left_keys, right_keys = _unique_keys(state.left, _amp_rule_key), _unique_keys(state.right, _amp_rule_key)
    for name in state.left:
        key = _amp_rule_key(name)
        other = right_keys.get(key)
        if (name in state.matched or other is None or other in state.taken or left_keys.get(key) != name
                or not (is_amp_name(name) or is_amp_name(other))):
            continue
        state.take(name, other, NameRule.MIXED_PRECISION)


def _short_name(state: _State) -> None:
    left_tails, right_tails = _unique_keys(state.left, _tail_of), _unique_keys(state.right, _tail_of)
    for tail, name in left_tails.items():
        other = right_tails.get(tail)
        if name is None or other is None or name in state.matched or other in state.taken:
            continue
        if _is_short(name) == _is_short(other):
            continue  # both short (the exact rule would have paired them) or both scoped (different scopes)
        state.take(name, other, NameRule.SHORT_NAME)


def _msprobe_api(state: _State) -> None:
    left_keys, right_keys = _unique_keys(state.left, api_key), _unique_keys(state.right, api_key)
    for key, name in left_keys.items():
        other = right_keys.get(key)
        if name is None or other is None or name in state.matched or other in state.taken:
            continue
        state.take(name, other, NameRule.MSPROBE_API)


_APPLY: dict[NameRule, Callable[[_State], None]] = {
    NameRule.EXACT: _exact,
    NameRule.GOLDEN_KEY: lambda state: _first_by_key(state, normalize_golden_name, NameRule.GOLDEN_KEY),
    NameRule.SCOPE_KEY: lambda state: _first_by_key(state, name_key, NameRule.SCOPE_KEY),
    NameRule.KERNEL_ID: _kernel_id,
    NameRule.MIXED_PRECISION: _mixed_precision,
    NameRule.SHORT_NAME: _short_name,
    NameRule.MSPROBE_API: _msprobe_api,
}


def match_names(left: Sequence[str], right: Sequence[str], rules: Sequence[NameRule] = SCOPE_RULES) -> NameMatch:
    """left name -> right name by ``rules`` (module doc), in the order given; counts per rule.

    Every rule pairs a left name not yet matched with a right name not yet taken, so once either
    side has none left (each left name matched, or each right name taken) the later rules are not
    run: their keys would be computed for nothing (an msprobe tree's names all match exactly)."""
    state = _State(list(left), list(right))
    for rule in rules:
        if len(state.matched) == len(state.left) or len(state.taken) == len(state.right):
            break
        _APPLY[rule](state)
    return NameMatch(state.matched, state.used)


__all__ = ["GOLDEN_RULES", "NameMatch", "NameRule", "SCOPE_RULES", "amp_key", "is_amp_name", "kernel_tail",
           "match_names"]

"""The one "did you mean": the known names closest to a name the user typed that is not one of
them (an operator for ``-d`` / ``--explain``, a metric for ``--gate``).

Close means, in this order: a known name the typed one begins (``Cos`` -> ``CosineSimilarity``,
case ignored), then :func:`difflib.get_close_matches` (similarity ratio 0.6 or more: ``fc2`` ->
``fc1``); at most five, each once.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: At most this many names are suggested.
MAX_SUGGESTIONS = 5


def near_names(name: str, known: Iterable[str]) -> list[str]:
    """The known names closest to ``name`` (module doc), closest first; empty when none is close."""
    names = list(dict.fromkeys(known))
    lowered = name.lower()
    begun = [n for n in names if lowered and n.lower().startswith(lowered) and n != name]
    close = difflib.get_close_matches(name, names, n=MAX_SUGGESTIONS, cutoff=0.6)
    return list(dict.fromkeys(begun + close))[:MAX_SUGGESTIONS]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"did you mean 'a', 'b'?"`` of :func:`near_names`, or ``""`` when no name is close."""
    near = near_names(name, known)
    return f"did you mean {', '.join(map(repr, near))}?" if near else ""


__all__ = ["MAX_SUGGESTIONS", "did_you_mean", "near_names"]

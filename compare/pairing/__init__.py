"""Pairing: two loaded runs (+ rule files or a mapping) -> :class:`~compare.records.Pairing`.

:func:`pair` is the one entry (:mod:`compare.pairing.entry`); the strategies are
:mod:`~compare.pairing.match` (the comparison table: fusion / quant rules), :mod:`~compare.pairing.npu`,
:mod:`~compare.pairing.by_name` and :mod:`~compare.pairing.user_mapping` (scope names, mapping files).
"""

from __future__ import annotations

from .entry import Paired, pair

__all__ = ["Paired", "pair"]

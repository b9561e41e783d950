"""Pairing: two loaded runs (+ rule files or a mapping) -> :class:`~compare.records.Pairing`.

:func:`pair` is the one entry (:mod:`compare.pairing.entry`); the strategies are
:mod:`~compare.pairing.match` (the comparison table: fusion / quant rules), :mod:`~compare.pairing.npu`,
:mod:`~compare.pairing.by_name` and :mod:`~compare.pairing.user_mapping` (scope names, mapping files);
msprobe's mapping files and fuzzy matching (:mod:`~compare.pairing.msprobe_mapping`,
:mod:`~compare.pairing.layer_mapping`, :mod:`~compare.pairing.api_mapping`) give the latter its entries.
"""

from __future__ import annotations

from .entry import Paired, pair

__all__ = ["Paired", "pair"]

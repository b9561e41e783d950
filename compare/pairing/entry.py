"""The one entry of pairing: two loaded runs (and the rule options or a mapping) -> their pairs.

Which strategy pairs them:

- ``mapping`` (a ``--mapping`` file or its entries): the user's names first, the rest by scope
  name (:mod:`compare.pairing.user_mapping`); refused together with a rule option;
- no rule option and a MindSpore, msprobe or statistics-only side: by scope name (the same module);
- everything else: the reference tool's comparison table (:func:`compare.pairing.scenarios.check_scenario`
  says which row, or why none fits) and :func:`compare.pairing.match.pair_runs` -- through the
  fusion / quant / close-fusion rule, NPU vs NPU, or by name. Overflow records (``Opdebug``)
  are added as rows that are not compared.

The scenario is checked before the rule is asked for: an unsupported combination is refused
before a large rule file is waited for (``fusion_rule`` may be a callable that returns the rule,
e.g. the result of a parse running in another process).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from ..errors import OptionError
from ..records import Pairing, Run
from .fusion_rule import load_fusion_rule
from .mapping_file import MapEntry
from .match import pair_runs
from .quant_rule import RuleLike
from .rows import overflow_rows
from .rule_records import FusionRule
from .scenarios import Scenario, check_scenario
from .user_mapping import pair_families

#: A fusion rule: a path to its JSON file, the loaded rule, or a callable giving the loaded rule.
RuleSource = str | os.PathLike[str] | FusionRule | Callable[[], FusionRule]


class Paired(NamedTuple):
    """What :func:`pair` gives: the comparison-table row (None for scope-name and mapping
    pairings), the fusion rule used (None without ``-f``), and the pairing."""

    scenario: Scenario | None
    rule: FusionRule | None
    pairing: Pairing


def is_family_run(run: Run) -> bool:
    """A run named by framework scope (its layout says so: MindSpore, msprobe), or a statistics-only
    run: paired by scope name, not by the Ascend table."""
    return run.family.scope_named or run.stats_only


def pair(left: Run, right: Run, *, fusion_rule: RuleSource | None = None, quant_rule: RuleLike | None = None,
         close_fusion_rule: RuleLike | None = None,
         mapping: str | os.PathLike[str] | list[MapEntry] | None = None) -> Paired:
    """Pair two loaded runs (see the module doc for the strategy chosen).

    Raises :class:`~compare.errors.OptionError` for a mapping together with a rule option,
    :class:`~compare.errors.PairingError` for a combination the comparison table does not support,
    :class:`~compare.errors.RuleError` for a rule file that cannot be read.
    """
    rules = fusion_rule is not None or quant_rule is not None or close_fusion_rule is not None
    if mapping is not None:
        if rules:
            raise OptionError("--mapping pairs operators by the names it lists; it cannot be combined with "
                              "-f / -q / -cf (give one or the other)")
        return Paired(None, None, pair_families(left, right, mapping=mapping))
    if not rules and (is_family_run(left) or is_family_run(right)):
        return Paired(None, None, pair_families(left, right))
    scenario = check_scenario(left, right, fusion=fusion_rule is not None, quant=quant_rule is not None,
                              close=close_fusion_rule is not None)
    rule = _rule(fusion_rule)
    pairing = pair_runs(left, right, fusion_rule=rule, quant_rule=quant_rule, close_fusion_rule=close_fusion_rule,
                        scenario=scenario)
    start = max((p.index for p in pairing.pairs), default=-1) + 1
    extra = overflow_rows(start, left, right)
    if extra:
        pairing.pairs.extend(extra)
        pairing.notes.append(f"{len(extra)} overflow record(s) (Opdebug) listed, not compared")
    return Paired(scenario, rule, pairing)


def _rule(source: RuleSource | None) -> FusionRule | None:
    """The loaded fusion rule of ``source`` (None stays None)."""
    if source is None or isinstance(source, FusionRule):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load_fusion_rule(source)
    return source()

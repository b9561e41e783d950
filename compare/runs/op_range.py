"""Comparing part of a network: ``--range start,end,step`` and ``--select i1,i2,...`` (fusion-rule op ids).

Both name operators by their ``id`` in the fusion rule (``-f``) and keep the rows of the whole
fusion groups those operators belong to; the rows of the other operators are not written (that
is the point), and a note says how many operators were selected out of how many.

``op_count`` is the largest ``id`` of the rule's operators.

**Range** ``start,end,step``: exactly three comma-separated parts; an empty part takes its
default (``1``, ``-1``, ``1``); each is digits, ``end`` may also be ``-1`` (= ``op_count``).
Checks against the rule: ``1 <= start <= op_count``; ``start <= end <= op_count``;
``1 <= step < op_count``. The operators are walked in id order up to ``end``; an operator is
selected when ``id >= start`` and (``id == start``, or ``id == end``, or ``(id - start) % step == 0``).

**Select** ``i1,i2,...``: a set of ids (digits, duplicates kept once). Ids above ``op_count``
are dropped with a note; when all are, the option is refused.

The selected operators map to their fusion groups, each once, in order. When no row of the
comparison belongs to them (ids absent from a sparse rule, operators without rows), the
comparison cannot run: :class:`~compare.errors.PairingError` (exit 2).

Every refusal is an :class:`~compare.errors.OptionError` naming the option, its value and the
bound it breaks (the reference tool's errors 6 (syntax) and 12 (out of bounds) are both exit 2 here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import OptionError, PairingError
from ..pairing.rule_records import FusionRule
from ..records import Pairing


@dataclass(frozen=True)
class OpRange:
    """``--range start,end,step`` as given (``end`` -1: up to the last operator)."""

    start: int
    end: int
    step: int

    @property
    def option(self) -> str:
        return f"--range {self.start},{self.end},{self.step}"


@dataclass(frozen=True)
class OpSelect:
    """``--select i1,i2,...``: the ids in the order given, each once."""

    ids: tuple[int, ...]

    @property
    def option(self) -> str:
        return "--select " + ",".join(str(i) for i in self.ids)


OpChoice = OpRange | OpSelect


@dataclass(frozen=True)
class OpSelection:
    """What a range or select kept: the operator ids selected, the fusion groups they make, and
    the size of the rule (``op_count``: its largest id; ``ops``: its number of operators)."""

    choice: OpChoice
    selected: tuple[int, ...]
    groups: int
    op_count: int
    ops: int
    rows_kept: int
    rows_left_out: int
    dropped: tuple[int, ...] = ()

    def note(self) -> str:
        """The line the result's notes carry (and the terminal prints)."""
        ids = ", ".join(str(i) for i in self.selected[:10]) + (" ..." if len(self.selected) > 10 else "")
        dropped = (f"; ids above {self.op_count} dropped: {', '.join(str(i) for i in self.dropped)}"
                   if self.dropped else "")
        return (f"{self.choice.option}: {len(self.selected)} of {self.ops} operators selected (ids {ids}; "
                f"{self.groups} fusion group(s)): {self.rows_kept} row(s) written, {self.rows_left_out} row(s) of "
                f"the other operators not written{dropped}")


def parse_range(text: str) -> OpRange:
    """``start,end,step`` -> :class:`OpRange` (syntax only; the bounds need the rule)."""
    parts = text.split(",")
    if len(parts) != 3:
        raise OptionError(f"--range {text!r}: give start,end,step (three comma-separated numbers, e.g. 1,-1,1; "
                          "an empty part takes its default 1, -1, 1)")
    values = []
    for name, part, default in zip(("start", "end", "step"), parts, (1, -1, 1)):
        part = part.strip()
        if part == "":
            values.append(default)
        elif part.isdigit() or (name == "end" and part == "-1"):
            values.append(int(part))
        else:
            raise OptionError(f"--range {text!r}: {name} {part!r} is not a whole number"
                              + (" (end may also be -1: the last operator)" if name == "end" else ""))
    return OpRange(*values)


def parse_select(text: str) -> OpSelect:
    """``i1,i2,...`` -> :class:`OpSelect` (digits only; duplicates kept once, in order)."""
    parts = [part.strip() for part in text.split(",")]
    bad = [part for part in parts if not part.isdigit()]
    if bad or not parts:
        raise OptionError(f"--select {text!r}: give operator ids of the fusion rule, comma-separated "
                          f"(e.g. 3,7,12); not a whole number: {', '.join(repr(b) for b in bad)}")
    return OpSelect(tuple(dict.fromkeys(int(part) for part in parts)))


def selected_ids(choice: OpChoice, rule_ids: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids ``choice`` selects among ``rule_ids`` (sorted), and the ``--select`` ids dropped
    as above ``op_count``. Raises :class:`OptionError` for a bound broken (see the module doc)."""
    op_count = max(rule_ids, default=0)
    if isinstance(choice, OpSelect):
        kept = tuple(i for i in choice.ids if i <= op_count)
        dropped = tuple(i for i in choice.ids if i > op_count)
        if not kept:
            raise OptionError(f"{choice.option}: every id is above the largest operator id of the fusion rule, "
                              f"{op_count}")
        wanted = set(kept)
        return tuple(i for i in rule_ids if i in wanted), dropped
    start, step = choice.start, choice.step
    end = op_count if choice.end == -1 else choice.end
    if not 1 <= start <= op_count:
        raise OptionError(f"{choice.option}: start must be between 1 and {op_count} (the largest operator id of the "
                          "fusion rule)")
    if not start <= end <= op_count:
        raise OptionError(f"{choice.option}: end must be between start ({start}) and {op_count} (the largest "
                          "operator id of the fusion rule), or -1 for the last operator")
    if not 1 <= step < op_count:
        raise OptionError(f"{choice.option}: step must be at least 1 and below {op_count} (the largest operator id "
                          "of the fusion rule)")
    chosen = []
    for i in rule_ids:
        if i > end:
            break
        if i >= start and (i == start or i == end or (i - start) % step == 0):
            chosen.append(i)
    return tuple(chosen), ()


def select_pairs(pairing: Pairing, rule: FusionRule | None, choice: OpChoice) -> tuple[Pairing, OpSelection]:
    """The pairing with the rows of the selected operators' fusion groups only, and what was kept.

    A row belongs to a group by its Index (the group's); the groups are those of the selected
    operators (``rule.group_of``), found through the ids of all their operators. The unmatched
    names are cleared: the operators outside the selection get no leftover rows. Raises
    :class:`OptionError` without a rule or for a bound broken, :class:`PairingError` when no row
    is selected.
    """
    if rule is None:
        raise OptionError(f"{choice.option} selects operators by their fusion-rule id: give the rule with -f")
    by_id = {op.id: op for op in rule.ops.values()}
    chosen, dropped = selected_ids(choice, sorted(by_id))
    groups = list(dict.fromkeys(rule.group_of[by_id[i].name].index for i in chosen if by_id[i].name in rule.group_of))
    group_ids = {op.id for g in rule.groups if g.index in set(groups) for op in g.ops}
    indexes = {pair.index for pair in pairing.pairs if pair.op_sequence in group_ids}
    kept = [pair for pair in pairing.pairs if pair.index in indexes]
    if not kept:
        raise PairingError(f"{choice.option}: no row of the comparison belongs to the operators selected "
                           f"(ids {', '.join(str(i) for i in chosen) or 'none'} of {rule.path}); nothing to compare")
    selection = OpSelection(choice, chosen, len(groups), max(by_id, default=0), len(by_id), len(kept),
                            len(pairing.pairs) - len(kept), dropped)
    # the operators outside the selection (on either side) are left out by request: no leftover rows either
    return replace(pairing, pairs=kept, unmatched_left=[], unmatched_right=[],
                   notes=[*pairing.notes, selection.note()]), selection

"""msprobe's API mapping (``-am [FILE]``): MindSpore API calls paired with the PyTorch calls of the
same computation.

**Built in** (applied without asking between a MindSpore and a PyTorch msprobe tree): a left
call ``{Prefix}.{api}.{n}.{direction}`` looks, on the right, for the first of its candidates
that exists, with the same call count ``n`` and direction:

- ``Mint.{api}`` -> ``Torch.{api}``; ``MintFunctional.{api}`` -> ``Functional.{api}``;
- ``Functional.{api}`` (``mindspore.ops``) -> ``Torch.{api}``, else ``Functional.{api}``
  (``mindspore.ops`` holds both ``torch`` and ``torch.nn.functional`` APIs);
- ``Tensor.{api}`` -> ``Tensor.{api}``;
- the APIs renamed between the frameworks (:data:`RENAMED`): ``dense`` -> ``linear``,
  ``equal`` -> ``eq``, ``swapaxes`` -> ``transpose``, ``flash_attention_score`` ->
  ``NPU.npu_fusion_attention`` ...

**A file** adds or overrides (msprobe's format; one document, or a list of them)::

    ms_api: Functional.abs      # {api_type}.{api_name} as the dump names it
    pt_api: Torch.abs
    ms_args: [0, 1]             # input positions paired one to one (optional)
    pt_args: [0, 1]
    ms_outputs: [0]             # output positions paired one to one (optional)
    pt_outputs: [0]

Without ``ms_args`` / ``ms_outputs`` every tensor pairs by kind and position; with them only the
listed positions pair, each with the one at the same place of the other list (the lists of a
pair must be as long as each other); the others are one-sided rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from convert.names.msprobe import CallKind, parse_msprobe_name

from ..errors import OptionError
from ..records import TensorKind

#: MindSpore APIs whose PyTorch counterpart has another name: ``{Prefix}.{api}`` -> candidates.
RENAMED: dict[str, tuple[str, ...]] = {
    "Functional.dense": ("Functional.linear",),
    "Functional.bidense": ("Functional.bilinear",),
    "Functional.equal": ("Torch.eq",),
    "Functional.swapaxes": ("Torch.transpose",),
    "Functional.flash_attention_score": ("NPU.npu_fusion_attention",),
    "Tensor.asnumpy": ("Tensor.numpy",),
    "Tensor.equal": ("Tensor.eq",),
    "Tensor.swapaxes": ("Tensor.transpose",),
    "Tensor.gather_elements": ("Tensor.gather",),
    "Tensor.cauchy": ("Tensor.cauchy_",),
    "Tensor.fill_diagonal": ("Tensor.fill_diagonal_",),
}

#: MindSpore prefix -> the PyTorch prefixes tried, in order.
PREFIXES: dict[str, tuple[str, ...]] = {
    "Mint": ("Torch",),
    "MintFunctional": ("Functional",),
    "Functional": ("Torch", "Functional"),
    "Tensor": ("Tensor",),
}


@dataclass(frozen=True)
class ApiRule:
    """One API-mapping document: ``ms_api`` -> ``pt_api``; ``args`` / ``outputs`` the paired
    positions ``(left, right)`` (empty: every position pairs with itself)."""

    ms_api: str
    pt_api: str
    args: tuple[tuple[int, int], ...] = ()
    outputs: tuple[tuple[int, int], ...] = ()
    source: str = "built-in"

    def positions(self, kind: TensorKind) -> tuple[tuple[int, int], ...]:
        return self.args if kind is TensorKind.INPUT else self.outputs


def builtin_candidates(prefix: str, api: str) -> tuple[str, ...]:
    """The right ``{Prefix}.{api}`` names the built-in table tries for a left call (module doc)."""
    renamed = RENAMED.get(f"{prefix}.{api}")
    if renamed:
        return renamed
    return tuple(f"{p}.{api}" for p in PREFIXES.get(prefix, ()))


def _positions(doc: dict, left_key: str, right_key: str, where: str) -> tuple[tuple[int, int], ...]:
    lefts, rights = doc.get(left_key) or [], doc.get(right_key) or []
    if not isinstance(lefts, list) or not isinstance(rights, list):
        raise OptionError(f"{where}: {left_key} / {right_key} must be lists of positions")
    if len(lefts) != len(rights):
        raise OptionError(f"{where}: {left_key} has {len(lefts)} position(s) and {right_key} {len(rights)}; "
                          "they pair one to one, so give as many of each")
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in [*lefts, *rights]):
        raise OptionError(f"{where}: {left_key} / {right_key} must hold positions 0, 1, 2 ... (got {lefts} / {rights})")
    if len(set(lefts)) != len(lefts) or len(set(rights)) != len(rights):
        raise OptionError(f"{where}: {left_key} / {right_key} repeat a position ({lefts} / {rights})")
    return tuple(zip(lefts, rights))


def parse_api_mapping(data: object, source: str) -> list[ApiRule]:
    """The rules of a loaded API-mapping YAML (one document or a list; module doc). Raises
    :class:`OptionError` naming the file and the entry for any other shape."""
    docs = data if isinstance(data, list) else [data]
    rules = []
    for number, doc in enumerate(docs, start=1):
        where = f"--api-mapping {source} entry {number}"
        if not isinstance(doc, dict) or not isinstance(doc.get("ms_api"), str) or not isinstance(doc.get("pt_api"), str):
            raise OptionError(f"{where}: expected 'ms_api: Prefix.api' and 'pt_api: Prefix.api' "
                              f"(with optional ms_args/pt_args, ms_outputs/pt_outputs), got {doc!r}")
        rules.append(ApiRule(doc["ms_api"], doc["pt_api"], _positions(doc, "ms_args", "pt_args", where),
                             _positions(doc, "ms_outputs", "pt_outputs", where), f"{source}#{number}"))
    if not rules:
        raise OptionError(f"--api-mapping {source}: no entries")
    return rules


@dataclass(frozen=True)
class ApiMatch:
    """A left call paired by API mapping: the right call and the rule (None: the built-in table)."""

    right: str
    rule: ApiRule | None


def api_pairs(left_names: Iterable[str], right_names: Iterable[str], rules: list[ApiRule],
              builtin: bool) -> dict[str, ApiMatch]:
    """left call -> its right call by the file's rules, then (``builtin``) the built-in table;
    same call count and direction; each right call taken once; cell / module calls never."""
    right = set(right_names)
    by_api = {rule.ms_api: rule for rule in rules}
    taken: set[str] = set()
    out: dict[str, ApiMatch] = {}
    for name in left_names:
        parsed = parse_msprobe_name(name)
        if parsed is None or parsed.kind is not CallKind.API:
            continue
        tail = f".{parsed.count}.{parsed.direction}"
        rule = by_api.get(f"{parsed.prefix}.{parsed.api}")
        candidates: tuple[str, ...] = (rule.pt_api,) if rule else ()
        if rule is None and builtin:
            candidates = builtin_candidates(parsed.prefix, parsed.api)
        for candidate in candidates:
            other = candidate + tail
            if other in right and other not in taken and other != name:
                out[name] = ApiMatch(other, rule)
                taken.add(other)
                break
    return out


__all__ = ["PREFIXES", "RENAMED", "ApiMatch", "ApiRule", "api_pairs", "builtin_candidates", "parse_api_mapping"]

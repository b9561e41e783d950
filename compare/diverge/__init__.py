"""Where it goes wrong: the operator graph of a compared run (:mod:`.graph`) and each operator's
verdict, the first divergence and the chain back to it (:mod:`.verdicts`)."""

from __future__ import annotations

from .graph import build_graph
from .verdicts import chain, localise

__all__ = ["build_graph", "chain", "localise"]

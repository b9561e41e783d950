"""Where it goes wrong: the operator graph of a run and each operator's verdict (filled in below)."""

from __future__ import annotations

"""Synthetic dump generators and naive float64 twins used by tests and scripts; nothing in the
product imports this package."""

from __future__ import annotations

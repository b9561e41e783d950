"""``python -m compare.cli``: the ``vcompare`` command line."""

from __future__ import annotations

from .main import main

main()

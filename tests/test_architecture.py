"""The import rules of ARCHITECTURE.md, checked with import-linter (contracts in pyproject.toml):
convert never imports compare; kernels import no other compare module but errors; reports never
compute; only the command-line modules import typer; no product module imports compare.testing;
inside compare, layers look down only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    pytest.importorskip("importlinter", reason="import-linter is part of the test extra: pip install -e '.[test]'")
    script = ("import sys; from importlinter.cli import lint_imports; "
               "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_convert_imports_without_compare():
    """The ground stands alone: importing every convert module loads no compare module."""
    script = ("import importlib, pkgutil, sys, convert\n"
              "for m in pkgutil.walk_packages(convert.__path__, 'convert.'):\n"
              "    importlib.import_module(m.name)\n"
              "print(sorted(n for n in sys.modules if n == 'compare' or n.startswith('compare.')))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout

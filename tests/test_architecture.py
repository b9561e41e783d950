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


def test_no_import_cycle():
    """No module of compare/ or convert/ imports, directly or not, a module that imports it back
    (imports inside functions count too; ``if TYPE_CHECKING`` imports do not)."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the test extra)")
    graph = grimp.build_graph("compare", "convert", exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    # Tarjan's strongly connected components, iteratively: a component of two or more modules is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(imports[node]):
                work.append((node, child + 1))
                target = imports[node][child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            for target in imports[node]:
                if target in on_stack:
                    low[node] = min(low[node], low[target])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == [], cycles


def test_imports_inside_functions_are_few_and_say_why():
    """Imports inside functions (compare/ and convert/, test support aside): at most 80, and each
    says why it is there (a comment on its line or the line above: start-up time, an optional
    extra, a module loaded only when a feature is used)."""
    import ast

    found: list[str] = []
    silent: list[str] = []
    for package in ("compare", "convert"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "testing" in path.relative_to(ROOT).parts:
                continue
            lines = path.read_text(encoding="utf-8").split("\n")
            seen: set[int] = set()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)) and inner.lineno not in seen:
                        seen.add(inner.lineno)
                        where = f"{path.relative_to(ROOT)}:{inner.lineno}"
                        found.append(where)
                        text = " ".join(lines[inner.lineno - 1:inner.end_lineno])
                        if "#" not in text and not lines[inner.lineno - 2].strip().startswith("#"):
                            silent.append(where)
    assert len(found) <= 80, found
    assert silent == [], silent

"""Shared test fixtures.

Tests that read ``../shared`` (the reference tool's cases and real graphs) skip with a clear
message when it is absent -- a user's clone has no ``../shared``; ``fixtures/`` keeps the suite
meaningful on its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline anywhere (a first call may JIT-compile a kernel); in CI the examples are
# derandomized so that a landing never depends on luck -- run locally for fresh random examples.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

ROOT = Path(__file__).resolve().parents[1]
#: This folder (golden report files, junit.xsd).
TESTS = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("VCOMPARE_SHARED", ROOT.parent / "shared")).resolve()


def shared_path(*parts: str) -> Path:
    """Path inside ../shared, or skip the test with a message saying why."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared not available ({path} missing): shared-case test skipped")
    return path


@pytest.fixture
def shared() -> Path:
    return shared_path()


@pytest.fixture
def cases() -> Path:
    return shared_path("cases")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/* from the current output (review the diff!)")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build (or load) the native kernels once, before any test runs: every test then sees the
    same state -- no test pays the one-time build or sees the command line's "compiling the
    comparison kernels" note (see compare.kernels.native)."""
    from compare.kernels import native

    native.kernels()

"""Shared test fixtures.

Tests that read ``../shared`` (the reference tool's cases and real graphs) skip with a clear
message when it is absent -- a user's clone has no ``../shared``; ``fixtures/`` keeps the suite
meaningful on its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
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


#: The reason of every test skipped because ../shared is absent (a user's clone): one reason,
#: reported from one place (:func:`pytest_runtest_makereport`), so ``-ra`` folds these skips into
#: a single summary line while every other skip reason still prints on its own.
SHARED_ABSENT = "../shared not available (set VCOMPARE_SHARED or clone beside it)"


def shared_path(*parts: str) -> Path:
    """Path inside ../shared, or skip the test: with :data:`SHARED_ABSENT` when ../shared itself
    is absent, else naming the missing part (a partial ../shared is worth a line of its own)."""
    path = SHARED.joinpath(*parts)
    if not SHARED.is_dir():
        pytest.skip(SHARED_ABSENT)
    if not path.exists():
        pytest.skip(f"{path} missing from ../shared: shared-case test skipped")
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Report every skip for an absent ../shared from one place (this file, no line), whichever
    test or fixture asked: ``-ra`` then folds them into one line, ``SKIPPED [N]
    tests/conftest.py: ../shared not available (...)``, instead of a line per test (a skip raised
    in a fixture is reported at its test's line, so they would not fold by themselves)."""
    outcome = yield
    report = outcome.get_result()
    if (report.skipped and call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception)
            and call.excinfo.value.msg == SHARED_ABSENT):
        report.longrepr = (__file__, None, f"Skipped: {SHARED_ABSENT}")


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

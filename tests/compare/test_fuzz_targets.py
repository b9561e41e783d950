"""The fuzzer's harness (issue 27 targets): seeds are written, mutations change the inputs, the
oracle classifies every input, escapes get a signature and the parallel runner counts them.

These are properties of the *harness*, not of the product: the long run (``scripts/fuzz.py``,
docs/reliability.md) is where "0 escapes" is recorded. A few inputs per target with a fixed
seed keep the module fast (well under 30 s).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from compare.testing import fuzz_formats as ff
from compare.testing.fuzz import Outcome
from compare.testing.fuzz_runner import (
    ALL_TARGETS,
    RUN_WEIGHTS,
    RunReport,
    build_corpora,
    case_rng,
    plan,
    run_input,
    run_parallel,
    signature,
)

#: Inputs per new target in the classification test.
PER_TARGET = 6


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: None) -> tuple:
    return build_corpora(tmp_path_factory.mktemp("fuzz-seeds"))


@pytest.fixture(scope="module")
def monkeypatch_module(tmp_path_factory: pytest.TempPathFactory):
    """The url target's mirror cache inside the test's temporary folder."""
    previous = os.environ.get("VCOMPARE_REMOTE_CACHE")
    os.environ["VCOMPARE_REMOTE_CACHE"] = str(tmp_path_factory.mktemp("remote-cache"))
    yield None
    if previous is None:
        os.environ.pop("VCOMPARE_REMOTE_CACHE", None)
    else:
        os.environ["VCOMPARE_REMOTE_CACHE"] = previous


def test_every_target_is_planned_and_listed() -> None:
    assert set(ff.FORMAT_TARGETS) <= set(ALL_TARGETS) and set(RUN_WEIGHTS) == set(ALL_TARGETS)
    counts = plan(50_000, ALL_TARGETS)
    assert abs(sum(counts.values()) - 50_000) <= len(ALL_TARGETS) and set(counts) == set(ALL_TARGETS)
    assert plan(10, ["url"], {"pt": 3}) == {"url": 10, "pt": 3}


def test_seeds_are_valid(corpora: tuple) -> None:
    """Every seed reads cleanly: the damage, not the seed, is what a run meets."""
    from compare.api import regate
    from compare.consistency.groups import parse_groups
    from compare.runs.folders import run_network
    from compare.verdict.policy_file import load_policy

    _, seeds = corpora
    for left, right in ((seeds.nano["left"], seeds.nano["right"]), (seeds.ffts["left"], seeds.ffts["right"]),
                        (seeds.msprobe["left"], seeds.msprobe["right"])):
        result = run_network(left, right)
        assert result.rows and not any("internal error" in "; ".join(r.reasons) for r in result.rows)
    policy = seeds.root / "policy.toml"
    policy.write_text(seeds.policy_text)
    load_policy(policy)
    for fmt in ("json", "csv", "parquet", "json-long"):
        assert len(regate(seeds.saved[fmt], policy=policy).rows) == seeds.saved_rows
    assert len(parse_groups("dp:2").resolve(range(4))) == 2


def test_mutators_change_their_input() -> None:
    rng = random.Random(3)
    text = json.dumps({"a": [1, 2, {"b": 3.5}], "c": "x"})
    assert sum(ff.mutate_json_text(text, rng) != text.encode() for _ in range(20)) >= 18
    assert sum(ff.mutate_policy(ff.POLICY_SEED, rng) != ff.POLICY_SEED.encode() for _ in range(20)) >= 15
    assert "9" * 5000 in "".join(ff.replace_numbers("x = 12", random.Random(k)) for k in range(40))
    assert ff.deep(3) == "[[[1]]]" and ff.deep(2, "{}") == "{a={a=1}}"
    csv_text = "A,B\n1,2\n3,4\n"
    changed = [ff.mutate_csv(csv_text, random.Random(k)) for k in range(20)]
    assert any(cells for _, cells in changed) and any(data != csv_text.encode() for data, _ in changed)


@pytest.mark.parametrize("target", sorted(ff.FORMAT_TARGETS))
def test_each_target_classifies_its_inputs(corpora: tuple, tmp_path: Path, target: str) -> None:
    """Every input ends as accepted / refused / escape (never a harness error); escapes carry a
    traceback or a reason. Known product bugs being fixed elsewhere may show as escapes here."""
    verdicts = []
    for index in range(PER_TARGET):
        outcome = run_input(target, corpora, case_rng(0, target, index), tmp_path)
        assert outcome.verdict in ("accepted", "refused", "escape")
        assert not outcome.kind.startswith("harness"), outcome.detail
        if outcome.verdict == "escape":
            assert outcome.detail and signature(target, outcome)
        verdicts.append(outcome.verdict)
    assert len(verdicts) == PER_TARGET


def test_signature_names_the_product_frame() -> None:
    detail = ('Traceback (most recent call last):\n  File "/x/compare/testing/fuzz.py", line 1, in _guarded_run\n'
              '  File "/x/convert/codecs/torch_pt.py", line 240, in read_pt_header\n'
              '  File "/usr/lib/python3.11/zipfile.py", line 9, in open\nMemoryError\n')
    expected = "MemoryError @ convert/codecs/torch_pt.py:read_pt_header"
    assert signature("pt", Outcome("escape", "MemoryError: ", detail)) == expected
    assert signature("url", Outcome("escape", "hang", "url: no answer")) == "hang"
    report = RunReport(seed=0, jobs=1)
    report.add("pt", 0, 4, Outcome("escape", "MemoryError: ", detail), 1.0)
    report.add("pt", 65534, 5, Outcome("accepted"), 0.5)
    report.add("nano", 0, 1, Outcome("escape", "Invariant: lost operator", "lost operator: 'x'"), 0.1)
    table = report.table()
    assert "| pt | 0 | 1 | 0 | 0 | 1 | 0 | 0 | 1 |" in table and "| pt | 65534 | 1 | 1 |" in table
    assert "| nano | 0 | 1 | 0 | 0 | 1 | 0 | 1 |" in table
    assert "--only 4" in report.text()


def test_parallel_runner_counts_every_input() -> None:
    report = run_parallel({"groups": 4, "policy": 3}, seed=1, jobs=2)
    assert sum(c.inputs for c in report.cells.values()) == 7
    assert {t for t, _ in report.cells} == {"groups", "policy"}


def _sleeper(corpus: object, rng: random.Random, work: Path) -> Outcome:
    time.sleep(30)
    return Outcome("accepted")


def _deaf_sleeper(corpus: object, rng: random.Random, work: Path) -> Outcome:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the alarm cannot ring: the watchdog must act
    time.sleep(30)
    return Outcome("accepted")


def _crasher(corpus: object, rng: random.Random, work: Path) -> Outcome:
    os._exit(7)


def test_hangs_and_crashes_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The alarm, the watchdog and a dead worker each give an escape of their own (the workers
    are forked: the patched table is theirs too)."""
    for name, fn in (("groups", _sleeper), ("policy", _deaf_sleeper), ("url", _crasher)):
        monkeypatch.setitem(ff.FORMAT_TARGETS, name, fn)
    report = run_parallel({"groups": 1, "policy": 1, "url": 1}, seed=0, jobs=2, alarm=1, grace=1)
    assert {t: dict(c) for t, c in report.signatures.items()} == {
        "groups": {"hang": 1}, "policy": {"hang (killed)": 1}, "url": {"crash (exit code 7)": 1}}
    assert sum(c.hangs for c in report.cells.values()) == 2

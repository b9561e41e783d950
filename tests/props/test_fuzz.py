"""Bounded fuzzing (CI): mutated dumps, .npy files, rule JSON and mapping.csv, and whole runs.

The mutators are those of ``compare.testing.fuzz`` (``scripts/fuzz.py`` runs them for the long
run, >= 10,000 inputs), driven here by hypothesis (``st.randoms``) plus a few hypothesis-native
strategies (arbitrary JSON values spliced into the rule, arbitrary mapping.csv cells, arbitrary
.npy header fields). The property is always the same: nothing but a
:class:`compare.errors.CompareError` leaves a loader, and a network run over damaged dump /
.npy / mapping files does not raise at all, loses no operator and writes no "internal error"
row. The whole module stays well under 60 s (``max_examples`` below).
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.errors import CompareError
from compare.testing import fuzz

FAST = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
SLOW = settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    return fuzz.build_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


def _no_escape(outcome) -> None:
    assert outcome.verdict != "escape", outcome.detail


# ------------------------------------------------------------------------------ file loaders


@FAST
@given(rng=st.randoms(use_true_random=False))
def test_mutated_v2_dumps(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.fuzz_file("dump-v2", corpus, rng, work))


@FAST
@given(rng=st.randoms(use_true_random=False))
def test_mutated_v1_dumps(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.fuzz_file("dump-v1", corpus, rng, work))


@FAST
@given(rng=st.randoms(use_true_random=False))
def test_mutated_npy(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.fuzz_file("npy", corpus, rng, work))


@FAST
@given(rng=st.randoms(use_true_random=False))
def test_mutated_rule_json(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.fuzz_file("rule", corpus, rng, work))


@SLOW
@given(rng=st.randoms(use_true_random=False))
def test_mutated_mapping_csv(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.fuzz_file("mapping", corpus, rng, work))


_dims = st.one_of(st.integers(-3, 40), st.sampled_from([2**31, 2**32, 10**12, 2**62, 2**63 - 1]))
_descrs = st.sampled_from(["<f4", "<f2", ">f8", "|b1", "<i8", "|u1", "<c8", "|V2", "|O", "<U4", "|S2", "<M8[s]",
                           "<f16", "<c32"])


@FAST
@given(shape=st.lists(_dims, max_size=5).map(tuple), descr=_descrs, fortran=st.booleans(),
       body=st.integers(0, 300))
def test_any_npy_header_is_read_or_refused(work, shape, descr, fortran, body) -> None:
    """Arbitrary (shape, descr) headers over a short body: a DumpFormatError or a correct array."""
    from convert.codecs.npy import load_npy, read_npy_header

    text = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape!r}, }}"
    text += " " * ((-(len(text) + 11)) % 64) + "\n"
    path = work / "h.0.1.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + bytes(body))
    try:
        array = load_npy(path, read_npy_header(path))
    except CompareError:
        return
    assert array.shape == shape and array.nbytes <= body


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@FAST
@given(index=st.integers(0, 10**6), value=_json, delete=st.booleans())
def test_any_json_value_anywhere_in_the_rule(corpus, work, index: int, value, delete: bool) -> None:
    """Replace (or delete) one node of the rule with an arbitrary JSON value."""
    from compare.pairing.fusion_rule import load_fusion_rule

    rule = json.loads(corpus.rule_text)
    nodes = [path for path, _ in fuzz._nodes(rule) if path]
    path = nodes[index % len(nodes)]
    parent = fuzz._parent(rule, path)
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    target = work / "any.json"
    target.write_text(json.dumps(rule))
    try:
        load_fusion_rule(target)
    except CompareError:
        pass


@SLOW
@given(rows=st.lists(st.lists(st.text(max_size=12), min_size=0, max_size=4), max_size=6))
def test_any_mapping_csv_rows(corpus, work, rows) -> None:
    from compare.loaders import load_run

    folder = work / "anymap"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(corpus.hashed_network["leaf"], folder)
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    (folder / "mapping.csv").write_text(text.getvalue(), encoding="utf-8", errors="surrogatepass")
    run = load_run(folder)  # the unhashed dumps are still there: the folder always loads
    assert "trans_TransData_0" in run.ops


# ------------------------------------------------------------------------------ whole runs


@SLOW
@given(rng=st.randoms(use_true_random=False))
def test_damaged_network_never_raises(corpus, work, rng: random.Random) -> None:
    """1-3 damaged dump / .npy / mapping files: run_network returns, every op has its row."""
    paths, rule_mutated, damaged = fuzz.damage_network(corpus, rng, work, rule_chance=0.0)
    assert not rule_mutated
    _no_escape(fuzz.check_network(paths, rule_mutated))


@SLOW
@given(rng=st.randoms(use_true_random=False))
def test_damaged_network_with_a_damaged_rule(corpus, work, rng: random.Random) -> None:
    """With the rule damaged too, only CompareError (RuleError / PairingError) may stop the run."""
    paths, rule_mutated, _ = fuzz.damage_network(corpus, rng, work, rule_chance=1.0)
    _no_escape(fuzz.check_network(paths, rule_mutated))


def test_the_long_fuzz_loop_runs_and_reports(tmp_path: Path) -> None:
    report = fuzz.run(150, seed=3)
    assert report.inputs == 150 and report.escapes == 0, report.text()
    assert report.kinds and "escapes: 0" in report.text()
    assert set(report.per_target) <= set(fuzz.WEIGHTS)


def test_error_kinds_are_normalised() -> None:
    from compare.errors import DumpFormatError

    a = fuzz.error_kind(DumpFormatError("/x/a.npy", "truncated .npy: the header promises 10 x float32", offset=3))
    b = fuzz.error_kind(DumpFormatError("/y/b.npy", "truncated .npy: the header promises 99 x float32", offset=9))
    assert a == b == "DumpFormatError: truncated .npy"
    assert fuzz.error_kind(ValueError("bad 'x' at 12")) == "ValueError: bad Q at N"


def test_mutators_are_deterministic(corpus) -> None:
    one = [fuzz.mutate_dump(corpus.dumps_v2[0], random.Random(5), 2) for _ in range(3)]
    assert one[0] == one[1] == one[2]
    assert fuzz.mutate_npy(corpus.npys[0], random.Random(1)) == fuzz.mutate_npy(corpus.npys[0], random.Random(1))
    assert np.frombuffer(corpus.dumps_v2[0][:8], "<u8")[0] > 0


# ------------------------------------------------------------------------------ hostile files and trees (issue 17)


@SLOW
@given(rng=st.randoms(use_true_random=False))
def test_sparse_lengths_are_refused_without_allocating(corpus, work, rng: random.Random) -> None:
    """Sparse files of up to 64 GiB whose lengths claim them whole: refused (a CompareError) with
    at most 2 GiB more address space -- never a MemoryError, never the OOM killer."""
    _no_escape(fuzz.run_one("sparse", corpus, rng, work))


@SLOW
@given(rng=st.randoms(use_true_random=False))
def test_hostile_names_never_split_or_inject_csv_rows(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.run_one("names", corpus, rng, work))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_hostile_tree_entries_are_named_and_never_hang(corpus, work, rng: random.Random) -> None:
    _no_escape(fuzz.run_one("tree", corpus, rng, work))


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_damaged_network_on_the_command_line(corpus, work, rng: random.Random) -> None:
    """Through typer's runner: no traceback, never exit 1 (no gate was given)."""
    paths, rule_mutated, _ = fuzz.damage_network(corpus, rng, work)
    _no_escape(fuzz.cli_network(paths, rule_mutated))

"""Issue 27, "Trust, round three": the bounds of the gate, policy, consistency, overflow and Dask
options. Each hostile input used to crash (a traceback, exit 1 = "gate failed") or hang; each is
now refused with one line naming the file and what is wrong, exit 2 (docs/reliability.md, "Bounds
of the verdict's inputs"). The linear-time glob matcher of the policy against :mod:`fnmatch`.
"""

from __future__ import annotations

import fnmatch
import json
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compare.cli import run
from compare.errors import OptionError
from compare.runs.distributed import MAX_LOCAL_WORKERS, ClusterSpec, max_local_workers
from compare.verdict.policy import MAX_REGEX_NAME, Globs, NameRegexes
from convert.codecs.dumpwrite import write_dump
from convert.errors import DumpFormatError
from convert.jsonsafe import MAX_INT_DIGITS, load_json

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
TS = 1700000000000000


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (the old glob regex took minutes)."""
    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out + err


def _refused(code: int, output: str, *needles: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output and "Error:" not in output.replace("error:", ""), output
    errors = [line for line in output.splitlines() if "error:" in line]
    assert len(errors) == 1, output
    for needle in needles:
        assert needle in errors[0], output


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real --json result of the demo (and its parquet twin), written once."""
    folder = tmp_path_factory.mktemp("saved")
    code = run(["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                "-o", str(folder / "r.csv"), "--json", str(folder / "r.json"), "--quiet"])
    assert code == 0
    return folder / "r.json"


def _gate(capsys: pytest.CaptureFixture[str], path: Path, *extra: object) -> tuple[int, str]:
    return _cli(capsys, "gate", path, *(extra or ("--gate", "cos>=0.9")))


# ------------------------------------------------------------------------- vcompare gate (JSON)


def test_gate_refuses_json_nested_100000_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)
    _refused(*_gate(capsys, bad), str(bad), "line 1 column 1001", "nested more than")


@pytest.mark.parametrize("where", ["inputs", "shape"])
def test_gate_refuses_a_value_nested_900_deep(where: str, saved: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Parsed (under the recursion limit), then a RecursionError when written or shown."""
    deep = "[" * 900 + "]" * 900
    text = saved.read_text()
    bad = tmp_path / "deep.json"
    bad.write_text(text.replace('"inputs": {', f'"inputs": {{"x": {deep},', 1) if where == "inputs"
                   else text.replace('"shape":null', f'"shape":{deep}', 1))
    _refused(*_gate(capsys, bad, "--gate", "cos>=0.9", "--json", tmp_path / "o.json"), str(bad), "line ")


def test_gate_refuses_a_5000_digit_whole_number(saved: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "digits.json"
    bad.write_text(saved.read_text().replace('"op_sequence":1', '"op_sequence":' + "9" * 5000, 1))
    _refused(*_gate(capsys, bad), str(bad), "5000 digits", f"at most {MAX_INT_DIGITS}")


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_gate_refuses_a_metric_beyond_float64(number: str, saved: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """1e400 used to read as inf and pass CosineSimilarity>=0.9: vcompare writes "inf", never a number."""
    bad = tmp_path / "inf.json"
    text, count = re.subn(r'"CosineSimilarity":0\.[0-9]+', f'"CosineSimilarity":{number}', saved.read_text(), 1)
    assert count == 1
    bad.write_text(text)
    _refused(*_gate(capsys, bad), str(bad), "line ")


def test_gate_refuses_a_400_digit_metric(saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "big.json"
    bad.write_text(re.sub(r'"CosineSimilarity":0\.[0-9]+', '"CosineSimilarity":1' + "0" * 400, saved.read_text(), 1))
    _refused(*_gate(capsys, bad), str(bad), "metrics.CosineSimilarity", "beyond float64")


# ---------------------------------------------------------------------- vcompare gate (parquet)


def _parquet(saved: Path, tmp_path: Path) -> Path:
    pytest.importorskip("pyarrow")
    target = tmp_path / "r.parquet"
    code = run(["-l", str(DEMO / "npu"), "-r", str(DEMO / "golden"), "-f", str(DEMO / "model.json"),
                "-o", str(target), "--quiet"])
    assert code == 0
    return target


@pytest.mark.parametrize("column", ["text", "list"])
def test_gate_refuses_a_parquet_metric_column_of_another_type(column: str, saved: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    good = _parquet(saved, tmp_path)
    capsys.readouterr()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(good)
    values = pa.array(["x"] * table.num_rows) if column == "text" else pa.array([[1.0]] * table.num_rows)
    i = table.column_names.index("CosineSimilarity")
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(i, "CosineSimilarity", values), bad)
    _refused(*_gate(capsys, bad), str(bad), "column 'CosineSimilarity'")


def test_gate_refuses_deep_parquet_metadata(saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _parquet(saved, tmp_path)
    capsys.readouterr()
    import pyarrow.parquet as pq

    table = pq.read_table(good)
    meta = dict(table.schema.metadata)
    meta[b"vcompare"] = b"[" * 100_000 + b"]" * 100_000
    bad = tmp_path / "deep.parquet"
    pq.write_table(table.replace_schema_metadata(meta), bad)
    _refused(*_gate(capsys, bad), str(bad), "schema metadata", "nested more than")


# ------------------------------------------------------------------------ vcompare consistency


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from compare.testing.synthetic_ranks import make_rank_tree

    return make_rank_tree(tmp_path_factory.mktemp("ranks") / "tree", ranks=4, iterations=1, dp=4).root


@pytest.mark.parametrize("text, needle", [
    ("0-9999999999999\n", "rank 9999999999999 is above 131071"),
    ("0," + "9" * 5000 + "\n", "(5000 characters) is above 131071"),
])
def test_consistency_refuses_huge_ranks_in_a_group_file(text: str, needle: str, tree: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    groups = tmp_path / "groups.txt"
    groups.write_text(text)
    _refused(*_cli(capsys, "consistency", "-l", tree, "--groups", groups), f"{groups} line 1", needle)


@pytest.mark.parametrize("spec", ["dp:100000000", "dp:131073", "dp:" + "9" * 5000])
def test_consistency_refuses_a_data_parallel_group_above_the_bound(spec: str, tree: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _refused(*_cli(capsys, "consistency", "-l", tree, "--groups", spec), "--groups dp:", "at most 131072 ranks")


def test_consistency_refuses_a_deep_json_group_file(tree: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    groups = tmp_path / "groups.json"
    groups.write_text("[" * 100_000 + "]" * 100_000)
    _refused(*_cli(capsys, "consistency", "-l", tree, "--groups", groups), str(groups), "nested more than")


def test_consistency_dp_over_a_tree_with_a_huge_rank_folder(tree: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    (copy / "rank_3").rename(copy / "rank_20000000")
    _refused(*_cli(capsys, "consistency", "-l", copy, "--groups", "dp:2"), "the tree has rank 20000000")


# ----------------------------------------------------------------------------------- policy file


@pytest.mark.parametrize("body, needles", [
    ("a = " + "[" * 50_000 + "]" * 50_000 + "\n", ("not valid TOML", "nested deeper")),
    ("a = " + "{b = " * 50_000 + "1" + "}" * 50_000 + "\n", ("not valid TOML", "nested deeper")),
    ("version = 1" + "0" * 5000 + "\n", ("line 1", "more than 4300 digits")),
    ('[[rule]]\nop = "x"\nCosineSimilarity = ">= 1' + "0" * 5000 + '"\n', ("rule 1.CosineSimilarity",
                                                                         "beyond float64")),
    ('[[rule]]\nop = "x"\nCosineSimilarity = 1e400\n', ("line 3", "beyond float64")),
    ('[[rule]]\nop_regex = "a{1,4294967295}"\ncos = 0.9\n', ("rule 1.op_regex", "above 1000")),
    ('[[rule]]\nop_regex = "' + "a" * 1001 + '"\ncos = 0.9\n', ("rule 1.op_regex", "at most 1000")),
], ids=["deep-array", "deep-table", "digits", "bound-digits", "float-1e400", "regex-repeat", "regex-length"])
def test_policy_file_bounds(body: str, needles: tuple[str, ...], saved: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text(body)
    _refused(*_gate(capsys, saved, "--policy", policy), f"policy file {policy}", *needles)


def test_policy_glob_on_a_6000_character_name_does_not_hang(saved: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``op = "*.*.*.attn*"`` against a 6,000-character name: 212 s with the translated regex."""
    long_name = "a." * 3000
    document = json.loads(saved.read_text())
    document["rows"][3]["left_op"] = document["rows"][3]["right_op"] = long_name
    hostile = tmp_path / "long.json"
    hostile.write_text(json.dumps(document))
    policy = tmp_path / "gates.toml"
    policy.write_text('[[waiver]]\nop = "*.*.*.attn*"\nreason = "never matches"\n')
    with _alarm(60):
        code, output = _gate(capsys, hostile, "--policy", policy, "--gate", "cos>=0.9")
    assert code == 0 and "Traceback" not in output, output


# ------------------------------------------------------------------------- the linear glob matcher


_GLOB_CHARS = "ab.-!^]\\[*?"


@given(pattern=st.text(_GLOB_CHARS, max_size=10), name=st.text("ab.-!^]\\[*?xyz\r ", max_size=12))
def test_globs_match_as_fnmatch(pattern: str, name: str) -> None:
    assert Globs([pattern]).match(name) == fnmatch.fnmatchcase(name, pattern)


@given(patterns=st.lists(st.text(_GLOB_CHARS, max_size=8), min_size=1, max_size=3),
       names=st.lists(st.text("ab.-[]*?", max_size=8), min_size=1, max_size=4))
def test_globs_search_a_line_in_full(patterns: list[str], names: list[str]) -> None:
    want = any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns)
    assert Globs(patterns).search("\n".join(names)) == want


def test_globs_examples() -> None:
    globs = Globs(["*.*.*.attn*"])
    with _alarm(10):
        assert not globs.search("a." * 3000)
        assert globs.search("x\n" + "a." * 3000 + "attn_q")
    assert Globs(["conv[0-9]"]).search("conv1") and not Globs(["conv[!0-9]"]).search("conv1")
    assert Globs(["a[*]b"]).match("a*b") and not Globs(["a[*]b"]).match("axb")
    assert Globs(["fc?"]).search("fc1\nfc12") and not Globs(["fc?"]).search("fc12")
    assert Globs(["[z-a]*"]).match("") is False  # an empty range matches nothing (fnmatch), no re.error


def test_regex_names_longer_than_the_bound_are_not_searched() -> None:
    regexes = NameRegexes([re.compile("^a+$", re.MULTILINE)])
    assert regexes.search("a" * MAX_REGEX_NAME)
    assert not regexes.search("a" * (MAX_REGEX_NAME + 1))
    assert regexes.search("a" * (MAX_REGEX_NAME + 1) + "\naa")


# --------------------------------------------------------------------------------------- overflow


def _overflow_tree(folder: Path) -> Path:
    folder.mkdir(parents=True)
    write_dump(folder / f"Conv2D.conv1.3.1.{TS + 50}", outputs=[np.array([1, 65504], np.float16)], op_name="conv1")
    (folder / f"Opdebug.Node_OpDebug.9.1.{TS + 100}.output.0.json").write_text("[" * 100_000)
    return folder


def test_overflow_deep_json_copy_is_a_record_not_decoded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record that cannot be decoded is said in its block, exit 1 (as a broken binary record)."""
    dump = _overflow_tree(tmp_path / "dump" / "0")
    code, output = _cli(capsys, "overflow", "-d", tmp_path / "dump", "-out", tmp_path / "out")
    assert code == 1 and "Traceback" not in output, output
    assert "not decoded" in output and "nested more than" in output and dump.name in output


def test_overflow_option_with_a_deep_json_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    left, right = tmp_path / "left", tmp_path / "right"
    for side in (left, right):
        side.mkdir()
        write_dump(side / f"Relu.relu1.4.1.{TS + 10}", outputs=[np.array([1, 2], np.float16)], op_name="relu1")
    (left / f"Opdebug.Node_OpDebug.9.1.{TS + 100}.output.0.json").write_text("[" * 100_000)
    code, output = _cli(capsys, "-l", left, "-r", right, "-o", tmp_path / "r.csv", "-alg", "0", "--overflow")
    assert code == 0 and "Traceback" not in output, output


def test_load_json_names_the_position() -> None:
    with pytest.raises(DumpFormatError, match=r"f\.json: line 2 column 7: the number 1e400"):
        load_json('{"a": 1,\n "b": 1e400}', "f.json")
    with pytest.raises(DumpFormatError, match=r"line 1 column 101: JSON nested more than 100 levels deep"):
        load_json("[" * 996 + "]" * 996, "f.json")  # parses, but would break a recursive walk later
    assert load_json("[" * 100 + "]" * 100, "f.json") == load_json("[" * 100 + "]" * 100, "f.json", max_depth=None)
    assert load_json("[NaN, 1e400]", "f.json", finite=False)[1] == float("inf")
    assert load_json('{"x": "[[[[", "y": ' + "9" * MAX_INT_DIGITS + "}", "f.json")["x"] == "[[[["


# ------------------------------------------------------------------------------------------- Dask


def test_dask_local_cluster_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, output = _cli(capsys, "-l", DEMO / "npu", "-r", DEMO / "golden", "-f", DEMO / "model.json",
                        "--dask-cluster", "local:100000", "-o", tmp_path / "r.csv")
    _refused(code, output, "--dask-cluster local:100000", f"at most local:{max_local_workers()}")
    assert max_local_workers() <= MAX_LOCAL_WORKERS == 256
    for bad in ("local:²", "local:" + "9" * 5000, f"local:{max_local_workers() + 1}"):
        with pytest.raises(OptionError, match="--dask-cluster local:"):
            ClusterSpec.parse(bad, None)
    assert ClusterSpec.parse(f"local:{max_local_workers()}", None) == ClusterSpec(local_workers=max_local_workers())


def test_ffts_slice_attribute_nested_deep() -> None:
    from convert.codecs.ffts import parse_slice_attr

    with pytest.raises(DumpFormatError, match="is not JSON: nested deeper"):
        parse_slice_attr("[" * 100_000, "x.dump")

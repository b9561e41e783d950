"""Statistics computed over columns (issue 31 item 4): the numpy column path of
:func:`compare.stats.stat_diffs` / :func:`compare.stats_table.compare_stats` gives the records
:func:`compare.stats.diff_stat` gives one by one, bit for bit (NaN, infinities, signed zeros,
text, None, integers, checksums); ``same_data`` stats each dump file once; the console script
holds its result until exit and a library caller holds nothing."""

from __future__ import annotations

import math
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import compare.runs.network as network
from compare.cli import startup
from compare.records import Pair, PairStatus, StatDiff, TensorKind, TensorRef
from compare.stats import TEXT_STATS, diff_stat, stat_diffs
from compare.stats_table import compare_stats, compare_stats_pair
from compare.testing.synthetic_msprobe import write_msprobe_dump

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324]))
VALUES = st.one_of(FLOATS, FLOATS, FLOATS, st.none(), st.integers(-10, 10), st.sampled_from(["ab", "cd", "1.5"]))
NAMES = st.sampled_from(["max", "min", "avg", "l2norm", "count", "md5", "checksum", "custom_stat"])


def _key(value: object) -> object:
    """A value as compared bit for bit (a float by its IEEE bytes: -0.0 and NaN told apart)."""
    if type(value) is float:
        return ("float", struct.pack("<d", value) if not math.isnan(value) else "nan")
    return (type(value).__name__, value)


def _same(a: StatDiff, b: StatDiff) -> bool:
    return all(_key(x) == _key(y) for x, y in ((a.left, b.left), (a.right, b.right), (a.diff, b.diff), (a.rel, b.rel)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, VALUES, VALUES), max_size=40))
def test_stat_diffs_is_diff_stat_on_every_entry(entries: list[tuple[str, object, object]]) -> None:
    names = [n for n, _, _ in entries]
    made = stat_diffs(names, [a for _, a, _ in entries], [b for _, _, b in entries])
    assert len(made) == len(entries)
    for (name, a, b), diff in zip(entries, made):
        assert _same(diff, diff_stat(name, a, b)), (name, a, b, diff)  # type: ignore[arg-type]


def _ref(stats: dict, *, dtype: str = "float32", shape: tuple[int, ...] = (4,), fmt: str = "ND") -> TensorRef:
    return TensorRef(op_name="op", kind=TensorKind.OUTPUT, index=0, dtype=dtype, format=fmt, shape=shape,
                     path=Path("dump.json"), stats=stats, stats_source="dump.json")


STATS = st.dictionaries(st.sampled_from(["max", "min", "avg", "l2norm", "md5"]), VALUES, min_size=1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(STATS, STATS, st.sampled_from(["float32", "int64", "float16"])), min_size=1, max_size=12))
def test_compare_stats_rows_are_the_one_pair_rows(sides: list[tuple[dict, dict, str]]) -> None:
    """The rows of one column pass over many pairs are the rows of each pair alone."""
    pairs = [Pair(index=i, op_type=None, left_op=f"op{i}", right_op=f"op{i}", tensor_id=f"op{i}:output:0",
                  left=_ref(left), right=_ref(right, dtype=dtype)) for i, (left, right, dtype) in enumerate(sides)]
    together = compare_stats(pairs).rows
    for pair, row in zip(pairs, together):
        alone = compare_stats_pair(pair)
        assert (row.status, row.reasons, list(row.values)) == (alone.status, alone.reasons, list(alone.values))
        for name, diff in row.values.items():
            assert _same(diff, diff_stat(name, pair.left.stats[name], pair.right.stats[name]))  # type: ignore[index]


def test_float_rows_and_text_rows_in_one_run() -> None:
    """Rows of floats go through the column, rows with a checksum, a null or text do not; each
    row keeps its own statistics and reasons."""
    pairs = [Pair(index=0, op_type=None, left_op="a", right_op="a", tensor_id="a:output:0",
                  left=_ref({"max": 2.0, "min": -0.0}), right=_ref({"max": 0.0, "min": 0.0})),
             Pair(index=1, op_type=None, left_op="b", right_op="b", tensor_id="b:output:0",
                  left=_ref({"max": 1.0, "avg": None, "md5": "x"}), right=_ref({"max": 1.0, "avg": 3.0, "md5": "y"})),
             Pair(index=2, op_type=None, left_op="c", right_op="c", tensor_id="c:output:0",
                  left=_ref({"max": math.nan}), right=_ref({"max": math.inf}))]
    rows = compare_stats(pairs).rows
    assert (rows[0].values["max"].diff, rows[0].values["max"].rel) == (2.0, math.inf)
    assert rows[0].values["min"].rel == 0.0 and rows[0].reasons == []
    assert rows[1].values["md5"].diff == "different" and rows[1].values["avg"].diff is None
    assert "recorded as null" in rows[1].reasons[0]
    assert math.isnan(rows[2].values["max"].diff) and rows[2].status is PairStatus.COMPARED
    assert TEXT_STATS >= {"md5"}


def test_a_value_diff_stat_refuses_fails_its_row_only() -> None:
    """A statistic no rule reads (a list) makes its own row NOT_COMPARABLE, the others stay."""
    pairs = [Pair(index=0, op_type=None, left_op="a", right_op="a", tensor_id="a:output:0",
                  left=_ref({"max": [1.0]}), right=_ref({"max": 2.0})),
             Pair(index=1, op_type=None, left_op="b", right_op="b", tensor_id="b:output:0",
                  left=_ref({"max": 1.0}), right=_ref({"max": 2.0}))]
    rows = compare_stats(pairs).rows
    assert rows[0].status is PairStatus.NOT_COMPARABLE and "internal error" in rows[0].reasons[0]
    assert rows[1].status is PairStatus.COMPARED and rows[1].values["max"].diff == -1.0


def test_same_data_stats_each_file_once(tmp_path: Path, monkeypatch) -> None:
    """An msprobe run names one dump.json for every call: one stat a side, not one a call."""
    from compare.loaders import load_run

    dump = write_msprobe_dump(tmp_path / "l", task="statistics")
    run = load_run(dump.folders[(0, 0)])
    calls: list[object] = []
    real = network.os.stat
    monkeypatch.setattr(network.os, "stat", lambda path: calls.append(path) or real(path))
    assert len(network._file_ids(run)) == 1
    assert len(calls) == 1 < len(run.ops)


def test_the_result_is_held_only_by_the_console_script(monkeypatch) -> None:
    monkeypatch.setattr(startup, "_kept", [])
    monkeypatch.setattr(startup, "_console_script", False)
    startup.keep_until_exit(object())
    assert startup._kept == []
    monkeypatch.setattr(startup, "_console_script", True)
    kept = object()
    startup.keep_until_exit(kept)
    assert startup._kept == [kept]

"""Policy files (compare.verdict.policy): loading, errors, selectors, layering, dtype defaults, waivers."""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path

import pytest

from compare.errors import OptionError
from compare.records import MetricRow, Outcome, PairStatus
from compare.verdict.gates import evaluate, parse_gate
from compare.verdict.policy import (
    DTYPE_EPS,
    BoundResolver,
    Policy,
    dtype_bounds,
    gated_metrics,
    names_text,
)
from compare.verdict.policy_file import load_policy, starter_policy

TODAY = datetime.date(2026, 11, 23)


def _policy(tmp_path: Path, text: str) -> Policy:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    return load_policy(path)


def _row(left_op: str = "conv1", op_type: str = "Conv2D", *, right_op: str | None = None, dtypes=("float16", "float32"),
         rank: int | None = None, iteration: int | None = None, cos: float | None = 0.999, **metrics) -> MetricRow:
    return MetricRow(0, op_type, left_op, right_op or left_op, f"{left_op.split(',')[0]}:output:0",
                     left_dtype=dtypes[0], right_dtype=dtypes[1], shape=(1, 4),
                     metrics={"CosineSimilarity": cos, **metrics}, rank=rank, iteration=iteration)


def _bounds(policy: Policy, row: MetricRow) -> list[str]:
    return [f"{b.text} [{b.source}]" for b in BoundResolver(policy).bounds(row)]


def _texts(policy: Policy, row: MetricRow) -> list[str]:
    return [b.text for b in BoundResolver(policy).bounds(row)]


# --------------------------------------------------------------------------------------------
# Starter file and loading


def test_starter_file_loads(tmp_path: Path) -> None:
    policy = _policy(tmp_path, starter_policy())
    assert policy.strict and not policy.dtype_defaults and policy.gated
    assert [b.text for b in policy.defaults] == ["CosineSimilarity>=0.99"]
    # every commented example of the starter file is valid once uncommented
    example = re.compile(r"^# (\[\[\w+\]\]|\w+ = .*)$")
    uncommented = "\n".join(line[2:] if example.match(line) else line for line in starter_policy().splitlines())
    full = _policy(tmp_path, uncommented.replace("dtype = false", "dtype = true"))
    assert full.dtype_defaults and len(full.rules) == 1 and len(full.waivers) == 1
    assert full.waivers[0].expires == datetime.date(2026, 12, 31)


def test_bound_forms(tmp_path: Path) -> None:
    policy = _policy(tmp_path, '[defaults]\ncos = 0.99\nMaxAbsoluteError = 1e-3\nmaxrel = "< 0.5"\n'
                               'RelativeEuclideanDistance = [">= 0", "<= 0.1"]\n')
    assert [b.text for b in policy.defaults] == ["CosineSimilarity>=0.99", "MaxAbsoluteError<=0.001",
                                                "MaxRelativeError<0.5", "RelativeEuclideanDistance>=0.0",
                                                "RelativeEuclideanDistance<=0.1"]
    assert policy.defaults[0].source == "gates.toml [defaults]"
    assert gated_metrics(policy) == ["CosineSimilarity", "MaxAbsoluteError", "RelativeEuclideanDistance",
                                     "MaxRelativeError"]


BAD_FILES = {
    "toml syntax": ("[defaults\n", "not valid TOML"),
    "unknown top key": ("gate = 1\n", "top level: unknown key 'gate'"),
    "unknown rule key": ('[[rule]]\nop_tpye = "Conv2D"\ncos = 0.9\n', "rule 1: unknown key 'op_tpye'"),
    "unknown waiver key": ('[[waiver]]\nop = "a"\nreason = "r"\nwhy = 1\n', "waiver 1: unknown key 'why'"),
    "bad metric in waiver": ('[[waiver]]\nop = "a"\nreason = "r"\nmetrics = ["cosin"]\n', "unknown metric 'cosin'"),
    "std": ("[defaults]\nStandardDeviation = 1\n", "StandardDeviation is not a single number"),
    "bad op": ('[defaults]\ncos = "=> 0.9"\n', "[defaults].cos: bad bound '=> 0.9'"),
    "bad value type": ("[defaults]\ncos = true\n", "[defaults].cos: expected a number"),
    "bad regex": ('[[rule]]\nop_regex = "conv(["\ncos = 0.9\n', "rule 1.op_regex: bad regular expression"),
    "bad date string": ('[[waiver]]\nop = "a"\nreason = "r"\nexpires = "31/12/2026"\n', "waiver 1.expires: bad date"),
    "bad date toml": ('[[waiver]]\nop = "a"\nreason = "r"\nexpires = 2026-13-01\n', "not valid TOML"),
    "datetime": ('[[waiver]]\nop = "a"\nreason = "r"\nexpires = 2026-12-01T10:00:00\n', "bad date"),
    "no reason": ('[[waiver]]\nop = "a"\n', "waiver 1.reason: every waiver needs a reason"),
    "no selector": ('[[rule]]\ncos = 0.9\n', "rule 1: selects no rows"),
    "no bound": ('[[rule]]\nop = "a"\n', "rule 1: sets no bound"),
    "bad rank": ('[[rule]]\nrank = "0"\ncos = 0.9\n', "rule 1.rank: expected an integer"),
    "bad strict": ('strict = "yes"\n', "strict: expected true or false"),
    "bad dtype switch": ('[defaults]\ndtype = "yes"\n', "[defaults].dtype: expected true or false"),
    "version": ("version = 2\n", "unsupported version 2"),
    "rule not a table array": ('rule = "x"\n', "write each rule as a [[rule]] table"),
    "not utf8": (b"\xff\xfe[defaults]\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_every_load_error_names_the_file_and_the_key(case: str, tmp_path: Path) -> None:
    text, needle = BAD_FILES[case]
    path = tmp_path / "my-gates.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(OptionError) as info:
        load_policy(path)
    message = str(info.value)
    assert str(path) in message and needle in message, message
    assert "\n" not in message.strip() or "line" in message  # TOML errors carry the line


def test_missing_file_is_an_option_error(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="cannot read policy file .*nope.toml"):
        load_policy(tmp_path / "nope.toml")


def test_toml_syntax_error_gives_the_line(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"line 3"):
        _policy(tmp_path, 'strict = true\n[defaults]\ncos = = 1\n')


# --------------------------------------------------------------------------------------------
# Built-in dtype defaults


def test_dtype_default_numbers() -> None:
    expected = {"float32": (2**-23, 0.9999999403953552, 3.4526698300124393e-04),
                "float16": (2**-10, 0.99951171875, 0.03125),
                "bfloat16": (2**-7, 0.99609375, 0.08838834764831845),
                "int8": (2**-7, 0.99609375, 0.08838834764831845),
                "float8_e4m3": (2**-3, 0.9375, 0.3535533905932738),
                "float8_e5m2": (2**-2, 0.875, 0.5)}
    for family, (eps, cos, red) in expected.items():
        assert DTYPE_EPS[family] == eps
        bounds = {b.metric: b for b in dtype_bounds(family, family)}
        assert bounds["CosineSimilarity"].value == cos and bounds["CosineSimilarity"].op == ">="
        assert math.isclose(bounds["RelativeEuclideanDistance"].value, red, rel_tol=1e-15)
    assert dtype_bounds("float8_e4m3fn", None)[0].value == 0.9375  # ml_dtypes names by prefix


def test_the_coarser_side_decides_and_unknown_types_have_none() -> None:
    assert dtype_bounds("float16", "float32")[0].value == 0.99951171875
    assert dtype_bounds("float32", "bfloat16")[0].value == 0.99609375
    assert dtype_bounds("int32", "float32")[0].value == 1 - 2**-24
    assert dtype_bounds("bool", "bool") == () and dtype_bounds("float64", "int64") == ()


def test_dtype_defaults_evaluate(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "[defaults]\ndtype = true\n")
    assert gated_metrics(policy) == ["CosineSimilarity", "RelativeEuclideanDistance"]
    good = _row(cos=0.9996, RelativeEuclideanDistance=0.03)
    bad = _row("fc1", cos=0.9994, RelativeEuclideanDistance=0.03)
    same_in_fp32 = _row("fc2", cos=0.9996, RelativeEuclideanDistance=0.03, dtypes=("float32", "float32"))
    verdict = evaluate([good, bad, same_in_fp32], policy)
    assert verdict.outcome is Outcome.FAILED
    assert [(f.left_op, f.metric) for f in verdict.failures] == [
        ("fc1", "CosineSimilarity"), ("fc2", "CosineSimilarity"), ("fc2", "RelativeEuclideanDistance")]
    assert "built-in default for float16 (eps 2**-10)" in verdict.failures[0].message


# --------------------------------------------------------------------------------------------
# Selectors and layering


RULES = '''
[defaults]
cos = 0.99
maxabs = 1.0

[[rule]]
op_type = "Softmax*"
cos = 0.95

[[rule]]
op = "conv*"
note = "convs"
cos = 0.999

[[rule]]
op_regex = "^fc[0-9]+$"
cos = 0.9

[[rule]]
dtype = "bf16"
maxabs = 2.0

[[rule]]
left_dtype = "float32"
maxabs = "off"

[[rule]]
rank = [1, 2]
cos = 0.8

[[rule]]
iteration = 5
op_type = "Conv2D"
cos = 0.5
'''


@pytest.mark.parametrize("row,cos,maxabs", [
    (_row("relu1", "Relu"), "0.99", "1.0"),                              # defaults only
    (_row("prob", "SoftmaxV2"), "0.95", "1.0"),                          # op_type glob
    (_row("conv1"), "0.999", "1.0"),                                     # op glob on the name
    (_row("x", "Relu", right_op="conv9"), "0.999", "1.0"),               # ... or the golden name
    (_row("a,conv3,b", "Relu"), "0.999", "1.0"),                         # ... or one name of a fusion group
    (_row("fc12", "MatMul"), "0.9", "1.0"),                              # regex, anchored per name
    (_row("xfc12", "MatMul"), "0.99", "1.0"),
    (_row("relu1", "Relu", dtypes=("float16", "bfloat16")), "0.99", "2.0"),  # dtype: either side, alias
    (_row("relu1", "Relu", dtypes=("float32", "float32")), "0.99", None),    # left_dtype + "off"
    (_row("relu1", "Relu", rank=2), "0.8", "1.0"),                       # rank
    (_row("relu1", "Relu", rank=3), "0.99", "1.0"),
    (_row("conv1", iteration=5), "0.5", "1.0"),                          # later rule wins per metric
    (_row("relu1", "Relu", iteration=5), "0.99", "1.0"),                 # all keys of a selector must match
])
def test_rule_selectors_and_precedence(row: MetricRow, cos: str, maxabs: str | None, tmp_path: Path) -> None:
    texts = _texts(_policy(tmp_path, RULES), row)
    assert f"CosineSimilarity>={cos}" in texts and sum(t.startswith("CosineSimilarity") for t in texts) == 1
    assert ([t for t in texts if t.startswith("MaxAbsoluteError")] == ([f"MaxAbsoluteError<={maxabs}"] if maxabs else []))


def test_gates_add_to_the_file(tmp_path: Path) -> None:
    policy = _policy(tmp_path, RULES).with_gates([parse_gate("CosineSimilarity>=0.97")])
    bounds = _bounds(policy, _row("prob", "SoftmaxV2"))
    assert "CosineSimilarity>=0.95 [gates.toml rule 1 (op_type = \"Softmax*\")]" in bounds
    assert "CosineSimilarity>=0.97 [--gate CosineSimilarity>=0.97]" in bounds  # both apply
    verdict = evaluate([_row("prob", "SoftmaxV2", cos=0.96, MaxAbsoluteError=0.0)], policy)
    assert [f.bound.source for f in verdict.failures] == ["--gate CosineSimilarity>=0.97"]
    assert _bounds(policy, _row("conv1"))[0] == "CosineSimilarity>=0.999 [gates.toml rule 2 (convs)]"


def test_names_text_lists_each_name_once() -> None:
    row = MetricRow(0, "Conv2D", "conv1,bn1", "*", "conv1:output:0")
    assert names_text(row) == "conv1\nbn1\nconv1:output:0"
    assert names_text(MetricRow(0, None, "*", "golden_op", None)) == "golden_op"


# --------------------------------------------------------------------------------------------
# Waivers


WAIVERS = '''
[[waiver]]
op = "pool1"
reason = "ticket 12"
expires = 2026-12-31
metrics = ["CosineSimilarity"]

[[waiver]]
op_type = "Gather"
reason = "gather is not dumped on this board"
metrics = "not-compared"
'''


def test_waivers_cover_only_what_they_name(tmp_path: Path) -> None:
    policy = _policy(tmp_path, WAIVERS).with_gates([parse_gate("cos>=0.99"), parse_gate("maxabs<=0.1")])
    rows = [_row("pool1", "Pooling", cos=0.5, MaxAbsoluteError=0.0),        # cosine waived
            _row("pool1", "Pooling", cos=0.999, MaxAbsoluteError=0.5),      # maxabs not waived
            _row("g", "Gather", cos=None, MaxAbsoluteError=0.0),            # not computed: waived
            _row("g", "Gather", cos=0.5, MaxAbsoluteError=0.0)]             # a value: not waived
    rows.append(_row("h", "Gather", cos=None))
    rows[-1].status = PairStatus.MISSING_RIGHT
    verdict = evaluate(rows, policy, today=TODAY)
    assert [(f.row, f.metric) for f in verdict.waived] == [(0, "CosineSimilarity"), (2, "CosineSimilarity"),
                                                           (4, None)]
    assert [(f.row, f.metric) for f in verdict.failures] == [(1, "MaxAbsoluteError"), (3, "CosineSimilarity")]
    assert "ticket 12" in (verdict.waived[0].waived_by or "") and "expires 2026-12-31" in (verdict.waived[0].waived_by or "")
    assert verdict.outcome is Outcome.FAILED and not verdict.errors


def test_expired_waiver_is_an_error_even_when_nothing_fails(tmp_path: Path) -> None:
    policy = _policy(tmp_path, WAIVERS).with_gates([parse_gate("cos>=0.99")])
    verdict = evaluate([_row("relu", "Relu")], policy, today=datetime.date(2027, 1, 1))
    assert verdict.outcome is Outcome.FAILED and verdict.exit_code == 1 and not verdict.failures
    (error,) = verdict.errors
    assert "gates.toml waiver 1" in error and "expired on 2026-12-31" in error and "ticket 12" in error


def test_from_gates_and_with_gates() -> None:
    gate = parse_gate("cos>=0.99")
    assert Policy.from_gates([gate]).strict and not Policy.from_gates([]).strict
    assert not Policy.from_gates([]).gated
    policy = Policy.from_gates([]).with_gates([gate])
    assert policy.gates == (gate,) and gated_metrics(policy) == ["CosineSimilarity"]


def test_an_expired_waiver_fails_even_an_otherwise_ungated_policy(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "strict = false\n" + WAIVERS)
    assert not policy.gated
    assert evaluate([_row()], policy, today=TODAY).outcome is Outcome.NOT_GATED
    expired = evaluate([_row()], policy, today=datetime.date(2027, 1, 1))
    assert expired.outcome is Outcome.FAILED and len(expired.errors) == 1

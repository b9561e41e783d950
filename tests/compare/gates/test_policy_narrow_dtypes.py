"""Built-in precision bounds and selector aliases of the narrow data types (compare.verdict.policy)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from compare.records import MetricRow, Outcome
from compare.verdict.gates import evaluate
from compare.verdict.policy import DTYPE_EPS, dtype_bounds
from compare.verdict.policy_file import load_policy


@pytest.mark.parametrize("name, mantissa_bits", [
    ("hifloat8", 3), ("float6_e2m3", 3), ("float6_e3m2", 2), ("float4_e2m1", 1), ("float4_e1m2", 2),
    ("hifloat4", 2), ("float8_e8m0", 0)])
def test_eps_is_the_mantissa_spacing(name: str, mantissa_bits: int) -> None:
    eps = 2.0**-mantissa_bits
    assert DTYPE_EPS[name] == eps
    bounds = {b.metric: b for b in dtype_bounds(name, "float32")}  # the coarser side decides
    assert bounds["CosineSimilarity"].value == 1 - eps / 2
    assert math.isclose(bounds["RelativeEuclideanDistance"].value, math.sqrt(eps), rel_tol=1e-15)
    assert f"built-in default for {name} (eps 2**{-mantissa_bits})" == bounds["CosineSimilarity"].source


def test_the_coarser_narrow_type_decides() -> None:
    assert dtype_bounds("float4_e2m1", "float8_e4m3fn")[0].value == 0.75
    assert dtype_bounds("int4", "float16")[0].value == 0.9375


def _row(op: str, left_dtype: str, cos: float) -> MetricRow:
    return MetricRow(0, "MatMul", op, op, f"{op}:output:0", left_dtype=left_dtype, right_dtype="float32",
                     shape=(4,), metrics={"CosineSimilarity": cos})


def test_dtype_aliases_select_the_narrow_types(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text('[defaults]\ncos = 0.99\n\n[[rule]]\ndtype = ["fp4", "hif8"]\ncos = 0.9\n')
    policy = load_policy(path)
    rows = [_row("a", "float4_e2m1", 0.95), _row("b", "hifloat8", 0.95), _row("c", "float8_e4m3fn", 0.95)]
    verdict = evaluate(rows, policy)
    assert verdict.outcome is Outcome.FAILED
    assert [f.left_op for f in verdict.failures] == ["c"]  # fp8 is neither fp4 nor hif8: held to 0.99

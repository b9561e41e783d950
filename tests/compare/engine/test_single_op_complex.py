"""Single-operator mode on complex data: the element-wise errors count the imaginary parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compare.runs.single_op import compare_operator

NAME = "Mul.Default_network-Mul-op3.0.0.1795463530762830.output.0.DefaultFormat.Complex64.npy"


def _side(root: Path, data: np.ndarray) -> Path:
    leaf = root / "rank_0" / "Net" / "0" / "0"
    leaf.mkdir(parents=True)
    np.save(leaf / NAME, data)
    return root


def test_complex_element_errors_use_both_parts(tmp_path: Path) -> None:
    left = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j], dtype=np.complex64)
    right = np.array([1 + 1j, 3 - 1j, 0.5 - 0.5j], dtype=np.complex64)  # real parts equal
    result = compare_operator(_side(tmp_path / "l", left), _side(tmp_path / "r", right),
                              "Default_network-Mul-op3")
    twin_abs = np.abs(left.astype(np.complex128) - right.astype(np.complex128))
    np.testing.assert_allclose(result.absolute_error, twin_abs, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.relative_error, twin_abs / np.abs(right.astype(np.complex128)), rtol=1e-12)
    assert result.summary["MaxAbsoluteError"] == max(twin_abs)
    np.testing.assert_array_equal(result.frame["Left"].to_numpy(), left.real.astype(np.float64))

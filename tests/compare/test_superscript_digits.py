"""Text that ``str.isdigit`` accepts and ``int`` refuses (superscript digits such as ``²``) is
never taken for a number: a hostile name or option gives a row, a label or an OptionError, not a
ValueError traceback. (Hypothesis found ``--metrics ¹`` first; every ``isdigit`` before an ``int``
is now ``isdecimal``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.engine.grades import tensor_place
from compare.errors import OptionError
from compare.kernels.metrics import resolve_algorithms
from compare.pairing.mapping_file import TensorSel
from compare.records import Run, RunKind


def test_a_superscript_metric_index_is_an_unknown_metric() -> None:
    with pytest.raises(OptionError, match="unknown metric"):
        resolve_algorithms("¹")
    assert resolve_algorithms("1") == ["MaxAbsoluteError"]


def test_a_superscript_tensor_index_is_part_of_the_name() -> None:
    assert TensorSel.parse("conv1:input:²") == TensorSel("conv1:input:²")
    assert TensorSel.parse("conv1:²") == TensorSel("conv1:²")
    assert tensor_place("conv1:input:²") is None


def test_a_superscript_rank_is_no_rank() -> None:
    run = Run(root=Path("."), path=Path("."), kind=RunKind.NUMPY, coords={"rank": "²", "iteration": "³"})
    assert run.rank is None and run.iteration is None

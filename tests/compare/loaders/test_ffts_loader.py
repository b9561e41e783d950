"""FFTS+ sliced ops in the Ascend loader: one op merged from its slice files, read lazily; -ffts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compare.loaders import load_run
from compare.loaders.ascend_offline import scan_offline
from compare.records import TensorKind
from compare.testing.synthetic_ffts import BASE_TIMESTAMP, write_sliced_op
from convert.codecs.dumpwrite import write_dump
from convert.codecs.ffts import FftsMode
from convert.errors import DumpFormatError


def _full(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("mode, shape, sizes, axis", [
    (FftsMode.AUTOMATIC, (6, 4), (3, 3), 0),
    (FftsMode.AUTOMATIC, (2, 5, 3, 4), (2, 3), 1),
    (FftsMode.MANUAL, (6, 4), (1, 5), 0),
    (FftsMode.MANUAL, (1, 2, 6, 16), (1, 3, 2), 2),
])
def test_slices_merge_into_one_op(tmp_path: Path, mode: FftsMode, shape, sizes, axis) -> None:
    full = _full(shape)
    x = _full((3,), seed=1)
    sliced = write_sliced_op(tmp_path, full, sizes, axis, mode=mode, name="mm", inputs=[x])
    run = scan_offline(tmp_path)
    assert list(run.ops) == ["mm"]
    op = run.ops["mm"]
    assert op.files and set(op.files) == set(sliced.files) and op.error is None
    assert op.path == sliced.files[0]
    out = op.tensor(TensorKind.OUTPUT, 0)
    assert out is not None and out.shape == shape and out.dtype == "float32"
    assert out.nbytes == full.nbytes and out.remark == ""
    merged = out.load()
    assert merged.shape == shape and np.array_equal(merged, full)
    inp = op.tensor(TensorKind.INPUT, 0)
    assert inp is not None and np.array_equal(inp.load(), x)
    assert f"the first of {len(sizes)} slice files ({sliced.files[0].name}); inputs are not merged" in inp.remark


def test_merge_is_lazy(tmp_path: Path) -> None:
    full = _full((4, 4))
    sliced = write_sliced_op(tmp_path, full, (2, 2), 0)
    op = scan_offline(tmp_path).ops["op"]
    sliced.files[1].write_bytes(sliced.files[1].read_bytes()[:-8])  # damaged after the scan
    with pytest.raises(DumpFormatError, match=sliced.files[1].name):
        op.outputs[0].load()


def test_manual_slices_sort_by_slice_number(tmp_path: Path) -> None:
    full = _full((11, 3))
    write_sliced_op(tmp_path, full, (1,) * 11, 0, mode=FftsMode.MANUAL,
                    timestamps=[BASE_TIMESTAMP + 20 - k for k in range(11)])  # newest first: order is the number's
    op = scan_offline(tmp_path).ops["op"]
    assert np.array_equal(op.outputs[0].load(), full)


def test_automatic_slices_sort_by_thread_id(tmp_path: Path) -> None:
    full = _full((3, 2))
    write_sliced_op(tmp_path, full, (1, 1, 1), 0, timestamps=[BASE_TIMESTAMP + 9, BASE_TIMESTAMP + 5, BASE_TIMESTAMP])
    assert np.array_equal(scan_offline(tmp_path).ops["op"].outputs[0].load(), full)


def test_no_cut_axis_uses_the_latest_file(tmp_path: Path) -> None:
    full = _full((4, 2))
    sliced = write_sliced_op(tmp_path, full, (2, 2), 0, cut_list=(1, 1),
                             timestamps=[BASE_TIMESTAMP + 7, BASE_TIMESTAMP + 3])
    op = scan_offline(tmp_path).ops["op"]
    assert op.path == sliced.files[0]  # the largest timestamp
    out = op.outputs[0]
    assert out.shape == (2, 2) and np.array_equal(out.load(), full[:2])
    assert f"no cut axis in outputCutList: the latest, {sliced.files[0].name}, is compared" in out.remark


def test_slice_count_mismatch_is_a_remark(tmp_path: Path) -> None:
    full = _full((4, 2))
    write_sliced_op(tmp_path, full, (2, 2), 0, declared=3)
    out = scan_offline(tmp_path).ops["op"].outputs[0]
    assert np.array_equal(out.load(), full)  # still merged, as the reference does
    assert out.remark == "FFTS+ op op: 2 slice file(s) (MatMul.op.3.2.*) but slice_instance_num is 3"


def test_slice_that_does_not_fit(tmp_path: Path) -> None:
    sliced = write_sliced_op(tmp_path, _full((4, 3)), (2, 2), 0, mode=FftsMode.MANUAL)
    header_attr = [("ffts", sliced.attr.to_json())]
    write_dump(sliced.files[1], outputs=[_full((2, 5))], attrs=header_attr)  # other width: cannot concatenate
    out = scan_offline(tmp_path).ops["op"].outputs[0]
    assert out.shape == (2, 3)  # the first slice's metadata
    with pytest.raises(DumpFormatError, match=r"slice of shape \[2, 5\] does not fit the first slice \[2, 3\]"):
        out.load()


def test_automatic_thread_shape_must_hold_the_data(tmp_path: Path) -> None:
    sliced = write_sliced_op(tmp_path, _full((4, 3)), (2, 2), 0)
    write_dump(sliced.files[1], outputs=[_full((1, 3))], attrs=[("ffts", sliced.attr.to_json())])
    out = scan_offline(tmp_path).ops["op"].outputs[0]
    assert out.shape == (4, 3)
    with pytest.raises(DumpFormatError, match=r"holds 3 element\(s\), its piece shape \[2, 3\] needs 6"):
        out.load()


def test_unreadable_attr_fails_every_tensor_of_the_op(tmp_path: Path) -> None:
    write_sliced_op(tmp_path, _full((4, 3)), (2, 2), 0, inputs=[_full((2,))], attr_text="{broken")
    op = scan_offline(tmp_path).ops["op"]
    assert op.error is None and len(op.inputs) == 1 and len(op.outputs) == 1
    for ref in op.inputs + op.outputs:
        assert "cannot be merged" in ref.remark
        with pytest.raises(DumpFormatError, match=r"FFTS\+ slice attribute \(DumpData.attr\[0\].value\) is not JSON"):
            ref.load()


def test_unreadable_slice_header_is_the_op_error(tmp_path: Path) -> None:
    sliced = write_sliced_op(tmp_path, _full((4, 3)), (2, 2), 0)
    sliced.files[1].write_bytes(b"\x01\x02")
    op = scan_offline(tmp_path).ops["op"]
    assert op.error is not None and sliced.files[1].name in op.error and "FFTS+ slice file of op" in op.error


def test_ffts_option_keeps_manual_slices_apart(tmp_path: Path) -> None:
    full = _full((4, 3))
    write_sliced_op(tmp_path, full, (1, 3), 0, mode=FftsMode.MANUAL)
    run = load_run(tmp_path, keep_raw_names=True)
    assert sorted(run.ops) == ["op_lxslice0", "op_lxslice1"]
    assert np.array_equal(run.ops["op_lxslice1"].outputs[0].load(), full[1:])


def test_ffts_option_splits_automatic_threads(tmp_path: Path) -> None:
    full = _full((4, 3))
    write_sliced_op(tmp_path, full, (2, 2), 0)
    run = load_run(tmp_path, keep_raw_names=True)
    assert sorted(run.ops) == ["op_thread0", "op_thread1"]
    assert np.array_equal(run.ops["op_thread0"].outputs[0].load(), full[:2])
    assert run.ops["op_thread1"].outputs[0].remark == ""


def test_ordinary_ops_are_untouched(tmp_path: Path) -> None:
    first = write_dump(tmp_path / f"Add.add.1.2.{BASE_TIMESTAMP}", outputs=[np.zeros(2, np.float32)])
    second = write_dump(tmp_path / f"Add.add.1.2.{BASE_TIMESTAMP + 1}", outputs=[np.ones(2, np.float32)])
    op = scan_offline(tmp_path).ops["add"]
    assert op.path == second and op.files == (first, second)
    assert np.array_equal(op.outputs[0].load(), np.ones(2, np.float32))

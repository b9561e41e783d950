"""Property tests: arbitrary dump.json content and damaged .pt files never crash the msprobe reader."""

from __future__ import annotations

import json
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compare.errors import CompareError
from compare.loaders.msprobe import scan_msprobe
from compare.testing.synthetic_msprobe import tensor_pickle, write_pt
from convert.codecs.torch_pt import load_pt
from convert.errors import DumpFormatError

_SCALARS = st.none() | st.booleans() | st.integers(-5, 10) | st.floats(allow_nan=True) | st.sampled_from(
    ["torch.Tensor", "mindspore.Tensor", "torch.float32", "Float16", "../x.pt", "a.pt", "b.npy", "-1", ""])
_KEYS = st.sampled_from(["type", "dtype", "shape", "data_name", "Max", "Norm", "md5", "input_args", "output",
                         "input_kwargs", "parameters", "weight", "value"])
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
                     max_leaves=25)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.dictionaries(st.sampled_from(["Functional.relu.0.forward", "Module.fc.Linear.parameters_grad.0",
                                                "Tensor.add.1.backward", "odd"]), _JSON, max_size=4))
def test_any_entries_give_a_run_or_a_diagnosis(tmp_path_factory, entries) -> None:
    folder = tmp_path_factory.mktemp("j")
    (folder / "dump_tensor_data").mkdir()
    np.save(folder / "dump_tensor_data" / "b.npy", np.ones(3, np.float32))
    (folder / "dump.json").write_text(json.dumps({"task": "tensor", "framework": "pytorch", "data": entries}))
    run = scan_msprobe(folder)
    assert set(run.ops) == set(entries)  # every entry is an op, none dropped
    for op in run.ops.values():
        for ref in (*op.inputs, *op.outputs):
            try:
                array = ref.load()
            except CompareError as exc:
                assert str(exc)  # a diagnosis, never another exception
            else:
                np.testing.assert_array_equal(array, np.ones(3, np.float32))  # the only file that exists


@settings(max_examples=120)
@given(position=st.integers(0, 400), value=st.integers(0, 255))
def test_a_damaged_pickle_is_diagnosed(tmp_path_factory, position, value) -> None:
    raw = bytearray(tensor_pickle("FloatStorage", 6, (2, 3), (3, 1)))
    raw[position % len(raw)] = value
    path = tmp_path_factory.mktemp("p") / "t.pt"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("t/data.pkl", bytes(raw))
        out.writestr("t/data/0", np.arange(6, dtype=np.float32).tobytes())
    try:
        array = load_pt(path)
    except DumpFormatError as exc:
        assert str(path) in str(exc)
    else:
        assert array.size <= 6


@settings(max_examples=80)
@given(cut=st.integers(0, 2000))
def test_a_truncated_archive_is_diagnosed(tmp_path_factory, cut) -> None:
    folder = tmp_path_factory.mktemp("z")
    whole = write_pt(folder / "w.pt", np.arange(100, dtype=np.float32)).read_bytes()
    path = folder / "cut.pt"
    path.write_bytes(whole[: cut % len(whole)])
    try:
        array = load_pt(path)
    except DumpFormatError as exc:
        assert str(path) in str(exc)
    else:  # only a cut inside the trailing zip directory could leave the data readable: then it is all there
        np.testing.assert_array_equal(array, np.arange(100, dtype=np.float32))

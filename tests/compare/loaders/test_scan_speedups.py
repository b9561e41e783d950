"""The scan's shortcuts say what the plain rules say: the quantization markers as one search, the
format names remembered, and the listing's paths joined rather than parsed."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from compare.loaders.ascend import QUANT_MARKERS, _format_name, is_quantized_name
from compare.loaders.listing import list_folder
from convert.codecs.dtypes import format_name

_pieces = st.one_of(st.sampled_from(QUANT_MARKERS), st.sampled_from(["_", "Quant", "quant", "Anti", "Conv2D", "x"]),
                    st.text(max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieces, max_size=6).map("".join))
def test_quant_markers_are_any_substring(name):
    assert is_quantized_name(name) == any(marker in name for marker in QUANT_MARKERS)


def test_format_names_are_format_name():
    for code in list(range(0, 60)) + [255, 1000]:
        assert _format_name(code) == format_name(code)


def test_listed_paths_are_the_entries_paths(tmp_path, monkeypatch):
    for name in ("Conv2D.op0.1.2.1700000000000000", "op0.0.1700000000000000.npy", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    for folder in (tmp_path, Path("."), Path("..") / tmp_path.name, Path(f"./../{tmp_path.name}/")):
        listing = list_folder(folder)
        got = sorted(item.entry.path for item in listing.files)
        with os.scandir(folder) as it:
            want = sorted(Path(entry.path) for entry in it)
        assert got == want and all(type(p) is type(w) for p, w in zip(got, want))

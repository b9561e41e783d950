"""Properties of the narrow-type packing and storage policy (convert.codecs.narrow, convert.codecs.dtypes.decode)."""

from __future__ import annotations

import narrow_reference as ref
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convert.codecs.dtypes import DataSizeError, decode, nbytes_for, stored_nbytes
from convert.codecs.narrow import pack_codes, packed_nbytes, unpack_codes

KINDS = st.sampled_from(ref.KINDS)


@st.composite
def kind_and_codes(draw, max_size: int = 80):
    kind = draw(KINDS)
    codes = draw(st.lists(st.integers(0, (1 << kind.bits) - 1), min_size=1, max_size=max_size))
    return kind, np.array(codes, dtype=np.uint8)


@settings(max_examples=200)
@given(kind_and_codes())
def test_pack_is_the_integer_reference_and_unpack_inverts_it(case) -> None:
    kind, codes = case
    packed = pack_codes(codes, kind.bits)
    assert packed.tobytes() == ref.pack(codes, kind.bits)
    assert packed.size == packed_nbytes(kind.bits, codes.size)
    np.testing.assert_array_equal(unpack_codes(packed, kind.bits, codes.size), codes)


@settings(max_examples=200)
@given(kind_and_codes(), st.integers(0, 9))
def test_packed_decode_ignores_padding_and_matches_the_reference(case, pad: int) -> None:
    kind, codes = case
    raw = ref.pack(codes, kind.bits) + bytes([0xA5] * pad)
    if len(raw) == codes.size and codes.size != packed_nbytes(kind.bits, codes.size):
        raw += b"\x00"  # padding that would make it look unpacked: see the unpacked property
    out = decode(raw, kind.code, (codes.size,))
    assert ref.same_values(out.astype(np.float64), ref.decode(kind.name, codes))


@settings(max_examples=200)
@given(kind_and_codes(), st.data())
def test_unpacked_decode_ignores_the_high_bits(case, data) -> None:
    kind, codes = case
    if codes.size == packed_nbytes(kind.bits, codes.size):  # the size cannot tell: read as packed
        codes = np.concatenate([codes, codes, codes, codes])
    noise = np.array(data.draw(st.lists(st.integers(0, 255), min_size=codes.size, max_size=codes.size)), np.uint8)
    high = noise & ~np.uint8((1 << kind.bits) - 1) if kind.bits < 8 else np.zeros_like(noise)
    raw = (codes | high).astype(np.uint8)
    assert stored_nbytes(kind.code, codes.size, raw.size) == codes.size
    out = decode(raw, kind.code, (codes.size,))
    assert ref.same_values(out.astype(np.float64), ref.decode(kind.name, codes))


@settings(max_examples=100)
@given(KINDS, st.integers(1, 200), st.data())
def test_sizes_below_the_packed_size_are_refused(kind, count: int, data) -> None:
    needed = nbytes_for(kind.code, count)
    present = data.draw(st.integers(0, needed - 1))
    try:
        decode(bytes(present), kind.code, (count,))
    except DataSizeError as exc:
        assert exc.needed == needed and exc.present == present
    else:
        raise AssertionError(f"{kind.name}: {present} bytes accepted for {count} elements")

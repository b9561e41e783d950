"""Independent decoders of the narrow device data types, for tests only.

Written apart from :mod:`convert.codecs.narrow` and structured differently: the minifloats through one
generic ``(exponent bits, mantissa bits, bias, specials)`` formula, HiFloat8 by *encoding* every
(exponent, mantissa) pair of its definition into its bit pattern, the packing through Python's
arbitrary-size integers. The ``en_dtypes`` tables, where installed, are a third opinion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NAN = float("nan")


@dataclass(frozen=True)
class Kind:
    """One narrow data-type code: its report name and element width in bits."""

    code: int
    name: str
    bits: int


KINDS = (
    Kind(28, "int4", 4), Kind(30, "int2", 2), Kind(31, "uint2", 2), Kind(33, "hifloat8", 8),
    Kind(34, "float8_e5m2", 8), Kind(35, "float8_e4m3fn", 8), Kind(36, "float8_e8m0", 8),
    Kind(37, "float6_e3m2", 6), Kind(38, "float6_e2m3", 6), Kind(39, "float4_e2m1", 4),
    Kind(40, "float4_e1m2", 4), Kind(41, "hifloat4", 4),
)
KIND_BY_NAME = {k.name: k for k in KINDS}


def minifloat(code: int, exp_bits: int, man_bits: int, bias: int, specials: str = "") -> float:
    """``(-1)**s * 2**(e-bias) * (1 + m/2**M)``, subnormal ``2**(1-bias) * m/2**M`` at e = 0.

    ``specials``: ``"ieee"`` (top exponent: Inf at m = 0, else NaN), ``"fn"`` (all ones is NaN),
    ``""`` (every pattern finite)."""
    sign = -1.0 if (code >> (exp_bits + man_bits)) & 1 else 1.0
    e = (code >> man_bits) & ((1 << exp_bits) - 1)
    m = code & ((1 << man_bits) - 1)
    top = (1 << exp_bits) - 1
    if specials == "ieee" and e == top:
        return sign * math.inf if m == 0 else NAN
    if specials == "fn" and e == top and m == (1 << man_bits) - 1:
        return NAN
    if e == 0:
        return sign * 2.0 ** (1 - bias) * m / 2**man_bits
    return sign * 2.0 ** (e - bias) * (1 + m / 2**man_bits)


def _hifloat8_by_encoding() -> list[float]:
    """The 256 HiFloat8 values, made by encoding every value the definition allows."""
    body_value: dict[int, float] = {0: 0.0}
    for mantissa in range(1, 8):  # dot 0000: denormals 2**(M-23)
        body_value[mantissa] = 2.0 ** (mantissa - 23)
    # (exponent width D, dot prefix, prefix length)
    for width, prefix, length in ((4, 0b11, 2), (3, 0b10, 2), (2, 0b01, 2), (1, 0b001, 3), (0, 0b0001, 4)):
        man_bits = 7 - length - width
        exponents = [0] if width == 0 else [s * mag for mag in range(2 ** (width - 1), 2**width) for s in (1, -1)]
        for exponent in exponents:
            field = 0
            if width:
                field = ((1 if exponent < 0 else 0) << (width - 1)) | (abs(exponent) - 2 ** (width - 1))
            for m in range(2**man_bits):
                body = (prefix << (7 - length)) | (field << man_bits) | m
                assert body not in body_value
                body_value[body] = 2.0**exponent * (1 + m / 2**man_bits)
    assert sorted(body_value) == list(range(128))
    body_value[0x6F] = math.inf  # D = 4, e = +15, M = 1
    table = [body_value[c] for c in range(128)] + [-body_value[c] for c in range(128)]
    table[0x80] = NAN
    return table


HIFLOAT8 = _hifloat8_by_encoding()


def value(name: str, code: int) -> float:
    """The value of one code of the narrow type ``name`` (codes of int types as their integers)."""
    if name == "int4":
        return float(code - 16 if code >= 8 else code)
    if name == "int2":
        return float(code - 4 if code >= 2 else code)
    if name == "uint2":
        return float(code)
    if name == "hifloat8":
        return HIFLOAT8[code]
    if name == "float8_e8m0":  # the device (CANN opbase float8_e8m0.cpp): 0x00 is zero, not 2**-127
        return 0.0 if code == 0 else NAN if code == 0xFF else 2.0 ** (code - 127)
    params = {
        "float8_e5m2": (5, 2, 15, "ieee"), "float8_e4m3fn": (4, 3, 7, "fn"), "float6_e3m2": (3, 2, 3, ""),
        "float6_e2m3": (2, 3, 1, ""), "float4_e2m1": (2, 1, 1, ""), "float4_e1m2": (1, 2, 1, ""),
        "hifloat4": (1, 2, 1, ""),  # CANN opbase hifloat4.h: S1 E1 M2, bias 1, no NaN/Inf
    }[name]
    return minifloat(code, *params)


def decode(name: str, codes: np.ndarray) -> np.ndarray:
    """float64 values of an array of codes."""
    return np.array([value(name, int(c)) for c in np.asarray(codes).reshape(-1)], dtype=np.float64)


def pack(codes: np.ndarray, bits: int) -> bytes:
    """Pack codes little end first through one Python integer: element i at bit ``bits*i``."""
    stream = 0
    for i, c in enumerate(np.asarray(codes).reshape(-1).tolist()):
        stream |= int(c) << (bits * i)
    nbytes = (len(np.asarray(codes).reshape(-1)) * bits + 7) // 8
    return stream.to_bytes(nbytes, "little")


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as float64 with NaN == NaN (of any sign) and the sign of zero compared."""
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    numbers = ~np.isnan(a)
    return bool(np.array_equal(a, b, equal_nan=True)
                and np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers])))

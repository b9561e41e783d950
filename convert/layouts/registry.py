"""``LAYOUTS``: the built-in converters, keyed by upper-case ``(FROM, TO)`` format names.

Every converter has the plugin signature ``convert(shape_from, shape_to, array, group=1)``;
``array`` may be flat or shaped, ``shape_to`` may be ``None``/empty (no cropping where a
converter would crop). The producing converters (to NC1HWC0 / NDC1HWC0 / FRACTAL_NZ) also take a
keyword-only ``c0``; the to-FRACTAL_Z ones a keyword-only ``reference_quirk``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import fractal, nc1hwc0
from .transpose import TRANSPOSES

Converter = Callable[..., np.ndarray]

LAYOUTS: dict[tuple[str, str], Converter] = {
    ("NC1HWC0", "NCHW"): nc1hwc0.nc1hwc0_to_nchw,
    ("NC1HWC0", "NHWC"): nc1hwc0.nc1hwc0_to_nhwc,
    ("NC1HWC0", "HWCN"): nc1hwc0.nc1hwc0_to_hwcn,
    ("NDC1HWC0", "NCDHW"): nc1hwc0.ndc1hwc0_to_ncdhw,
    ("NDC1HWC0", "ND"): nc1hwc0.ndc1hwc0_to_nd,
    ("FRACTAL_Z", "NCHW"): fractal.fractal_z_to_nchw,
    ("FRACTAL_Z", "HWCN"): fractal.fractal_z_to_hwcn,
    ("FRACTAL_NZ", "ND"): fractal.fractal_nz_to_nd,
    ("FRACTAL_NZ", "NCHW"): fractal.fractal_nz_to_nd,
    ("FRACTAL_NZ", "NHWC"): fractal.fractal_nz_to_nd,
    **TRANSPOSES,
    # Producing direction (fixtures, npy -> dump).
    ("NCHW", "NC1HWC0"): nc1hwc0.nchw_to_nc1hwc0,
    ("NCDHW", "NDC1HWC0"): nc1hwc0.ncdhw_to_ndc1hwc0,
    ("NCHW", "FRACTAL_Z"): fractal.nchw_to_fractal_z,
    ("NHWC", "FRACTAL_Z"): fractal.nhwc_to_fractal_z,
    ("HWCN", "FRACTAL_Z"): fractal.hwcn_to_fractal_z,
    ("ND", "FRACTAL_NZ"): fractal.nd_to_fractal_nz,
}

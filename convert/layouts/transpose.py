"""Pure axis permutations between the plain layouts (NCHW, NHWC, HWCN and the 3-D NCDHW family).

Each converter views the data as ``shape_from`` (which must have the layout's rank) and returns
``array.transpose(axes)`` -- a view, no copy. ``shape_to`` and ``group`` are ignored.

| From -> To     | axes            |
|----------------|-----------------|
| NCHW -> NHWC   | (0, 2, 3, 1)    |
| NHWC -> NCHW   | (0, 3, 1, 2)    |
| HWCN -> NCHW   | (3, 2, 0, 1)    |
| HWCN -> NHWC   | (3, 0, 1, 2)    |
| NHWC -> HWCN   | (1, 2, 3, 0)    |
| NCHW -> HWCN   | (2, 3, 1, 0)    |
| NCDHW -> NDHWC | (0, 2, 3, 4, 1) |
| NDHWC -> NCDHW | (0, 4, 1, 2, 3) |
| DHWCN -> NCDHW | (4, 3, 0, 1, 2) |

The first five are the reference's built-ins; the others are vcompare additions (single-op mode
sends NDHWC / DHWCN goldens to NCDHW, for which the reference has no converter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .shapes import as_shape, shaped

PERMUTATIONS: dict[tuple[str, str], tuple[int, ...]] = {
    ("NCHW", "NHWC"): (0, 2, 3, 1),
    ("NHWC", "NCHW"): (0, 3, 1, 2),
    ("HWCN", "NCHW"): (3, 2, 0, 1),
    ("HWCN", "NHWC"): (3, 0, 1, 2),
    ("NHWC", "HWCN"): (1, 2, 3, 0),
    ("NCHW", "HWCN"): (2, 3, 1, 0),
    ("NCDHW", "NDHWC"): (0, 2, 3, 4, 1),
    ("NDHWC", "NCDHW"): (0, 4, 1, 2, 3),
    ("DHWCN", "NCDHW"): (4, 3, 0, 1, 2),
}


def permuter(src: str, dst: str, axes: tuple[int, ...]) -> Callable[..., np.ndarray]:
    """A converter ``src -> dst`` that transposes the data by ``axes``."""

    def convert(
        shape_from: Sequence[int], shape_to: Sequence[int] | None, array: np.ndarray, group: int = 1
    ) -> np.ndarray:
        return shaped(array, as_shape(shape_from), src, len(axes)).transpose(axes)

    convert.__name__ = f"{src.lower()}_to_{dst.lower()}"
    convert.__qualname__ = convert.__name__
    convert.__doc__ = f"{src} -> {dst}: axis order {axes} (a view; shape_to and group are ignored)."
    return convert


TRANSPOSES: dict[tuple[str, str], Callable[..., np.ndarray]] = {
    key: permuter(key[0], key[1], axes) for key, axes in PERMUTATIONS.items()
}

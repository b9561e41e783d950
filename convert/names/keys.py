"""The one ladder of operator-name keys: how a name written one way meets the same name written
another way. Each rung is tried only where the rung above found nothing (see the users):

1. the name exactly as written;
2. :func:`normalize_golden_name`: ``/`` and ``.`` as ``_`` -- the golden file naming of tfdbg and
   Caffe (``conv1/Conv2D`` is saved as ``conv1_Conv2D``), used to find an op of a golden folder;
3. :func:`name_key`: ``--`` read as ``/``, then ``/ . \\`` and spaces as ``_`` -- the MindSpore
   scope name of a ``.npy`` / ``.bin`` dump meets the ``_`` spelling of an Ascend-format dump;
4. :func:`without_kernel_id`: a :func:`name_key` without its trailing kernel id ``-op{N}``
   (backends number kernels differently), used only where the result is unique on both sides.

The mixed-precision and short-kernel-name rules of family pairing build on rung 3
(:mod:`compare.pairing.user_mapping`). ``tests/convert/test_names_keys.py`` holds the table of examples.
"""

from __future__ import annotations

import functools
import re

_KERNEL_ID_RE = re.compile(r"-op\d+$")


def normalize_golden_name(name: str) -> str:
    """Rung 2, the golden file-name key: ``/`` and ``.`` become ``_`` (tfdbg / Caffe naming)."""
    return name.replace("/", "_").replace(".", "_")


@functools.lru_cache(maxsize=1 << 17)
def name_key(name: str) -> str:
    """Rung 3, the scope key: ``--`` read as ``/``, then ``/ . \\`` and spaces turned into ``_``.
    Remembered (up to 131,072 names, ~170 bytes each: the pairing asks for the key of each name
    several times, and the two sides of a comparison share most names)."""
    key = name.replace("--", "/")
    for char in "/.\\ ":
        key = key.replace(char, "_")
    return key


def without_kernel_id(key: str) -> str:
    """Rung 4: a key without its trailing kernel id ``-op{N}`` (unchanged when it has none)."""
    return _KERNEL_ID_RE.sub("", key)


def ladder(name: str) -> tuple[str, str, str, str]:
    """Every rung of ``name``: exact, golden key, scope key, scope key without the kernel id."""
    key = name_key(name)
    return name, normalize_golden_name(name), key, without_kernel_id(key)

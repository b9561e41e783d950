"""Install step of vcompare: the kernel objects are built when the package is installed.

Everything about the package is in ``pyproject.toml``; this file only adds one step to
setuptools' ``build_py``: compile the two kernel passes for this machine
(``python -m compare.kernels.native.entry_points``, the step :mod:`compare.kernels.native`
would otherwise run on the first comparison) into ``compare/kernels/_aot/`` -- of the wheel being
built, or of the source tree for an editable install (``pip install -e .``). The first
comparison after installing then loads them instead of compiling for ~20 s.

The step never fails the install: without numba in the build environment, or when the compile
fails, it prints why and the first comparison builds the objects into the user's cache, as
before. ``VCOMPARE_BUILD_KERNELS=0`` skips it (every environment switch of the kernels is listed
in :mod:`compare.kernels.native`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithKernels(build_py):
    """``build_py``, then the kernel objects (see the module docstring)."""

    def run(self) -> None:
        super().run()
        if os.environ.get("VCOMPARE_BUILD_KERNELS", "1").strip().lower() in ("0", "no", "false", "off"):
            return
        editable = bool(getattr(self, "editable_mode", False))
        package = (ROOT if editable else Path(self.build_lib)) / "compare" / "kernels"
        sys.path.insert(0, str(ROOT))
        try:
            import llvmlite.binding as llvm

            from compare.kernels import native

            wide = native._wide(llvm)
            aot = package / "_aot"
            aot.mkdir(parents=True, exist_ok=True)
            for old in aot.glob("vcompare-kernels-*"):
                old.unlink()
            native.build(aot / native._index_name(native._key(llvm, wide)), llvm, wide)
            print(f"vcompare: kernel objects built into {aot}")
        except Exception as exc:  # noqa: BLE001 - never fail the install for this step
            detail = getattr(exc, "stderr", "") or exc
            print(f"vcompare: kernel objects not built at install time ({detail}); the first comparison "
                  "will build them", file=sys.stderr)
        finally:
            if str(ROOT) in sys.path:
                sys.path.remove(str(ROOT))


setup(cmdclass={"build_py": BuildPyWithKernels})

"""Install step of vcompare: the kernel objects, built at install time only when asked.

Everything about the package is in ``pyproject.toml``; this file adds one optional step and keeps
the wheel's tag honest:

- **The step** (``VCOMPARE_BUILD_KERNELS=1``; off by default): after setuptools' ``build_py``,
  compile the two kernel passes for this machine (``python -m compare.kernels.native.entry_points``,
  the step :mod:`compare.kernels.native` otherwise runs on the first comparison) into
  ``compare/kernels/_aot/`` -- of the wheel being built, or of the source tree for an editable
  install (``pip install -e .``). Off by default because pip shows nothing of a build's output
  (only "Building wheel ... still running" for the ~25 s it takes), while the first comparison
  says in one line that it is compiling the kernels, once, into the user's cache: the same time,
  spent where the user is told why (docs/install.md measures both). With the step on, numba and
  numpy join the build requirements (``setup_requires``, which setuptools' PEP 517 backend turns
  into build requirements), and the step never fails the install: when the compile fails it says
  why and the first comparison builds the objects, as without the step.
- **The tag**: a wheel that carries kernel objects carries this machine's code, so it is tagged
  for this platform (``py3-none-linux_x86_64``), not ``py3-none-any``; without objects (the
  default) it is the pure ``py3-none-any`` wheel it is. Objects left in the source tree's
  ``_aot`` by an editable install never enter a wheel: only the step's own build does.

Every environment switch of the kernels is listed in :mod:`compare.kernels.native`.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: The folder of the kernel objects, relative to a package root (the source tree or a build folder).
AOT = Path("compare") / "kernels" / "_aot"


def build_requested() -> bool:
    """True when ``VCOMPARE_BUILD_KERNELS`` asks for the install-time build (``1``, ``yes``,
    ``true``, ``on``)."""
    return os.environ.get("VCOMPARE_BUILD_KERNELS", "0").strip().lower() in ("1", "yes", "true", "on")


class BuildPyWithKernels(build_py):
    """``build_py``, then (when requested) the kernel objects; see the module docstring."""

    def run(self) -> None:
        super().run()
        aot = (ROOT if self.editable_mode else Path(self.build_lib)) / AOT
        if not self.editable_mode:
            shutil.rmtree(aot, ignore_errors=True)  # a wheel carries only this build's objects
        if not build_requested():
            return
        print("vcompare: compiling the comparison kernels for this machine (about 25 s)", file=sys.stderr)
        sys.path.insert(0, str(ROOT))
        try:
            import llvmlite.binding as llvm

            from compare.kernels import native

            wide = native._wide(llvm)
            aot.mkdir(parents=True, exist_ok=True)
            for old in aot.glob("vcompare-kernels-*"):
                old.unlink()
            native.build(aot / native._index_name(native._key(llvm, wide)), llvm, wide)
            print(f"vcompare: kernel objects built into {aot}", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - never fail the install for this step
            print(f"vcompare: kernel objects not built at install time ({exc}); the first comparison "
                  "will build them", file=sys.stderr)
        finally:
            sys.path.remove(str(ROOT))


class KernelDistribution(Distribution):
    """The distribution, platform-specific once the build holds kernel objects (set by
    :class:`HonestBdistWheel` after the build): then the wheel installs into ``platlib``."""

    carries_objects = False

    def has_ext_modules(self) -> bool:
        return self.carries_objects


class HonestBdistWheel(bdist_wheel):
    """``bdist_wheel`` tagged ``py3-none-<platform>`` when the wheel carries kernel objects."""

    distribution: KernelDistribution

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")  # run once; bdist_wheel's own call is then a no-op
        build_lib = Path(self.get_finalized_command("build_py").build_lib)
        self.distribution.carries_objects = any((build_lib / AOT).glob("*.o"))
        self.root_is_pure = not self.distribution.carries_objects
        super().run()

    def get_tag(self) -> tuple[str, str, str]:
        implementation, abi, platform = super().get_tag()
        if self.root_is_pure:
            return implementation, abi, platform
        # machine code, but no Python extension: any Python 3 imports it, on this platform only
        return self.python_tag, "none", platform


setup(
    distclass=KernelDistribution,
    cmdclass={"build_py": BuildPyWithKernels, "bdist_wheel": HonestBdistWheel},
    setup_requires=["numba>=0.58", "numpy>=1.24"] if build_requested() else [],
)

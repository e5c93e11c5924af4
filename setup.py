"""The build behind `pip install .` and `pip wheel .` (pyproject.toml; docs/install.md).

CMake builds the native half in release mode - the extension ``ferry._ferry`` and the ``ferry``
CLI - and they are placed into the package beside its Python modules (``ferry/_ferry*.so``,
``ferry/bin/ferry``); the ``ferry`` console script and ``python -m ferry`` start that CLI. The
version is what cmake/FerryVersion.cmake says, as for the C++ build.

Environment:
  FERRY_CMAKE_BUILD_DIR  a CMake build folder to build in (default: build/wheel). A folder already
                         configured (build/release, which `make build` makes) is only brought up to
                         date, so a wheel after `make build` costs no second compile.
  FERRY_BUILD_JOBS       parallel compile jobs (default: the CPUs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _version() -> str:
    out = subprocess.run(["cmake", f"-DSOURCE_DIR={ROOT}", "-DPRINT=ON", "-P",
                          str(ROOT / "cmake" / "FerryVersion.cmake")],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


class CMakeBuild(build_ext):
    """Builds the CMake targets _ferry and ferry, and copies them into the package."""

    def build_extension(self, ext: Extension) -> None:
        build = Path(os.environ.get("FERRY_CMAKE_BUILD_DIR") or ROOT / "build" / "wheel")
        if not build.is_absolute():
            build = ROOT / build
        jobs = os.environ.get("FERRY_BUILD_JOBS") or str(os.cpu_count() or 2)
        if not (build / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *generator,
                            "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython3_EXECUTABLE={sys.executable}",
                            "-DFERRY_BUILD_PYTHON=ON", "-DFERRY_BUILD_CLI=ON",
                            "-DFERRY_BUILD_TESTS=OFF", "-DFERRY_BUILD_BENCH=OFF",
                            "-DCMAKE_UNITY_BUILD=ON", "-DCMAKE_UNITY_BUILD_BATCH_SIZE=8"],
                           check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_ferry", "ferry",
                        "--parallel", jobs], check=True)
        built = build / "python" / "ferry"
        modules = sorted(built.glob("_ferry*.so"))
        if len(modules) != 1:
            raise RuntimeError(f"expected one _ferry*.so in {built}, found {modules}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[0], target)
        cli = target.parent / "bin" / "ferry"
        cli.parent.mkdir(exist_ok=True)
        shutil.copyfile(build / "src" / "cli" / "ferry", cli)
        cli.chmod(0o755)
        # No symbol tables or build paths in what ships (release builds carry no debug info).
        strip = shutil.which("strip")
        if strip:
            subprocess.run([strip, "--strip-unneeded", str(target)], check=True)
            subprocess.run([strip, "--strip-unneeded", str(cli)], check=True)


setup(
    version=_version(),
    package_dir={"": "python"},
    packages=["ferry"],
    package_data={"ferry": ["py.typed", "_ferry.pyi"]},
    ext_modules=[Extension("ferry._ferry", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)

# SPDX-License-Identifier: MIT
"""Build hook: with IDMINT_BUILD_DIR set to an idmint build directory, copy
its shared libraries (libidmint, libidmint_lease, libidmint_segment) into
the package (idmint/_lib/), so the installed package needs no installed
library and no IDMINT_LIBRARY. Without it the package is pure Python and
finds the libraries as idmint/_native.py says.

The accelerator idmint._speedups (src/idmint/_speedups.c) is an optional
extension: where there is no C compiler or no Python headers (Debian's
python3-dev) the build warns and the package installs without it, all
ctypes. It links nothing (idmint/__init__.py hands it the addresses of the C
functions), so it builds without libidmint's headers or library."""
import os
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

LIBS = ("libidmint.so.0", "libidmint_lease.so.0", "libidmint_segment.so.0")

SPEEDUPS = Extension("idmint._speedups", ["src/idmint/_speedups.c"],
                     extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
                     optional=True)


def build_dir():
    d = os.environ.get("IDMINT_BUILD_DIR")
    if not d:
        return None
    missing = [n for n in LIBS if not os.path.exists(os.path.join(d, n))]
    if missing:
        raise SystemExit("IDMINT_BUILD_DIR=%s: no %s there (build idmint first)"
                         % (d, ", ".join(missing)))
    return d


class BuildPyWithLibs(build_py):
    def run(self):
        super().run()
        d = build_dir()
        dest = os.path.join(self.build_lib, "idmint", "_lib")
        # A copy left by an earlier build with IDMINT_BUILD_DIR must not
        # end up in this one.
        shutil.rmtree(dest, ignore_errors=True)
        if d is None:
            return
        os.makedirs(dest, exist_ok=True)
        for name in LIBS:
            # The SONAME file itself (the build's is a symlink): what the
            # loader matches NEEDED entries against.
            shutil.copyfile(os.path.realpath(os.path.join(d, name)),
                            os.path.join(dest, name))


class MaybeBinaryDistribution(Distribution):
    # A wheel holding the libraries or the accelerator is for this platform
    # only.
    def has_ext_modules(self):
        return bool(self.ext_modules) or build_dir() is not None


setup(cmdclass={"build_py": BuildPyWithLibs}, distclass=MaybeBinaryDistribution,
      ext_modules=[SPEEDUPS])

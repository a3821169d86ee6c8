# SPDX-License-Identifier: MIT
"""Build hook: with IDMINT_BUILD_DIR set to an idmint build directory, copy
its shared libraries (libidmint, libidmint_lease, libidmint_segment) into
the package (idmint/_lib/), so the installed package needs no installed
library and no IDMINT_LIBRARY. Without it the package is pure Python and
finds the libraries as idmint/_native.py says."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

LIBS = ("libidmint.so.0", "libidmint_lease.so.0", "libidmint_segment.so.0")


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
    # A wheel holding the libraries is for this platform only.
    def has_ext_modules(self):
        return build_dir() is not None


setup(cmdclass={"build_py": BuildPyWithLibs}, distclass=MaybeBinaryDistribution)

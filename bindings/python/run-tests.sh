#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Test the Python binding against an idmint build:
#
#     bash bindings/python/run-tests.sh BUILD_DIR
#
# Makes a venv in a temporary directory (Debian's python3, its setuptools
# through --system-site-packages: nothing is downloaded), installs the
# package offline with BUILD_DIR's shared libraries copied into it
# (IDMINT_BUILD_DIR), and runs the unittest suite in tests/ from outside the
# source tree, so that the installed package is the one tested. The package
# is built from a copy, so the source tree gets no build/ or egg-info.
# The suite runs twice: as installed, on the compiled accelerator
# (idmint._speedups), which must have been built wherever Python's headers
# are there (Debian's python3-dev); then with IDMINT_PURE=1, on ctypes.
# Exit status: 0 if every test passed, 1 otherwise (also when Python's venv
# or setuptools is missing: scripts/deps.sh installs them).
set -eu

if [ $# -ne 1 ]; then
    echo "usage: bash bindings/python/run-tests.sh BUILD_DIR" >&2
    exit 2
fi
build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${IDMINT_PYTHON:-/usr/bin/python3}

if ! "$python" -c 'import venv, setuptools, wheel' 2>/dev/null; then
    echo "run-tests.sh: $python has no venv or setuptools (scripts/deps.sh installs python3-venv, python3-setuptools and python3-wheel)" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$here" "$work/src"
rm -rf "$work/src/build" "$work/src/src/idmint.egg-info"

"$python" -m venv --system-site-packages "$work/venv"
if ! IDMINT_BUILD_DIR=$build_dir "$work/venv/bin/pip" install --quiet --no-index \
        --no-build-isolation "$work/src" >"$work/pip.log" 2>&1; then
    cat "$work/pip.log" >&2
    echo "run-tests.sh: FAILED: pip install of the package" >&2
    exit 1
fi

cd "$work"
export PYTHONDONTWRITEBYTECODE=1
unset IDMINT_LIBRARY IDMINT_PURE  # the copy inside the package is what is loaded
"$work/venv/bin/python" -c \
    'import idmint, idmint._native as n; print("idmint", idmint.__version__, "from", idmint.__file__, "on", n.core._name, "path:", idmint._native_path)'
path=$("$work/venv/bin/python" -c 'import idmint; print(idmint._native_path)')
if "$work/venv/bin/python" -c \
        'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    if [ "$path" != accelerator ]; then
        echo "run-tests.sh: FAILED: Python's headers are installed, yet the accelerator idmint._speedups was not built or is not in use (path: $path; pip install -v shows the compiler's output)" >&2
        exit 1
    fi
else
    echo "run-tests.sh: no Python headers (python3-dev): the package is ctypes only"
fi

export IDMINT_SOURCE_DIR
IDMINT_SOURCE_DIR="$(dirname "$(dirname "$here")")"
status=0
for pure in 0 1; do
    echo "== unittest, IDMINT_PURE=$pure"
    if ! IDMINT_PURE=$pure "$work/venv/bin/python" -m unittest discover -s "$here/tests" \
            -t "$here/tests" -v; then
        echo "run-tests.sh: FAILED: unittest with IDMINT_PURE=$pure" >&2
        status=1
    fi
done
exit $status

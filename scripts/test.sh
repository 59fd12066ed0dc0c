#!/usr/bin/env bash
# The test command: installs what is missing, checks formatting and lint,
# builds, and runs every test (lit + FileCheck, GoogleTest, the C API's C
# program, the Python package's pytest suite on the CPU). Exits non-zero if
# anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILE_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/install-python-deps.sh"
"$root/scripts/lint.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure
# The package over the library just built (the tests marked gpu skip
# without a GPU; `-m gpu` selects them, `-m "not gpu"` the others).
TILE_LIBRARY="$build/lib/libtile.so" PYTHONPATH="$root/python" \
  python3 -m pytest -q "$root/python/tests"

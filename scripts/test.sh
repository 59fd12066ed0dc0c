#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (lit + FileCheck, GoogleTest). Exits non-zero if anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILE_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure

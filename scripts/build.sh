#!/usr/bin/env bash
# Configures (once) and builds Tile into ${TILE_BUILD_DIR:-build}.
# Extra arguments are passed to CMake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILE_BUILD_DIR:-$root/build}

if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$build" -j "$(nproc)"

#!/usr/bin/env bash
# Installs the build in BUILD_DIR into a fresh prefix and builds
# examples/embed there as a separate project with find_package(Tile), as a
# C++ user would; runs the installed tools and the example. ctest runs this
# (test "install-consumer"); exits non-zero on any failure.
#   scripts/check-install.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${TILE_BUILD_DIR:-$root/build}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for path in include/tile/Ops/Ops.h include/tile-c/Tile.h \
            include/tile/Dialect/Tile/IR/TileOps.h.inc \
            lib/libTileRuntime.a lib/libTileOps.a lib/libtile.so \
            lib/cmake/Tile/TileConfig.cmake bin/tile-run bin/tile-opt; do
  [ -e "$prefix/$path" ] || { echo "check-install: $path not installed"; exit 1; }
done
# The tools run from the prefix (their LLVM found through their run path).
"$prefix/bin/tile-opt" --version
"$prefix/bin/tile-run" "$root/examples/rms_norm.mlir" --args=3x8,8,1e-6,0 > /dev/null

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$root/examples/embed" -B "$work/embed" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/embed" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# Without a GPU the example compiles the kernels, says why it cannot run
# them and exits 0; with one it runs and checks them.
TILE_CACHE_DIR=$work/cache "$work/embed/tile-embed-example"
echo "check-install: headers, libraries, tools and TileConfig.cmake installed;" \
     "examples/embed built against them with find_package(Tile)"

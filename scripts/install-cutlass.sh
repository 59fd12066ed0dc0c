#!/usr/bin/env bash
# Installs CUTLASS's headers (a pinned release) into build-deps/, where
# CMake looks for them (TILE_CUTLASS_DIR): the grouped GEMM of the
# mixture-of-experts MLP (lib/Runtime/GroupedGemm/) is CUTLASS's SM90
# grouped GEMM. The headers come from NVIDIA's `nvidia-cutlass` wheel on
# PyPI (the registry CI reaches), checked against its SHA-256; only
# include/ is kept, nothing is installed into Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=4.2.0.0
sha256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
dest=${TILE_CUTLASS_DIR:-$root/build-deps/cutlass-$version}

if [ -f "$dest/include/cutlass/cutlass.h" ]; then
  echo "install-cutlass: CUTLASS $version present in $dest"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: \
  -d "$work" "nvidia-cutlass==$version"
wheel=$(ls "$work"/nvidia_cutlass-"$version"-*.whl)
echo "$sha256  $wheel" | sha256sum --check --quiet
python3 - "$wheel" "$work/x" <<'PY'
import sys, zipfile
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith(prefix)])
PY
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
mv "$work/x/cutlass_library/source/include" "$dest.tmp/include"
mv "$dest.tmp" "$dest"
echo "install-cutlass: CUTLASS $version headers in $dest"

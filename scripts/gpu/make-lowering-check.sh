#!/usr/bin/env bash
# Builds, here, the PTX that scripts/gpu/lowering_check.py runs on a GPU
# machine: each example's forward and derived backward (recompute policy),
# and RMSNorm with save-row-stats and main-grad, for sm_90a.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TILE_BUILD_DIR:-$root/build}/bin
out=${TILE_BUILD_DIR:-$root/build}/gpucheck
mkdir -p "$out"
lower() { # name, file, differentiate options
  "$bin/tile-opt" "$2" -tile-differentiate="$3" -canonicalize -cse \
    -convert-tile-to-gpu -o "$out/$1.gpu.mlir"
  "$bin/tile-translate" --tile-to-ptx --tile-chip=sm_90a "$out/$1.gpu.mlir" \
    -o "$out/$1.ptx"
}
lower swiglu "$root/examples/swiglu.mlir" "policy=recompute"
lower silu_and_mul "$root/examples/silu_and_mul.mlir" "policy=recompute"
lower rms_norm "$root/examples/rms_norm.mlir" "policy=recompute"
lower rms_norm_mg "$root/examples/rms_norm.mlir" "policy=save-row-stats main-grad"
echo "PTX in $out; on the GPU machine: python3 scripts/gpu/lowering_check.py $out"

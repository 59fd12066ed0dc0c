#!/usr/bin/env bash
# The main job: installs what is missing, builds, then runs every kernel in
# examples/ through the compiler (verify, canonicalize), derives its backward
# kernel (tile-differentiate), runs both in the float64 reference evaluator,
# checks the derived gradients against finite differences, and compiles
# forward and backward to GPU kernels and PTX (assembled with ptxas when the
# CUDA toolkit is installed). Where a GPU is present, the operators built on
# these kernels then run on it with a numeric check against float64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILE_BUILD_DIR:-$root/build}
bin=$build/bin

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null

# Shapes each example runs at: rows x width, with scalar parameters.
declare -A shapes=(
  [swiglu]="4x11008,4x11008 13x1000,13x1000"
  [silu_and_mul]="4x22016 13x2000"
  [rms_norm]="4x4096,4096,1e-6,0 13x1000,1000,1e-6,1"
)
# The same with M (rows) and N (width) left open, for the gradient check.
declare -A gradient_args=(
  [swiglu]="MxN,MxN"
  [silu_and_mul]="MxN"
  [rms_norm]="MxN,N,1e-6,0"
)

for example in swiglu silu_and_mul rms_norm; do
  file=$root/examples/$example.mlir
  echo "=== $example ($file)"
  echo "--- tile-opt -canonicalize -cse"
  "$bin/tile-opt" "$file" -canonicalize -cse
  echo "--- kernel signature"
  "$bin/tile-translate" --tile-kernel-signature "$file" | tr -d ' \n'
  echo
  for args in ${shapes[$example]}; do
    echo "--- reference evaluator, args $args"
    "$bin/tile-run" "$file" --args="$args" --seed=1
  done
  for policy in recompute save-row-stats; do
    echo "--- derived backward (tile-differentiate=policy=$policy -canonicalize -cse)"
    "$bin/tile-opt" "$file" -tile-approximate-shifted-exponentials \
      -tile-differentiate="policy=$policy" -canonicalize \
      -cse | sed -n "/func.func @${example}_fwd/,/^  }/p;/func.func @${example}_bwd/,/^  }/p"
    echo "--- gradient check, policy $policy"
    "$bin/tile-run" "$file" --gradient-check --policy="$policy" \
      --args="${gradient_args[$example]}" --rows=1,7,13 --widths=1,13,1000,3000 |
      tail -n 1
  done
  echo "--- GPU kernels and PTX (forward and backward, sm_90a)"
  ptx=$build/examples/$example.ptx
  mkdir -p "$build/examples"
  # As the JIT and tile-lower-to-ptx run them.
  "$bin/tile-opt" "$file" -tile-approximate-shifted-exponentials \
    -tile-differentiate -canonicalize -cse -tile-schedule -tile-row-reciprocals \
    -convert-tile-to-gpu -o "$build/examples/$example.gpu.mlir"
  "$bin/tile-translate" --tile-to-ptx --tile-chip=sm_90a \
    "$build/examples/$example.gpu.mlir" -o "$ptx"
  grep -o '^.visible .entry [a-z_]*' "$ptx" | sed 's/.visible .entry /  kernel /'
  echo "  PTX: $ptx ($(wc -l <"$ptx") lines)"
  ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
  if [ -x "$ptxas" ]; then
    "$ptxas" -arch=sm_90a -v "$ptx" -o "${ptx%.ptx}.cubin" 2>&1 |
      grep -E 'Compiling|Used' | sed 's/^ptxas info *: /  /'
  fi
done
echo "=== embedding: a kernel in a string, compiled and differentiated by the JIT"
"$bin/tile-embed-example"
echo "=== on the GPU"
if gpu=$("$bin/tile-rt-info" 2>&1); then
  echo "$gpu"
  "$bin/tile-gpu-tests" --small
  # Every example and test/Zoo kernel, forward and backward, through
  # tile-run --device.
  "$(dirname "$0")/device-zoo.sh" "$bin"
else
  echo "no GPU here, so the kernels were compiled but not run: $gpu"
fi
echo "=== examples done"

#!/usr/bin/env bash
# Every test/Zoo kernel and example on the GPU: tile-run --device --gradient
# (forward and derived backward against the float64 evaluator) with both
# recompute policies, and compiled for any width or specialized for each
# case's widths, at rows 1, 7, 300 by widths 13, 1000, 4096; with
# --bench also each kernel's GB/s at 4096x4096 next to the stream kernel
# (small enough for the float64 check that precedes the timing).
# Each Zoo kernel's argument specs come from its own --gradient-check RUN
# line (geglu's, rope's and squared_relu's from test/Examples/). Ends with "N runs, N failed"; exit status 0, 1 on a failure, 77
# without a GPU.
#   scripts/device-zoo.sh [--bench] [BIN_DIR]     (default build/bin)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=false
if [ "${1:-}" = --bench ]; then bench=true; shift; fi
bin=${1:-$root/build/bin}

kernels=()   # "file|specs|widths"
for file in "$root"/test/Zoo/*.mlir; do
  specs=$(grep -m1 -o -- '--gradient-check.*--args=[^ ]*' "$file" | sed 's/.*--args=//')
  kernels+=("$file|$specs|13,1000,4096")
done
# The operators' geglu, rope and squared_relu kernels (once Zoo kernels)
# keep their RUN lines in test/Examples/<name>.test.
for name in geglu rope squared_relu; do
  specs=$(grep -m1 -o -- '--gradient-check.*--args=[^ ]*' \
    "$root/test/Examples/$name.test" | sed 's/.*--args=//')
  kernels+=("$root/examples/$name.mlir|$specs|13,1000,4096")
done
kernels+=("$root/examples/swiglu.mlir|MxN,MxN|13,1000,4096"
          "$root/examples/silu_and_mul.mlir|MxN|14,1000,4096"
          "$root/examples/rms_norm.mlir|MxN,N,1e-6,0|13,1000,4096")

runs=0 failed=0
for entry in "${kernels[@]}"; do
  IFS='|' read -r file specs widths <<< "$entry"
  name=${file#"$root"/}
  for variant in recompute save-row-stats "recompute --specialize-widths"; do
    runs=$((runs + 1))
    # shellcheck disable=SC2086  # the variant is a policy and maybe a flag
    output=$("$bin/tile-run" "$file" --device --gradient --policy=$variant \
             --args="$specs" --rows=1,7,300 --widths="$widths" --seed=5 2>&1)
    status=$?
    if [ $status = 77 ]; then echo "$output"; exit 77; fi
    summary=$(echo "$output" | tail -1)
    worst=$(echo "$output" | grep -o 'worst error [0-9.e+-]*' | awk '{print $3}' | sort -g | tail -1)
    # Passing needs the check's own verdict, not only its exit status.
    if [ $status = 0 ] && [[ $summary == *"cases on the device, 0 failed" ]]; then
      echo "ok    $name ($variant): $summary; worst error $worst of the allowed"
    else
      failed=$((failed + 1))
      echo "FAIL  $name ($variant):"; echo "$output"
    fi
  done
  if $bench; then
    bench_specs=$(echo "$specs" | sed 's/M/4096/g; s/N/4096/g')
    "$bin/tile-run" "$file" --device --gradient --bench --args="$bench_specs" \
      --seed=5 2>&1 | grep -E 'GB/s|FAIL|error' | sed "s|^ *|  $name |"
  fi
done
echo "$runs runs, $failed failed"
[ $failed = 0 ]

#!/usr/bin/env bash
# The GPU test suite in two steps.
#
#   ./scripts/gpu-suite.sh build   here (no GPU needed): builds the static
#                                  bundle in build-static/gpu-bundle
#   ./scripts/gpu-suite.sh run     on the GPU machine, from the repository
#                                  root with the bundle carried along: runs
#                                  everything, ends with "N passed, N failed"
#   ./scripts/gpu-suite.sh bench   on the GPU machine: tile-bench, the table
#                                  on stdout and every figure in
#                                  $TILE_BENCH_JSON (default bench.json)
#   ./scripts/gpu-suite.sh bench-mlp  the tiled MLP's step vs the untiled
#                                  one (tile-bench mlp), JSON likewise
#                                  (default bench-mlp.json)
#
# The JSON is the form every benchmark writes; the Python benchmarks that
# read it (benchmarks/vs_pytorch.py, benchmarks/operators.py) and how to
# run them: benchmarks/README.md.
#
# The bundle needs nothing on the GPU machine but the driver: the programs
# are linked statically against LLVM/MLIR (the JIT compiles in-process) and
# open libcuda at run time. compute-sanitizer is used where installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
static=${TILE_STATIC_BUILD_DIR:-$root/build-static}
bundle=$static/gpu-bundle

case "${1:-}" in
build)
  "$root/scripts/install-deps.sh"
  cmake -G Ninja -S "$root" -B "$static" -DCMAKE_BUILD_TYPE=Release \
    -DTILE_STATIC_TOOLS=ON >/dev/null
  ninja -C "$static" tile-gpu-tests tile-rt-info tile-rt-smoke \
    tile-embed-example tile-bench tile-translate tile-run
  rm -rf "$bundle" && mkdir -p "$bundle"
  # Stripped and xz-compressed: the bundle must stay well under the 64 MiB a
  # device call carries.
  for tool in tile-gpu-tests tile-rt-info tile-rt-smoke tile-embed-example \
    tile-bench tile-run; do
    strip -o "$bundle/$tool" "$static/bin/$tool"
    xz -T0 -9 "$bundle/$tool"
  done
  "$static/bin/tile-translate" --tile-to-ptx "$root/examples/swiglu.mlir" \
    -o "$bundle/swiglu.ptx"
  du -sh "$bundle"
  echo "bundle ready: carry build-static/gpu-bundle and run: ./scripts/gpu-suite.sh run"
  ;;
run)
  [ -d "$bundle" ] || { echo "error: no bundle at $bundle; run '$0 build' first" >&2; exit 1; }
  export TILE_CACHE_DIR=${TILE_CACHE_DIR:-$(mktemp -d)}
  mkdir -p "$TILE_CACHE_DIR"
  work=$(mktemp -d)
  for packed in "$bundle"/*.xz; do
    xz -dc "$packed" >"$work/$(basename "$packed" .xz)"
    chmod +x "$work/$(basename "$packed" .xz)"
  done
  cp "$bundle/swiglu.ptx" "$work/"
  bundle=$work
  passed=0 failed=0
  step() { # name, command...: counts one pass or fail
    local name=$1; shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
  }
  "$bundle/tile-rt-info"
  for shape in "4096 1000" "13 333" "1 1"; do
    step "tile-rt-smoke $shape" "$bundle/tile-rt-smoke" "$bundle/swiglu.ptx" $shape
  done
  step "tile-embed-example" "$bundle/tile-embed-example"
  suite() { # args...: runs tile-gpu-tests and adds the counts it reports
    local log; log=$(mktemp -p "$TILE_CACHE_DIR")
    set +e
    "$bundle/tile-gpu-tests" "$@" | tee "$log"
    set -e
    local counts; counts=$(tail -n 1 "$log")
    if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
      passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
    else
      failed=$((failed + 1)); echo "FAIL tile-gpu-tests $* did not finish"
    fi
  }
  suite
  # Several rows per CTA (groups of warps sharing a CTA): the quick shapes.
  suite --quick --rows-per-cta=4
  # Few persistent CTAs, each walking many rows (row kernels persistent too).
  suite --quick --ctas=2
  # SwiGLU one CTA per row (its body before the element grid).
  suite --quick --row-grid
  # A kernel with non-splat constants (once a silent miscompile), and
  # generated kernels: GPU against the evaluator, forward and backward
  # (fuzz/differential.py --device-only: the checks that need no GPU run in
  # CI; failures are kept in $TILE_CACHE_DIR/differential).
  for function in f g; do
    step "non-splat constant @$function on the GPU" "$bundle/tile-run" \
      "$root/test/Robustness/nonsplat-constant.mlir" --function=$function \
      --device --gradient --args="$([ $function = f ] && echo 2x3 || echo 3x5)"
  done
  # Integer data (a loss's labels): the cross_entropy operator's kernel and
  # its derived backward on the GPU against the evaluator, resident (1000
  # columns) and looped (32000), under both policies.
  for policy in recompute save-row-stats; do
    for shape in 13x1000,13 64x32000,64; do
      step "cross_entropy $shape on the GPU ($policy)" "$bundle/tile-run" \
        "$root/examples/cross_entropy.mlir" --device --gradient \
        --policy=$policy --args=$shape,-100,0.1,0.001 --low=-2 --high=13
    done
  done
  step "generated kernels on the GPU" python3 "$root/fuzz/differential.py" \
    --bin "$bundle" --device-only --count "${TILE_DIFFERENTIAL_COUNT:-12}" --jobs 8 \
    --seed 11 --work "$TILE_CACHE_DIR/differential"
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$sanitizer" ]; then
    for tool in memcheck racecheck; do
      step "compute-sanitizer $tool" "$sanitizer" --tool "$tool" --error-exitcode 1 \
        "$bundle/tile-gpu-tests" --small
      step "compute-sanitizer $tool, 4 rows per CTA" "$sanitizer" --tool "$tool" \
        --error-exitcode 1 "$bundle/tile-gpu-tests" --small --rows-per-cta=4
      step "compute-sanitizer $tool, 2 persistent CTAs" "$sanitizer" --tool "$tool" \
        --error-exitcode 1 "$bundle/tile-gpu-tests" --small --ctas=2
    done
  else
    echo "compute-sanitizer not found: memcheck and racecheck skipped"
  fi
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
bench)
  [ -d "$bundle" ] || { echo "error: no bundle at $bundle; run '$0 build' first" >&2; exit 1; }
  work=$(mktemp -d)
  xz -dc "$bundle/tile-bench.xz" >"$work/tile-bench" && chmod +x "$work/tile-bench"
  TILE_CACHE_DIR=${TILE_CACHE_DIR:-$work/cache} "$work/tile-bench" \
    --json="${TILE_BENCH_JSON:-bench.json}" "${@:2}"
  ;;
bench-mlp)
  [ -d "$bundle" ] || { echo "error: no bundle at $bundle; run '$0 build' first" >&2; exit 1; }
  work=$(mktemp -d)
  xz -dc "$bundle/tile-bench.xz" >"$work/tile-bench" && chmod +x "$work/tile-bench"
  TILE_CACHE_DIR=${TILE_CACHE_DIR:-$work/cache} "$work/tile-bench" mlp \
    --json="${TILE_BENCH_JSON:-bench-mlp.json}" "${@:2}"
  ;;
*)
  sed -n '2,22p' "$0"
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Tile's fuzzers: libFuzzer harnesses over each compiler stage (fuzz/), and
# the structure-aware kernel generator with its differential checks.
#
#   ./scripts/fuzz.sh build          builds the harnesses with clang-22,
#                                    ASan and UBSan into build-fuzz/
#   ./scripts/fuzz.sh run SECONDS [HARNESS...]
#                                    runs each harness (default: all five)
#                                    for SECONDS, two at a time
#                                    (TILE_FUZZ_JOBS=1: one), on a
#                                    corpus seeded from examples/, test/Zoo,
#                                    test/Malformed, test/Robustness, the
#                                    contraction kernels and generated
#                                    kernels, as written, in
#                                    generic form and differentiated (the
#                                    tile-run harness: command lines over
#                                    them, fuzz/cli_seeds.py)
#   ./scripts/fuzz.sh ci             build, then every harness 45 s and 40
#                                    generated kernels through the
#                                    differential checks (CI runs this)
#   ./scripts/fuzz.sh campaign       build, then every harness 12 minutes
#                                    (one CPU-hour) and 1000 generated
#                                    kernels
#
# Findings (crashes, aborts, timeouts, out-of-memory) are written to
# build-fuzz/findings/HARNESS/ and make the script exit 1; reproduce one
# with build-fuzz/bin/tile-fuzz-HARNESS FILE. Every finding becomes a lit
# test under test/Robustness (docs/Robustness.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TILE_FUZZ_BUILD_DIR:-$root/build-fuzz}
harnesses=(parse-verify differentiate lower evaluate tile-run)

build_fuzzers() {
  "$root/scripts/install-deps.sh" clang-22 libclang-rt-22-dev
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DTILE_ENABLE_FUZZERS=ON -DTILE_GROUPED_GEMM=OFF >/dev/null
  fi
  ninja -C "$build" "${harnesses[@]/#/tile-fuzz-}" tile-opt tile-run \
    tile-translate
}

make_seeds() {
  # Once per build directory (rm -r build-fuzz/seeds to refresh): the
  # sources as written, 50 generated kernels, and each one that parses in
  # generic form and differentiated (generic form can say every malformed
  # structure the mutator makes; derived functions carry the role
  # attributes it moves around).
  local seeds=$build/seeds file
  [ -d "$seeds" ] && return 0
  [ -x "$build/bin/tile-opt" ] ||
    { echo "fuzz: no $build/bin/tile-opt: run '$0 build' first" >&2; return 1; }
  rm -rf "$seeds.new"
  mkdir -p "$seeds.new"
  cp "$root"/examples/*.mlir "$root"/test/Zoo/*.mlir \
    "$root"/test/Malformed/*.mlir "$root"/test/Robustness/*.mlir \
    "$root"/test/tile-run/gradient-contractions.mlir "$seeds.new/"
  python3 "$root/fuzz/gen_kernels.py" --count 50 --seed 1 --out "$seeds.new"
  # The instrumented tile-opt needs the harnesses' ASan options
  # (fuzz/FuzzTarget.cpp says why).
  local opt=(env ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0
    "$build/bin/tile-opt" --mlir-print-op-generic)
  for file in "$seeds.new"/*.mlir; do
    "${opt[@]}" "$file" >"${file%.mlir}.generic.mlir" 2>/dev/null ||
      rm -f "${file%.mlir}.generic.mlir"
    "${opt[@]}" -tile-approximate-shifted-exponentials -tile-differentiate "$file" \
      >"${file%.mlir}.derived.mlir" 2>/dev/null ||
      rm -f "${file%.mlir}.derived.mlir"
  done
  mv "$seeds.new" "$seeds"
}

seed_corpus() { # harness
  local corpus=$build/corpus/$1 seeds=$build/seeds
  mkdir -p "$corpus"
  if [ "$1" = tile-run ]; then
    # Command lines: --function on every symbol, --args fitting each
    # signature, every mode (fuzz/cli_seeds.py).
    python3 "$root/fuzz/cli_seeds.py" "$corpus" "$seeds"/*.mlir >/dev/null
  else
    cp "$seeds"/*.mlir "$corpus/"
  fi
}

run_harness() { # harness seconds
  local name=$1 seconds=$2
  local findings=$build/findings/$name log=$build/logs/$name.log
  mkdir -p "$findings" "$build/logs"
  seed_corpus "$name"
  # -timeout: a hang is any input that takes 20 s; -rss_limit_mb: a runaway
  # allocation. Both are findings, as crashes are. -max_len: the generic
  # form of a seed is about twice its custom form. tile-run's results on
  # stdout stay out of the log (-close_fd_mask=1; the harness reads its
  # stderr itself).
  local quiet=0
  [ "$name" = tile-run ] && quiet=1
  "$build/bin/tile-fuzz-$name" "$build/corpus/$name" \
    -dict="$root/fuzz/tile.dict" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=6144 -max_len=16384 -print_final_stats=1 \
    -close_fd_mask=$quiet \
    -artifact_prefix="$findings/" >"$log" 2>&1 && status=0 || status=$?
  local runs; runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
    grep -o '[0-9]*$' || echo "?")
  if [ "$status" -eq 0 ]; then
    echo "fuzz $name: ${seconds} s, $runs inputs, no finding"
  else
    echo "fuzz $name: FINDING after $runs inputs (exit $status); log $log:"
    tail -n 40 "$log"
    return 1
  fi
}

run_all() { # seconds harness...
  local seconds=$1; shift
  make_seeds
  local chosen=("$@")
  [ ${#chosen[@]} -gt 0 ] || chosen=("${harnesses[@]}")
  local failed=0 pids=() i j jobs=${TILE_FUZZ_JOBS:-2}
  # Two at a time by default: the build machine has two cores.
  for ((i = 0; i < ${#chosen[@]}; i += jobs)); do
    pids=()
    for ((j = i; j < i + jobs && j < ${#chosen[@]}; ++j)); do
      run_harness "${chosen[j]}" "$seconds" & pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  done
  return $failed
}

differential() { # count seed
  python3 "$root/fuzz/differential.py" --bin "$build/bin" --count "$1" \
    --seed "$2" --work "$build/differential"
}

case "${1:-}" in
build) build_fuzzers ;;
run)
  [ $# -ge 2 ] || { echo "usage: $0 run SECONDS [HARNESS...]" >&2; exit 2; }
  seconds=$2; shift 2
  run_all "$seconds" "$@"
  ;;
ci)
  build_fuzzers
  status=0
  run_all 45 || status=1
  # A new seed each day explores new kernels; the seed is printed to replay.
  seed=$(date +%j); echo "differential: seed $seed"
  differential 40 "$seed" || status=1
  exit $status
  ;;
campaign)
  build_fuzzers
  status=0
  run_all 720 || status=1
  differential 1000 1 || status=1
  exit $status
  ;;
*)
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Snapshots what the lowering makes of every example, Zoo and Conversion
# kernel, so that a change to the lowering can be shown to change nothing
# (or exactly what it means to): for each kernel x derivation (forward,
# recompute, save-row-stats, main-grad, return-primal) x width
# specialization (none, 1024, 4096, 16384) x schedule (default, scalar,
# four rows per CTA, persistent, 1024 threads, row grid, 512 threads on 132
# CTAs), the GPU IR, the manifest, the sm_90a PTX and the diagnostics.
#
# usage: scripts/lowering-snapshot.sh BIN_DIR OUT_DIR [PATTERN]  (about 10
# minutes on two cores; PATTERN keeps the kernel files whose path matches),
# then `diff -r OUT_A OUT_B` of a run before and after.
set -euo pipefail
bin=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
cd "$(dirname "$0")/.."
files=$(ls examples/*.mlir test/Zoo/*.mlir test/Conversion/*.mlir |
  grep -v invalid | grep -e "${3:-.}")
for f in $files; do
  for d in fwd rec rowstats maingrad primal; do
    for w in none 1024 4096 16384; do
      for s in def vw1 rpc4 ctas264 t1024 rowgrid t512c132; do
        echo "$f $d $w $s"
      done
    done
  done
done > "$out/combos.txt"

one() {
  local f=$1 d=$2 w=$3 s=$4 bin=$5 out=$6
  local t dopt sopt
  t=$out/$(echo "$f.$d.$w.$s" | tr '/' '_')
  case $d in
    fwd) dopt="" ;;
    rec) dopt="-tile-differentiate" ;;
    rowstats) dopt="-tile-differentiate=policy=save-row-stats" ;;
    maingrad) dopt="-tile-differentiate=policy=save-row-stats main-grad" ;;
    primal) dopt="-tile-differentiate=return-primal" ;;
  esac
  case $s in
    def) sopt="-tile-schedule" ;;
    vw1) sopt="-tile-schedule=vector-width=1" ;;
    rpc4) sopt="-tile-schedule=rows-per-cta=4" ;;
    ctas264) sopt="-tile-schedule=ctas=264" ;;
    t1024) sopt="-tile-schedule=threads=1024" ;;
    rowgrid) sopt="-tile-schedule=row-grid=true" ;;
    t512c132) sopt="-tile-schedule=threads=512 ctas=132" ;;
  esac
  if [ -n "$dopt" ]; then
    "$bin/tile-opt" "$f" -tile-approximate-shifted-exponentials "$dopt" -canonicalize -cse -o "$t.src" 2>/dev/null || { echo fail > "$t.err"; return; }
  else
    cp "$f" "$t.src"
  fi
  if [ "$w" != none ]; then
    "$bin/tile-opt" "$t.src" "--tile-specialize-widths=widths=$(seq -s, -f "%g:$w" 0 15)" -o "$t.spec" 2>/dev/null &&
      mv "$t.spec" "$t.src"
  fi
  if "$bin/tile-opt" "$t.src" "$sopt" -o "$t.sched" 2> "$t.err"; then
    # The rewrites and the conversion as tile-lower-to-ptx runs them.
    "$bin/tile-opt" "$t.sched" -tile-approximate-shifted-exponentials -tile-row-reciprocals -convert-tile-to-gpu -o "$t.gpu" 2>> "$t.err" || true
    "$bin/tile-translate" --tile-manifest "$t.sched" -o "$t.json" 2>> "$t.err" || true
    "$bin/tile-translate" --tile-to-ptx --tile-chip=sm_90a "$t.gpu" -o "$t.ptx" 2>> "$t.err" || true
  fi
  rm -f "$t.src" "$t.sched"
  # Paths differ between runs; the diagnostics should not.
  sed -i "s#$out/##g" "$t.err"
}
export -f one
xargs -P "$(nproc)" -n4 bash -c 'one "$@" '"$bin"' '"$out"'' _ < "$out/combos.txt"
echo "$(ls "$out"/*.ptx 2>/dev/null | wc -l) PTX files in $out"

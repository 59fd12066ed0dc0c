// tile-translate names what is wrong once, and checks the chip before any
// lowering (NVVM would say "Minimum NVVM target SM version is sm_20").
//
// RUN: not tile-translate %s 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: choose a translation: --tile-kernel-signature, --tile-manifest or --tile-to-ptx
// MODE-NOT: error
//
// RUN: not tile-translate --tile-to-ptx --tile-chip=h100 %s 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: --tile-chip=h100: unknown chip; Tile compiles for sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100
// The pipeline checks it too, for tile-opt and the JIT.
// RUN: not tile-opt %s --tile-lower-to-ptx="chip=h100" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: unknown chip 'h100': Tile compiles for sm_80, {{.*}} (an A100 is sm_80, an H100 or H200 sm_90a; tile-rt-info prints the chip of this machine's GPU)
func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {tile.kernel} {
  return %x : tensor<?x?xf32>
}

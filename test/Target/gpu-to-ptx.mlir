// The shared GPU pipeline (include/tile/Pipelines): a gpu.module becomes
// PTX for the chosen chip, with libdevice linked so that no __nv_ function
// stays unresolved, and ptxas accepts the result.
//
// RUN: tile-translate --tile-to-ptx %s | FileCheck %s --check-prefix=SM80
// RUN: tile-translate --tile-to-ptx --tile-chip=sm_90a %s | FileCheck %s --check-prefix=SM90
// RUN: tile-opt --tile-gpu-to-ptx="chip=sm_90a" %s | FileCheck %s --check-prefix=OPT
// RUN: not tile-translate --tile-to-ptx --tile-libdevice=%t.missing.bc %s 2>&1 | FileCheck %s --check-prefix=NOLIB
// RUN: %expect-error tile-translate --tile-to-ptx --tile-libdevice=%t.missing.bc %s
// RUN: %expect-error tile-opt --tile-gpu-to-ptx="libdevice=%t.missing.bc" %s
//
// SM80: .version 7.0
// SM80: .target sm_80
// SM80: .visible .entry silu_mul(
// SM80-NEXT: .param .u64 .ptr .align 1 silu_mul_param_0,
// SM80-NOT: __nv_
// SM80: ex2.approx
// SM90: .version 8.0
// SM90: .target sm_90a
// SM90-NOT: __nv_
// OPT: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80", link = [{{.*}}libdevice.10.bc"]>, {{.*}}.target sm_90a
// NOLIB: error: libdevice not found at '{{.*}}missing.bc': set CUDA_HOME to the CUDA toolkit (the JIT, tile-run and Python read it), or give the file with --tile-libdevice=PATH (tile-translate) or the pipeline option libdevice=PATH (tile-opt)
// NOLIB-NOT: see current operation

// Bare-pointer convention: a kernel's memref argument is one pointer, which
// needs a static shape; the kernel bounds its accesses by %n.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @silu_mul(%a: memref<1073741824xf32>, %b: memref<1073741824xf32>,
                       %c: memref<1073741824xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %i0 = arith.muli %bid, %bdim : index
      %i = arith.addi %i0, %tid : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %x = memref.load %a[%i] : memref<1073741824xf32>
        %y = memref.load %b[%i] : memref<1073741824xf32>
        %nx = arith.negf %x : f32
        %e = math.exp %nx : f32
        %one = arith.constant 1.0 : f32
        %d = arith.addf %one, %e : f32
        %s = arith.divf %x, %d : f32
        %r = arith.mulf %s, %y : f32
        memref.store %r, %c[%i] : memref<1073741824xf32>
      }
      gpu.return
    }
  }
}

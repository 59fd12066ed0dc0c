//===- Passes.td - the PTX pipeline's own steps --------------*- tablegen -*-===//

#ifndef TILE_PIPELINES_PASSES_TD
#define TILE_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileCheckTargetPass : Pass<"tile-check-target", "::mlir::ModuleOp"> {
  let summary = "refuses a chip Tile does not know and a missing libdevice";
  let description = [{
    The first step of `tile-gpu-to-ptx` (and so of `tile-lower-to-ptx`,
    which pass it the chip and the default libdevice; run alone, it needs
    both options):
    fails on a chip outside Tile's list (NVVM would say "Minimum NVVM target
    SM version is sm_20" for `h100`) and, naming the path and how to give
    another, on a libdevice file that does not exist (upstream would carry
    on and emit PTX with unresolved `__nv_` calls that only ptxas rejects).
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"\"", "the target chip (sm_90a)">,
    Option<"libdevice", "libdevice", "std::string", "\"\"",
           "the libdevice bitcode file the PTX links">
  ];
}

def TileDropGridDependencyControlPass
    : Pass<"tile-drop-griddepcontrol", "::mlir::gpu::GPUModuleOp"> {
  let summary = "removes nvvm.griddepcontrol for chips before sm_90";
  let description = [{
    The kernels use griddepcontrol only to let a dependent kernel launch
    early (a finalize waits for its row kernel with it); without it the
    runtime launches them one after the other, as it does on those chips.
    `tile-gpu-to-ptx` runs it on every gpu.module for a chip before sm_90.
  }];
}

#endif // TILE_PIPELINES_PASSES_TD

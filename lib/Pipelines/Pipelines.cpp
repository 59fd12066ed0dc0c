//===- Pipelines.cpp - the one pipeline from GPU IR to PTX ---------------===//
//
// Device code only: each gpu.module gets an NVVM target (chip, PTX version,
// libdevice), its scf/arith/math/memref/vector ops are lowered to NVVM with
// the bare-pointer calling convention (a memref argument is one pointer, as
// the runtime passes it), and gpu-module-to-binary{format=isa} turns it into
// PTX text, which needs no CUDA toolkit at compile time.
//
//===----------------------------------------------------------------------===//

#include "tile/Pipelines/Pipelines.h"
#include "tile/Conversion/Passes.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Passes.h"
#include "tile/Pipelines/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;

std::string mlir::tile::defaultLibdevicePath() {
  std::string root = "/usr/local/cuda";
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(variable); value && *value) {
      root = value;
      break;
    }
  llvm::SmallString<256> path(root);
  llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return std::string(path);
}

namespace {
/// The chips Tile compiles for, and the PTX ISA version that introduced
/// each (LLVM's default, 6.0, aborts on the newer ones).
struct ChipInfo {
  const char *chip, *ptx;
};
constexpr ChipInfo kChips[] = {
    {"sm_80", "+ptx70"},   {"sm_86", "+ptx71"},   {"sm_87", "+ptx74"},
    {"sm_89", "+ptx78"},   {"sm_90", "+ptx80"},   {"sm_90a", "+ptx80"},
    {"sm_100", "+ptx87"},  {"sm_100a", "+ptx87"}, {"sm_101", "+ptx87"},
    {"sm_101a", "+ptx87"}, {"sm_120", "+ptx87"},  {"sm_120a", "+ptx87"},
};
} // namespace

bool mlir::tile::isKnownChip(StringRef chip) {
  return llvm::any_of(kChips,
                      [&](const ChipInfo &info) { return chip == info.chip; });
}

std::string mlir::tile::knownChips() {
  std::string list;
  for (const ChipInfo &info : kChips)
    list += (list.empty() ? "" : ", ") + std::string(info.chip);
  return list;
}

std::string mlir::tile::ptxFeaturesFor(StringRef chip) {
  for (const ChipInfo &info : kChips)
    if (chip == info.chip)
      return info.ptx;
  return "+ptx70";
}

void mlir::tile::registerGpuTargets(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  cf::ControlFlowDialect, vector::VectorDialect>();
  // Without the target interface gpu-module-to-binary crashes silently.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

namespace mlir::tile {
#define GEN_PASS_DEF_TILECHECKTARGETPASS
#define GEN_PASS_DEF_TILEDROPGRIDDEPENDENCYCONTROLPASS
#include "tile/Pipelines/Passes.h.inc"
} // namespace mlir::tile

namespace {
struct TileCheckTargetPass final
    : mlir::tile::impl::TileCheckTargetPassBase<TileCheckTargetPass> {
  using TileCheckTargetPassBase::TileCheckTargetPassBase;

  void runOnOperation() override {
    if (!mlir::tile::isKnownChip(chip)) {
      getOperation().emitError("unknown chip '")
          << chip << "': Tile compiles for " << mlir::tile::knownChips()
          << " (an A100 is sm_80, an H100 or H200 sm_90a; tile-rt-info "
             "prints the chip of this machine's GPU)";
      return signalPassFailure();
    }
    if (llvm::sys::fs::exists(libdevice))
      return;
    getOperation().emitError("libdevice not found at '")
        << libdevice
        << "': set CUDA_HOME to the CUDA toolkit (the JIT, tile-run and "
           "Python read it), or give the file with --tile-libdevice=PATH "
           "(tile-translate) or the pipeline option libdevice=PATH (tile-opt)";
    signalPassFailure();
  }
};

struct TileDropGridDependencyControlPass final
    : mlir::tile::impl::TileDropGridDependencyControlPassBase<
          TileDropGridDependencyControlPass> {
  void runOnOperation() override {
    getOperation().walk([](NVVM::GriddepcontrolOp op) { op.erase(); });
  }
};

/// Whether `chip` (sm_NN…) has griddepcontrol: sm_90 and later.
bool chipHasGridDependencyControl(StringRef chip) {
  unsigned version = 0;
  if (!chip.consume_front("sm_"))
    return false;
  chip.consumeInteger(10, version);
  return version >= 90;
}
} // namespace

void mlir::tile::buildGpuToPtxPipeline(OpPassManager &pm,
                                       const PtxOptions &options) {
  std::string libdevice =
      options.libdevice.empty() ? defaultLibdevicePath() : options.libdevice;
  pm.addPass(createTileCheckTargetPass({options.chip, libdevice}));
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features.empty() ? ptxFeaturesFor(options.chip)
                                             : options.features;
  target.optLevel = options.optLevel;
  target.linkLibs.push_back(libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));

  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  if (!chipHasGridDependencyControl(options.chip))
    device.addPass(createTileDropGridDependencyControlPass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 64;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::tile::buildTileToPtxPipeline(OpPassManager &pm,
                                        const PtxOptions &options) {
  // The rewrites the lowering wants, each a pass: the approximable
  // exponentials (again where the JIT marked them before deriving the
  // backward: idempotent), then the schedule, which sees the kernel as
  // written, then the reciprocals.
  pm.addPass(createTileApproximateShiftedExponentialsPass());
  pm.addPass(createTileSchedulePass(options.device, options.schedule));
  pm.addPass(createTileRowReciprocalsPass());
  pm.addPass(createConvertTileToGPUPass());
  buildGpuToPtxPipeline(pm, options);
}

namespace {
/// The options of both pipelines: the target and the device.
template <typename Derived>
struct PtxPipelineOptionsBase : PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<std::string> chip{
      *this, "chip", llvm::cl::desc("target chip"), llvm::cl::init("sm_80")};
  typename Base::template Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (default: the chip's minimum)"),
      llvm::cl::init("")};
  typename Base::template Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("path of libdevice.10.bc (default: from CUDA_HOME)"),
      llvm::cl::init("")};
  // The device tile-schedule sizes grids for (DeviceFacts.def; the
  // defaults: an H100 SXM or H200).
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  typename Base::template Option<int64_t> MEMBER{                              \
      *this, FLAG, llvm::cl::desc(DESCRIPTION), llvm::cl::init(DEFAULT)};
#include "tile/Target/DeviceFacts.def"

  mlir::tile::PtxOptions toPtxOptions() const {
    mlir::tile::PtxOptions options;
    options.chip = chip;
    options.features = features;
    options.libdevice = libdevice;
#define TILE_DEVICE_FACT(MEMBER, FLAG, DEFAULT, DESCRIPTION)                   \
  options.device.MEMBER = MEMBER;
#include "tile/Target/DeviceFacts.def"
    return options;
  }
};

struct GpuToPtxOptions final : PtxPipelineOptionsBase<GpuToPtxOptions> {};

/// tile-lower-to-ptx also takes tile-schedule's overrides (PtxOptions),
/// so that it spells the JIT's lowering whole (jit::passPipeline).
struct LowerToPtxOptions final : PtxPipelineOptionsBase<LowerToPtxOptions> {
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  Option<TYPE> MEMBER{*this, FLAG, llvm::cl::desc(DESCRIPTION),                \
                      llvm::cl::init(DEFAULT)};
#include "tile/Target/ScheduleOptions.def"

  mlir::tile::PtxOptions toPtxOptions() const {
    mlir::tile::PtxOptions options =
        PtxPipelineOptionsBase<LowerToPtxOptions>::toPtxOptions();
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  options.schedule.MEMBER = MEMBER;
#include "tile/Target/ScheduleOptions.def"
    return options;
  }
};
} // namespace

void mlir::tile::registerTilePipelines() {
  registerTilePipelinePasses();
  PassPipelineRegistration<GpuToPtxOptions>(
      "tile-gpu-to-ptx",
      "lowers every gpu.module to NVVM and serializes it to PTX",
      [](OpPassManager &pm, const GpuToPtxOptions &options) {
        buildGpuToPtxPipeline(pm, options.toPtxOptions());
      });
  PassPipelineRegistration<LowerToPtxOptions>(
      "tile-lower-to-ptx",
      "schedules and converts every tile kernel to GPU kernels and "
      "serializes them to PTX",
      [](OpPassManager &pm, const LowerToPtxOptions &options) {
        buildTileToPtxPipeline(pm, options.toPtxOptions());
      });
}

FailureOr<std::vector<std::pair<std::string, std::string>>>
mlir::tile::compileToPtx(ModuleOp module, const PtxOptions &options) {
  PassManager pm(module.getContext());
  bool hasGpuModule = !module.getOps<gpu::GPUModuleOp>().empty();
  if (hasGpuModule)
    buildGpuToPtxPipeline(pm, options);
  else
    buildTileToPtxPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  return collectPtx(module);
}

FailureOr<std::vector<std::pair<std::string, std::string>>>
mlir::tile::collectPtx(ModuleOp module) {
  std::vector<std::pair<std::string, std::string>> ptx;
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      ptx.emplace_back(binary.getSymName().str(),
                       cast<gpu::ObjectAttr>(object).getObject().str());
  if (ptx.empty())
    return module.emitError("no gpu.module to compile");
  return ptx;
}

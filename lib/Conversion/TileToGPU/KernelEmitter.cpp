//===- KernelEmitter.cpp - tile kernel → gpu.func ------------------------===//
//
// Plans a kernel (KernelPlan.cpp), then emits its row kernel and, where the
// plan has one, its finalize kernel: the gpu.func and its parameters here,
// the body through the point emitter and the body emitters.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "FinalizeKernel.h"
#include "FoldedFinalize.h"
#include "PointEmitter.h"
#include "RowKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
/// Kernel buffers are flat memrefs of a static, unreachable size: the
/// bare-pointer convention passes one pointer per buffer but only for static
/// shapes, and the real sizes arrive as parameters.
constexpr int64_t kFlatSize = int64_t(1) << 40;

MemRefType flatBuffer(Type elementType) {
  return MemRefType::get({kFlatSize}, elementType);
}

/// Creates the gpu.func of `f.mode` with the plan's launch facts, and maps
/// its parameters into the frame.
void createKernel(KernelFrame &f, PointEmitter &ev, gpu::GPUModuleOp module) {
  using Kind = KernelParam::Kind;
  OpBuilder &b = f.b;
  func::FuncOp func = f.func;
  SmallVector<KernelParam> layout = f.model.parameters(f.plan.foldedFinalize);
  SmallVector<Type> params;
  for (const KernelParam &param : layout) {
    switch (param.kind) {
    case Kind::Argument: {
      Value arg = func.getArgument(param.index);
      params.push_back(isTensor(arg) ? Type(flatBuffer(elementTypeOf(arg)))
                                     : arg.getType());
      break;
    }
    case Kind::Result:
      params.push_back(
          flatBuffer(getElementTypeOrSelf(func.getResultTypes()[param.index])));
      break;
    case Kind::Workspace:
      params.push_back(flatBuffer(b.getF32Type()));
      break;
    case Kind::Arrivals:
      params.push_back(flatBuffer(b.getI32Type()));
      break;
    default:
      params.push_back(b.getIndexType());
    }
  }

  bool finalize = f.mode == Mode::Finalize;
  const KernelPlan::Launch &launch =
      finalize ? f.plan.finalizeKernel : f.plan.rowKernel;
  std::string name = func.getSymName().str();
  if (finalize)
    name += "_finalize";
  b.setInsertionPointToEnd(module.getBody());
  auto sharedType = MemRefType::get(
      {launch.sharedFloats}, b.getF32Type(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  f.kernel = gpu::GPUFuncOp::create(
      b, f.loc, name, b.getFunctionType(params, {}), TypeRange{sharedType});
  gpu::GPUFuncOp kernel = f.kernel;
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  if (launch.knownBlockSize)
    kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(*launch.knownBlockSize), 1, 1}));
  if (launch.minCtasPerSm)
    kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(static_cast<int32_t>(
                                         *launch.minCtasPerSm)));
  f.shared = kernel.getWorkgroupAttributions().front();

  Block &entry = kernel.getBody().front();
  f.resultPointers.resize(func.getNumResults());
  for (auto [param, value] : llvm::zip(layout, entry.getArguments())) {
    switch (param.kind) {
    case Kind::Argument:
      if (isTensor(func.getArgument(param.index)))
        f.pointers[func.getArgument(param.index)] = value;
      else
        ev.mapUniform(func.getArgument(param.index), value);
      break;
    case Kind::Result:
      f.resultPointers[param.index] = value;
      break;
    case Kind::Rows:
      f.rows = value;
      break;
    case Kind::Width:
      f.argWidths[func.getArgument(param.index)] = value;
      break;
    case Kind::Ctas:
      f.ctas = value;
      break;
    case Kind::Workspace:
      f.workspace = value;
      break;
    case Kind::Arrivals:
      f.arrivals = value;
      break;
    }
  }
  b.setInsertionPointToStart(&entry);
}

/// The thread indices, and the widths the JIT specialized for as constants:
/// loop bounds, offsets and the alignment test fold. The parameters stay,
/// so the call is the same.
void setUpThreads(KernelFrame &f) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  for (auto [index, width] : getSpecializedWidths(f.func))
    f.argWidths[f.func.getArgument(index)] =
        arith::ConstantIndexOp::create(b, loc, width);
  f.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  f.threads = f.index(f.schedule.threads);
  if (f.schedule.rowsPerCta == 1) {
    f.member = f.tid;
    f.groupSize = f.threads;
    f.rowGroup = f.index(0);
  } else {
    f.groupSize = f.index(f.schedule.threads / f.schedule.rowsPerCta);
    f.member = arith::RemUIOp::create(b, loc, f.tid, f.groupSize);
    f.rowGroup = arith::DivUIOp::create(b, loc, f.tid, f.groupSize);
  }
  f.bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  f.grid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
}

/// The offsets of the plan's workspace blocks.
void layOutWorkspace(KernelFrame &f, PointEmitter &ev) {
  OpBuilder &b = f.b;
  Location loc = f.loc;
  Value offset = f.index(0);
  Value ctaBlock; // the reduction's [ctas, width] block's size
  for (const KernelPlan::WorkspaceBlock &block : f.plan.workspace) {
    Value size;
    if (block.scratch()) {
      f.scratchBase[block.reduce] = offset;
      size = arith::MulIOp::create(b, loc, ctaBlock, f.index(block.rowsPerCta));
    } else {
      ctaBlock = size = arith::MulIOp::create(
          b, loc, f.ctas, ev.widthOf(ReduceOp(block.reduce).getResult()));
      f.workspaceBase[block.reduce] = offset;
    }
    offset = arith::AddIOp::create(b, loc, offset, size);
  }
}

LogicalResult emitKernel(const KernelModel &model, const WidthClasses &widths,
                         const KernelPlan &plan, const Schedule &schedule,
                         Mode mode, gpu::GPUModuleOp module) {
  OpBuilder b(module.getContext());
  KernelFrame f(model, widths, plan, schedule, mode, b);
  PointEmitter ev(f);
  createKernel(f, ev, module);
  setUpThreads(f);
  // The finalize is launched with programmatic stream serialization (the
  // manifest's `overlaps_previous`): its launch overlaps the row kernel's
  // last CTAs, and its threads wait here, before any load, until the row
  // kernel is complete and its partials are visible (launched plainly, the
  // wait returns at once). The row kernel does not signal earlier than its
  // CTAs' exit (griddepcontrol.launch_dependents at its start cost the
  // RMSNorm backward 2 us where the row kernel holds two CTAs per SM:
  // docs/Performance.md).
  if (mode == Mode::Finalize)
    NVVM::GriddepcontrolOp::create(b, f.loc, NVVM::GridDepActionKind::wait);
  if (failed(ev.evaluateUniforms()))
    return failure();
  if (schedule.vectorWidth > 1 && mode == Mode::Rows)
    f.aligned = ev.alignmentTest();
  layOutWorkspace(f, ev);
  if (mode == Mode::Finalize) {
    emitFinalizeBody(f, ev);
  } else if (!plan.foldedFinalize) {
    emitRowBody(f, ev);
  } else {
    // Launched with at least one CTA, so that the finalize writes its
    // results with no rows too; a CTA past the partial rows has none.
    Value hasRows = arith::CmpIOp::create(b, f.loc, arith::CmpIPredicate::ult,
                                          f.bid, f.ctas);
    f.emitIf(hasRows, [&] { emitRowBody(f, ev); });
    emitFoldedFinalize(f);
  }
  if (ev.exhausted())
    return f.func.emitOpError("is too large to lower: its values at a column "
                              "take more than ")
           << ev.evaluationLimit()
           << " evaluations (a value shared under concat, slice or pad is "
              "evaluated once per column shift)";
  b.setInsertionPointToEnd(&f.kernel.getBody().front());
  gpu::ReturnOp::create(b, f.loc);
  return success();
}
} // namespace

LogicalResult gpu_lowering::emitKernels(const KernelModel &model,
                                        const Schedule &schedule,
                                        gpu::GPUModuleOp module) {
  WidthClasses widths(model);
  FailureOr<KernelPlan> plan = planKernel(model, widths, schedule);
  if (failed(plan))
    return failure();
  if (failed(emitKernel(model, widths, *plan, schedule, Mode::Rows, module)))
    return failure();
  if (plan->hasFinalizeKernel())
    return emitKernel(model, widths, *plan, schedule, Mode::Finalize, module);
  return success();
}

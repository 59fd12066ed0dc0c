//===- Manifest.cpp - what a runtime needs to launch the kernels ---------===//
//
// The manifest prints what the lowering decided, from the same sources the
// emitter reads, so the two cannot disagree: the parameter order from
// KernelModel::parameters(), widths as expressions of the shape rules
// (KernelModel::widthRule), and the workspace, the finalize and the launch
// facts from the kernel's plan (KernelPlan.h).
//
//===----------------------------------------------------------------------===//

#include "tile/Conversion/TileToGPU/Manifest.h"
#include "KernelPlan.h"
#include "tile/Dialect/Tile/IR/KernelSchedule.h"
#include "tile/Target/ManifestFormat.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::tile;
using namespace mlir::tile::gpu_lowering;

namespace {
std::string dtypeOf(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  getElementTypeOrSelf(type).print(os);
  return text;
}

class ShapeNames {
public:
  explicit ShapeNames(const KernelModel &model) : model(model) {}

  /// The width of a per-element, per-column or across-rows value.
  FailureOr<std::string> width(Value value) {
    return memoized(widthMemo, value, [&] { return computeWidth(value); });
  }

  /// An index (or integer) value computed from the parameters.
  FailureOr<std::string> scalar(Value value) {
    return memoized(scalarMemo, value, [&] { return computeScalar(value); });
  }

private:
  /// Each value is named once (a chain of 100,000 ops asks for the same
  /// width at every op), and no name grows past kMaxExpressionLength: a DAG
  /// of shared concats or index sums doubles its expression at each level.
  FailureOr<std::string>
  memoized(DenseMap<Value, std::string> &memo, Value value,
           llvm::function_ref<FailureOr<std::string>()> compute) {
    if (auto it = memo.find(value); it != memo.end())
      return it->second;
    // A failure is remembered too: it was reported once, and a shared
    // value must not be named (and fail) again along every path to it.
    if (failedValues.contains(value))
      return failure();
    FailureOr<std::string> name = compute();
    if (failed(name)) {
      failedValues.insert(value);
      return failure();
    }
    if (name->size() > kMaxExpressionLength) {
      failedValues.insert(value);
      Operation *where = value.getDefiningOp();
      InFlightDiagnostic diag =
          where ? where->emitOpError() : func::FuncOp(model.func).emitOpError();
      diag << "has a size whose expression exceeds " << kMaxExpressionLength
           << " characters; the manifest cannot state it";
      return failure();
    }
    memo[value] = *name;
    return *name;
  }

  FailureOr<std::string> computeWidth(Value value) {
    WidthRule rule = model.widthRule(value);
    switch (rule.kind) {
    case WidthRule::Kind::Argument:
      return "w" + std::to_string(cast<BlockArgument>(value).getArgNumber());
    case WidthRule::Kind::Size:
      return scalar(rule.value);
    case WidthRule::Kind::Sum: {
      // Equal parts are counted, not repeated: `concat %c, %c` is
      // (2 * w(c)), so nested concats of one value stay short.
      llvm::MapVector<Value, int64_t> parts;
      for (Value input : rule.parts)
        ++parts[input];
      std::string sum;
      for (auto [input, count] : parts) {
        FailureOr<std::string> part = width(input);
        if (failed(part))
          return failure();
        std::string term =
            count == 1 ? *part : std::to_string(count) + " * " + *part;
        sum += (sum.empty() ? "(" : " + ") + term;
      }
      return sum + ")";
    }
    case WidthRule::Kind::Constant:
      return std::to_string(rule.constant);
    case WidthRule::Kind::SameAs:
      return width(rule.value);
    case WidthRule::Kind::None:
      break;
    }
    return value.getDefiningOp()->emitOpError(
        "has no width the manifest can name");
  }

  FailureOr<std::string> computeScalar(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return "arg" + std::to_string(arg.getArgNumber());
    Operation *def = value.getDefiningOp();
    APInt constant;
    if (matchPattern(value, m_ConstantInt(&constant)))
      return std::to_string(constant.getSExtValue());
    if (auto dim = dyn_cast<tensor::DimOp>(def))
      return model.dimReadsRows(dim) ? std::string("rows")
                                     : width(dim.getSource());
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
      return scalar(def->getOperand(0));
    StringRef symbol =
        llvm::TypeSwitch<Operation *, StringRef>(def)
            .Case<arith::AddIOp>([](auto) { return "+"; })
            .Case<arith::SubIOp>([](auto) { return "-"; })
            .Case<arith::MulIOp>([](auto) { return "*"; })
            .Case<arith::DivUIOp, arith::DivSIOp>([](auto) { return "/"; })
            .Case<arith::RemUIOp, arith::RemSIOp>([](auto) { return "%"; })
            .Default([](auto) { return ""; });
    if (symbol.empty())
      return def->emitOpError("computes a size the manifest cannot write "
                              "as an expression");
    FailureOr<std::string> lhs = scalar(def->getOperand(0));
    if (failed(lhs))
      return failure();
    FailureOr<std::string> rhs = scalar(def->getOperand(1));
    if (failed(rhs))
      return failure();
    return "(" + *lhs + " " + symbol.str() + " " + *rhs + ")";
  }

public:
  /// The shape a tensor of the given kind and width has.
  FailureOr<llvm::json::Array> shape(Value value) {
    switch (model.kindOf(value)) {
    case ValueKind::RowValue:
      return llvm::json::Array{"rows"};
    case ValueKind::Element: {
      FailureOr<std::string> w = width(value);
      if (failed(w))
        return failure();
      return llvm::json::Array{"rows", *w};
    }
    default: {
      FailureOr<std::string> w = width(value);
      if (failed(w))
        return failure();
      return llvm::json::Array{*w};
    }
    }
  }

private:
  static constexpr size_t kMaxExpressionLength = 4096;
  const KernelModel &model;
  DenseMap<Value, std::string> widthMemo, scalarMemo;
  llvm::DenseSet<Value> failedValues;
};

/// The kernels' parameters, in order, with the shapes of their buffers.
FailureOr<llvm::json::Array> describeParams(const KernelModel &model,
                                            const KernelPlan &plan,
                                            ShapeNames &names) {
  func::FuncOp func = model.func;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  llvm::json::Array params;
  using Kind = KernelParam::Kind;
  for (const KernelParam &param : model.parameters(plan.foldedFinalize)) {
    llvm::json::Object entry;
    switch (param.kind) {
    case Kind::Argument: {
      Value arg = func.getArgument(param.index);
      entry["of"] = "argument";
      entry["index"] = param.index;
      entry["dtype"] = dtypeOf(arg.getType());
      if (isTensor(arg)) {
        FailureOr<llvm::json::Array> shape = names.shape(arg);
        if (failed(shape))
          return failure();
        entry["kind"] = "buffer";
        entry["shape"] = std::move(*shape);
      } else {
        entry["kind"] = "scalar";
      }
      break;
    }
    case Kind::Result: {
      FailureOr<llvm::json::Array> shape =
          names.shape(returnOp.getOperand(param.index));
      if (failed(shape))
        return failure();
      entry["of"] = "result";
      entry["index"] = param.index;
      entry["kind"] = "buffer";
      entry["dtype"] = dtypeOf(func.getResultTypes()[param.index]);
      entry["shape"] = std::move(*shape);
      break;
    }
    case Kind::Rows:
      entry = llvm::json::Object{{"of", "rows"}, {"kind", "index"}};
      break;
    case Kind::Width:
      entry = llvm::json::Object{{"of", "width"},
                                 {"kind", "index"},
                                 {"index", param.index},
                                 {"name", "w" + std::to_string(param.index)}};
      break;
    case Kind::Ctas:
      entry = llvm::json::Object{{"of", "ctas"}, {"kind", "index"}};
      break;
    case Kind::Workspace:
      entry = llvm::json::Object{
          {"of", "workspace"}, {"kind", "buffer"}, {"dtype", "f32"}};
      break;
    case Kind::Arrivals:
      entry = llvm::json::Object{
          {"of", "arrivals"}, {"kind", "buffer"}, {"dtype", "i32"}};
      break;
    }
    params.push_back(std::move(entry));
  }

  return params;
}

/// What the shapes must satisfy for the kernels to stay in bounds: equal
/// widths where elementwise ops and broadcasts meet, ranges inside rows.
FailureOr<llvm::json::Array> describeConstraints(const KernelModel &model,
                                                 ShapeNames &names) {
  func::FuncOp func = model.func;
  llvm::json::Array constraints;
  llvm::StringSet<> seen;
  auto require = [&](std::string constraint) {
    if (seen.insert(constraint).second)
      constraints.push_back(constraint);
  };
  if (auto specialized = func->getAttrOfType<DictionaryAttr>(
          TileDialect::getSpecializeAttrName()))
    for (NamedAttribute entry : specialized)
      require(entry.getName().getValue().str() + " == " +
              std::to_string(cast<IntegerAttr>(entry.getValue()).getInt()));
  // A constant table has its static shape: the kernel reads it at every
  // row, so there must be exactly as many rows.
  for (arith::ConstantOp constant : model.constantTables) {
    ValueKind kind = model.kindOf(constant.getResult());
    if (kind == ValueKind::Element || kind == ValueKind::RowValue)
      require(
          "rows == " +
          std::to_string(
              cast<RankedTensorType>(constant.getType()).getShape().front()));
  }
  for (Operation &op : func.getBody().front()) {
    SmallVector<Value> sameWidth = model.sameWidthValues(op);
    for (size_t i = 1; i < sameWidth.size(); ++i) {
      FailureOr<std::string> a = names.width(sameWidth[0]);
      FailureOr<std::string> b = names.width(sameWidth[i]);
      if (failed(a) || failed(b))
        return failure();
      if (*a != *b)
        require(*a + " == " + *b);
    }
    FailureOr<std::string> end, limit;
    if (auto slice = dyn_cast<SliceOp>(op)) {
      FailureOr<std::string> offset = names.scalar(slice.getOffset());
      FailureOr<std::string> size = names.scalar(slice.getSize());
      limit = names.width(slice.getInput());
      if (failed(offset) || failed(size) || failed(limit))
        return failure();
      end = *offset + " + " + *size;
    } else if (auto pad = dyn_cast<PadOp>(op)) {
      FailureOr<std::string> offset = names.scalar(pad.getOffset());
      FailureOr<std::string> width = names.width(pad.getInput());
      limit = names.width(pad.getShape());
      if (failed(offset) || failed(width) || failed(limit))
        return failure();
      end = *offset + " + " + *width;
    }
    if (succeeded(end) && !end->empty())
      require(*end + " <= " + *limit);
    // A whole number of repeats, and of even blocks: the kernel computes
    // partner columns from them without checking.
    if (auto repeat = dyn_cast<RepeatOp>(op)) {
      FailureOr<std::string> width = names.width(repeat.getInput());
      FailureOr<std::string> total = names.width(repeat.getShape());
      if (failed(width) || failed(total))
        return failure();
      require("1 <= " + *width);
      require("(" + *total + ") % (" + *width + ") == 0");
    } else if (auto swap = dyn_cast<SwapHalvesOp>(op)) {
      FailureOr<std::string> block = names.scalar(swap.getBlock());
      FailureOr<std::string> width = names.width(swap.getInput());
      if (failed(block) || failed(width))
        return failure();
      require("2 <= " + *block);
      require("(" + *block + ") % 2 == 0");
      require("(" + *width + ") % (" + *block + ") == 0");
    }
  }

  return constraints;
}

/// The row kernel and the finalize (if the plan has one), with their grids.
FailureOr<llvm::json::Array> describeKernels(const KernelModel &model,
                                             const KernelPlan &plan,
                                             const Schedule &schedule,
                                             ShapeNames &names,
                                             std::string &ctas) {
  func::FuncOp func = model.func;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  llvm::json::Array kernels;
  // Row blocks of rows_per_cta rows; a persistent grid has at most `ctas`.
  std::string blocks =
      schedule.rowsPerCta == 1
          ? std::string("rows")
          : "ceildiv(rows, " + std::to_string(schedule.rowsPerCta) + ")";
  ctas = schedule.ctas
             ? "min(" + blocks + ", " + std::to_string(schedule.ctas) + ")"
             : blocks;
  if (schedule.elementGrid) {
    // A CTA per threads × vector_width elements of the flattened tensors
    // (their one width is any result's).
    FailureOr<std::string> w = names.width(returnOp.getOperand(0));
    if (failed(w))
      return failure();
    ctas = "ceildiv(rows * " + *w + ", " +
           std::to_string(schedule.threads * schedule.vectorWidth) + ")";
  }
  // A folded finalize writes its results with no rows too (one CTA that
  // has no partial row).
  llvm::json::Object rowKernel{
      {"name", func.getSymName()},
      {"grid", plan.foldedFinalize ? "max(" + ctas + ", 1)" : ctas},
      {"block", plan.rowKernel.threads},
      {"static_shared_bytes", 4 * plan.rowKernel.sharedFloats}};
  // Its last CTAs wait for the others (the folded finalize).
  if (plan.foldedFinalize)
    rowKernel["cooperative"] = true;
  kernels.push_back(std::move(rowKernel));
  std::string columns;
  for (unsigned number : plan.finalizeOutputs) {
    FailureOr<std::string> w = names.width(returnOp.getOperand(number));
    if (failed(w))
      return failure();
    columns = columns.empty() ? *w : "max(" + columns + ", " + *w + ")";
  }
  if (plan.hasFinalizeKernel())
    kernels.push_back(llvm::json::Object{
        {"name", (func.getSymName() + "_finalize").str()},
        {"grid",
         "ceildiv(" + columns + ", " + std::to_string(kFinalizeColumns) + ")"},
        {"block", plan.finalizeKernel.threads},
        {"static_shared_bytes", 4 * plan.finalizeKernel.sharedFloats},
        {"after", func.getSymName()},
        // It begins with griddepcontrol.wait (for the row kernel's
        // partials), so its launch may overlap the row kernel's end.
        {"overlaps_previous", true}});

  return kernels;
}

FailureOr<llvm::json::Object> describe(func::FuncOp func) {
  FailureOr<KernelModel> model = KernelModel::analyze(func);
  if (failed(model))
    return failure();
  ShapeNames names(*model);
  KernelSchedule schedule = getSchedule(func);
  WidthClasses widths(*model);
  FailureOr<KernelPlan> plan = planKernel(*model, widths, schedule);
  if (failed(plan))
    return failure();
  FailureOr<llvm::json::Array> params = describeParams(*model, *plan, names);
  if (failed(params))
    return failure();
  FailureOr<llvm::json::Array> constraints = describeConstraints(*model, names);
  if (failed(constraints))
    return failure();
  std::string workspace;
  for (const KernelPlan::WorkspaceBlock &block : plan->workspace) {
    FailureOr<std::string> w = names.width(ReduceOp(block.reduce).getResult());
    if (failed(w))
      return failure();
    workspace += std::string(workspace.empty() ? "" : " + ") + "ctas * " +
                 (block.scratch() ? std::to_string(block.rowsPerCta) + " * "
                                  : std::string()) +
                 *w;
  }

  std::string ctas;
  FailureOr<llvm::json::Array> kernels =
      describeKernels(*model, *plan, schedule, names, ctas);
  if (failed(kernels))
    return failure();
  return llvm::json::Object{
      {"function", func.getSymName()},
      {"kernels", std::move(*kernels)},
      {"params", std::move(*params)},
      {"ctas", ctas},
      {"shape_constraints", std::move(*constraints)},
      {"workspace_f32_elements", workspace.empty() ? "0" : workspace}};
}
} // namespace

LogicalResult mlir::tile::writeKernelManifest(ModuleOp module,
                                              llvm::raw_ostream &os) {
  llvm::json::Array functions;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr(TileDialect::getKernelAttrName()))
      continue;
    FailureOr<llvm::json::Object> entry = describe(func);
    if (failed(entry))
      return failure();
    functions.push_back(std::move(*entry));
  }
  if (functions.empty())
    return module.emitError("no function carries 'tile.kernel'");
  os << llvm::formatv(
      "{0:2}\n", llvm::json::Value(llvm::json::Object{
                     {"format_version", ::tile::kManifestFormatVersion},
                     {"calling_convention",
                      "one 64-bit device pointer per buffer, 64-bit index "
                      "parameters, f32/i32/i64 scalars by value; buffers are "
                      "row-major and dense"},
                     {"functions", std::move(functions)}}));
  return success();
}

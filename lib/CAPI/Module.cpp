//===- Module.cpp - compile, describe, infer, launch, evaluate ------------===//
//
// A tile_module is one jit::Jit compilation (cached in memory and on disk
// like every other) plus what its calls need: the launch plan parsed once,
// the functions' descriptions from the signature, a launcher per device
// (loaded on the first launch there), and, for host evaluation, the
// derived IR parsed once into a context of the module's own.
//
//===----------------------------------------------------------------------===//

#include "Support.h"

#include "tile/Dialect/Tile/IR/ValueRoles.h"
#include "tile/InitTile.h"
#include "tile/Interp/Evaluator.h"
#include "tile/JIT/JIT.h"
#include "tile/Launcher/Launcher.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

using tile::rt::Status;
using tile::rt::StatusOr;

struct tile_function_t {
  std::string name, backwardOf, forwardOf;
  std::vector<tile_value_info> arguments, results;
  /// The manifest's shape expressions of each argument and result (empty
  /// for a scalar): tile_function_shape's strings live here.
  std::vector<std::vector<std::string>> argumentShapes, resultShapes;
  tile_module module = nullptr;
};

struct tile_host_results_t {
  std::vector<tile::interp::Buffer> buffers;
};

struct tile_module_t {
  tile::jit::CompileOptions options;
  tile::jit::CompiledKernels compiled;
  tile::ops::LaunchPlan plan;
  std::vector<std::unique_ptr<tile_function_t>> functions;

  std::mutex mutex; ///< guards the launchers and the evaluation context
  std::map<int, std::unique_ptr<tile::ops::Launcher>> launchers;
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> ir;
};

namespace {

/// One JIT per cache directory, shared by every module.
tile::jit::Jit &jitFor(const std::string &cacheDir) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<tile::jit::Jit>> jits;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = jits[cacheDir];
  if (!slot)
    slot = std::make_unique<tile::jit::Jit>(cacheDir);
  return *slot;
}

/// The C API's dtype of a signature's type name; none for a name it has no
/// dtype for (the kernel verifier admits none such: a signature that has one
/// is refused, not read as some other dtype).
std::optional<tile_dtype> dtypeNamed(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<tile_dtype>>(name)
      .Case("bf16", TILE_DTYPE_BF16)
      .Case("f16", TILE_DTYPE_F16)
      .Case("f32", TILE_DTYPE_F32)
      .Case("f64", TILE_DTYPE_F64)
      .Case("i32", TILE_DTYPE_I32)
      .Cases("i64", "index", TILE_DTYPE_I64)
      .Default(std::nullopt);
}

// The C API's roles are the table's (ValueRoles.h), in its order.
static_assert(
    static_cast<int>(mlir::tile::ValueRole::Input) == TILE_ROLE_INPUT &&
    static_cast<int>(mlir::tile::ValueRole::Cotangent) == TILE_ROLE_COTANGENT &&
    static_cast<int>(mlir::tile::ValueRole::Saved) == TILE_ROLE_SAVED &&
    static_cast<int>(mlir::tile::ValueRole::MainGrad) == TILE_ROLE_MAIN_GRAD &&
    static_cast<int>(mlir::tile::ValueRole::Output) == TILE_ROLE_OUTPUT &&
    static_cast<int>(mlir::tile::ValueRole::Gradient) == TILE_ROLE_GRADIENT &&
    static_cast<int>(mlir::tile::ValueRole::Primal) == TILE_ROLE_PRIMAL &&
    static_cast<int>(mlir::tile::ValueRole::ForwardResult) ==
        TILE_ROLE_FORWARD_RESULT &&
    std::size(mlir::tile::kValueRoles) == TILE_ROLE_FORWARD_RESULT + 1);

/// One argument or result of a kernel signature; an unknown role is an
/// error (it would otherwise be taken for an input).
StatusOr<tile_value_info> describeValue(const llvm::json::Object &value,
                                        bool argument) {
  tile_value_info info{};
  info.is_tensor = value.getString("kind").value_or("") == "tensor";
  llvm::StringRef dtypeName = value.getString("dtype").value_or("");
  std::optional<tile_dtype> dtype = dtypeNamed(dtypeName);
  if (!dtype)
    return Status::error("malformed kernel signature: unknown dtype '" +
                         dtypeName.str() + "'");
  info.dtype = *dtype;
  if (const llvm::json::Array *shape = value.getArray("shape"))
    info.rank = static_cast<int32_t>(shape->size());
  llvm::StringRef roleName = value.getString("role").value_or("");
  std::optional<mlir::tile::ValueRole> role =
      mlir::tile::valueRoleNamed(roleName);
  if (!role)
    return Status::error("malformed kernel signature: unknown role '" +
                         roleName.str() + "'");
  info.role = static_cast<tile_role>(*role);
  info.differentiable = value.getBoolean("differentiable").value_or(false);
  info.of = value.getInteger("of").value_or(-1);
  // Written for arguments only; a result reads nothing. An argument the
  // signature says nothing of is read (an unread one Python would drop).
  info.reads_data =
      argument && value.getString("uses").value_or("data") == "data";
  return info;
}

/// The functions the signature describes.
Status describeFunctions(tile_module module) {
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(module->compiled.signature);
  if (!parsed)
    return Status::error("malformed kernel signature: " +
                         llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  const llvm::json::Array *kernels = root ? root->getArray("kernels") : nullptr;
  if (!kernels)
    return Status::error("malformed kernel signature: no kernels");
  for (const llvm::json::Value &entry : *kernels) {
    const llvm::json::Object *kernel = entry.getAsObject();
    if (!kernel)
      continue;
    auto function = std::make_unique<tile_function_t>();
    function->module = module;
    function->name = kernel->getString("name").value_or("").str();
    function->backwardOf = kernel->getString("backward_of").value_or("").str();
    function->forwardOf = kernel->getString("forward_of").value_or("").str();
    for (auto [key, list] : {std::pair{"args", &function->arguments},
                             std::pair{"results", &function->results}})
      if (const llvm::json::Array *values = kernel->getArray(key))
        for (const llvm::json::Value &value : *values)
          if (const llvm::json::Object *object = value.getAsObject()) {
            StatusOr<tile_value_info> info =
                describeValue(*object, list == &function->arguments);
            if (!info)
              return info.takeStatus();
            list->push_back(*info);
          }
    // Every tensor's shape from the launch rules: a signature and a
    // manifest that disagree would give a caller empty shapes.
    for (auto [infos, shapes, result] :
         {std::tuple{&function->arguments, &function->argumentShapes, false},
          std::tuple{&function->results, &function->resultShapes, true}})
      for (size_t i = 0; i < infos->size(); ++i) {
        shapes->push_back(
            module->plan.shapeExpressions(function->name, result, i));
        if ((*infos)[i].is_tensor && shapes->back().empty())
          return Status::error(
              "kernel manifest: no shape for " + function->name +
              (result ? " result #" : " argument #") + std::to_string(i));
      }
    module->functions.push_back(std::move(function));
  }
  return Status::ok();
}

std::string str(const char *text, const char *otherwise) {
  return text && *text ? text : otherwise;
}

/// The derived IR, parsed once into the module's own context.
StatusOr<mlir::func::FuncOp> hostFunction(tile_module module,
                                          const std::string &name) {
  if (!module->ir) {
    mlir::DialectRegistry registry;
    mlir::tile::registerTileDialects(registry);
    module->context = std::make_unique<mlir::MLIRContext>(registry);
    module->context->loadAllAvailableDialects();
    module->ir = mlir::parseSourceString<mlir::ModuleOp>(
        module->compiled.ir, mlir::ParserConfig(module->context.get()));
    if (!module->ir)
      return Status::error("the derived IR of the module does not parse");
  }
  auto func = module->ir->lookupSymbol<mlir::func::FuncOp>(name);
  if (!func)
    return Status::error("no function '" + name + "' in the module");
  return func;
}

} // namespace

extern "C" {

void tile_compile_options_init(tile_compile_options *options) {
  if (options)
    *options = tile_compile_options{};
}

tile_status tile_module_compile(const char *source, size_t length,
                                const tile_compile_options *options,
                                tile_module *result) {
  if (!source || !result)
    return tile::capi::error(
        "tile_module_compile: the source or the result is a null pointer");
  *result = nullptr;
  tile_compile_options defaults{};
  if (!options)
    options = &defaults;
  auto module = std::make_unique<tile_module_t>();
  tile::jit::CompileOptions &jit = module->options;
  jit.chip = str(options->chip, "");
  jit.dtype = str(options->dtype, "");
  if (!jit.dtype.empty() && jit.dtype != "bf16" && jit.dtype != "f16" &&
      jit.dtype != "f32")
    return tile::capi::error("unknown dtype '" + jit.dtype +
                             "': expected bf16, f16 or f32");
  jit.differentiate = options->differentiate != 0;
  jit.policy = str(options->policy, "recompute");
  jit.mainGrad = options->main_grad != 0;
  jit.sourceName = str(options->source_name, "kernel");
  // The C struct spells DeviceFacts.def's facts by hand (a C header):
  // one fact more there and this stops compiling until both agree.
  static_assert(sizeof(tile_device_description) ==
                    tile::kDeviceFacts * sizeof(int64_t),
                "tile_device_description holds every fact of "
                "tile/Target/DeviceFacts.def, in its order");
  const tile_device_description &device = options->device;
  bool anyFact = device.multiprocessors || device.threads_per_sm ||
                 device.registers_per_sm || device.shared_bytes_per_sm;
  if (anyFact) {
    if (device.multiprocessors <= 0 || device.threads_per_sm <= 0 ||
        device.registers_per_sm <= 0 || device.shared_bytes_per_sm <= 0)
      return tile::capi::error(
          "tile_module_compile: the device description needs every figure "
          "positive (or all zero for the default)");
    jit.device = {device.multiprocessors, device.threads_per_sm,
                  device.registers_per_sm, device.shared_bytes_per_sm};
  }
  if (options->num_widths > 0 && !options->widths)
    return tile::capi::error("tile_module_compile: widths is a null pointer");
  for (size_t i = 0; i < options->num_widths; ++i)
    if (options->widths[i] > 0)
      jit.widths[static_cast<unsigned>(i)] = options->widths[i];
  StatusOr<tile::jit::CompiledKernels> compiled =
      jitFor(str(options->cache_dir, ""))
          .compile(std::string(source, length), jit);
  if (!compiled)
    return tile::capi::toC(compiled.takeStatus());
  module->compiled = std::move(*compiled);
  StatusOr<tile::ops::LaunchPlan> plan =
      tile::ops::LaunchPlan::parse(module->compiled.manifest);
  if (!plan)
    return tile::capi::toC(plan.takeStatus());
  module->plan = std::move(*plan);
  if (Status s = describeFunctions(module.get()); !s)
    return tile::capi::toC(s);
  *result = module.release();
  return nullptr;
}

void tile_module_destroy(tile_module module) { delete module; }

const char *tile_module_ptx(tile_module module) {
  return module ? module->compiled.ptx.c_str() : "";
}
const char *tile_module_manifest(tile_module module) {
  return module ? module->compiled.manifest.c_str() : "";
}
const char *tile_module_ir(tile_module module) {
  return module ? module->compiled.ir.c_str() : "";
}

size_t tile_module_num_functions(tile_module module) {
  return module ? module->functions.size() : 0;
}

tile_function tile_module_function(tile_module module, size_t index) {
  if (!module || index >= module->functions.size())
    return nullptr;
  return module->functions[index].get();
}

tile_status tile_module_lookup(tile_module module, const char *name,
                               tile_function *function) {
  if (!module || !name || !function)
    return tile::capi::error("tile_module_lookup: a null argument");
  for (auto &candidate : module->functions)
    if (candidate->name == name) {
      *function = candidate.get();
      return nullptr;
    }
  std::string known;
  for (auto &candidate : module->functions)
    known += (known.empty() ? "" : ", ") + candidate->name;
  return tile::capi::error("no function '" + std::string(name) +
                           "' in the module (it has " + known + ")");
}

const char *tile_function_name(tile_function function) {
  return function ? function->name.c_str() : "";
}
size_t tile_function_num_arguments(tile_function function) {
  return function ? function->arguments.size() : 0;
}
size_t tile_function_num_results(tile_function function) {
  return function ? function->results.size() : 0;
}
tile_value_info tile_function_argument(tile_function function, size_t index) {
  if (!function || index >= function->arguments.size())
    return tile_value_info{};
  return function->arguments[index];
}
tile_value_info tile_function_result(tile_function function, size_t index) {
  if (!function || index >= function->results.size())
    return tile_value_info{};
  return function->results[index];
}
const char *tile_function_shape(tile_function function, int result,
                                size_t index, size_t dim) {
  if (!function)
    return nullptr;
  const auto &shapes =
      result ? function->resultShapes : function->argumentShapes;
  if (index >= shapes.size() || dim >= shapes[index].size())
    return nullptr;
  return shapes[index][dim].c_str();
}
const char *tile_function_backward_of(tile_function function) {
  return function && !function->backwardOf.empty()
             ? function->backwardOf.c_str()
             : nullptr;
}
const char *tile_function_forward_of(tile_function function) {
  return function && !function->forwardOf.empty() ? function->forwardOf.c_str()
                                                  : nullptr;
}

tile_status tile_function_infer(tile_function function, const tile_value *args,
                                size_t num_args, int64_t *result_shapes,
                                int32_t *result_ranks,
                                size_t *workspace_bytes) {
  if (!function)
    return tile::capi::error("tile_function_infer: a null function");
  auto arguments = tile::capi::toArguments(args, num_args, function->name);
  if (!arguments)
    return tile::capi::toC(arguments.takeStatus());
  auto inferred = function->module->plan.infer(function->name, *arguments);
  if (!inferred)
    return tile::capi::toC(inferred.takeStatus());
  for (size_t i = 0; i < inferred->results.size(); ++i) {
    const auto &shape = inferred->results[i].shape;
    if (result_ranks)
      result_ranks[i] = static_cast<int32_t>(shape.size());
    if (result_shapes)
      for (size_t d = 0; d < shape.size() && d < 2; ++d)
        result_shapes[2 * i + d] = shape[d];
  }
  if (workspace_bytes)
    *workspace_bytes = inferred->workspaceBytes;
  return nullptr;
}

tile_status tile_function_launch(tile_function function, int device,
                                 void *stream, const tile_value *args,
                                 size_t num_args, const tile_tensor *results,
                                 size_t num_results, void *workspace,
                                 size_t workspace_bytes) {
  if (!function)
    return tile::capi::error("tile_function_launch: a null function");
  tile_module module = function->module;
  if (module->options.chip.empty())
    return tile::capi::error(
        function->name +
        ": the module was compiled for the host only (no chip): it cannot "
        "launch");
  auto arguments = tile::capi::toArguments(args, num_args, function->name);
  if (!arguments)
    return tile::capi::toC(arguments.takeStatus());
  if (num_results > 0 && !results)
    return tile::capi::error(function->name +
                             ": the results are a null pointer");
  std::vector<tile::rt::TensorView> views;
  views.reserve(num_results);
  for (size_t i = 0; i < num_results; ++i) {
    auto view = tile::capi::toView(&results[i], function->name + " result #" +
                                                    std::to_string(i));
    if (!view)
      return tile::capi::toC(view.takeStatus());
    views.push_back(std::move(*view));
  }
  tile::ops::Launcher *launcher = nullptr;
  {
    std::lock_guard<std::mutex> lock(module->mutex);
    auto &slot = module->launchers[device];
    if (!slot) {
      auto opened = tile::capi::device(device);
      if (!opened) {
        module->launchers.erase(device);
        return tile::capi::toC(opened.takeStatus());
      }
      if ((*opened)->chip() != module->options.chip) {
        module->launchers.erase(device);
        return tile::capi::error(
            "the module was compiled for " + module->options.chip +
            ", but GPU " + std::to_string(device) + " is " + (*opened)->chip());
      }
      auto created = tile::ops::Launcher::create(**opened, module->compiled);
      if (!created) {
        module->launchers.erase(device);
        return tile::capi::toC(created.takeStatus());
      }
      slot = std::move(*created);
    }
    launcher = slot.get();
  }
  tile::ops::RunOptions run;
  run.stream = static_cast<tile::rt::cu::Stream>(stream);
  run.workspace = reinterpret_cast<tile::rt::cu::DevicePtr>(workspace);
  run.workspaceBytes = workspace_bytes;
  run.callerWorkspace = true;
  return tile::capi::toC(launcher->run(function->name, *arguments, views, run));
}

tile_status tile_function_evaluate(tile_function function,
                                   const tile_value *args, size_t num_args,
                                   int exact, tile_host_results *results) {
  if (!function || !results || (num_args > 0 && !args))
    return tile::capi::error("tile_function_evaluate: a null argument");
  *results = nullptr;
  tile_module module = function->module;
  std::vector<tile::interp::Buffer> buffers;
  for (size_t i = 0; i < num_args; ++i) {
    std::string what = function->name + " argument #" + std::to_string(i);
    const tile_value &value = args[i];
    if (value.kind == TILE_VALUE_FLOAT) {
      buffers.push_back(tile::interp::Buffer::scalar(value.scalar));
      continue;
    }
    if (value.kind == TILE_VALUE_INT) {
      buffers.push_back(
          tile::interp::Buffer::scalar(static_cast<double>(value.integer)));
      continue;
    }
    const tile_tensor &tensor = value.tensor;
    if (value.kind != TILE_VALUE_TENSOR || tensor.dtype != TILE_DTYPE_F64)
      return tile::capi::error(
          what + ": host evaluation takes f64 tensors and scalars");
    if (tensor.rank < 0 || tensor.rank > 64 ||
        (tensor.rank > 0 && !tensor.shape))
      return tile::capi::error(what + " has no valid shape");
    std::vector<int64_t> shape(tensor.shape, tensor.shape + tensor.rank);
    int64_t count = 1;
    for (int64_t size : shape) {
      if (size < 0 || __builtin_mul_overflow(count, size, &count))
        return tile::capi::error(what + " has the invalid shape " +
                                 tile::rt::formatShape(shape));
    }
    if (count > 0 && !tensor.data)
      return tile::capi::error(what + " is a null pointer");
    const double *data = static_cast<const double *>(tensor.data);
    buffers.push_back(
        tile::interp::Buffer::tensor(shape, tile::interp::StorageType::F64,
                                     std::vector<double>(data, data + count)));
  }
  std::lock_guard<std::mutex> lock(module->mutex);
  StatusOr<mlir::func::FuncOp> func = hostFunction(module, function->name);
  if (!func)
    return tile::capi::toC(func.takeStatus());
  tile::interp::EvalOptions options;
  options.roundStorage = exact == 0;
  auto evaluated = tile::interp::evaluate(*func, buffers, options);
  if (!evaluated)
    return tile::capi::error(function->name + ": " +
                             llvm::toString(evaluated.takeError()));
  *results = new tile_host_results_t{std::move(*evaluated)};
  return nullptr;
}

size_t tile_host_results_count(tile_host_results results) {
  return results ? results->buffers.size() : 0;
}
int32_t tile_host_results_rank(tile_host_results results, size_t index) {
  if (!results || index >= results->buffers.size())
    return 0;
  return static_cast<int32_t>(results->buffers[index].shape.size());
}
const int64_t *tile_host_results_shape(tile_host_results results,
                                       size_t index) {
  if (!results || index >= results->buffers.size())
    return nullptr;
  return results->buffers[index].shape.data();
}
const double *tile_host_results_data(tile_host_results results, size_t index) {
  if (!results || index >= results->buffers.size())
    return nullptr;
  return results->buffers[index].values.data();
}
void tile_host_results_destroy(tile_host_results results) { delete results; }

} // extern "C"

//===- Launcher.cpp - launch compiled kernels by their manifest ----------===//

#include "tile/Launcher/Launcher.h"
#include "Manifest.h"

namespace tile::ops {

using rt::Status;
using rt::StatusOr;

//===----------------------------------------------------------------------===//
// Launcher
//===----------------------------------------------------------------------===//

using manifest::Function;
using manifest::Kernel;
using manifest::Param;

struct LaunchPlan::Impl {
  std::map<std::string, Function> functions;

  Status bindTensor(const rt::TensorView &view, const Param &param,
                    const std::string &what,
                    std::map<std::string, int64_t> &symbols,
                    bool checkPointers) const;
  /// Checks the arguments' tensors and binds rows, widths and integer
  /// scalars (`arg<i>`).
  StatusOr<const Function *>
  bindArguments(const std::string &name, const std::vector<Argument> &arguments,
                std::map<std::string, int64_t> &symbols,
                bool checkPointers) const;
  /// Checks the shape constraints; with `onlyBound`, those that name a
  /// symbol not bound yet are left for the launch.
  Status checkConstraints(const std::string &name, const Function &function,
                          const std::map<std::string, int64_t> &symbols,
                          bool onlyBound = false) const;
  /// The workspace the bound function needs, in bytes (0: none).
  StatusOr<size_t>
  workspaceBytes(const Function &function,
                 std::map<std::string, int64_t> &symbols) const;
};

LaunchPlan::LaunchPlan() : impl(std::make_unique<Impl>()) {}
LaunchPlan::~LaunchPlan() = default;
LaunchPlan::LaunchPlan(LaunchPlan &&) = default;
LaunchPlan &LaunchPlan::operator=(LaunchPlan &&) = default;

std::map<std::string, int64_t> LaunchPlan::kernelBlocks() const {
  std::map<std::string, int64_t> blocks;
  for (auto &[name, function] : impl->functions)
    for (const Kernel &kernel : function.kernels)
      blocks[kernel.name] = kernel.block;
  return blocks;
}

std::vector<std::string>
LaunchPlan::shapeExpressions(const std::string &function, bool result,
                             int64_t index) const {
  auto found = impl->functions.find(function);
  if (found == impl->functions.end())
    return {};
  Param::Kind kind = result ? Param::Kind::Result : Param::Kind::Argument;
  for (const Param &param : found->second.params)
    if (param.kind == kind && param.index == index && param.buffer) {
      std::vector<std::string> texts;
      for (const Expression &size : param.shape)
        texts.push_back(size.text());
      return texts;
    }
  return {};
}

bool LaunchPlan::countsArrivals() const {
  for (auto &[name, function] : impl->functions)
    for (const Param &param : function.params)
      if (param.kind == Param::Kind::Arrivals)
        return true;
  return false;
}

StatusOr<LaunchPlan> LaunchPlan::parse(const std::string &text) {
  StatusOr<std::map<std::string, Function>> functions = manifest::read(text);
  if (!functions)
    return functions.takeStatus();
  LaunchPlan plan;
  plan.impl->functions = std::move(*functions);
  return plan;
}

Status LaunchPlan::Impl::bindTensor(const rt::TensorView &view,
                                    const Param &param, const std::string &what,
                                    std::map<std::string, int64_t> &symbols,
                                    bool checkPointers) const {

  // Leading dimensions flatten into rows.
  std::vector<int64_t> flat;
  if (param.shape.size() == 2) {
    if (view.shape.empty())
      return Status::error(what + " has shape [], expected [rows, width]");
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < view.shape.size(); ++i)
      rows *= view.shape[i];
    flat = {rows, view.shape.back()};
  } else {
    int64_t count = 1;
    for (int64_t size : view.shape)
      count *= size;
    flat = {count};
    const std::string *only =
        param.shape.size() == 1 ? param.shape[0].symbol() : nullptr;
    if (param.shape.size() == 1 && !(only && *only == "rows") &&
        view.shape.size() != 1)
      return Status::error(what + " has shape " + rt::formatShape(view.shape) +
                           ", expected a vector");
  }
  rt::TensorView flatView = view;
  flatView.shape = flat;
  // Inferring shapes, the tensors may have no storage yet (torch's fake
  // tensors): the pointer rules are checked when it launches.
  if (!checkPointers)
    flatView.data = rt::byteSize(param.dtype);
  if (Status status = rt::checkTensor(flatView, what, param.dtype,
                                      std::vector<int64_t>(flat.size(), -1));
      !status)
    return status;
  for (size_t i = 0; i < param.shape.size(); ++i) {
    const Expression &size = param.shape[i];
    if (const std::string *symbol = size.symbol();
        symbol && !symbols.count(*symbol)) {
      symbols[*symbol] = flat[i];
      continue;
    }
    StatusOr<int64_t> expected = size.evaluate(symbols);
    if (!expected)
      return expected.takeStatus();
    if (*expected != flat[i])
      return Status::error(
          what + " has shape " + rt::formatShape(view.shape) + ": its " +
          (param.shape.size() == 2 && i == 0 ? "row count" : "width") + " " +
          std::to_string(flat[i]) + " should be " + size.text() + " = " +
          std::to_string(*expected));
  }
  return Status::ok();
}

StatusOr<const Function *> LaunchPlan::Impl::bindArguments(
    const std::string &name, const std::vector<Argument> &arguments,
    std::map<std::string, int64_t> &symbols, bool checkPointers) const {
  auto found = functions.find(name);
  if (found == functions.end())
    return Status::error("no compiled function '" + name + "'");
  const Function &function = found->second;
  for (const Param &param : function.params) {
    if (param.kind != Param::Kind::Argument)
      continue;
    if (param.index >= static_cast<int64_t>(arguments.size()))
      return Status::error(name + " takes more than " +
                           std::to_string(arguments.size()) + " arguments");
    const Argument &argument = arguments[param.index];
    std::string what = name + " argument #" + std::to_string(param.index);
    if (param.buffer) {
      const auto *view = std::get_if<rt::TensorView>(&argument);
      if (!view)
        return Status::error(what + " must be a tensor");
      if (Status s = bindTensor(*view, param, what, symbols, checkPointers); !s)
        return s;
    } else if (const auto *integer = std::get_if<int64_t>(&argument)) {
      symbols["arg" + std::to_string(param.index)] = *integer;
    } else if (!std::holds_alternative<float>(argument)) {
      return Status::error(what + " must be a scalar");
    }
  }
  return &function;
}

Status LaunchPlan::Impl::checkConstraints(
    const std::string &name, const Function &function,
    const std::map<std::string, int64_t> &symbols, bool onlyBound) const {
  for (const manifest::Constraint &constraint : function.constraints) {
    StatusOr<int64_t> lhs = constraint.lhs.evaluate(symbols);
    StatusOr<int64_t> rhs = constraint.rhs.evaluate(symbols);
    if (onlyBound && (!lhs || !rhs) &&
        (lhs.message().rfind("unbound symbol", 0) == 0 ||
         rhs.message().rfind("unbound symbol", 0) == 0))
      continue;
    if (!lhs)
      return lhs.takeStatus();
    if (!rhs)
      return rhs.takeStatus();
    if (constraint.equal ? *lhs != *rhs : *lhs > *rhs)
      return Status::error(
          name + ": the shapes do not fit together: " + constraint.text +
          " is " + std::to_string(*lhs) + (constraint.equal ? " == " : " <= ") +
          std::to_string(*rhs));
  }
  return Status::ok();
}

StatusOr<size_t> LaunchPlan::Impl::workspaceBytes(
    const Function &function, std::map<std::string, int64_t> &symbols) const {
  StatusOr<int64_t> ctas = function.ctas.evaluate(symbols);
  if (!ctas)
    return ctas.takeStatus();
  symbols["ctas"] = *ctas;
  StatusOr<int64_t> elements = function.workspace.evaluate(symbols);
  if (!elements)
    return elements.takeStatus();
  if (*elements < 0 || *elements > (int64_t(1) << 60))
    return Status::error("a workspace of " + std::to_string(*elements) +
                         " f32 elements is out of range");
  return static_cast<size_t>(*elements) * 4;
}

StatusOr<LaunchPlan::Inferred>
LaunchPlan::infer(const std::string &name,
                  const std::vector<Argument> &arguments) const {
  std::map<std::string, int64_t> symbols;
  StatusOr<const Function *> function =
      impl->bindArguments(name, arguments, symbols, /*checkPointers=*/false);
  if (!function)
    return function.takeStatus();
  if (Status s = impl->checkConstraints(name, **function, symbols,
                                        /*onlyBound=*/true);
      !s)
    return s;
  Inferred inferred;
  for (const Param &param : (*function)->params) {
    if (param.kind != Param::Kind::Result)
      continue;
    std::vector<int64_t> shape;
    for (const Expression &size : param.shape) {
      StatusOr<int64_t> value = size.evaluate(symbols);
      if (!value)
        return value.takeStatus();
      shape.push_back(*value);
    }
    if (inferred.results.size() <= static_cast<size_t>(param.index))
      inferred.results.resize(param.index + 1);
    inferred.results[param.index] = {std::move(shape), param.dtype};
  }
  StatusOr<size_t> workspace = impl->workspaceBytes(**function, symbols);
  if (!workspace)
    return workspace.takeStatus();
  inferred.workspaceBytes = *workspace;
  return inferred;
}

StatusOr<LaunchPlan::Bound>
LaunchPlan::bind(const std::string &name,
                 const std::vector<Argument> &arguments,
                 const std::vector<rt::TensorView> &results) const {
  std::map<std::string, int64_t> symbols;
  // Bind arguments first (they define rows and widths), then check results.
  StatusOr<const Function *> found =
      impl->bindArguments(name, arguments, symbols, /*checkPointers=*/true);
  if (!found)
    return found.takeStatus();
  const Function &function = **found;
  for (const Param &param : function.params) {
    if (param.kind != Param::Kind::Result)
      continue;
    if (param.index >= static_cast<int64_t>(results.size()))
      return Status::error(name + " writes " + std::to_string(param.index + 1) +
                           " or more results, " +
                           std::to_string(results.size()) + " given");
    if (Status s = impl->bindTensor(
            results[param.index], param,
            name + " result #" + std::to_string(param.index), symbols,
            /*checkPointers=*/true);
        !s)
      return s;
  }
  if (Status s = impl->checkConstraints(name, function, symbols); !s)
    return s;
  StatusOr<size_t> workspace = impl->workspaceBytes(function, symbols);
  if (!workspace)
    return workspace.takeStatus();
  int64_t ctas = symbols["ctas"];
  Bound bound;
  bound.workspaceBytes = *workspace;
  rt::KernelArgs &args = bound.args;
  for (const Param &param : function.params) {
    switch (param.kind) {
    case Param::Kind::Argument: {
      const Argument &argument = arguments[param.index];
      if (const auto *view = std::get_if<rt::TensorView>(&argument))
        args.pointer(view->data);
      else if (const auto *f = std::get_if<float>(&argument))
        args.f32(*f);
      else
        args.index(std::get<int64_t>(argument));
      break;
    }
    case Param::Kind::Result:
      args.pointer(results[param.index].data);
      break;
    case Param::Kind::Rows:
      args.index(symbols["rows"]);
      break;
    case Param::Kind::Width:
      args.index(symbols["w" + std::to_string(param.index)]);
      break;
    case Param::Kind::Ctas:
      args.index(ctas);
      break;
    case Param::Kind::Workspace:
      bound.workspaceParam = args.size();
      args.pointer(0);
      break;
    case Param::Kind::Arrivals:
      bound.arrivalsParam = args.size();
      args.pointer(0);
      break;
    }
  }
  for (const Kernel &kernel : function.kernels) {
    StatusOr<int64_t> grid = kernel.grid.evaluate(symbols);
    if (!grid)
      return grid.takeStatus();
    // cuLaunchKernel takes at most 2^31 - 1 CTAs in x (an element grid is
    // a CTA per 1024 elements: 2^41 of them would pass it).
    if (*grid < 0 || *grid > 0x7fffffff)
      return Status::error(name + ": kernel " + kernel.name +
                           " would need a grid of " + std::to_string(*grid) +
                           " CTAs, more than the 2^31 - 1 a launch takes");
    bound.launches.push_back({kernel.name, static_cast<unsigned>(*grid),
                              static_cast<unsigned>(kernel.block),
                              kernel.overlapsPrevious, kernel.cooperative});
  }
  return bound;
}

StatusOr<std::unique_ptr<Launcher>>
Launcher::create(const rt::Device &device, const jit::CompiledKernels &kernels,
                 LoadOptions options) {
  StatusOr<LaunchPlan> plan = LaunchPlan::parse(kernels.manifest);
  if (!plan)
    return plan.takeStatus();
  StatusOr<rt::Module> module = rt::Module::load(device, kernels.ptx);
  if (!module)
    return module.takeStatus();
  std::unique_ptr<Launcher> launcher(new Launcher());
  launcher->dev = &device;
  launcher->plan = std::move(*plan);
  launcher->module = std::move(*module);
  for (auto [name, block] : launcher->plan.kernelBlocks()) {
    StatusOr<rt::cu::Function> function = launcher->module.function(name);
    if (!function)
      return function.takeStatus();
    StatusOr<rt::FunctionInfo> info = rt::functionInfo(device, *function);
    if (!info)
      return info.takeStatus();
    Loaded &loaded = launcher->kernels[name];
    loaded.function = *function;
    loaded.threads = static_cast<int>(block);
    loaded.info = *info;
    loaded.residentCtas =
        rt::residentCtas(device.smLimits(), info->resources, loaded.threads);
  }
  if (options.registerCaps)
    if (Status s = launcher->loadCapped(kernels.ptx); !s)
      return s;
  if (launcher->plan.countsArrivals()) {
    auto counters =
        rt::DeviceBuffer::allocate(device, kArrivalCounters * sizeof(uint32_t));
    if (!counters)
      return counters.takeStatus();
    launcher->arrivals = std::move(*counters);
    if (Status s = launcher->arrivals.fill(0); !s)
      return s;
    // Zero before any stream's first launch reads it.
    if (Status s = rt::synchronize(device); !s)
      return s;
  }
  return launcher;
}

rt::cu::DevicePtr Launcher::arrivalsFor(rt::cu::Stream stream) {
  std::lock_guard<std::mutex> lock(arrivalsMutex);
  auto [slot, added] = arrivalSlots.try_emplace(stream, nextArrivalSlot);
  if (added) {
    // A ring: after kArrivalCounters streams the oldest stream's counter
    // passes to the new one, which is safe unless both streams run a folded
    // finalize at the same moment.
    std::optional<rt::cu::Stream> &owner = arrivalOwners[nextArrivalSlot];
    if (owner)
      arrivalSlots.erase(*owner);
    owner = stream;
    nextArrivalSlot = (nextArrivalSlot + 1) % kArrivalCounters;
  }
  return arrivals.data() + slot->second * sizeof(uint32_t);
}

// The lowering cannot choose a register cap: whether ptxas fits a kernel
// under it without spilling is known only after the driver's JIT ran, and
// a cap that spills costs more than the CTA it gains (f16 RMSNorm forward,
// docs/Performance.md), while a cap passed to a whole module slowed kernels
// it did not bind. So the cap is tried here, per kernel, where registers
// are the only thing between the kernel and one more CTA per SM, and kept
// only if the capped variant uses no local memory.
Status Launcher::loadCapped(const std::string &ptx) {
  const rt::SmLimits &sm = dev->smLimits();
  std::map<int, std::vector<std::pair<std::string, Loaded *>>> byCap;
  for (auto &[name, loaded] : kernels) {
    if (loaded.info.localBytes != 0)
      continue; // spills already; a cap would add to it
    if (int cap = rt::registerCapForOneMoreCta(sm, loaded.info.resources,
                                               loaded.threads))
      byCap[cap].push_back({name, &loaded});
  }
  for (auto &[cap, candidates] : byCap) {
    StatusOr<rt::Module> capped = rt::Module::load(*dev, ptx, cap);
    if (!capped)
      continue; // the uncapped module loaded: launch that
    bool used = false;
    for (auto &[name, loaded] : candidates) {
      StatusOr<rt::cu::Function> function = capped->function(name);
      if (!function)
        return function.takeStatus();
      StatusOr<rt::FunctionInfo> info = rt::functionInfo(*dev, *function);
      if (!info)
        return info.takeStatus();
      int ctas = rt::residentCtas(sm, info->resources, loaded->threads);
      if (info->localBytes != 0 || ctas <= loaded->residentCtas)
        continue;
      loaded->capped = *function;
      loaded->cappedRegisters = info->resources.registers;
      loaded->cappedResidentCtas = ctas;
      used = true;
    }
    if (used)
      cappedModules.push_back(std::move(*capped));
  }
  return Status::ok();
}

std::vector<KernelLoad> Launcher::loads() const {
  std::vector<KernelLoad> result;
  for (auto &[name, loaded] : kernels)
    result.push_back({name, loaded.threads, loaded.info.resources.registers,
                      loaded.residentCtas, loaded.cappedRegisters,
                      loaded.cappedResidentCtas});
  return result;
}

std::string describe(const KernelLoad &load) {
  std::string text = load.name + ", " + std::to_string(load.threads) +
                     " threads: " + std::to_string(load.registers) +
                     " registers, " + std::to_string(load.residentCtas) +
                     " CTAs per SM";
  if (load.cappedRegisters)
    text += " -> " + std::to_string(load.cappedRegisters) + ", " +
            std::to_string(load.cappedResidentCtas);
  return text;
}

Launcher::~Launcher() = default;

Status Launcher::run(const std::string &function,
                     const std::vector<Argument> &arguments,
                     const std::vector<rt::TensorView> &results,
                     const RunOptions &options) {
  StatusOr<LaunchPlan::Bound> bound = plan.bind(function, arguments, results);
  if (!bound)
    return bound.takeStatus();
  rt::cu::DevicePtr scratch = options.workspace;
  if (options.callerWorkspace) {
    if (bound->workspaceBytes > 0 &&
        (!scratch || options.workspaceBytes < bound->workspaceBytes))
      return Status::error(function + " needs a workspace of " +
                           std::to_string(bound->workspaceBytes) + " bytes, " +
                           std::to_string(options.workspaceBytes) + " given");
    if (scratch % 16 != 0)
      return Status::error(
          function + ": the workspace is misaligned: address " +
          std::to_string(scratch) + " is not a multiple of 16 bytes");
  } else {
    if (bound->workspaceBytes > 0 && workspace.size() < bound->workspaceBytes) {
      auto buffer = rt::DeviceBuffer::allocate(*dev, bound->workspaceBytes);
      if (!buffer)
        return buffer.takeStatus();
      workspace = std::move(*buffer);
    }
    scratch = workspace.data();
  }
  // Launches enter the context themselves; the scope spares each of them
  // the switch where the caller's current context is another device's.
  rt::ContextScope scope(*dev);
  if (!scope.status())
    return scope.status();
  bound->args.setPointer(bound->workspaceParam, scratch);
  if (bound->arrivalsParam)
    bound->args.setPointer(*bound->arrivalsParam, arrivalsFor(options.stream));
  for (const LaunchPlan::Bound::Launch &launch : bound->launches) {
    rt::LaunchConfig config;
    config.grid = launch.grid;
    config.block = launch.block;
    config.stream = options.stream;
    config.overlapPrevious = launch.overlapsPrevious;
    config.cooperative = launch.cooperative;
    // The capped variant only pays where the grid is more than one wave of
    // the uncapped kernel; below that the extra CTAs per SM sit idle.
    const Loaded &loaded = kernels.at(launch.kernel);
    int64_t sms = dev->multiprocessors();
    int64_t wave = sms * loaded.residentCtas;
    rt::cu::Function kernel =
        loaded.capped && launch.grid > wave ? loaded.capped : loaded.function;
    int64_t resident =
        sms * (kernel == loaded.capped ? loaded.cappedResidentCtas
                                       : loaded.residentCtas);
    // Said here rather than by the driver's COOPERATIVE_LAUNCH_TOO_LARGE.
    if (launch.cooperative && launch.grid > resident)
      return Status::error(
          function + ": kernel " + launch.kernel + " needs its " +
          std::to_string(launch.grid) +
          " CTAs resident at once (its last CTAs sum the others' partial "
          "rows), but this device holds " +
          std::to_string(resident) +
          "; compile it for this device (jit::CompileOptions::forDevice) "
          "or without finalize = \"folded\"");
    if (Status s = rt::launch(*dev, kernel, config, bound->args); !s)
      return s;
  }
  return Status::ok();
}

} // namespace tile::ops

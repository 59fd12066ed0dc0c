//===- Launcher.h - launch compiled kernels by their manifest ---*- C++ -*-===//
//
// Binds a call's tensors and scalars to a compiled function's kernels as the
// manifest describes them: checks every tensor's dtype and shape (binding
// the symbols `rows`, `w<i>`, `arg<i>`), checks the shape constraints,
// evaluates the launch rules, provides the workspace, and launches the row
// kernel and, after it, the finalize kernel.
//
// Tile::Launcher: no MLIR, no LLVM — a program that loads prebuilt PTX and
// its manifest links only it and Tile::Runtime (unittests/Launcher).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LAUNCHER_LAUNCHER_H
#define TILE_LAUNCHER_LAUNCHER_H

#include "tile/JIT/CompiledKernels.h"
#include "tile/Runtime/Runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

namespace tile::ops {

/// Arrivals counters a launcher keeps for folded finalizes: one per stream
/// it launches them on, for this many streams at once.
constexpr size_t kArrivalCounters = 1024;

/// One argument of a call: a tensor, or a scalar (f32 or integer).
using Argument = std::variant<rt::TensorView, float, int64_t>;

/// What the manifest says about each function, without a GPU: enough to
/// check a call's tensors and to work out its launches.
class LaunchPlan {
public:
  static rt::StatusOr<LaunchPlan> parse(const std::string &manifest);
  LaunchPlan();
  ~LaunchPlan();
  LaunchPlan(LaunchPlan &&);
  LaunchPlan &operator=(LaunchPlan &&);

  /// A call bound to its kernels: the launches in order and the value of
  /// every kernel parameter.
  struct Bound {
    struct Launch {
      std::string kernel;
      unsigned grid = 0, block = 0;
      /// Launched with programmatic stream serialization (the manifest's
      /// `overlaps_previous`: the kernel waits for its predecessor itself).
      bool overlapsPrevious = false;
      /// Launched cooperatively (the manifest's `cooperative`: its CTAs
      /// wait for each other, so the whole grid must be resident).
      bool cooperative = false;
    };
    std::vector<Launch> launches;
    /// One per kernel parameter, in order: a tensor's pointer, a scalar's
    /// bits, a size, or (workspace) 0 to be filled by the launcher.
    rt::KernelArgs args;
    size_t workspaceBytes = 0;
    /// The index of the workspace parameter in `args`.
    size_t workspaceParam = 0;
    /// The index of the arrivals counter's parameter in `args`, where the
    /// function has one (a folded finalize): the launcher fills it with a
    /// zeroed counter of its own per stream.
    std::optional<size_t> arrivalsParam;
  };

  /// Checks `arguments` (one per function argument) and `results` against
  /// `function`'s manifest entry: dtypes, shapes (binding rows and widths),
  /// the shape constraints, pointers. Errors name the tensor and the rule.
  rt::StatusOr<Bound> bind(const std::string &function,
                           const std::vector<Argument> &arguments,
                           const std::vector<rt::TensorView> &results) const;

  /// What a call of `function` on `arguments` produces, found from the
  /// arguments' shapes alone (their pointers are not looked at, so a
  /// framework's storage-less tensors do): each result's flattened shape
  /// and dtype, and the workspace the launch needs. Checks what bind checks
  /// of the arguments, and the shape constraints among them.
  struct Inferred {
    struct Result {
      std::vector<int64_t> shape;
      rt::DType dtype = rt::DType::F32;
    };
    std::vector<Result> results;
    size_t workspaceBytes = 0;
  };
  rt::StatusOr<Inferred> infer(const std::string &function,
                               const std::vector<Argument> &arguments) const;

  /// The flattened shape of `function`'s argument or result `index` as the
  /// manifest writes it, an expression per dimension (`rows`, `w0`,
  /// `(w1 * 2)`, `ceildiv(w0, 256)`) over `rows` (a [rows, width] buffer's
  /// leading dimensions, flattened), `w<i>` (argument i's width) and
  /// `arg<i>` (integer argument i): what infer evaluates. Symbols bind in
  /// argument order at their first plain occurrence. Empty for a scalar or
  /// an index the function does not have.
  std::vector<std::string> shapeExpressions(const std::string &function,
                                            bool result, int64_t index) const;

  /// The kernels the manifest lists and the threads of each one's CTAs.
  std::map<std::string, int64_t> kernelBlocks() const;
  /// Whether a function takes an arrivals counter (a folded finalize).
  bool countsArrivals() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

struct LoadOptions {
  /// Where registers alone keep a kernel from one more resident CTA per
  /// SM, also load it under a register cap and launch that variant on
  /// grids larger than one wave (if the driver's JIT fits it without
  /// spilling).
  bool registerCaps = true;
};

/// How a kernel was loaded: registers a thread and CTAs resident per SM,
/// and the same for its register-capped variant (0 where it has none).
struct KernelLoad {
  std::string name;
  int threads = 0;
  int registers = 0, residentCtas = 0;
  int cappedRegisters = 0, cappedResidentCtas = 0;
};

/// "rms_norm, 256 threads: 94 registers, 2 CTAs per SM -> 80, 3" (the
/// capped figures only where there is a capped variant).
std::string describe(const KernelLoad &load);

/// Where a run launches: a stream of the launcher's device, and the
/// workspace (device memory of at least LaunchPlan::Inferred's bytes,
/// 16-byte aligned; may be left null where the plan needs none). With
/// no workspace given the launcher keeps its own, allocating it on first
/// use: a framework that captures CUDA graphs, or owns the memory, passes
/// one from its allocator instead.
struct RunOptions {
  rt::cu::Stream stream = nullptr;
  rt::cu::DevicePtr workspace = 0;
  size_t workspaceBytes = 0;
  bool callerWorkspace = false;
  /// Memory only the call itself uses (nothing in it outlives the call),
  /// apart from a workspace the caller keeps between calls: the untiled
  /// MLP then keeps g and u alone in `workspace` and puts its cuBLASLt
  /// workspaces and h here (GroupedSwiGLUMLP). Kernels ignore it.
  rt::cu::DevicePtr scratch = 0;
  size_t scratchBytes = 0;
};

class Launcher {
public:
  /// Loads `kernels` on `device`; fails on a malformed manifest or a module
  /// the driver rejects.
  static rt::StatusOr<std::unique_ptr<Launcher>>
  create(const rt::Device &device, const jit::CompiledKernels &kernels,
         LoadOptions options = {});
  ~Launcher();

  /// Every kernel as loaded, in name order.
  std::vector<KernelLoad> loads() const;

  /// Runs `function` (e.g. "rms_norm_bwd") on `arguments` writing
  /// `results`, asynchronously on `options.stream` (rt::synchronize
  /// waits), with the device's context made current.
  rt::Status run(const std::string &function,
                 const std::vector<Argument> &arguments,
                 const std::vector<rt::TensorView> &results,
                 const RunOptions &options = {});

  const LaunchPlan &launchPlan() const { return plan; }
  const rt::Device &device() const { return *dev; }

private:
  Launcher() = default;
  struct Loaded {
    rt::cu::Function function = nullptr;
    int threads = 0;
    rt::FunctionInfo info; ///< as compiled, without a cap
    /// CTAs per SM as compiled: a grid larger than a wave of them launches
    /// the capped variant.
    int residentCtas = 0;
    rt::cu::Function capped = nullptr;
    int cappedRegisters = 0, cappedResidentCtas = 0;
  };
  /// Loads the register-capped variants where they keep more CTAs resident
  /// without spilling (compiling `ptx` again under each distinct cap).
  rt::Status loadCapped(const std::string &ptx);

  const rt::Device *dev = nullptr;
  LaunchPlan plan;
  rt::Module module;
  /// One module per distinct cap, holding the capped variants.
  std::vector<rt::Module> cappedModules;
  std::map<std::string, Loaded> kernels;
  rt::DeviceBuffer workspace;
  /// The arrivals counters of folded finalizes, one per stream: launches
  /// on one stream run one after another, so they can share one; launches
  /// on two streams may run at once, so they cannot. They are zeroed once,
  /// when the launcher is created (no allocation or memset at a launch, so
  /// a stream being captured into a CUDA graph may launch them), and every
  /// kernel leaves its counter zero.
  rt::DeviceBuffer arrivals;
  /// The counter each stream uses, and the stream each counter serves; a
  /// stream new to the launcher takes the next counter round the ring
  /// (kArrivalCounters of them) from the stream that had it.
  std::map<rt::cu::Stream, size_t> arrivalSlots;
  std::vector<std::optional<rt::cu::Stream>> arrivalOwners =
      std::vector<std::optional<rt::cu::Stream>>(kArrivalCounters);
  size_t nextArrivalSlot = 0;
  std::mutex arrivalsMutex;
  /// The counter of `stream`'s launches.
  rt::cu::DevicePtr arrivalsFor(rt::cu::Stream stream);
};

} // namespace tile::ops

#endif // TILE_LAUNCHER_LAUNCHER_H

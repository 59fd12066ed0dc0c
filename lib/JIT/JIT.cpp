//===- JIT.cpp - compile tile kernels in-process, with a cache -----------===//
//
// A disk entry is `<key>.tile`: a header line `TILEJIT2 <key> <size>...
// <checksum>` followed by the PTX, the manifest, the signature and the IR. It
// is written to a temporary file and renamed, so readers never see half an
// entry; one whose header, sizes or checksum do not match is recompiled and
// replaced. Compiling happens outside the lock, each in its own
// MLIRContext, so threads compile in parallel; two threads that miss on the
// same key both compile and store the same bytes.
//
//===----------------------------------------------------------------------===//

#include "tile/JIT/JIT.h"
#include "tile/Tools/ToolSupport.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include "tile/Conversion/TileToGPU/Manifest.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Target/KernelSignature.h"
#include "tile/Version/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <dlfcn.h>
#include <sstream>

using namespace mlir;

namespace tile::jit {

namespace {
uint64_t fnv1a(const std::string &text, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string keyOf(const std::string &source, const CompileOptions &options) {
  std::ostringstream all;
  all << Jit::compilerVersion() << '\0' << options.chip << '\0'
      << options.sourceName << '\0' << options.dtype << '\0'
      << options.differentiate << '\0' << options.policy << '\0'
      << options.mainGrad << '\0' << options.returnPrimal << '\0'
      << options.threads << '\0' << options.rowsPerCta << '\0'
      << options.persistentCtas << '\0' << options.rowGrid << '\0'
      << options.device.str() << '\0';
  for (auto [index, width] : options.widths)
    all << 'w' << index << '=' << width << ',';
  all << '\0' << source;
  std::string text = all.str();
  // Two independent 64-bit hashes: collisions are not a practical concern.
  return hex(fnv1a(text)) + hex(fnv1a(text, 0x84222325cbf29ce4ULL));
}

std::string defaultDirectory() {
  if (const char *dir = std::getenv("TILE_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return "none";
  llvm::sys::path::append(path, "tile");
  return std::string(path);
}

/// Changes every bf16/f16 tensor of the kernels to `dtype`, so that one
/// source serves every storage type: casts to f32 stay casts (or fold).
LogicalResult specializeStorage(ModuleOp module, StringRef dtype) {
  MLIRContext *context = module.getContext();
  Type target = llvm::StringSwitch<Type>(dtype)
                    .Case("bf16", BFloat16Type::get(context))
                    .Case("f16", Float16Type::get(context))
                    .Case("f32", Float32Type::get(context))
                    .Default(Type());
  if (!target)
    return module.emitError("unknown dtype '") << dtype << "'";
  auto convert = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor &&
        (tensor.getElementType().isBF16() || tensor.getElementType().isF16()))
      return tensor.clone(target);
    return type;
  };
  module.walk([&](Operation *op) {
    for (Value result : op->getResults())
      result.setType(convert(result.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(convert(arg.getType()));
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      SmallVector<Type> inputs, results;
      for (Type type : func.getArgumentTypes())
        inputs.push_back(convert(type));
      for (Type type : func.getResultTypes())
        results.push_back(convert(type));
      func.setFunctionType(FunctionType::get(context, inputs, results));
    }
  });
  return success();
}

/// Parses, derives, specializes and lowers; diagnostics become the error.
rt::StatusOr<CompiledKernels> compileNow(const std::string &source,
                                         const CompileOptions &options) {
  DialectRegistry registry;
  mlir::tile::registerTileDialects(registry);
  mlir::tile::registerGpuTargets(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream os(diagnostics);
    // file:line:col, as the tools print it.
    if (auto at = dyn_cast<FileLineColLoc>(diagnostic.getLocation()))
      os << at.getFilename().getValue() << ':' << at.getLine() << ':'
         << at.getColumn();
    else
      os << diagnostic.getLocation();
    const char *severity = "error";
    if (diagnostic.getSeverity() == DiagnosticSeverity::Warning)
      severity = "warning";
    else if (diagnostic.getSeverity() == DiagnosticSeverity::Note)
      severity = "note";
    else if (diagnostic.getSeverity() == DiagnosticSeverity::Remark)
      severity = "remark";
    os << ": " << severity << ": " << diagnostic << "\n";
    return success();
  });
  auto fail = [&](const char *stage) {
    return rt::Status::error(std::string("tile JIT: ") + stage + " failed" +
                             (diagnostics.empty() ? "" : ":\n" + diagnostics));
  };

  // MLIR's parser recurses per level of nesting: deep input is refused
  // before it reaches it (ToolSupport.h), as the tools do.
  {
    llvm::SourceMgr sourceMgr;
    unsigned id = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(source, options.sourceName,
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    llvm::raw_string_ostream os(diagnostics);
    if (mlir::tile::reportExcessiveNesting(sourceMgr, id, &os))
      return fail("parsing the kernel");
  }
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      source, ParserConfig(&context), options.sourceName);
  if (!module)
    return fail("parsing the kernel");
  if (!options.dtype.empty() &&
      (failed(specializeStorage(*module, options.dtype)) ||
       failed(mlir::verify(*module))))
    return fail("specializing the dtype");
  if (options.differentiate) {
    mlir::tile::DifferentiateOptions derive;
    using mlir::tile::RecomputePolicy;
    if (options.policy ==
        mlir::tile::getRecomputePolicyName(RecomputePolicy::SaveRowStats))
      derive.policy = RecomputePolicy::SaveRowStats;
    else if (options.policy !=
             mlir::tile::getRecomputePolicyName(RecomputePolicy::Recompute))
      return rt::Status::error("tile JIT: unknown recompute policy '" +
                               options.policy + "'");
    derive.mainGrad = options.mainGrad;
    derive.returnPrimal = options.returnPrimal;
    SmallVector<func::FuncOp> kernels;
    for (auto func : module->getOps<func::FuncOp>())
      if (func->hasAttr(mlir::tile::TileDialect::getKernelAttrName()))
        kernels.push_back(func);
    for (func::FuncOp kernel : kernels)
      if (failed(mlir::tile::differentiateKernel(kernel, derive)))
        return fail("differentiating");
    PassManager cleanup(&context);
    cleanup.addPass(createCanonicalizerPass());
    cleanup.addPass(createCSEPass());
    if (failed(cleanup.run(*module)))
      return fail("simplifying the derived kernels");
  }
  if (!options.widths.empty()) {
    Builder b(&context);
    for (auto func : module->getOps<func::FuncOp>()) {
      if (!func->hasAttr(mlir::tile::TileDialect::getKernelAttrName()))
        continue;
      SmallVector<NamedAttribute> entries;
      for (auto [index, width] : options.widths)
        if (index < func.getNumArguments() &&
            isa<RankedTensorType>(func.getArgument(index).getType()))
          entries.push_back(b.getNamedAttr("w" + std::to_string(index),
                                           b.getI64IntegerAttr(width)));
      func->setAttr(mlir::tile::TileDialect::getSpecializeAttrName(),
                    b.getDictionaryAttr(entries));
    }
    if (failed(mlir::verify(*module)))
      return fail("specializing the widths");
  }
  CompiledKernels result;
  {
    llvm::raw_string_ostream ir(result.ir);
    module->print(ir);
    llvm::raw_string_ostream signature(result.signature);
    if (failed(mlir::tile::writeKernelSignatures(*module, signature)))
      return fail("describing the kernels");
  }
  // Without a chip the kernels are prepared for the host only: no PTX.
  if (!options.chip.empty()) {
    mlir::tile::PtxOptions ptxOptions;
    ptxOptions.chip = options.chip;
    ptxOptions.threads = options.threads;
    ptxOptions.persistentCtas = options.persistentCtas;
    ptxOptions.rowsPerCta = options.rowsPerCta;
    ptxOptions.rowGrid = options.rowGrid;
    ptxOptions.device = options.device;
    auto ptx = mlir::tile::compileToPtx(*module, ptxOptions);
    if (failed(ptx))
      return fail("lowering to PTX");
    for (auto &[name, text] : *ptx)
      result.ptx += text;
  }
  llvm::raw_string_ostream manifest(result.manifest);
  if (failed(mlir::tile::writeKernelManifest(*module, manifest)))
    return fail("writing the manifest");
  return result;
}

std::string entryPath(const std::string &directory, const std::string &key) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + ".tile");
  return std::string(path);
}

/// The sections of an entry, in the order they are stored.
std::vector<std::string *> sectionsOf(CompiledKernels &entry) {
  return {&entry.ptx, &entry.manifest, &entry.signature, &entry.ir};
}

std::string checksumOf(CompiledKernels &entry) {
  std::string all;
  for (std::string *section : sectionsOf(entry))
    all += *section + '\0';
  return hex(fnv1a(all));
}

std::optional<CompiledKernels>
readEntry(const std::string &path, const std::string &key, bool &corrupt) {
  corrupt = false;
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return std::nullopt;
  std::string data = (*file)->getBuffer().str();
  corrupt = true;
  size_t newline = data.find('\n');
  if (newline == std::string::npos)
    return std::nullopt;
  std::istringstream header(data.substr(0, newline));
  std::string magic, storedKey, checksum;
  header >> magic >> storedKey;
  if (!header || magic != "TILEJIT2" || storedKey != key)
    return std::nullopt;
  CompiledKernels entry;
  size_t at = newline + 1;
  for (std::string *section : sectionsOf(entry)) {
    size_t size = 0;
    header >> size;
    if (!header || size > data.size() - at)
      return std::nullopt;
    *section = data.substr(at, size);
    at += size;
  }
  header >> checksum;
  if (!header || at != data.size() || checksumOf(entry) != checksum)
    return std::nullopt;
  corrupt = false;
  entry.key = key;
  return entry;
}

void writeEntry(const std::string &directory, const std::string &path,
                CompiledKernels entry) {
  if (llvm::sys::fs::create_directories(directory))
    return; // an unwritable cache only costs a recompile next time
  llvm::SmallString<256> temporary;
  int fd;
  if (llvm::sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, temporary))
    return;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << "TILEJIT2 " << entry.key;
    for (std::string *section : sectionsOf(entry))
      os << ' ' << section->size();
    os << ' ' << checksumOf(entry) << '\n';
    for (std::string *section : sectionsOf(entry))
      os << *section;
  }
  if (llvm::sys::fs::rename(temporary, path))
    llvm::sys::fs::remove(temporary);
}
} // namespace

rt::StatusOr<CompiledKernels> Jit::compile(ModuleOp module,
                                           const CompileOptions &options) {
  std::string source;
  llvm::raw_string_ostream os(source);
  module.print(os, OpPrintingFlags().enableDebugInfo(true, false));
  return compile(source, options);
}

std::string Jit::compilerVersion() {
  // No hand-bumped format number: the key names the release, the git
  // revision and the LLVM, and — for builds of a dirty tree and anything
  // else a revision does not pin — the binary this code was linked into
  // (libtile.so, or a statically linked tool): its path, size and
  // modification time. Any rebuild invalidates the disk cache; a copy of
  // the same binary at worst misses it once.
  static const std::string version = [] {
    std::string text = std::string("tile-") + ::tile::version() + " git-" +
                       ::tile::gitRevision() + " llvm-" + ::tile::llvmVersion();
    Dl_info info;
    void *self = reinterpret_cast<void *>(&Jit::compilerVersion);
    std::string binary;
    if (dladdr(self, &info) && info.dli_fname)
      binary = info.dli_fname;
    // The main executable comes as argv[0], maybe relative: ask Linux.
    if (!llvm::sys::path::is_absolute(binary))
      binary = llvm::sys::fs::getMainExecutable(nullptr, self);
    llvm::sys::fs::file_status status;
    if (!binary.empty() && !llvm::sys::fs::status(binary, status)) {
      auto modified = status.getLastModificationTime().time_since_epoch();
      text += " binary-" + binary + ":" + std::to_string(status.getSize()) +
              ":" + std::to_string(modified.count());
    }
    return text;
  }();
  return version;
}

Jit::Jit(std::string cacheDir)
    : directory(cacheDir.empty() ? defaultDirectory() : std::move(cacheDir)) {}

Jit::~Jit() = default;

CacheStats Jit::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

rt::StatusOr<CompiledKernels> Jit::compile(const std::string &source,
                                           const CompileOptions &options) {
  std::string key = keyOf(source, options);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memory.find(key); it != memory.end()) {
      ++counters.memoryHits;
      return it->second;
    }
  }
  bool useDisk = directory != "none";
  std::string path = useDisk ? entryPath(directory, key) : "";
  bool corrupt = false;
  std::optional<CompiledKernels> cached =
      useDisk ? readEntry(path, key, corrupt) : std::nullopt;
  if (cached) {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.diskHits;
    memory.emplace(key, *cached);
    return *cached;
  }
  rt::StatusOr<CompiledKernels> compiled = compileNow(source, options);
  if (!compiled)
    return compiled;
  compiled->key = key;
  if (useDisk)
    writeEntry(directory, path, *compiled);
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.compiles;
  counters.corruptEntries += corrupt;
  memory.emplace(key, *compiled);
  return *compiled;
}

} // namespace tile::jit

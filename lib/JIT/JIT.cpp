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

#include "tile/Conversion/Passes.h"
#include "tile/Conversion/TileToGPU/Manifest.h"
#include "tile/Dialect/Tile/IR/KernelVerifier.h"
#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/InitTile.h"
#include "tile/Pipelines/Pipelines.h"
#include "tile/Target/KernelSignature.h"
#include "tile/Version/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
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

/// The steps before the lowering, as pass names with options: the dtype,
/// the backward kernels and the widths.
std::vector<std::string> specializationPasses(const CompileOptions &options) {
  std::vector<std::string> passes;
  if (!options.dtype.empty())
    passes.push_back("tile-specialize-storage{dtype=" + options.dtype + "}");
  if (options.differentiate) {
    // The backward clones the forward's exponentials with their marks.
    passes.push_back("tile-approximate-shifted-exponentials");
    passes.push_back("tile-differentiate{policy=" + options.policy +
                     (options.mainGrad ? " main-grad=true" : "") +
                     (options.returnPrimal ? " return-primal=true" : "") + "}");
    passes.push_back("canonicalize");
    passes.push_back("cse");
  }
  if (!options.widths.empty()) {
    std::string widths;
    for (auto [index, width] : options.widths)
      widths += (widths.empty() ? "" : ",") + std::to_string(index) + ":" +
                std::to_string(width);
    passes.push_back("tile-specialize-widths{widths=" + widths + "}");
  }
  return passes;
}

/// The lowering: tile-lower-to-ptx, which is buildTileToPtxPipeline.
std::vector<std::string> loweringPasses(const CompileOptions &options) {
  return {"tile-lower-to-ptx{chip=" + options.chip + " " +
          options.device.str() + " " + options.schedule.str() + "}"};
}

std::string join(const std::vector<std::string> &passes) {
  std::string text;
  for (const std::string &pass : passes)
    text += (text.empty() ? "" : ",") + pass;
  return text;
}

/// The pipeline as tile-opt's --pass-pipeline takes it.
std::string spell(const std::vector<std::string> &passes) {
  return "builtin.module(" + join(passes) + ")";
}

/// The cache key: what a compile runs, as tile-opt would run it — the
/// compiler, the source's name and text, and its passes with their options
/// as spelled (every option that changes the output is an option of one of
/// them; the lowering's only where there is a chip to lower for).
std::string keyOf(const std::string &source, const CompileOptions &options) {
  std::vector<std::string> passes = specializationPasses(options);
  if (!options.chip.empty())
    for (std::string &pass : loweringPasses(options))
      passes.push_back(std::move(pass));
  std::ostringstream all;
  all << Jit::compilerVersion() << '\0' << options.sourceName << '\0'
      << spell(passes) << '\0' << source;
  std::string text = all.str();
  // Two independent 64-bit hashes: collisions are not a practical concern.
  return hex(fnv1a(text)) + hex(fnv1a(text, 0x84222325cbf29ce4ULL));
}

/// Runs `passes` on `module`, parsed from their spelling.
LogicalResult runPipeline(ModuleOp module,
                          const std::vector<std::string> &passes,
                          std::string &diagnostics) {
  // tile-opt's registry: the passes and pipelines by their names.
  static std::once_flag registered;
  std::call_once(registered, [] {
    mlir::tile::registerTilePasses();
    mlir::tile::registerTileConversionPasses();
    mlir::tile::registerTilePipelines();
  });
  PassManager pm(module.getContext());
  llvm::raw_string_ostream errors(diagnostics);
  // The module's pass manager takes the passes nested in builtin.module().
  if (failed(parsePassPipeline(join(passes), pm, errors)))
    return failure();
  return pm.run(module);
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
    if (mlir::tile::reportUnparsableInput(sourceMgr, id, &os))
      return fail("parsing the kernel");
  }
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      source, ParserConfig(&context), options.sourceName);
  if (!module)
    return fail("parsing the kernel");
  if (failed(mlir::tile::verifyOnlyKernels(*module, "the tile JIT")))
    return fail("checking the kernels");
  // The policy's name is checked here: a wrong one would otherwise read
  // as a pipeline syntax error.
  using mlir::tile::RecomputePolicy;
  if (options.differentiate &&
      options.policy !=
          mlir::tile::getRecomputePolicyName(RecomputePolicy::SaveRowStats) &&
      options.policy !=
          mlir::tile::getRecomputePolicyName(RecomputePolicy::Recompute))
    return rt::Status::error("tile JIT: unknown recompute policy '" +
                             options.policy + "'");
  // A failure names the whole pipeline, as tile-opt runs it, so that it
  // can be reproduced and bisected outside the JIT.
  auto failPipeline = [&](const char *stage) {
    rt::Status status = fail(stage);
    std::string pipeline = passPipeline(options);
    if (pipeline.empty())
      pipeline = spell(specializationPasses(options));
    std::string message = status.message();
    if (message.back() != '\n')
      message += "\n";
    return rt::Status::error(message +
                             "the JIT's pipeline, as tile-opt runs it on the "
                             "kernel source:\n  tile-opt " +
                             options.sourceName + " --pass-pipeline='" +
                             pipeline + "'\n");
  };
  std::vector<std::string> specialize = specializationPasses(options);
  if (!specialize.empty() &&
      failed(runPipeline(*module, specialize, diagnostics)))
    return failPipeline("specializing the kernels");
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
    if (failed(runPipeline(*module, loweringPasses(options), diagnostics)))
      return failPipeline("lowering to PTX");
    FailureOr<std::vector<std::pair<std::string, std::string>>> ptx =
        mlir::tile::collectPtx(*module);
    if (failed(ptx))
      return failPipeline("lowering to PTX");
    for (auto &[name, text] : *ptx)
      result.ptx += text;
  }
  llvm::raw_string_ostream manifest(result.manifest);
  if (failed(mlir::tile::writeKernelManifest(*module, manifest)))
    return fail("writing the manifest");
  return result;
}

} // namespace

std::string passPipeline(const CompileOptions &options) {
  if (options.chip.empty())
    return "";
  std::vector<std::string> passes = specializationPasses(options);
  for (std::string &pass : loweringPasses(options))
    passes.push_back(std::move(pass));
  return spell(passes);
}

namespace {
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

//===- tile-run.cpp - fuzz tile-run's command line ------------------------===//
//
// tile-run's whole command line in process (runTileRun, the code of the
// tool): option combinations, --function on every symbol of the module,
// --args edge cases (empty, placeholders, zero, negative and huge sizes,
// non-numbers). An input is
//
//   one argument per line
//   --
//   the module
//
// The module is written to a file of this process and named last. Findings
// are crashes, sanitizer reports, hangs and runaway allocations, as for
// every harness, and an error about the IR printed without its place.
//
// The mutator (below) changes the argument lines from a vocabulary of
// tile-run's options and their edge values, with the module's symbols as
// --function values, or changes the module's structure (StructureMutator),
// or mutates bytes.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "TileRun.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {
/// The element operations an evaluation or gradient check may take here:
/// about a second under ASan, well inside libFuzzer's -timeout. The
/// fuzzer's own --max-element-ops lines are dropped for this one.
constexpr const char *kWorkLimit = "--max-element-ops=16777216";
/// The most --rows x --widths cases run (each may take the work limit).
constexpr size_t kMaxCases = 16;

struct Input {
  std::vector<std::string> args;
  std::string module;
};

Input split(llvm::StringRef text) {
  Input input;
  size_t separator = text.find("\n--\n");
  bool leading = text.starts_with("--\n");
  if (separator == llvm::StringRef::npos && !leading) {
    input.module = text.str();
    return input;
  }
  llvm::StringRef head = leading ? "" : text.take_front(separator);
  input.module = text.drop_front(leading ? 3 : separator + 4).str();
  llvm::SmallVector<llvm::StringRef> lines;
  head.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines)
    input.args.push_back(line.str());
  return input;
}

std::string join(const Input &input) {
  std::string text;
  for (const std::string &arg : input.args)
    text += arg + "\n";
  return text + "--\n" + input.module;
}

/// Arguments that leave the process (--help, --version), read or write
/// elsewhere (response files, --output-dir), or set the work limit.
bool isExcluded(llvm::StringRef arg) {
  llvm::StringRef name = arg.ltrim('-');
  // LLVM reads `-h` as --help, and `--hs` as -h and -s grouped (so too
  // `--highX...`, an unknown name): every name that starts with h but
  // --high itself.
  bool high = name == "high" || name.starts_with("high=");
  return arg.starts_with("@") || (name.starts_with("h") && !high) ||
         name.starts_with("version") || name.starts_with("output-dir") ||
         name.starts_with("max-element-ops") || name.starts_with("print-all") ||
         name.starts_with("print-options");
}

/// stderr of one run, read back: tile-run reports there.
class CapturedStderr {
public:
  CapturedStderr() {
    fflush(stderr);
    file = memfd_create("tile-run-stderr", 0);
    saved = dup(2);
    if (file >= 0)
      dup2(file, 2);
  }
  std::string take() {
    fflush(stderr);
    if (saved >= 0) {
      dup2(saved, 2);
      close(saved);
      saved = -1;
    }
    std::string text;
    if (file < 0)
      return text;
    off_t size = lseek(file, 0, SEEK_END);
    text.resize(size > 0 ? size_t(size) : 0);
    if (size > 0 && pread(file, text.data(), text.size(), 0) < 0)
      text.clear();
    close(file);
    file = -1;
    return text;
  }
  ~CapturedStderr() { take(); }

private:
  int file = -1, saved = -1;
};

/// Whether `line` is an error about the IR without its place: MLIR's
/// `<unknown>` location, or the evaluator's and checks' messages about ops,
/// arguments and functions printed without `file:line:col:` before them.
/// Errors about the command line name their option and need no place.
bool isUnlocatedIRError(llvm::StringRef line) {
  // MLIR prints an unknown location as `<unknown>:0: error:`. Diagnostics
  // echo the source line after theirs, which may say anything: only a
  // line that reads as a whole diagnostic counts.
  if (line.starts_with("<unknown>:0: error: "))
    return true;
  if (!line.consume_front("error: "))
    return false;
  for (llvm::StringRef prefix :
       {"'", "backward ", "function @", "evaluating @",
        "the gradient check of @", "the gradient of ", "block argument"})
    if (line.starts_with(prefix))
      return true;
  // The evaluator's "argument #0 (tensor<...>): ..." is about the IR; the
  // spec errors of --args ("argument #0: '7by13' is not a shape") are not.
  if (line.consume_front("argument #")) {
    line = line.ltrim("0123456789");
    return line.starts_with(" (");
  }
  return line.starts_with("@") && (line.contains(" is a declaration") ||
                                   line.contains(" is not a tile.kernel"));
}

void runCommandLine(const uint8_t *data, size_t size) {
  static std::string path = [] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/tile-fuzz-run-" +
           std::to_string(getpid()) + ".mlir";
  }();
  Input input =
      split(llvm::StringRef(reinterpret_cast<const char *>(data), size));
  {
    FILE *file = std::fopen(path.c_str(), "wb");
    if (!file)
      return;
    std::fwrite(input.module.data(), 1, input.module.size(), file);
    std::fclose(file);
  }
  std::vector<const char *> argv{"tile-run"};
  // The work limit is per case: more than kMaxCases cases could take longer
  // than libFuzzer's -timeout without anything being wrong.
  size_t rows = 0, widths = 0;
  size_t *valueOf = nullptr; // `--rows 1,2`: the list is the next argument
  for (const std::string &arg : input.args) {
    if (isExcluded(arg))
      continue;
    llvm::StringRef name = llvm::StringRef(arg).ltrim('-');
    size_t values = llvm::count(arg, ',') + 1;
    if (valueOf)
      *valueOf += values;
    valueOf = name == "rows" ? &rows : name == "widths" ? &widths : nullptr;
    rows += name.starts_with("rows=") ? values : 0;
    widths += name.starts_with("widths=") ? values : 0;
    argv.push_back(arg.c_str());
  }
  if (std::max<size_t>(rows, 1) * std::max<size_t>(widths, 1) > kMaxCases)
    return;
  argv.push_back(kWorkLimit);
  argv.push_back(path.c_str());

  std::string errors;
  {
    CapturedStderr capture;
    (void)tile::run::runTileRun(static_cast<int>(argv.size()), argv.data());
    errors = capture.take();
  }
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(errors).split(lines, '\n');
  // A diagnostic echoes the source line it points at: a line of the module
  // itself, which may read like anything (the fuzzer learns the harness's
  // strings), is no diagnostic of tile-run's.
  llvm::SmallVector<llvm::StringRef> moduleLines;
  llvm::StringRef(input.module).split(moduleLines, '\n');
  llvm::StringSet<> echoes;
  for (llvm::StringRef line : moduleLines)
    echoes.insert(line);
  for (llvm::StringRef line : lines)
    if (!echoes.contains(line) && isUnlocatedIRError(line)) {
      llvm::errs() << "an error about the IR without a location: " << line
                   << "\n--- command line:";
      for (const char *arg : argv)
        llvm::errs() << " " << arg;
      llvm::errs() << "\n";
      std::abort();
    }
}

/// The module's symbols (`@name`), the values --function is tried with.
std::vector<std::string> symbolsOf(llvm::StringRef module) {
  std::vector<std::string> symbols;
  for (size_t at = module.find('@'); at != llvm::StringRef::npos;
       at = module.find('@', at + 1)) {
    size_t end = at + 1;
    while (end < module.size() &&
           (llvm::isAlnum(module[end]) || module[end] == '_' ||
            module[end] == '.' || module[end] == '$'))
      ++end;
    if (end > at + 1)
      symbols.push_back(module.slice(at + 1, end).str());
  }
  return symbols;
}

std::string randomArgument(std::mt19937 &random,
                           const std::vector<std::string> &symbols) {
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(random);
  };
  static const char *const specs[] = {"",
                                      "_",
                                      "0",
                                      "1",
                                      "1x1",
                                      "7x13",
                                      "0x0",
                                      "0x5",
                                      "3x0",
                                      "MxN",
                                      "M",
                                      "N",
                                      "Mx1",
                                      "2xN",
                                      "-1x3",
                                      "3x-1",
                                      "1x1x1",
                                      "x",
                                      "nan",
                                      "inf",
                                      "-inf",
                                      "1e309",
                                      "1e-6",
                                      "-0",
                                      "65536x1025",
                                      "99999999999x99999999999",
                                      "9223372036854775807",
                                      "4096x4096",
                                      "1x67108865"};
  static const char *const flags[] = {"--gradient",
                                      "--gradient-check",
                                      "--exact",
                                      "--print-values",
                                      "--device",
                                      "--bench",
                                      "--specialize-widths",
                                      "--main-grad",
                                      "--policy=save-row-stats",
                                      "--policy=recompute",
                                      "--policy=keep",
                                      "--mlir-print-op-on-diagnostic"};
  static const char *const numbers[] = {"0",
                                        "1",
                                        "-1",
                                        "7",
                                        "1e-300",
                                        "nan",
                                        "inf",
                                        "-3",
                                        "1e12",
                                        "",
                                        "18446744073709551616",
                                        "0.5"};
  auto specList = [&] {
    std::string list;
    for (size_t i = 0, n = pick(5); i < n; ++i)
      list += std::string(i ? "," : "") + specs[pick(std::size(specs))];
    return list;
  };
  auto numberList = [&] {
    std::string list;
    for (size_t i = 0, n = pick(4); i < n; ++i)
      list += std::string(i ? "," : "") + numbers[pick(std::size(numbers))];
    return list;
  };
  switch (pick(8)) {
  case 0:
  case 1:
    return "--function=" +
           (symbols.empty() ? std::string("f") : symbols[pick(symbols.size())]);
  case 2:
  case 3:
    return "--args=" + specList();
  case 4:
    return (pick(2) ? "--rows=" : "--widths=") + numberList();
  case 5:
    return flags[pick(std::size(flags))];
  case 6: {
    static const char *const valued[] = {"--seed=",
                                         "--low=",
                                         "--high=",
                                         "--directions=",
                                         "--tolerance=",
                                         "--fd-step=",
                                         "--bench-iterations="};
    return valued[pick(std::size(valued))] +
           std::string(numbers[pick(std::size(numbers))]);
  }
  default:
    return "--input=" +
           (symbols.empty() ? std::string("x")
                            : symbols[pick(symbols.size())]) +
           "=/dev/null";
  }
}

size_t mutateCommandLine(uint8_t *data, size_t size, size_t maxSize,
                         unsigned seed) {
  std::mt19937 random(seed);
  Input input =
      split(llvm::StringRef(reinterpret_cast<const char *>(data), size));
  switch (random() % 4) {
  case 0: { // the module's structure or bytes
    std::vector<uint8_t> module(input.module.begin(), input.module.end());
    module.resize(std::max<size_t>(maxSize, module.size()));
    size_t length = tile::fuzz::mutateStructure(
        module.data(), input.module.size(), module.size(), random());
    input.module.assign(reinterpret_cast<const char *>(module.data()), length);
    break;
  }
  case 1: // the whole input's bytes
    return LLVMFuzzerMutate(data, size, maxSize);
  default: { // an argument added, replaced or removed
    std::vector<std::string> symbols = symbolsOf(input.module);
    std::string arg = randomArgument(random, symbols);
    size_t at = input.args.empty() ? 0 : random() % input.args.size();
    switch (random() % 3) {
    case 0:
      input.args.insert(input.args.begin() + at, arg);
      break;
    case 1:
      if (input.args.empty())
        input.args.push_back(arg);
      else
        input.args[at] = arg;
      break;
    default:
      if (!input.args.empty())
        input.args.erase(input.args.begin() + at);
    }
  }
  }
  std::string text = join(input);
  if (text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return ::tile::fuzz::runHarness(data, size, runCommandLine);
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return mutateCommandLine(data, size, maxSize, seed);
}

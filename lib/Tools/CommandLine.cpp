//===- CommandLine.cpp - what every Tile tool does to its command line ---===//

#include "tile/Tools/CommandLine.h"

#include "tile/Version/Version.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;
namespace cl = llvm::cl;

void mlir::tile::prepareCommandLine(
    llvm::StringRef tool, llvm::ArrayRef<const cl::OptionCategory *> categories,
    bool readsIR) {
  static std::string name; // the version printer outlives this call
  name = tool.str();
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << ::tile::versionText(name); });

  // The context's options (MLIRContexts created after parsing read them),
  // registered first so that they are hidden with LLVM's.
  registerMLIRContextCLOptions();
  if (categories.empty()) {
    // Everything registered before main: LLVM's static options. MLIR's
    // driver registers its own (and the passes) later, while parsing.
    // LLVM's --help, --version, ... are in its "Generic Options".
    for (auto &entry : cl::getRegisteredOptions()) {
      cl::Option *option = entry.second;
      bool generic = llvm::any_of(option->Categories, [](auto *category) {
        return category->getName() == "Generic Options";
      });
      if (!generic)
        option->setHiddenFlag(cl::ReallyHidden);
    }
  } else {
    cl::HideUnrelatedOptions(categories);
  }

  cl::Option *printOp =
      cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  // registerMLIRContextCLOptions declares it as cl::opt<bool>.
  auto *flag = static_cast<cl::opt<bool> *>(printOp);
  flag->setInitialValue(false);
  if (!readsIR)
    return;
  flag->setHiddenFlag(cl::NotHidden);
  if (!categories.empty())
    flag->addCategory(*const_cast<cl::OptionCategory *>(categories.front()));
}

namespace mlir::tile {

struct ScheduleCommandLine::Options {
  explicit Options(llvm::cl::OptionCategory &category) : category(category) {}
  // First: the options below are listed under it.
  llvm::cl::OptionCategory &category;
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  llvm::cl::opt<TYPE> MEMBER{TOOL_FLAG, llvm::cl::desc(DESCRIPTION),           \
                             llvm::cl::init(DEFAULT),                          \
                             llvm::cl::cat(category)};
#include "tile/Target/ScheduleOptions.def"
};

ScheduleCommandLine::ScheduleCommandLine(llvm::cl::OptionCategory &category)
    : options(std::make_unique<Options>(category)) {}
ScheduleCommandLine::~ScheduleCommandLine() = default;

::tile::ScheduleOptions ScheduleCommandLine::get() const {
  ::tile::ScheduleOptions schedule;
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  schedule.MEMBER = options->MEMBER;
#include "tile/Target/ScheduleOptions.def"
  return schedule;
}

} // namespace mlir::tile

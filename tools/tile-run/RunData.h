//===- RunData.h - tile-run's inputs and outputs ----------------*- C++ -*-===//
//
// What the evaluator and the GPU modes of tile-run share: the arguments'
// names as the source spells them, inputs from seeded random numbers or
// .npy files (--input), the evaluator's forward and derived backward of
// one case, and .npy files out (--output-dir).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_RUN_RUNDATA_H
#define TILE_TOOLS_TILE_RUN_RUNDATA_H

#include "tile/Dialect/Tile/Transforms/Differentiate.h"
#include "tile/Interp/Evaluator.h"
#include "tile/Interp/Inputs.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace tile::run {

/// The names of `func`'s arguments as its source spells them (`x` for
/// `%x`), read at each argument's location; "arg<i>" where there is none.
std::vector<std::string> argumentNames(mlir::func::FuncOp func,
                                       llvm::SourceMgr &sourceMgr);

/// --input=NAME=FILE entries by argument index. NAME is an argument's name
/// or its index (`2` or `#2`). Errors name the entry and list the names.
llvm::Expected<std::map<unsigned, std::string>>
parseInputFiles(llvm::ArrayRef<std::string> entries,
                llvm::ArrayRef<std::string> names);

/// One call's inputs: seeded random numbers for the shapes `specs` gives
/// (interp::makeInputs), except for the arguments in `files`, which are
/// read from them (their spec may be left empty; one that is given must
/// agree with the file). The random numbers drawn do not depend on which
/// arguments come from files.
llvm::Expected<std::vector<interp::Buffer>>
makeCaseInputs(mlir::func::FuncOp func, std::vector<std::string> specs,
               const interp::InputOptions &options,
               const std::map<unsigned, std::string> &files,
               llvm::ArrayRef<std::string> names);

/// The evaluator's view of one call: the forward's results and, when the
/// backward is derived, the cotangents fed to it (seeded), the values the
/// forward saves for it (`@f_fwd`'s extra results) and the gradients.
struct Evaluation {
  std::vector<interp::Buffer> results, cotangents, saved, gradients;
};

llvm::Expected<Evaluation>
evaluateCase(mlir::func::FuncOp func,
             const std::optional<mlir::tile::DerivedKernel> &derived,
             const std::vector<interp::Buffer> &inputs, uint64_t seed,
             const interp::EvalOptions &options);

/// `backward`'s arguments, by role: the forward's inputs, the cotangents
/// of its results, the saved values, and the forward results it reads
/// (`results`).
std::vector<interp::Buffer>
backwardArguments(mlir::func::FuncOp backward,
                  const std::vector<interp::Buffer> &inputs,
                  const std::vector<interp::Buffer> &cotangents,
                  const std::vector<interp::Buffer> &saved,
                  const std::vector<interp::Buffer> &results);

/// The file stem of the backward's result #`index`: "grad_<name of the
/// argument it is the gradient of>".
std::string gradientName(mlir::func::FuncOp backward, unsigned index,
                         llvm::ArrayRef<std::string> names);

/// Writes `buffer` as `dir`/`stem``suffix`.npy in its storage dtype, or
/// in float64 where `asReference` (the evaluator's results: the reference
/// other frameworks are compared against).
llvm::Error writeBuffer(llvm::StringRef dir, llvm::StringRef stem,
                        const interp::Buffer &buffer, bool asReference,
                        llvm::StringRef suffix = "");

/// Writes results as `result<i><suffix>.npy` and the backward's results as
/// `grad_<name><suffix>.npy` (gradientName): the evaluator's in float64
/// (`asReference`), the GPU's in their storage dtype with suffix ".gpu".
llvm::Error
writeResults(llvm::StringRef dir,
             const std::optional<mlir::tile::DerivedKernel> &derived,
             const std::vector<interp::Buffer> &results,
             const std::vector<interp::Buffer> &gradients,
             llvm::ArrayRef<std::string> names, bool asReference,
             llvm::StringRef suffix = "");

/// Creates `dir` and writes a case's inputs (`<name>.npy`), the
/// cotangents (`cotangent<i>.npy`) and the evaluator's results and
/// gradients (writeResults, float64).
llvm::Error
writeEvaluation(llvm::StringRef dir,
                const std::optional<mlir::tile::DerivedKernel> &derived,
                const std::vector<interp::Buffer> &inputs,
                const Evaluation &evaluation,
                llvm::ArrayRef<std::string> names);

} // namespace tile::run

#endif // TILE_TOOLS_TILE_RUN_RUNDATA_H

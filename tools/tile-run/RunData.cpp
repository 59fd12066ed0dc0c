//===- RunData.cpp - tile-run's inputs, evaluations and output files -----===//

#include "RunData.h"

#include "tile/Dialect/Tile/IR/TileDialect.h"
#include "tile/Interp/Npy.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>

using namespace tile;
using mlir::func::FuncOp;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

std::vector<std::string> run::argumentNames(FuncOp func,
                                            llvm::SourceMgr &sourceMgr) {
  std::vector<std::string> names;
  for (mlir::BlockArgument arg : func.getArguments()) {
    std::string name = "arg" + std::to_string(arg.getArgNumber());
    // The parser gives an argument the location of its `%name`.
    if (auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(arg.getLoc())) {
      unsigned buffer = sourceMgr.getMainFileID();
      llvm::SMLoc at = sourceMgr.FindLocForLineAndColumn(buffer, loc.getLine(),
                                                         loc.getColumn());
      const char *end = sourceMgr.getMemoryBuffer(buffer)->getBufferEnd();
      const char *p = at.getPointer();
      if (p && p < end && *p == '%') {
        const char *q = ++p;
        while (q < end && (llvm::isAlnum(*q) || *q == '_' || *q == '$' ||
                           *q == '.' || *q == '-'))
          ++q;
        if (q > p)
          name.assign(p, q);
      }
    }
    names.push_back(name);
  }
  return names;
}

llvm::Expected<std::map<unsigned, std::string>>
run::parseInputFiles(llvm::ArrayRef<std::string> entries,
                     llvm::ArrayRef<std::string> names) {
  std::map<unsigned, std::string> files;
  for (llvm::StringRef entry : entries) {
    auto [name, file] = entry.split('=');
    if (file.empty())
      return error("--input=" + entry + ": expected NAME=FILE.npy");
    std::optional<unsigned> index;
    for (auto [i, candidate] : llvm::enumerate(names))
      if (name == candidate)
        index = i;
    unsigned number;
    if (!index && !name.ltrim("#").getAsInteger(10, number) &&
        number < names.size())
      index = number;
    if (!index)
      return error("--input=" + entry + ": no argument '" + name +
                   "'; the arguments are " + llvm::join(names, ", ") +
                   " (or their indices)");
    if (!files.emplace(*index, file.str()).second)
      return error("--input: argument '" + names[*index] + "' is given twice");
  }
  return files;
}

llvm::Expected<std::vector<interp::Buffer>>
run::makeCaseInputs(FuncOp func, std::vector<std::string> specs,
                    const interp::InputOptions &options,
                    const std::map<unsigned, std::string> &files,
                    llvm::ArrayRef<std::string> names) {
  // No --args at all: every argument from a file (checked below).
  if (specs.empty())
    specs.resize(func.getNumArguments());
  if (specs.size() != func.getNumArguments())
    return error("@" + func.getSymName() + " takes " +
                 llvm::Twine(func.getNumArguments()) + " arguments (" +
                 llvm::join(names, ", ") + ") but --args gives " +
                 llvm::Twine(specs.size()));
  std::map<unsigned, interp::NpyArray> arrays;
  for (auto &[index, path] : files) {
    auto array = interp::readNpy(path);
    if (!array)
      return array.takeError();
    bool tensor =
        llvm::isa<mlir::RankedTensorType>(func.getArgumentTypes()[index]);
    std::string fromFile;
    if (tensor) {
      fromFile = interp::shapeSpec(array->shape);
    } else if (array->values.size() == 1) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.17g", array->values[0]);
      fromFile = text;
    } else {
      return error(path + ": argument '" + names[index] +
                   "' is a scalar; the file holds " +
                   llvm::Twine(array->values.size()) + " elements");
    }
    std::string &spec = specs[index];
    if (tensor && !spec.empty() && spec != "_" && spec != fromFile)
      return error("argument '" + names[index] + "': --args says " + spec +
                   " but " + path + " holds " + fromFile);
    spec = fromFile;
    arrays.emplace(index, std::move(*array));
  }
  for (auto [index, spec] : llvm::enumerate(specs))
    if (spec.empty() || spec == "_")
      return error("argument '" + names[index] +
                   "': no spec in --args and no --input file");
  auto inputs = interp::makeInputs(func, specs, options);
  if (!inputs)
    return inputs.takeError();
  for (auto &[index, array] : arrays)
    (*inputs)[index].values = std::move(array.values);
  return inputs;
}

llvm::Expected<run::Evaluation>
run::evaluateCase(FuncOp func,
                  const std::optional<mlir::tile::DerivedKernel> &derived,
                  const std::vector<interp::Buffer> &inputs, uint64_t seed,
                  const interp::EvalOptions &options) {
  Evaluation evaluation;
  auto results = interp::evaluate(func, inputs, options);
  if (!results)
    return results.takeError();
  evaluation.results = std::move(*results);
  if (!derived)
    return evaluation;
  if (derived->forwardWithSaved) {
    auto withSaved =
        interp::evaluate(derived->forwardWithSaved, inputs, options);
    if (!withSaved)
      return withSaved.takeError();
    evaluation.saved.assign(withSaved->begin() + evaluation.results.size(),
                            withSaved->end());
  }
  evaluation.cotangents = interp::makeCotangents(evaluation.results, seed);
  auto gradients = interp::evaluate(
      derived->backward,
      backwardArguments(derived->backward, inputs, evaluation.cotangents,
                        evaluation.saved, evaluation.results),
      options);
  if (!gradients)
    return gradients.takeError();
  evaluation.gradients = std::move(*gradients);
  return evaluation;
}

std::vector<interp::Buffer>
run::backwardArguments(FuncOp backward,
                       const std::vector<interp::Buffer> &inputs,
                       const std::vector<interp::Buffer> &cotangents,
                       const std::vector<interp::Buffer> &saved,
                       const std::vector<interp::Buffer> &results) {
  using mlir::tile::TileDialect;
  // The derivation made the roles and their numbers; the backward's own
  // verifier checked them against the forward.
  auto role = [&](unsigned index,
                  llvm::StringRef name) -> std::optional<size_t> {
    if (auto of = backward.getArgAttrOfType<mlir::IntegerAttr>(index, name))
      return static_cast<size_t>(of.getInt());
    return std::nullopt;
  };
  std::vector<interp::Buffer> args;
  for (unsigned index = 0; index < backward.getNumArguments(); ++index) {
    if (auto k = role(index, TileDialect::getCotangentAttrName()))
      args.push_back(cotangents.at(*k));
    else if (auto k = role(index, TileDialect::getSavedAttrName()))
      args.push_back(saved.at(*k));
    else if (auto k = role(index, TileDialect::getForwardResultAttrName()))
      args.push_back(results.at(*k));
    else
      args.push_back(inputs.at(index));
  }
  return args;
}

std::string run::gradientName(FuncOp backward, unsigned index,
                              llvm::ArrayRef<std::string> names) {
  auto of = backward.getResultAttrOfType<mlir::IntegerAttr>(
      index, mlir::tile::TileDialect::getGradientAttrName());
  if (of && of.getInt() >= 0 && size_t(of.getInt()) < names.size())
    return "grad_" + names[of.getInt()];
  return "grad" + std::to_string(index);
}

llvm::Error run::writeBuffer(llvm::StringRef dir, llvm::StringRef stem,
                             const interp::Buffer &buffer, bool asReference,
                             llvm::StringRef suffix) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, stem + suffix + ".npy");
  return interp::writeNpy(
      path, buffer.isTensor ? buffer.shape : std::vector<int64_t>{},
      buffer.values, asReference ? interp::StorageType::F64 : buffer.storage);
}

llvm::Error
run::writeResults(llvm::StringRef dir,
                  const std::optional<mlir::tile::DerivedKernel> &derived,
                  const std::vector<interp::Buffer> &results,
                  const std::vector<interp::Buffer> &gradients,
                  llvm::ArrayRef<std::string> names, bool asReference,
                  llvm::StringRef suffix) {
  for (auto [index, result] : llvm::enumerate(results))
    if (llvm::Error e = writeBuffer(dir, "result" + std::to_string(index),
                                    result, asReference, suffix))
      return e;
  for (auto [index, gradient] : llvm::enumerate(gradients))
    if (llvm::Error e =
            writeBuffer(dir, gradientName(derived->backward, index, names),
                        gradient, asReference, suffix))
      return e;
  return llvm::Error::success();
}

llvm::Error
run::writeEvaluation(llvm::StringRef dir,
                     const std::optional<mlir::tile::DerivedKernel> &derived,
                     const std::vector<interp::Buffer> &inputs,
                     const Evaluation &evaluation,
                     llvm::ArrayRef<std::string> names) {
  if (std::error_code code = llvm::sys::fs::create_directories(dir))
    return error("--output-dir=" + dir + ": " + code.message());
  for (auto [index, input] : llvm::enumerate(inputs))
    if (llvm::Error e = writeBuffer(dir, names[index], input, false))
      return e;
  for (auto [index, cotangent] : llvm::enumerate(evaluation.cotangents))
    if (llvm::Error e = writeBuffer(dir, "cotangent" + std::to_string(index),
                                    cotangent, false))
      return e;
  return writeResults(dir, derived, evaluation.results, evaluation.gradients,
                      names, /*asReference=*/true);
}

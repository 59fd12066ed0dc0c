//===- Inputs.cpp - seeded inputs and result summaries -------------------===//

#include "tile/Interp/Inputs.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace tile::interp {

uint64_t Random::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Random::uniform(double lo, double hi) {
  // 53 random bits give a double in [0, 1).
  double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * unit;
}

llvm::Expected<std::vector<int64_t>> parseShape(StringRef text) {
  std::vector<int64_t> shape;
  if (text.empty())
    return shape;
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t size;
    if (part.getAsInteger(10, size) || size < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "'" + text +
                                         "' is not a shape such as 7x13");
    shape.push_back(size);
  }
  return shape;
}

std::string shapeSpec(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  for (int64_t size : shape)
    text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

llvm::Expected<std::vector<Buffer>>
makeInputs(func::FuncOp func, const std::vector<std::string> &specs,
           const InputOptions &options) {
  if (specs.size() != func.getNumArguments())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "@" + func.getSymName() + " takes " +
            llvm::Twine(func.getNumArguments()) + " arguments but " +
            llvm::Twine(specs.size()) + " were given");
  Random random(options.seed);
  std::vector<Buffer> args;
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    StringRef spec = specs[index];
    if (auto tensorType = dyn_cast<RankedTensorType>(type)) {
      auto shape = parseShape(spec);
      if (!shape)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "argument #" + llvm::Twine(index) +
                                           ": " +
                                           llvm::toString(shape.takeError()));
      if (!boundedElements(*shape))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "argument #" + llvm::Twine(index) + ": shape " + spec +
                " holds more than the evaluator's limit of " +
                llvm::Twine(kMaxElements) + " elements");
      StorageType storage = getStorageType(tensorType.getElementType())
                                .value_or(StorageType::F64);
      Buffer buffer = Buffer::tensor(*shape, storage);
      // Integer data (labels) gets integers of the same range.
      bool integers = tensorType.getElementType().isInteger();
      for (double &value : buffer.values) {
        value = random.uniform(options.low, options.high);
        if (integers)
          value = std::floor(value);
      }
      args.push_back(std::move(buffer));
      continue;
    }
    double value;
    if (spec.getAsDouble(value))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "argument #" + llvm::Twine(index) + ": '" +
                                         spec + "' is not a number");
    args.push_back(Buffer::scalar(value));
  }
  return args;
}

std::vector<Buffer> makeCotangents(const std::vector<Buffer> &results,
                                   uint64_t seed) {
  Random rng(seed * 7919 + 17);
  std::vector<Buffer> cotangents;
  for (const Buffer &result : results) {
    Buffer cotangent = result;
    for (double &value : cotangent.values)
      value = roundTo(result.storage, rng.uniform(-1.0, 1.0));
    cotangents.push_back(std::move(cotangent));
  }
  return cotangents;
}

Summary summarize(const Buffer &buffer) {
  Summary summary;
  summary.count = static_cast<int64_t>(buffer.values.size());
  uint64_t hash = 0xcbf29ce484222325ULL;
  double sum = 0, squares = 0;
  bool first = true;
  for (double value : buffer.values) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3ULL;
    }
    if (!std::isfinite(value)) {
      ++summary.nonFinite;
      continue;
    }
    summary.min = first ? value : std::min(summary.min, value);
    summary.max = first ? value : std::max(summary.max, value);
    first = false;
    sum += value;
    squares += value * value;
  }
  int64_t finite = summary.count - summary.nonFinite;
  summary.mean = finite ? sum / static_cast<double>(finite) : 0.0;
  summary.l2 = std::sqrt(squares);
  summary.checksum = hash;
  return summary;
}

} // namespace tile::interp

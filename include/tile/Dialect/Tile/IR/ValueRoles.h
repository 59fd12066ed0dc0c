//===- ValueRoles.h - what a derived function's values are ------*- C++ -*-===//
//
// The one table of the roles tile-differentiate gives a function's
// arguments and results: the attribute that marks each in the IR (none for
// a plain input or output: their absence), and its name in the kernel
// signature, which lib/Target writes and the C API reads. The order is the
// C API's tile_role. A light header: the C API includes it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TILE_IR_VALUEROLES_H
#define TILE_DIALECT_TILE_IR_VALUEROLES_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::tile {

enum class ValueRole : int {
  Input,         // a forward input
  Cotangent,     // a backward's incoming gradient of forward result #i
  Saved,         // saved value #i of the forward (save-row-stats)
  MainGrad,      // the fp32 accumulator of forward argument #i
  Output,        // a forward result
  Gradient,      // a backward's gradient of forward argument #i
  Primal,        // a backward's recomputed forward result #i (return-primal)
  ForwardResult, // a backward's argument holding forward result #i, read
                 // instead of recomputing it
};

struct ValueRoleInfo {
  ValueRole role;
  /// The name in the kernel signature's JSON.
  llvm::StringLiteral name;
  /// The argument or result attribute (holding #i); empty: none.
  llvm::StringLiteral attribute;
};

inline constexpr ValueRoleInfo kValueRoles[] = {
    {ValueRole::Input, "input", ""},
    {ValueRole::Cotangent, "cotangent", "tile.cotangent"},
    {ValueRole::Saved, "saved", "tile.saved"},
    {ValueRole::MainGrad, "main_grad", "tile.main_grad"},
    {ValueRole::Output, "output", ""},
    {ValueRole::Gradient, "gradient", "tile.gradient"},
    {ValueRole::Primal, "primal", "tile.primal"},
    {ValueRole::ForwardResult, "forward_result", "tile.forward_result"},
};

constexpr bool valueRolesInOrder() {
  for (int i = 0; i < static_cast<int>(std::size(kValueRoles)); ++i)
    if (static_cast<int>(kValueRoles[i].role) != i)
      return false;
  return true;
}
static_assert(valueRolesInOrder(), "kValueRoles is indexed by ValueRole");

constexpr llvm::StringLiteral valueRoleAttribute(ValueRole role) {
  return kValueRoles[static_cast<int>(role)].attribute;
}

/// The role a kernel signature names `name`, or none.
inline std::optional<ValueRole> valueRoleNamed(llvm::StringRef name) {
  for (const ValueRoleInfo &info : kValueRoles)
    if (info.name == name)
      return info.role;
  return std::nullopt;
}

} // namespace mlir::tile

#endif // TILE_DIALECT_TILE_IR_VALUEROLES_H

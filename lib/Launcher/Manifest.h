//===- Manifest.h - the launcher's view of a kernel manifest ----*- C++ -*-===//
//
// What ManifestReader.cpp reads out of the manifest's JSON, strictly: every
// field named, of its type, nothing unknown, the format version the
// compiler writes (tile/Target/ManifestFormat.h). Launcher.cpp binds calls
// against these.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_OPS_MANIFEST_H
#define TILE_LIB_OPS_MANIFEST_H

#include "Expression.h"
#include "tile/Runtime/Runtime.h"
#include "tile/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tile::ops::manifest {

struct Param {
  /// Arrivals: the i32 counter a folded finalize counts its CTAs with,
  /// which must be zero at launch (the launcher owns it; the kernel leaves
  /// it zero).
  enum class Kind { Argument, Result, Rows, Width, Ctas, Workspace, Arrivals };
  Kind kind = Kind::Rows;
  int64_t index = 0;
  /// Of a tensor argument, a result or the workspace.
  rt::DType dtype = rt::DType::F32;
  bool buffer = false;
  /// Expressions over rows, w<i> and arg<i>; [rows, width] or [width].
  std::vector<Expression> shape;
};

struct Kernel {
  std::string name;
  Expression grid;
  int64_t block = 0;
  /// The kernel waits for the one before it in the stream itself
  /// (griddepcontrol.wait), so it may launch while that one finishes.
  bool overlapsPrevious = false;
  /// Its CTAs wait for each other (a folded finalize): it needs a
  /// cooperative launch, which places the whole grid at once.
  bool cooperative = false;
};

/// `lhs == rhs` (equal) or `lhs <= rhs` over the call's symbols.
struct Constraint {
  Expression lhs, rhs;
  bool equal = true;
  /// As the manifest wrote it (messages).
  std::string text;
};
struct Function {
  std::vector<Kernel> kernels;
  std::vector<Param> params;
  Expression ctas;
  std::vector<Constraint> constraints;
  Expression workspace;
};

/// The functions of `text` by name; an error names what is wrong and where
/// ("functions[1].params[3]: unknown kind 'tensor'").
rt::StatusOr<std::map<std::string, Function>> read(const std::string &text);

} // namespace tile::ops::manifest

#endif // TILE_LIB_OPS_MANIFEST_H

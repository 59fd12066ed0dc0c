//===- Npy.h - NumPy .npy files in and out of the evaluator -----*- C++ -*-===//
//
// tile-run reads arguments from and writes results to .npy files, so that a
// kernel's results can be compared with another framework's on identical
// inputs. Version 1.0-3.0 files in C order, little-endian.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INTERP_NPY_H
#define TILE_INTERP_NPY_H

#include "tile/Interp/FloatFormats.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tile::interp {

/// An array read from a .npy file: its dtype as NumPy spells it ("<f4"),
/// its shape, and its elements as doubles (exact for every dtype read).
struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// Reads a .npy file of float (f2, f4, f8), integer (i1-i8, u1-u8) or
/// bool elements. Errors name the file and what is wrong with it (not
/// .npy, Fortran order, big-endian, a dtype without an exact double, a
/// truncated body).
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

/// Writes `values` (one per element of `shape`, C order), rounded to
/// `storage` as a kernel would read them, as a .npy file of its dtype: f16 as
/// "<f2", f32 as "<f4", f64 as "<f8", and bf16 as
/// "<f4" (NumPy has no bfloat16; every bf16 value is exact in f32).
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<double> values, StorageType storage);

} // namespace tile::interp

#endif // TILE_INTERP_NPY_H

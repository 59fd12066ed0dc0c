//===- Symbols.h - entry points of a library opened with dlopen -----------===//
//
// Shared by the driver (libcuda) and cuBLASLt: each entry point is looked
// up by name, and the first one missing is remembered for the error.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_RUNTIME_SYMBOLS_H
#define TILE_LIB_RUNTIME_SYMBOLS_H

#include <dlfcn.h>
#include <string>

namespace tile::rt {

/// Sets `slot` to `name` in `library`; if it is missing and nothing was
/// missing before, `missing` becomes `name`.
template <typename Fn>
void resolveSymbol(void *library, const char *name, Fn &slot,
                   std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot && missing.empty())
    missing = name;
}

} // namespace tile::rt

#endif // TILE_LIB_RUNTIME_SYMBOLS_H

//===- Symbols.h - entry points of a library opened with dlopen -----------===//
//
// Shared by the driver (libcuda) and cuBLASLt: the library is opened with
// an error that says how to get it, each entry point is looked up by name,
// and the first one missing is remembered for the error.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_LIB_RUNTIME_SYMBOLS_H
#define TILE_LIB_RUNTIME_SYMBOLS_H

#include "tile/Runtime/Status.h"

#include <dlfcn.h>
#include <string>

namespace tile::rt {

/// dlopens `path`, or says that there is no `what` there, why, and
/// `remedy`.
inline StatusOr<void *> openLibrary(const char *path, const char *what,
                                    const char *remedy) {
  if (void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL))
    return library;
  const char *reason = dlerror();
  return Status::error(std::string("no ") + what + ": cannot open " + path +
                       " (" + (reason ? reason : "unknown reason") + "); " +
                       remedy);
}

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

//===- Status.h - errors returned instead of aborts -------------*- C++ -*-===//
//
// Every runtime call that can fail returns a Status (or StatusOr<T>) whose
// message says what went wrong in terms the caller can act on: no driver,
// no device, out of memory, a shape or dtype that does not match, a null or
// misaligned pointer. Nothing in the runtime aborts or throws.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_STATUS_H
#define TILE_RUNTIME_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace tile::rt {

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status status;
    status.failed = true;
    status.text = std::move(message);
    return status;
  }

  bool isOk() const { return !failed; }
  explicit operator bool() const { return !failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value(std::move(value)) {}
  StatusOr(Status status) : status(std::move(status)) {}

  bool isOk() const { return value.has_value(); }
  explicit operator bool() const { return value.has_value(); }
  const std::string &message() const { return status.message(); }
  Status takeStatus() { return std::move(status); }

  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

private:
  std::optional<T> value;
  Status status = Status::ok();
};

} // namespace tile::rt

#endif // TILE_RUNTIME_STATUS_H

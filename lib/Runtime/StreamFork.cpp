//===- StreamFork.cpp - side streams forked from a caller's stream -------===//

#include "tile/Runtime/StreamFork.h"

namespace tile::rt {

namespace {
// cuda.h's values.
constexpr unsigned kStreamNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 0x2; // CU_EVENT_DISABLE_TIMING
} // namespace

StatusOr<std::unique_ptr<StreamFork>> StreamFork::create(const Device &device,
                                                         int lanes) {
  if (lanes < 1)
    return Status::error("a stream fork needs at least one lane, not " +
                         std::to_string(lanes));
  ContextScope scope(device);
  if (!scope.status())
    return scope.status();
  std::unique_ptr<StreamFork> fork(
      new StreamFork(device.driver(), device.primaryContext()));
  const DriverApi &api = device.driver();
  if (lanes == 1)
    return fork;
  if (Status s = check(api.eventCreate(&fork->forked, kEventDisableTiming),
                       "cuEventCreate");
      !s)
    return s;
  for (int i = 1; i < lanes; ++i) {
    cu::Stream stream = nullptr;
    if (Status s = check(api.streamCreate(&stream, kStreamNonBlocking),
                         "cuStreamCreate");
        !s)
      return s;
    fork->side.push_back(stream);
    cu::Event event = nullptr;
    if (Status s = check(api.eventCreate(&event, kEventDisableTiming),
                         "cuEventCreate");
        !s)
      return s;
    fork->joined.push_back(event);
  }
  return fork;
}

StreamFork::~StreamFork() {
  ContextScope scope(*api, context);
  // A stream destroyed with work queued is released once that work is done.
  for (cu::Stream stream : side)
    api->streamDestroy(stream);
  for (cu::Event event : joined)
    api->eventDestroy(event);
  if (forked)
    api->eventDestroy(forked);
}

Status StreamFork::fork(cu::Stream main) {
  if (side.empty())
    return Status::ok();
  if (Status s = check(api->eventRecord(forked, main), "cuEventRecord (fork)");
      !s)
    return s;
  for (cu::Stream stream : side)
    if (Status s = check(api->streamWaitEvent(stream, forked, 0),
                         "cuStreamWaitEvent (fork)");
        !s)
      return s;
  return Status::ok();
}

Status StreamFork::join(cu::Stream main) {
  for (size_t i = 0; i < side.size(); ++i) {
    if (Status s =
            check(api->eventRecord(joined[i], side[i]), "cuEventRecord (join)");
        !s)
      return s;
    if (Status s = check(api->streamWaitEvent(main, joined[i], 0),
                         "cuStreamWaitEvent (join)");
        !s)
      return s;
  }
  return Status::ok();
}

} // namespace tile::rt

//===- StreamFork.h - side streams of a caller's stream ---------*- C++ -*-===//
//
// Work that is independent (the GEMMs of a mixture of experts, one per
// expert) but too small to fill the GPU one piece at a time can run on
// several streams at once. A StreamFork holds the side streams and the
// events that tie them to the caller's stream:
//
//   fork(main)  lane 1.. wait for everything queued on `main` so far
//   ...         work queued on stream(lane, main), lane 0 being `main`
//   join(main)  `main` waits for everything queued on lanes 1..
//
// Between fork and join nothing is ordered across lanes; after join, work
// on `main` sees all of it. Only events order the lanes, so a fork on a
// stream being captured into a CUDA graph becomes branches of the graph, and
// the join ends them (a capture must end joined). The caller's memory
// allocator sees only `main`: what it frees after the join is free to reuse
// on `main`, since `main` has waited for the lanes.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_RUNTIME_STREAMFORK_H
#define TILE_RUNTIME_STREAMFORK_H

#include "tile/Runtime/Runtime.h"

#include <memory>
#include <vector>

namespace tile::rt {

class StreamFork {
public:
  /// `lanes` ≥ 1 lanes: the caller's stream and lanes − 1 streams of the
  /// device's primary context (non-blocking: no implicit ordering with the
  /// legacy default stream; the events are all the ordering there is).
  static StatusOr<std::unique_ptr<StreamFork>> create(const Device &device,
                                                      int lanes);
  StreamFork(const StreamFork &) = delete;
  StreamFork &operator=(const StreamFork &) = delete;
  ~StreamFork();

  /// Lane 0 is `main`; lane i > 0 is side stream i − 1.
  cu::Stream stream(int lane, cu::Stream main) const {
    return lane == 0 ? main : side[lane - 1];
  }
  /// The side lanes wait for what `main` has queued.
  Status fork(cu::Stream main);
  /// `main` waits for what the side lanes have queued.
  Status join(cu::Stream main);

private:
  StreamFork(const DriverApi &api, cu::Context context)
      : api(&api), context(context) {}
  const DriverApi *api;
  cu::Context context;
  std::vector<cu::Stream> side;
  cu::Event forked = nullptr;
  std::vector<cu::Event> joined; // one per side stream
};

} // namespace tile::rt

#endif // TILE_RUNTIME_STREAMFORK_H

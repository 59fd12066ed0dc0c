//===- TileRun.h - tile-run as a function -----------------------*- C++ -*-===//
//
// tile-run's whole command line in one call, so that its main (main.cpp)
// and the command-line fuzzer (fuzz/tile-run.cpp) run the same code.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TOOLS_TILE_RUN_TILERUN_H
#define TILE_TOOLS_TILE_RUN_TILERUN_H

namespace tile::run {

/// Runs tile-run on `argv` (argv[0] is the program's name) and returns its
/// exit status. Every option starts from its default, so it may be called
/// again in the same process; a bad command line is reported and returns 1
/// (only --help and --version exit). Runs on the caller's stack: the tools
/// call it through runWithLargeStack (ToolSupport.h).
int runTileRun(int argc, const char *const *argv);

} // namespace tile::run

#endif // TILE_TOOLS_TILE_RUN_TILERUN_H

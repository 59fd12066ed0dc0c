//===- ScheduleOptions.h - tile-schedule's overrides ------------*- C++ -*-===//
//
// tile-schedule's overrides as one plain struct (no MLIR): the JIT's
// CompileOptions, the pipelines' PtxOptions and the operators' overrides
// hold it, and str() spells it as pass options, for the JIT's pipeline
// string and cache key. Its members come from ScheduleOptions.def, the one
// list of the knobs.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TARGET_SCHEDULEOPTIONS_H
#define TILE_TARGET_SCHEDULEOPTIONS_H

#include <cstdint>
#include <string>

namespace tile {

struct ScheduleOptions {
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  TYPE MEMBER = DEFAULT;
#include "tile/Target/ScheduleOptions.def"

  /// "threads=0 ctas=0 row-grid=false ...", every knob in the list's order:
  /// the options of tile-schedule and tile-lower-to-ptx.
  std::string str() const {
    std::string text;
#define TILE_SCHEDULE_OPTION(TYPE, MEMBER, FLAG, TOOL_FLAG, DEFAULT,           \
                             DESCRIPTION)                                      \
  text += std::string(text.empty() ? "" : " ") + FLAG + "=" + spell(MEMBER);
#include "tile/Target/ScheduleOptions.def"
    return text;
  }

private:
  static std::string spell(bool value) { return value ? "true" : "false"; }
  static std::string spell(int64_t value) { return std::to_string(value); }
};

} // namespace tile

#endif // TILE_TARGET_SCHEDULEOPTIONS_H

# Writes Version.inc (TILE_GIT_REVISION) from `git describe`, at build time
# (scripts that build after a commit get the new revision without a
# reconfigure), and only when the text changes, so that nothing recompiles
# when the revision is the same. Run with cmake -P:
#   -DSOURCE_DIR=<repository> -DOUTPUT=<file>
execute_process(
  COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE revision
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE status
  ERROR_QUIET)
if(NOT status EQUAL 0 OR revision STREQUAL "")
  # An unpacked source archive has no history.
  set(revision "unknown")
endif()
set(text "#define TILE_GIT_REVISION \"${revision}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()

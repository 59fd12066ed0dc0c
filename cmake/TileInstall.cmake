# `cmake --install` for C++ users: headers, the libraries (static, and the
# C API's libtile.so), the tools, and a relocatable TileConfig.cmake that
# exports them as Tile::Runtime, Tile::JIT, Tile::Ops, ... — used with
#   find_package(Tile REQUIRED CONFIG)   # CMAKE_PREFIX_PATH=<prefix>
# (examples/embed builds so, and scripts/check-install.sh checks it).
# MLIR's own install rules are off (LLVM_INSTALL_TOOLCHAIN_ONLY, set in the
# top-level CMakeLists.txt): they would put Tile's libraries into MLIR's
# export set.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every library, in no particular order; each exported under its name
# without the "Tile" prefix.
set(TILE_INSTALLED_LIBRARIES
  TileVersion TileRuntime TileToolSupport TileDialect TileDerivatives
  TileTransforms TileInterp TileConversion TilePipelines TileTarget
  TileRegistration TileJIT TileLauncher TileOps)
# The ones whose headers include MLIR's: TileConfig.cmake gives them
# MLIR's include directories and flags.
set(TILE_MLIR_EXPORTS "")
foreach(library ${TILE_INSTALLED_LIBRARIES})
  string(REGEX REPLACE "^Tile" "" exported ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${exported})
  if(NOT library MATCHES "^Tile(Version|Runtime|Launcher)$")
    list(APPEND TILE_MLIR_EXPORTS ${exported})
  endif()
endforeach()
set_target_properties(tile PROPERTIES EXPORT_NAME CAPI)

install(TARGETS ${TILE_INSTALLED_LIBRARIES} tile
  EXPORT TileTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(TILE_INSTALLED_TOOLS
  tile-opt tile-translate tile-run tile-rt-info tile-bench tile-gpu-tests)
install(TARGETS ${TILE_INSTALLED_TOOLS}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# The headers, and the ones tablegen writes into the build tree.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tile
                  ${PROJECT_SOURCE_DIR}/include/tile-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/tile
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
  FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
  PATTERN "CMakeFiles" EXCLUDE)

set(TILE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tile)
install(EXPORT TileTargets NAMESPACE Tile::
  DESTINATION ${TILE_CMAKE_DIR} COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TileConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/TileConfig.cmake
  INSTALL_DESTINATION ${TILE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/TileConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/TileConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/TileConfigVersion.cmake
  DESTINATION ${TILE_CMAKE_DIR} COMPONENT development)

# TileStaticLink.cmake - link the tools without libLLVM.so / libMLIR.so.
#
# Debian's LLVMConfig.cmake forces LLVM_LINK_LLVM_DYLIB=ON and every exported
# MLIR*.a target lists `LLVM` (libLLVM.so) in its link interface, so a plain
# build of static MLIR archives still needs libLLVM.so at run time. Here every
# such `LLVM` entry is re-pointed to the static LLVM component archives; the
# linker then pulls only the objects the tools reference. The result runs on
# the GPU machine, which has no LLVM, given glibc >= 2.36, libz and libzstd.

set(LLVM_LINK_LLVM_DYLIB OFF)
# libstdc++ and libgcc go in too; --as-needed drops libraries nothing uses
# (libz3, libxml2 from LLVM's interface).
string(APPEND CMAKE_EXE_LINKER_FLAGS
       " -static-libstdc++ -static-libgcc -Wl,--as-needed")
string(APPEND CMAKE_SHARED_LINKER_FLAGS
       " -static-libstdc++ -static-libgcc -Wl,--as-needed")

# The LLVM components MLIR and the NVPTX lowering use; the linker takes only
# the objects that are referenced.
llvm_map_components_to_libnames(TILE_LLVM_STATIC_LIBS
  Support Demangle Remarks BitstreamReader Core BinaryFormat TargetParser
  IRReader AsmParser BitReader BitWriter Analysis TransformUtils Passes
  Target MC MCParser Object ProfileData Linker ipo FrontendOpenMP
  NVPTXCodeGen NVPTXDesc NVPTXInfo)
add_library(TileLLVMStatic INTERFACE)
target_link_libraries(TileLLVMStatic INTERFACE ${TILE_LLVM_STATIC_LIBS})

if(NOT TARGET zstd::libzstd_shared)
  # LLVMSupport's interface names this target; define it from the runtime
  # library when libzstd-dev's CMake files are absent.
  find_library(TILE_ZSTD_LIBRARY NAMES zstd libzstd.so.1 REQUIRED)
  add_library(zstd::libzstd_shared SHARED IMPORTED)
  set_target_properties(zstd::libzstd_shared PROPERTIES
    IMPORTED_LOCATION ${TILE_ZSTD_LIBRARY})
endif()

get_directory_property(TILE_IMPORTED_TARGETS IMPORTED_TARGETS)
foreach(target IN LISTS TILE_IMPORTED_TARGETS)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "EXECUTABLE")
    continue()
  endif()
  get_target_property(interface ${target} INTERFACE_LINK_LIBRARIES)
  if(interface AND "LLVM" IN_LIST interface)
    list(TRANSFORM interface REPLACE "^LLVM$" "TileLLVMStatic")
    set_target_properties(${target} PROPERTIES
      INTERFACE_LINK_LIBRARIES "${interface}")
  endif()
endforeach()
message(STATUS "Static tools: LLVM re-pointed to "
               "the static component archives")

# The static archives depend on each other in cycles the link-line ordering
# cannot express (MLIR archives need LLVMSupport, which CMake may place before
# them); one archive group lets the linker resolve them in any order.
set(CMAKE_CXX_LINK_EXECUTABLE
    "<CMAKE_CXX_COMPILER> <FLAGS> <CMAKE_CXX_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> -Wl,--start-group <LINK_LIBRARIES> -Wl,--end-group")
set(CMAKE_CXX_CREATE_SHARED_LIBRARY
    "<CMAKE_CXX_COMPILER> <CMAKE_SHARED_LIBRARY_CXX_FLAGS> <LANGUAGE_COMPILE_FLAGS> <LINK_FLAGS> <CMAKE_SHARED_LIBRARY_CREATE_CXX_FLAGS> <SONAME_FLAG><TARGET_SONAME> -o <TARGET> <OBJECTS> -Wl,--start-group <LINK_LIBRARIES> -Wl,--end-group")

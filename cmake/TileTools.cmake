# tile_finish_tool(target): the link settings every tile tool shares. With
# TILE_STATIC_TOOLS the tool is linked fully static apart from glibc (see
# TileStaticLink.cmake), so it can be carried to the GPU machine.
function(tile_finish_tool target)
  if(TILE_STATIC_TOOLS)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc
                        -Wl,--as-needed)
  endif()
endfunction()

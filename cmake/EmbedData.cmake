# segadvise_embed_data(OUT_VAR SYMBOL [DIR]): compiles every *.json of the current folder's data/
# (or of DIR, relative to the current folder) into a generated C++ source (cmake/embed_data.cmake)
# holding them as the table SYMBOL (segadvise/costmodel/embedded.hpp); sets OUT_VAR to that source
# for add_library. Sub-folders are not included: each gets its own table.
function(segadvise_embed_data out_var symbol)
  set(dir data)
  if(ARGC GREATER 2)
    set(dir ${ARGV2})
  endif()
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp)
  file(GLOB data CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.json)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DDATA_DIR=${CMAKE_CURRENT_SOURCE_DIR}/${dir} -DOUT=${generated} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    DEPENDS ${data} ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    COMMENT "Embedding ${CMAKE_CURRENT_SOURCE_DIR}/${dir}")
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()

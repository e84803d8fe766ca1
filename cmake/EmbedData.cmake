# segadvise_embed_data(OUT_VAR SYMBOL): compiles every *.json of the current folder's data/ into a
# generated C++ source (cmake/embed_data.cmake) holding them as the table SYMBOL
# (segadvise/costmodel/embedded.hpp); sets OUT_VAR to that source for add_library.
function(segadvise_embed_data out_var symbol)
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp)
  file(GLOB data CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/data/*.json)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DDATA_DIR=${CMAKE_CURRENT_SOURCE_DIR}/data -DOUT=${generated} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    DEPENDS ${data} ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    COMMENT "Embedding ${CMAKE_CURRENT_SOURCE_DIR}/data")
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()

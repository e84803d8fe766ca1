# segadvise_embed_data(OUT_VAR SYMBOL [DIR [PATTERN]]): compiles every file of the current folder's data/
# (or of DIR, relative to the current folder) matching PATTERN (default *.json) into a generated C++
# source (cmake/embed_data.cmake) holding them as the table SYMBOL (segadvise/costmodel/embedded.hpp),
# each named by its path relative to DIR; sets OUT_VAR to that source for add_library. Sub-folders are
# included only where PATTERN names them (trainers/: "*/*.json", each trainer's folder).
function(segadvise_embed_data out_var symbol)
  set(dir data)
  set(pattern "*.json")
  if(ARGC GREATER 2)
    set(dir ${ARGV2})
  endif()
  if(ARGC GREATER 3)
    set(pattern ${ARGV3})
  endif()
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp)
  file(GLOB data CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/${pattern})
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DDATA_DIR=${CMAKE_CURRENT_SOURCE_DIR}/${dir} "-DPATTERN=${pattern}" -DOUT=${generated}
            -DSYMBOL=${symbol} -P ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    DEPENDS ${data} ${PROJECT_SOURCE_DIR}/cmake/embed_data.cmake
    COMMENT "Embedding ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/${pattern}")
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()

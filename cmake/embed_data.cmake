# Writes a C++ source holding every file of DATA_DIR matching PATTERN (default *.json; a pattern may
# name sub-folders, */*.json) as a string named by its path relative to DATA_DIR, so the segadvise
# binary needs no data path at run time. Run at build time:
# cmake -DDATA_DIR=... [-DPATTERN=...] -DOUT=... -DSYMBOL=... -P embed_data.cmake
if(NOT PATTERN)
  set(PATTERN "*.json")
endif()
file(GLOB files RELATIVE "${DATA_DIR}" "${DATA_DIR}/${PATTERN}")
list(SORT files)
set(body "// generated from ${DATA_DIR} by cmake/embed_data.cmake; do not edit\n#include \"segadvise/costmodel/embedded.hpp\"\nnamespace segadvise {\nextern const EmbeddedFile ${SYMBOL}[] = {\n")
set(count 0)
foreach(f ${files})
  file(READ "${DATA_DIR}/${f}" text)
  # split into chunks: some compilers limit one string literal's length
  string(LENGTH "${text}" len)
  set(chunks "")
  set(pos 0)
  while(pos LESS len)
    string(SUBSTRING "${text}" ${pos} 8000 part)
    string(APPEND chunks "R\"sgjson(${part})sgjson\"\n")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  string(APPEND body "  {\"${f}\",\n${chunks}},\n")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND body "};\nextern const std::size_t ${SYMBOL}Count = ${count};\n}  // namespace segadvise\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")

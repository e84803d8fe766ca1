# Writes a C++ source holding every file of DATA_DIR (*.json) as a string, so the segadvise binary
# needs no data path at run time. Run at build time: cmake -DDATA_DIR=... -DOUT=... -P embed_data.cmake
file(GLOB files RELATIVE "${DATA_DIR}" "${DATA_DIR}/*.json")
list(SORT files)
set(body "// generated from ${DATA_DIR} by cmake/embed_data.cmake; do not edit\n#include <cstddef>\nnamespace segadvise {\nstruct EmbeddedFile;
struct EmbeddedFile { const char* name; const char* text; };\nextern const EmbeddedFile ${SYMBOL}[] = {\n")
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

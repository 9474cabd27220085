# Writes OUTPUT: a C++ file defining loom::codegen::detail::scatter_device_source() as the text of INPUT
# (codegen/src/cuda/scatter.cuh, a raw string) with the line "// LOOM_SCATTER_PARAMS" replaced by the text of
# SCATTER_PARAMS (codegen/src/cuda/scatter_params.inc: the parameter struct the host packs), so it has one
# source.
file(READ "${INPUT}" LOOM_TEXT)
file(READ "${SCATTER_PARAMS}" LOOM_PART_TEXT)
string(FIND "${LOOM_TEXT}" "// LOOM_SCATTER_PARAMS\n" LOOM_MARKER)
if(LOOM_MARKER EQUAL -1)
  message(FATAL_ERROR "embed_scatter.cmake: ${INPUT} has no line // LOOM_SCATTER_PARAMS")
endif()
string(REPLACE "// LOOM_SCATTER_PARAMS\n" "${LOOM_PART_TEXT}" LOOM_TEXT "${LOOM_TEXT}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/scatter.cuh and scatter_params.inc by codegen/embed_scatter.cmake; edit those, not this file.\n"
  "#include <string_view>\n"
  "namespace loom::codegen::detail {\n"
  "std::string_view scatter_device_source();\n"
  "namespace { constexpr const char kScatter[] = R\"LOOM_SCATTER(${LOOM_TEXT})LOOM_SCATTER\"; }\n"
  "std::string_view scatter_device_source() { return {kScatter, sizeof(kScatter) - 1}; }\n"
  "}  // namespace loom::codegen::detail\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

# Writes OUTPUT: a C++ file defining loom::codegen::detail::attention_device_source() as the text of INPUT
# (codegen/src/cuda/attention.cuh, a raw string) with the line "// LOOM_ATTENTION_PARAMS" replaced by the
# text of PARAMS (codegen/src/cuda/attention_params.inc: the parameter struct the host packs, so both have one
# source).
file(READ "${INPUT}" LOOM_TEXT)
file(READ "${PARAMS}" LOOM_PARAMS_TEXT)
string(FIND "${LOOM_TEXT}" "// LOOM_ATTENTION_PARAMS\n" LOOM_MARKER)
if(LOOM_MARKER EQUAL -1)
  message(FATAL_ERROR "embed_attention.cmake: ${INPUT} has no line // LOOM_ATTENTION_PARAMS")
endif()
string(REPLACE "// LOOM_ATTENTION_PARAMS\n" "${LOOM_PARAMS_TEXT}" LOOM_TEXT "${LOOM_TEXT}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/attention.cuh and attention_params.inc by codegen/embed_attention.cmake; edit those, not this file.\n"
  "#include <string_view>\n"
  "namespace loom::codegen::detail {\n"
  "std::string_view attention_device_source();\n"
  "namespace { constexpr const char kAttention[] = R\"LOOM_ATTENTION(${LOOM_TEXT})LOOM_ATTENTION\"; }\n"
  "std::string_view attention_device_source() { return {kAttention, sizeof(kAttention) - 1}; }\n"
  "}  // namespace loom::codegen::detail\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

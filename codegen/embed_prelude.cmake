# Writes OUTPUT: a C++ file defining loom::codegen::prelude_source() as the text of INPUT (a raw string),
# with the line "// LOOM_RANDOM_CORE" replaced by the text of RANDOM_CORE (ir/include/loom/ir/random_core.hpp:
# the random number generator that the CPU reference compiles too, so both have one source).
file(READ "${INPUT}" LOOM_PRELUDE_TEXT)
file(READ "${RANDOM_CORE}" LOOM_RANDOM_CORE_TEXT)
string(FIND "${LOOM_PRELUDE_TEXT}" "// LOOM_RANDOM_CORE\n" LOOM_MARKER)
if(LOOM_MARKER EQUAL -1)
  message(FATAL_ERROR "embed_prelude.cmake: ${INPUT} has no line // LOOM_RANDOM_CORE")
endif()
string(REPLACE "// LOOM_RANDOM_CORE\n" "${LOOM_RANDOM_CORE_TEXT}" LOOM_PRELUDE_TEXT "${LOOM_PRELUDE_TEXT}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/prelude.cuh and ir/include/loom/ir/random_core.hpp by codegen/embed_prelude.cmake; edit those, not this file.\n"
  "#include \"loom/codegen/cuda/prelude.hpp\"\n"
  "namespace loom::codegen {\n"
  "namespace { constexpr const char kPrelude[] = R\"LOOM_PRELUDE(${LOOM_PRELUDE_TEXT})LOOM_PRELUDE\"; }\n"
  "std::string_view prelude_source() { return {kPrelude, sizeof(kPrelude) - 1}; }\n"
  "}  // namespace loom::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

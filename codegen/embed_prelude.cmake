# Writes OUTPUT: a C++ file defining loom::codegen::prelude_source() as the text of INPUT (a raw string),
# with the line "// LOOM_RANDOM_CORE" replaced by the text of RANDOM_CORE (ir/include/loom/ir/random_core.hpp:
# the random number generator) and the line "// LOOM_EXP_CORE" by the text of EXP_CORE
# (ir/include/loom/ir/exp_core.hpp: the float32 exp). The CPU reference compiles both too, so both back ends
# have one source.
file(READ "${INPUT}" LOOM_PRELUDE_TEXT)
foreach(core RANDOM_CORE EXP_CORE)
  file(READ "${${core}}" LOOM_CORE_TEXT)
  string(FIND "${LOOM_PRELUDE_TEXT}" "// LOOM_${core}\n" LOOM_MARKER)
  if(LOOM_MARKER EQUAL -1)
    message(FATAL_ERROR "embed_prelude.cmake: ${INPUT} has no line // LOOM_${core}")
  endif()
  string(REPLACE "// LOOM_${core}\n" "${LOOM_CORE_TEXT}" LOOM_PRELUDE_TEXT "${LOOM_PRELUDE_TEXT}")
endforeach()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/prelude.cuh, ir/include/loom/ir/random_core.hpp and ir/include/loom/ir/exp_core.hpp by codegen/embed_prelude.cmake; edit those, not this file.\n"
  "#include \"loom/codegen/cuda/prelude.hpp\"\n"
  "namespace loom::codegen {\n"
  "namespace { constexpr const char kPrelude[] = R\"LOOM_PRELUDE(${LOOM_PRELUDE_TEXT})LOOM_PRELUDE\"; }\n"
  "std::string_view prelude_source() { return {kPrelude, sizeof(kPrelude) - 1}; }\n"
  "}  // namespace loom::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

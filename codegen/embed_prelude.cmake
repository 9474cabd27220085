# Writes OUTPUT: a C++ file defining loom::codegen::prelude_source() as the text of INPUT (a raw string).
file(READ "${INPUT}" LOOM_PRELUDE_TEXT)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/prelude.cuh by codegen/embed_prelude.cmake; edit the .cuh, not this file.\n"
  "#include \"loom/codegen/cuda/prelude.hpp\"\n"
  "namespace loom::codegen {\n"
  "namespace { constexpr const char kPrelude[] = R\"LOOM_PRELUDE(${LOOM_PRELUDE_TEXT})LOOM_PRELUDE\"; }\n"
  "std::string_view prelude_source() { return {kPrelude, sizeof(kPrelude) - 1}; }\n"
  "}  // namespace loom::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

# Writes OUTPUT: a C++ file defining loom::codegen::detail::scan_device_source() as the text of INPUT
# (codegen/src/cuda/scan.cuh, a raw string) with the line "// LOOM_SCAN_PARAMS" replaced by the text of SCAN_PARAMS
# (codegen/src/cuda/scan_params.inc: the parameter struct the host packs) and the line "// LOOM_SCAN_CORE" by
# the text of SCAN_CORE (ir/include/loom/ir/scan_core.hpp: the combines the CPU reference compiles too), so
# each has one source.
file(READ "${INPUT}" LOOM_TEXT)
foreach(part SCAN_PARAMS SCAN_CORE)
  file(READ "${${part}}" LOOM_PART_TEXT)
  string(FIND "${LOOM_TEXT}" "// LOOM_${part}\n" LOOM_MARKER)
  if(LOOM_MARKER EQUAL -1)
    message(FATAL_ERROR "embed_scan.cmake: ${INPUT} has no line // LOOM_${part}")
  endif()
  string(REPLACE "// LOOM_${part}\n" "${LOOM_PART_TEXT}" LOOM_TEXT "${LOOM_TEXT}")
endforeach()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from codegen/src/cuda/scan.cuh, scan_params.inc and ir/include/loom/ir/scan_core.hpp by codegen/embed_scan.cmake; edit those, not this file.\n"
  "#include <string_view>\n"
  "namespace loom::codegen::detail {\n"
  "std::string_view scan_device_source();\n"
  "namespace { constexpr const char kScan[] = R\"LOOM_SCAN(${LOOM_TEXT})LOOM_SCAN\"; }\n"
  "std::string_view scan_device_source() { return {kScan, sizeof(kScan) - 1}; }\n"
  "}  // namespace loom::codegen::detail\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

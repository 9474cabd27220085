// The device prelude (codegen/src/cuda/prelude.cuh) embedded into the library at build time.
#pragma once

#include <string_view>

namespace loom::codegen {

/// Text of the prelude that every generated kernel starts with: namespace lm with one device function per
/// elementwise op of ops.def (the op's `cuda` spelling) for every register type, float16/bfloat16
/// conversions with round to nearest even, 16-byte vectors. Needs no headers under NVRTC.
std::string_view prelude_source();

}  // namespace loom::codegen

// Kernel names: the user's function name made into a valid, unique C identifier that profilers still read
// as the user's name.
#pragma once

#include <string>
#include <string_view>

namespace loom::codegen {

/// Longest kernel base name produced (characters); longer names are cut and get a hash suffix.
inline constexpr std::size_t kMaxKernelName = 64;

/// Sanitizes `user_name` into a C identifier: every run of characters outside [A-Za-z0-9_] becomes one
/// '_', leading and trailing '_' are dropped; when anything was changed, `_` and 8 hex digits of a
/// deterministic hash of the original name are appended so that distinct names stay distinct
/// ("f<int>" -> "f_int_1a2b3c4d"). Names starting with a digit, C/C++/CUDA keywords, names of the prelude's
/// namespace and the empty name get a "k_" prefix. Names above kMaxKernelName characters are cut and
/// hash-suffixed. Examples: "scale_bias_act" -> "scale_bias_act"; "a::b" -> "a_b_<hash>";
/// "operator()" -> "operator_<hash>".
std::string kernel_name(std::string_view user_name);

}  // namespace loom::codegen

// Sanitizing user function names into kernel names (see names.hpp).
#include "loom/codegen/plan/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "loom/ir/hash.hpp"

namespace loom::codegen {

namespace {

// C++20 keywords, alternative tokens, CUDA keywords and built-ins that a kernel name must not be.
constexpr std::string_view kReserved[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default",
    "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
    "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
    "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq",
    // CUDA built-in variables, types and Loom's prelude namespace
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "uint3", "main", "lm", "float4",
    "int4", "uint4", "float2", "double2", "half", "nv_bfloat16", "size_t", "ptrdiff_t", "clock", "printf",
    "malloc", "free"};

std::string hash_suffix(std::string_view s) {
    Hasher h;
    h.add(s);
    return fmt::format("{:08x}", static_cast<std::uint32_t>(h.digest()));
}

}  // namespace

std::string kernel_name(std::string_view user) {
    std::string out;
    bool pending = false;
    for (char ch : user) {
        const auto c = static_cast<unsigned char>(ch);
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) {
            pending = true;
            continue;
        }
        if (pending && !out.empty() && out.back() != '_') out += '_';
        pending = false;
        out += ch;
    }
    while (!out.empty() && out.front() == '_') out.erase(out.begin());
    while (!out.empty() && out.back() == '_') out.pop_back();
    // Collapse "__" (reserved in C++) inside names.
    std::string collapsed;
    for (char ch : out)
        if (!(ch == '_' && !collapsed.empty() && collapsed.back() == '_')) collapsed += ch;
    out = std::move(collapsed);
    const bool changed = out != user;
    if (out.empty() || (out[0] >= '0' && out[0] <= '9') ||
        std::find(std::begin(kReserved), std::end(kReserved), std::string_view(out)) != std::end(kReserved))
        out = "k_" + out;
    if (out.size() > kMaxKernelName - 9) {
        out.resize(kMaxKernelName - 9);
        while (!out.empty() && out.back() == '_') out.pop_back();
        return out + "_" + hash_suffix(user);
    }
    if (changed) {
        if (out.back() != '_') out += '_';
        out += hash_suffix(user);
    }
    return out;
}

}  // namespace loom::codegen

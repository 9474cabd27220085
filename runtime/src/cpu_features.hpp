// What the host CPU can run, for code compiled in a variant for it ([[gnu::target("avx2,fma")]]) beside a
// portable one: the CPU reference's product and attention loops and the host scalar library. Each variant
// gives the portable one's bits (fma rounds once, as a library call or an instruction).
#pragma once

namespace loom::detail {

/// Whether this is an x86-64 CPU with AVX2 and FMA (asked once); false on other targets.
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
#else
    return false;
#endif
}

}  // namespace loom::detail

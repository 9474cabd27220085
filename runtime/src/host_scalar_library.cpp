// The host scalar library: the functions that LLVM-generated host code calls for what it does not spell
// inline: the functions of rule FloatMath other than sqrt (exp ... gelu_tanh, pow, atan2), the random numbers
// of rule Random (random_uniform, random_normal: (index, seed) -> a value of each float dtype), the casts to
// float16 and bfloat16 that round once from an int32, int64 or float64 value, and the float16 conversions
// of a CPU without F16C, and the recording of a checked gather's out-of-range index. Each is an instantiation
// of the reference's own per-element code (ir/include/loom/ir/elementwise_impl.hpp), so generated code and
// the reference call the same function and get the same bits. Every function comes in two forms: `<name>(x)`
// for one element, and `<name>_v(x, out, n)` for the n lanes of a vector (arrays in, array out), so that a
// vector step makes one call. The names are those of codegen/src/llvm/llvm_ops.cpp (library_function,
// library_random, library_cast).
#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "cpu_features.hpp"
#include "host_internal.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/half.hpp"

namespace loom::host {

namespace {

using ir::Op;
namespace ew = ir::ew;

template <Op op, class C>
C unary_fn(C x) {
    return ew::unary<op>(x);
}
template <Op op, class C>
void unary_v(const C* x, C* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::unary<op>(x[i]);
}
template <Op op, class C>
C binary_fn(C a, C b) {
    return ew::binary<op>(a, b);
}
template <Op op, class C>
void binary_v(const C* a, const C* b, C* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::binary<op>(a[i], b[i]);
}
template <Op op, DType D>
ew::compute_t<D> random_fn(std::int64_t index, std::int64_t seed) {
    return ew::random<op, D>(index, seed);
}
template <Op op, DType D>
void random_v(const std::int64_t* index, const std::int64_t* seed, ew::compute_t<D>* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::random<op, D>(index[i], seed[i]);
}
#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_HOST_FMA_VARIANTS 1
// The same functions compiled for x86-64 CPUs with AVX2 and FMA, everything they call inlined (flatten): the
// reference's std::fma then becomes one instruction instead of a library call. fma rounds once either way and
// nothing else changes (the library is compiled with -ffp-contract=off), so both variants give the same bits;
// scalar_library() picks these on a CPU that has AVX2 and FMA.
template <Op op, class C>
[[gnu::target("avx2,fma"), gnu::flatten]] C unary_fn_fma(C x) {
    return ew::unary<op>(x);
}
template <Op op, class C>
[[gnu::target("avx2,fma"), gnu::flatten]] void unary_v_fma(const C* x, C* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::unary<op>(x[i]);
}
template <Op op, class C>
[[gnu::target("avx2,fma"), gnu::flatten]] C binary_fn_fma(C a, C b) {
    return ew::binary<op>(a, b);
}
template <Op op, class C>
[[gnu::target("avx2,fma"), gnu::flatten]] void binary_v_fma(const C* a, const C* b, C* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::binary<op>(a[i], b[i]);
}
template <Op op, DType D>
[[gnu::target("avx2,fma"), gnu::flatten]] ew::compute_t<D> random_fn_fma(std::int64_t index,
                                                                         std::int64_t seed) {
    return ew::random<op, D>(index, seed);
}
template <Op op, DType D>
[[gnu::target("avx2,fma"), gnu::flatten]] void random_v_fma(const std::int64_t* index,
                                                            const std::int64_t* seed, ew::compute_t<D>* out,
                                                            std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::random<op, D>(index[i], seed[i]);
}
#else
#define LOOM_HOST_FMA_VARIANTS 0
#endif

template <DType To, DType From>
float cast_fn(ew::compute_t<From> x) {
    return ew::cast<To, From>(x);
}
template <DType To, DType From>
void cast_v(const ew::compute_t<From>* x, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = ew::cast<To, From>(x[i]);
}

// Without F16C: the one-element forms pass the 16 bits in a 32-bit integer (no reliance on how a compiler
// extends a 16-bit argument).
std::uint32_t f32_to_f16_bits(float x) {
    return float_to_half_bits(x);
}
float f16_bits_to_f32(std::uint32_t h) {
    return half_bits_to_float(static_cast<std::uint16_t>(h));
}
void f32_to_f16_bits_v(const float* x, std::uint16_t* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = float_to_half_bits(x[i]);
}
void f16_bits_to_f32_v(const std::uint16_t* x, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = half_bits_to_float(x[i]);
}

// A checked gather's out-of-range index (codegen/src/llvm/llvm_space.cpp, gather_position): the first one
// of the run is kept in its error word (ir::GatherErrorWord), which the run loop reads after the last kernel.
void gather_error(void* word, std::int64_t id, std::int64_t value) {
    auto* w = static_cast<ir::GatherErrorWord*>(word);
    std::uint32_t expected = 0;
    if (std::atomic_ref<std::uint32_t>(w->flag).compare_exchange_strong(expected, 1u)) {
        w->id = static_cast<std::uint32_t>(id);
        w->value = value;
    }
}

template <class F>
const void* address(F* f) {
    return reinterpret_cast<const void*>(f);
}

// The symbol names live as long as the process.
const char* keep(std::string s) {
    static std::deque<std::string>* names = new std::deque<std::string>;  // stable addresses
    names->push_back(std::move(s));
    return names->back().c_str();
}

void add(std::vector<loom_hb_symbol>& s, const std::string& name, const void* one, const void* vector) {
    s.push_back({keep(name), one});
    s.push_back({keep(name + "_v"), vector});
}

// The one-element and vector forms of a unary, binary or random function under `name`: the AVX2/FMA
// variants where the CPU runs them, else the portable ones.
template <Op op, class C>
void add_unary_one(std::vector<loom_hb_symbol>& s, const std::string& name) {
#if LOOM_HOST_FMA_VARIANTS
    if (loom::detail::cpu_has_avx2_fma())
        return add(s, name, address(&unary_fn_fma<op, C>), address(&unary_v_fma<op, C>));
#endif
    add(s, name, address(&unary_fn<op, C>), address(&unary_v<op, C>));
}
template <Op op, class C>
void add_binary_one(std::vector<loom_hb_symbol>& s, const std::string& name) {
#if LOOM_HOST_FMA_VARIANTS
    if (loom::detail::cpu_has_avx2_fma())
        return add(s, name, address(&binary_fn_fma<op, C>), address(&binary_v_fma<op, C>));
#endif
    add(s, name, address(&binary_fn<op, C>), address(&binary_v<op, C>));
}

template <Op op, ir::Rule rule>
void add_unary(std::vector<loom_hb_symbol>& s, const char* name) {
    if constexpr (rule == ir::Rule::FloatMath &&
                  op != Op::Sqrt) {  // sqrt is an instruction (correctly rounded)
        add_unary_one<op, float>(s, std::string("loom_") + name + "_f32");
        add_unary_one<op, double>(s, std::string("loom_") + name + "_f64");
    }
}
template <Op op, ir::Rule rule>
void add_binary(std::vector<loom_hb_symbol>& s, const char* name) {
    if constexpr (rule == ir::Rule::FloatMath) {  // pow, atan2
        add_binary_one<op, float>(s, std::string("loom_") + name + "_f32");
        add_binary_one<op, double>(s, std::string("loom_") + name + "_f64");
    }
}

template <Op op, DType D>
void add_random_one(std::vector<loom_hb_symbol>& s, const char* name) {
    const std::string full = std::string("loom_") + name + "_" + std::string(short_name(D));
#if LOOM_HOST_FMA_VARIANTS
    if (loom::detail::cpu_has_avx2_fma())
        return add(s, full, address(&random_fn_fma<op, D>), address(&random_v_fma<op, D>));
#endif
    add(s, full, address(&random_fn<op, D>), address(&random_v<op, D>));
}
template <Op op, ir::Rule rule>
void add_random(std::vector<loom_hb_symbol>& s, const char* name) {
    if constexpr (rule == ir::Rule::Random) {  // random_uniform, random_normal: every float dtype
        add_random_one<op, DType::Float16>(s, name);
        add_random_one<op, DType::BFloat16>(s, name);
        add_random_one<op, DType::Float32>(s, name);
        add_random_one<op, DType::Float64>(s, name);
    }
}

template <DType From>
void add_casts(std::vector<loom_hb_symbol>& s, const char* from) {
    add(s, std::string("loom_cast_") + from + "_to_f16", address(&cast_fn<DType::Float16, From>),
        address(&cast_v<DType::Float16, From>));
    add(s, std::string("loom_cast_") + from + "_to_bf16", address(&cast_fn<DType::BFloat16, From>),
        address(&cast_v<DType::BFloat16, From>));
}

}  // namespace

const std::vector<loom_hb_symbol>& scalar_library() {
    static const std::vector<loom_hb_symbol> symbols = [] {
        std::vector<loom_hb_symbol> s;
#define LOOM_UNARY(Id, name, R, cuda) add_unary<Op::Id, ir::Rule::R>(s, name);
#define LOOM_BINARY(Id, name, R, cuda)        \
    add_binary<Op::Id, ir::Rule::R>(s, name); \
    add_random<Op::Id, ir::Rule::R>(s, name);
#include "loom/ir/ops.def"
        add_casts<DType::Int32>(s, "i32");
        add_casts<DType::Int64>(s, "i64");
        add_casts<DType::Float64>(s, "f64");
        add(s, "loom_f32_to_f16_bits", address(&f32_to_f16_bits), address(&f32_to_f16_bits_v));
        add(s, "loom_f16_bits_to_f32", address(&f16_bits_to_f32), address(&f16_bits_to_f32_v));
        s.push_back({keep("loom_gather_error"), address(&gather_error)});
        return s;
    }();
    return symbols;
}

}  // namespace loom::host

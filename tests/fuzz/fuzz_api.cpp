// loom_fuzz_api: a fuzzer of Loom's public API with bad input. Random calls of every kind the DSL offers
// (unary, binary and ternary ops and the operators, astype, reshape, broadcast_to, permute, transpose,
// slice, the reductions, var/std, softmax, layernorm, rmsnorm, assign, eval, item, `Tensor t = a`, traced
// functions, and Tensor::empty / as_strided / view below the DSL) with random shapes (ranks 0-9, extents
// from -2 to 2^40), dtypes, axes, slices, permutations, reshapes and scalars (weak and constant, out of
// every integer range, unsigned beyond int64, NaN and Inf), empty Arrays, undefined Tensors, placeholders
// and inputs on two devices; most of them invalid. Every call must either succeed or throw a loom::Error
// (never an InternalError, another exception or a crash) whose message starts with the API's name and,
// for calls that take a call site (everything above the Tensor constructors), ends with the caller's
// file:line "(fuzz_api.cpp:N)" (docs/semantics.md, section 11). A preallocated output poisoned before a
// call that fails keeps its bytes: no output is half-written. Valid results join the pool of operands, so
// calls compose; on --gpu valid evaluations are also checked against the CPU reference. The calls, their
// operands and main are in this file (the messages must name it); the Fuzzer class and the check of one
// call are in fuzz_api_internal.hpp, random values, the other checks and the report in fuzz_api_support.cpp.
//
//   loom_fuzz_api [--seed S] [--count N] [--gpu] [--verbose]
//
// Host tensors by default (CI, no GPU); --gpu puts the operands on cuda:0 (the GPU machine; a few host
// tensors stay, for the two-device errors). Exit status 0 when every call behaved, 1 otherwise, 2 on bad
// arguments. The last line is "fuzz_api: N calls, V valid, E errors (C clean), F failures".
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <loom/loom.hpp>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fuzz_api_internal.hpp"
#include "loom/ir/graph.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace fuzz_api;

namespace fuzz_api {

Fuzzer::Fuzzer(const FuzzOptions& o) : opt_(o) {
    rng_.g.seed(o.seed);
    dev_ = o.gpu ? Device::cuda(0) : Device::cpu();
    for (int k = 0; k < 28; ++k) tensors_.push_back(random_tensor(k));
    for (const Tensor& t : tensors_) pool_.push_back(Array(t));
    // A few host tensors on the GPU run (inputs on two devices), and a "cuda" view of host memory on the host
    // run (never dereferenced: placement is checked before anything runs).
    if (o.gpu) {
        for (int k = 0; k < 3; ++k)
            other_device_.push_back(testing::random_tensor(random_shape(3, 4), float32, 900 + k));
    } else {
        other_device_.push_back(Tensor::view(fake_.data(), {2, 3}, float32, {}, Device::cuda(0)));
        other_device_.push_back(Tensor::view(fake_.data(), {6}, float32, {}, Device::cuda(0)));
    }
}

// ---- operands ----
Fuzzer::Arg Fuzzer::random_arg() {
    Arg a{random_operand_kind(), {}, {}};
    switch (a.kind) {
        case OpKind::PoolArray:
            a.array = rng_.pick(pool_);
            break;
        case OpKind::Tensor:
            a.tensor = rng_.pick(tensors_);
            break;
        case OpKind::Double:
            a.d = random_double();
            break;
        case OpKind::Int:
            a.i = random_int();
            break;
        case OpKind::Bool:
            a.i = rng_.range(0, 1);
            break;
        case OpKind::Unsigned:
            a.u = rng_.chance(0.5) ? ~0ull - static_cast<unsigned long long>(rng_.range(0, 5)) : 7ull;
            break;
        case OpKind::ConstantValue:
            a.d = random_double();
            a.i = random_int();
            break;
        case OpKind::Empty:
        case OpKind::Undefined:
            break;
        case OpKind::Placeholder:
            a.array = Array(ir::input(random_dtype(), random_shape(3, 3), "p"));
            break;
        case OpKind::OtherDevice:
            a.tensor = rng_.pick(other_device_);
            break;
    }
    return a;
}

// Calls `fn` with `a` converted to an Operand at this line (fuzz_api.cpp): fn(const Operand&).
template <class F>
auto Fuzzer::with(const Arg& a, F&& fn) {
    switch (a.kind) {
        case OpKind::PoolArray:
        case OpKind::Placeholder:
        case OpKind::Empty:
            return fn(Operand(a.array));
        case OpKind::Tensor:
        case OpKind::Undefined:
        case OpKind::OtherDevice:
            return fn(Operand(a.tensor));
        case OpKind::Double:
            return fn(Operand(a.d));
        case OpKind::Int:
            return fn(Operand(a.i));
        case OpKind::Bool:
            return fn(Operand(a.i != 0));
        case OpKind::Unsigned:
            return fn(Operand(a.u));
        case OpKind::ConstantValue:
            return fn(Operand(a.i % 2 ? constant(a.d) : constant(a.i)));
    }
    return fn(Operand(a.array));
}

/// The Array of an operand for methods (Array::reshape ...): a pool array, or one made here.
Array Fuzzer::as_array(const Arg& a) {
    switch (a.kind) {
        case OpKind::Tensor:
        case OpKind::OtherDevice:
            return Array(a.tensor);
        case OpKind::Double:
            return Array(Operand(a.d).resolve_alone("fuzz"));
        default:
            return a.array;
    }
}

void Fuzzer::adopt(const Array& a) {
    // Arrays over placeholders join sometimes: their evaluations must fail at the call, outputs untouched.
    if (a.node()->size_bound() > 64 || a.numel() > 4096 ||
        (a.node()->reads_placeholder() && rng_.chance(0.7)))
        return;
    pool_[static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(pool_.size()) - 1))] = a;
    if (rng_.chance(0.1))
        pool_[static_cast<std::size_t>(rng_.range(0, 27))] =
            Array(tensors_[static_cast<std::size_t>(rng_.range(0, 27))]);
}

// ---- the calls ----
void Fuzzer::step() {
    const std::int64_t r = rng_.range(0, 99);
    if (r < 12) return unary();
    if (r < 26) return binary();
    if (r < 34) return operators();
    if (r < 39) return ternary();
    if (r < 42) return cast();
    if (r < 56) return views();
    if (r < 64) return reductions();
    if (r < 70) return composites();
    if (r < 88) return evaluations();
    if (r < 92) return traced();
    if (r < 95) return factories();
    if (r < 97) return tensor_views();
    return tensors();
}

/// A double that is sometimes not finite, not an integer, negative or huge.
double Fuzzer::wild_number() {
    switch (rng_.range(0, 7)) {
        case 0:
            return std::numeric_limits<double>::infinity();
        case 1:
            return std::numeric_limits<double>::quiet_NaN();
        case 2:
            return 0.5 * static_cast<double>(rng_.range(-9, 9));
        case 3:
            return 1e17;
        case 4:
            return 300.0;
        default:
            return static_cast<double>(rng_.range(-6, 12));
    }
}

/// arange, linspace, full, zeros, ones, eye and from_host with random, often invalid, arguments; the valid
/// ones are adopted into the pool (lazy factories fuse into later expressions).
void Fuzzer::factories() {
    const DType dt = rng_.chance(0.2) ? kDtypes[0] : random_dtype();
    switch (rng_.range(0, 5)) {
        case 0:
            attempt({{"arange"}}, [&] {
                return arange(wild_number(), wild_number(), rng_.chance(0.1) ? 0.0 : wild_number(), dt, dev_);
            });
            break;
        case 1:
            attempt({{"linspace"}}, [&] {
                return linspace(wild_number(), wild_number(), rng_.range(-2, 40), dt, rng_.chance(0.5), dev_);
            });
            break;
        case 2: {
            const Shape s = wild_shape(random_shape(3, 5));
            attempt({{"full"}}, [&] { return full(s, wild_number(), dt, dev_); });
            break;
        }
        case 3:
            attempt({{"eye"}},
                    [&] { return eye(rng_.range(-2, 9), rng_.range(-2, 9), rng_.range(-4, 4), dt, dev_); });
            break;
        case 4: {
            const Shape s = wild_shape(random_shape(2, 4));
            std::vector<double> values(static_cast<std::size_t>(rng_.range(0, 12)), 1.5);
            attempt({{"from_host"}}, [&] { return Array(from_host(values, s, dt, dev_)); });
            break;
        }
        default:
            attempt({{"zeros", "full"}}, [&] {
                return rng_.chance(0.5) ? zeros(wild_shape(random_shape(3, 4)), dt, dev_)
                                        : ones(random_shape(3, 4), dt, dev_);
            });
            break;
    }
}

/// Views of tensors (no call site: the message names the view, not a line): slice, permute, transposed,
/// reshape, squeeze, unsqueeze and view(dtype) with random, often invalid, arguments; valid views are
/// read back (they must stay inside their memory) and join the pool.
void Fuzzer::tensor_views() {
    const Tensor& t = rng_.pick(tensors_);
    const int rank = t.rank();
    auto keep = [&](const Tensor& v) {
        (void)v.to_vector<double>();  // reads every element of the view (copied back from a device)
        return Array(v);
    };
    switch (rng_.range(0, 6)) {
        case 0: {
            const auto spec = random_slice(t.shape());
            attempt({{"slice"}, false}, [&] { return keep(t.slice(spec)); });
            break;
        }
        case 1: {
            const auto p = random_perm(rank);
            attempt({{"permute"}, false}, [&] { return keep(t.permute(p)); });
            break;
        }
        case 2: {
            const Shape s = wild_shape(t.shape());
            attempt({{"reshape"}, false}, [&] { return keep(t.reshape(s)); });
            break;
        }
        case 3: {
            const std::int64_t axis = rng_.range(-rank - 1, rank);
            attempt({{"squeeze"}, false},
                    [&] { return keep(rng_.chance(0.3) ? t.squeeze() : t.squeeze(axis)); });
            break;
        }
        case 4: {
            const std::int64_t axis = rng_.range(-rank - 2, rank + 1);
            attempt({{"unsqueeze"}, false}, [&] { return keep(t.unsqueeze(axis)); });
            break;
        }
        case 5: {
            const DType dt = random_dtype();
            attempt({{"view"}, false}, [&] { return keep(t.view(dt)); });
            break;
        }
        default:
            attempt({{"transposed"}, false}, [&] { return keep(t.transposed()); });
            break;
    }
}

void Fuzzer::unary() {
    using Fn = Array (*)(const Operand&, Loc);
    static const std::vector<std::pair<const char*, Fn>> fns = {
        {"neg", neg},          {"abs", abs},
        {"sign", sign},        {"relu", relu},
        {"exp", exp},          {"exp2", exp2},
        {"expm1", expm1},      {"log", log},
        {"log2", log2},        {"log1p", log1p},
        {"sqrt", sqrt},        {"rsqrt", rsqrt},
        {"sin", sin},          {"cos", cos},
        {"tan", tan},          {"asin", asin},
        {"acos", acos},        {"atan", atan},
        {"sinh", sinh},        {"cosh", cosh},
        {"tanh", tanh},        {"asinh", asinh},
        {"acosh", acosh},      {"atanh", atanh},
        {"sigmoid", sigmoid},  {"erf", erf},
        {"gelu", gelu},        {"gelu_tanh", gelu_tanh},
        {"silu", silu},        {"floor", floor},
        {"ceil", ceil},        {"round", round},
        {"trunc", trunc},      {"logical_not", logical_not},
        {"isnan", isnan},      {"isinf", isinf},
        {"isfinite", isfinite}};
    const auto& [nm, fn] = rng_.pick(fns);
    const Arg x = random_arg();
    attempt({{nm}}, [&] { return with(x, [&](const Operand& o) { return fn(o, Loc::current()); }); }, {},
            {x});
}

void Fuzzer::binary() {
    using Fn = Array (*)(const Operand&, const Operand&, Loc);
    static const std::vector<std::pair<const char*, Fn>> fns = {{"add", add},
                                                                {"sub", sub},
                                                                {"mul", mul},
                                                                {"div", div},
                                                                {"floor_div", floor_div},
                                                                {"mod", mod},
                                                                {"rem", rem},
                                                                {"pow", pow},
                                                                {"atan2", atan2},
                                                                {"minimum", minimum},
                                                                {"maximum", maximum},
                                                                {"eq", eq},
                                                                {"ne", ne},
                                                                {"lt", lt},
                                                                {"le", le},
                                                                {"gt", gt},
                                                                {"ge", ge},
                                                                {"logical_and", logical_and},
                                                                {"logical_or", logical_or},
                                                                {"logical_xor", logical_xor},
                                                                {"bitwise_and", bitwise_and},
                                                                {"bitwise_or", bitwise_or},
                                                                {"bitwise_xor", bitwise_xor},
                                                                {"shift_left", shift_left},
                                                                {"shift_right", shift_right}};
    const auto& [nm, fn] = rng_.pick(fns);
    const Arg a = random_arg(), b = random_arg();
    attempt({{nm}},
            [&] {
                return with(a, [&](const Operand& x) {
                    return with(b, [&](const Operand& y) { return fn(x, y, Loc::current()); });
                });
            },
            {}, {a, b});
}

void Fuzzer::operators() {
    const Arg a = random_arg(), b = random_arg();
    const int k = static_cast<int>(rng_.range(0, 17));
    static const char* names[] = {"add",         "sub",         "mul",        "div",         "rem",
                                  "eq",          "ne",          "lt",         "le",          "gt",
                                  "ge",          "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                                  "shift_right", "neg",         "logical_not"};
    attempt({{names[k]}},
            [&] {
                return with(a, [&](const Operand& x) {
                    return with(b, [&](const Operand& y) -> Array {
                        switch (k) {
                            case 0:
                                return x + y;
                            case 1:
                                return x - y;
                            case 2:
                                return x * y;
                            case 3:
                                return x / y;
                            case 4:
                                return x % y;
                            case 5:
                                return x == y;
                            case 6:
                                return x != y;
                            case 7:
                                return x < y;
                            case 8:
                                return x <= y;
                            case 9:
                                return x > y;
                            case 10:
                                return x >= y;
                            case 11:
                                return x & y;
                            case 12:
                                return x | y;
                            case 13:
                                return x ^ y;
                            case 14:
                                return x << y;
                            case 15:
                                return x >> y;
                            case 16:
                                return -x;
                            default:
                                return !x;
                        }
                    });
                });
            },
            {}, {a, b});
}

void Fuzzer::ternary() {
    const Arg a = random_arg(), b = random_arg(), c = random_arg();
    const int k = static_cast<int>(rng_.range(0, 2));
    static const char* names[] = {"where", "fma", "clamp"};
    attempt({{names[k]}},
            [&] {
                return with(a, [&](const Operand& x) {
                    return with(b, [&](const Operand& y) {
                        return with(c, [&](const Operand& z) -> Array {
                            if (k == 0) return where(x, y, z);
                            if (k == 1) return fma(x, y, z);
                            return clamp(x, y, z);
                        });
                    });
                });
            },
            {}, {a, b, c});
}

void Fuzzer::cast() {
    const Arg x = random_arg();
    const DType dt = random_dtype();
    if (rng_.chance(0.5))
        attempt({{"astype"}}, [&] { return with(x, [&](const Operand& o) { return astype(o, dt); }); }, {},
                {x});
    else
        attempt({{"astype"}}, [&] { return as_array(x).astype(dt); }, {}, {x});
}

void Fuzzer::views() {
    const Arg x = random_arg();
    const Array a = as_array(x);
    const Shape like = a.node() ? a.shape() : Shape{2, 3};
    const int rank = static_cast<int>(like.size());
    switch (rng_.range(0, 8)) {
        case 0: {
            const Shape s = wild_shape(like);
            attempt({{"reshape"}}, [&] { return a.reshape(s); }, {}, {x});
            break;
        }
        case 1: {
            const Shape s = wild_shape(like);
            attempt({{"reshape"}}, [&] { return with(x, [&](const Operand& o) { return reshape(o, s); }); },
                    {}, {x});
            break;
        }
        case 2: {
            const Shape s = wild_shape(like);
            attempt({{"broadcast_to"}}, [&] { return a.broadcast_to(s); }, {}, {x});
            break;
        }
        case 3: {
            const Shape s = wild_shape(like);
            attempt({{"broadcast_to"}},
                    [&] { return with(x, [&](const Operand& o) { return broadcast_to(o, s); }); }, {}, {x});
            break;
        }
        case 4: {
            const auto p = random_perm(rank);
            attempt({{"permute"}}, [&] { return a.permute(p); }, {}, {x});
            break;
        }
        case 5: {
            const auto p = random_perm(rank);
            attempt({{"permute"}}, [&] { return with(x, [&](const Operand& o) { return permute(o, p); }); },
                    {}, {x});
            break;
        }
        case 6:
            attempt({{"transpose"}},
                    [&] {
                        if (rng_.chance(0.5)) return a.transposed();
                        return with(x, [&](const Operand& o) { return transpose(o); });
                    },
                    {}, {x});
            break;
        default: {
            const auto spec = random_slice(like);
            attempt({{"slice"}}, [&] { return a.slice(spec); }, {}, {x});
            break;
        }
    }
}

void Fuzzer::reductions() {
    using Fn = Array (*)(const Operand&, Axes, bool, Loc);
    static const std::vector<std::pair<const char*, Fn>> fns = {
        {"sum", sum},       {"prod", prod},     {"min", min}, {"max", max}, {"mean", mean},
        {"argmin", argmin}, {"argmax", argmax}, {"any", any}, {"all", all}};
    const auto& [nm, fn] = rng_.pick(fns);
    const Arg x = random_arg();
    const Array a = as_array(x);
    const auto axes = random_axes(a.node() ? a.rank() : 2);
    const bool keep = rng_.chance(0.3);
    attempt({{nm}},
            [&] { return with(x, [&](const Operand& o) { return fn(o, axes, keep, Loc::current()); }); }, {},
            {x});
}

void Fuzzer::composites() {
    const Arg x = random_arg();
    const Array a = as_array(x);
    const int rank = a.node() ? a.rank() : 2;
    const std::int64_t axis = rng_.range(-rank - 1, rank);
    switch (rng_.range(0, 5)) {
        case 0: {
            const auto axes = random_axes(rank);
            const double corr = rng_.chance(0.8) ? static_cast<double>(rng_.range(0, 2)) : -1.5;
            attempt({{"var"}}, [&] { return with(x, [&](const Operand& o) { return var(o, axes, corr); }); },
                    {}, {x});
            break;
        }
        case 1: {
            const auto axes = random_axes(rank);
            attempt({{"std"}},
                    [&] { return with(x, [&](const Operand& o) { return loom::std(o, axes, 1); }); }, {},
                    {x});
            break;
        }
        case 2:
            attempt({{"stddev"}}, [&] { return with(x, [&](const Operand& o) { return stddev(o, axis); }); },
                    {}, {x});
            break;
        case 3:
            attempt({{"softmax"}},
                    [&] { return with(x, [&](const Operand& o) { return softmax(o, axis); }); }, {}, {x});
            break;
        case 4: {
            const Arg w = random_arg(), b = random_arg();
            attempt({{"layernorm"}},
                    [&] {
                        return with(x, [&](const Operand& o) {
                            return with(w, [&](const Operand& ow) {
                                return with(
                                    b, [&](const Operand& ob) { return layernorm(o, ow, ob, 1e-5, axis); });
                            });
                        });
                    },
                    {}, {x, w, b});
            break;
        }
        default: {
            const Arg w = random_arg();
            attempt({{"rmsnorm"}},
                    [&] {
                        return with(x, [&](const Operand& o) {
                            return with(w, [&](const Operand& ow) { return rmsnorm(o, ow, 1e-6, axis); });
                        });
                    },
                    {}, {x, w});
            break;
        }
    }
}

/// A tensor on `d`; on the host run a "cuda" tensor is a view of host memory that is never dereferenced
/// (placement is checked before anything runs), or undefined when it would not fit.
Tensor Fuzzer::make_tensor(const Shape& s, DType dt, Device d) {
    if (d.is_cuda() && !opt_.gpu) {
        if (numel(s) * static_cast<std::int64_t>(itemsize(dt)) >
            static_cast<std::int64_t>(fake_.size() * sizeof(float)))
            return Tensor();
        return Tensor::view(fake_.data(), s, dt, {}, d);
    }
    return Tensor::empty(s, dt, d);
}

/// An output tensor for `a`: usually right, else of another shape, dtype or device, not contiguous,
/// or undefined.
Tensor Fuzzer::output_for(const Array& a) {
    const Shape s = a.node() ? a.shape() : Shape{2};
    const DType dt = a.node() ? a.dtype() : DType::Float32;
    const Device d = a.node() ? device_of(a) : dev_;
    const Device other = d.is_cuda() ? Device::cpu() : Device::cuda(0);
    switch (rng_.range(0, 6)) {
        case 0:
            return make_tensor(random_shape(2, 3), dt, d);
        case 1:
            return make_tensor(s, kDtypes[(static_cast<int>(dt) + 1) % 9], d);
        case 2:
            return make_tensor(s, dt, other);
        case 3: {
            if (s.size() < 2 || s[0] < 2 || s[1] < 2) return Tensor();
            Shape t = s;
            std::swap(t[0], t[1]);
            Tensor base = make_tensor(t, dt, d);
            if (!base.defined()) return base;
            Strides st = contiguous_strides(t);
            std::swap(st[0], st[1]);
            return base.as_strided(s, st, 0);  // not contiguous
        }
        default:
            return make_tensor(s, dt, d);
    }
}

Device Fuzzer::device_of(const Array& a) const {
    for (const ir::Node* n : ir::topo_order({a.node()}))
        if (n->op() == ir::Op::Input && n->payload())
            return static_cast<const Tensor::Impl*>(n->payload().get())->storage->device;
    return dev_;
}

void Fuzzer::evaluations() {
    const Arg x = random_arg();
    Array a = as_array(x);
    if (x.kind == OpKind::Empty) a = Array();
    if (a.node() && !small(a)) return;
    switch (rng_.range(0, 6)) {
        case 0:
        case 1: {  // assign into a poisoned output
            Tensor out = output_for(a);
            std::vector<Poisoned> outs;
            if (readable(out) && out.is_contiguous()) outs.push_back(poisoned(out));
            attempt({{"assign", "eval"}},
                    [&] {
                        assign(out, a);
                        check(a, out);
                        return Array();
                    },
                    outs, {x});
            break;
        }
        case 2: {  // two outputs, sometimes sharing memory
            const Arg y = random_arg();
            Array b = as_array(y);
            if (b.node() && !small(b)) return;
            Tensor o1 = output_for(a);
            Tensor o2 = rng_.chance(0.3) ? o1 : output_for(b);
            std::vector<Poisoned> outs;
            for (const Tensor& o : {o1, o2})
                if (readable(o) && o.is_contiguous() && (outs.empty() || o.storage() != outs[0].t.storage()))
                    outs.push_back(poisoned(o));
            attempt({{"assign", "eval"}},
                    [&] {
                        assign({o1, o2}, {a, b});
                        check(a, o1);
                        check(b, o2);
                        return Array();
                    },
                    outs, {x, y});
            break;
        }
        case 3:
            attempt({{"eval"}},
                    [&] {
                        const Tensor t = a.eval();
                        check(a, t);
                        return Array();
                    },
                    {}, {x});
            break;
        case 4:
            attempt({{"eval"}},
                    [&] {
                        const std::vector<Tensor> ts = eval(std::vector<Array>{a, rng_.pick(pool_)});
                        check(a, ts[0]);
                        return Array();
                    },
                    {}, {x});
            break;
        case 5:
            attempt({{"eval"}, a.node() != nullptr},
                    [&] {                    // an empty Array's conversion has no call site
                        const Tensor t = a;  // errors name the line of the array's last op (fuzz_api.cpp)
                        check(a, t);
                        return Array();
                    },
                    {}, {x});
            break;
        default:
            attempt({{"item", "eval"}},
                    [&] {
                        (void)a.item<double>();
                        ++stats_.evaluations;
                        return Array();
                    },
                    {}, {x});
            break;
    }
}

void Fuzzer::traced() {
    static auto f_add = loom::function("fuzz_add", [](Array p, Array q) { return p + q * 2.0; });
    static auto f_norm = loom::function("fuzz_norm", [](Array p) { return softmax(p, 0) + sum(p, 0); });
    static auto f_pair =
        loom::function("fuzz_pair", [](Array p, Array q) { return std::make_tuple(p * q, maximum(p, q)); });
    auto arg = [&](bool first) -> Tensor {
        const std::int64_t r = rng_.range(0, 19);
        if (r == 0) return Tensor();
        // The host run's "cuda" views have no device behind them: not as the first argument, which places
        // the function (that would be a NoDeviceError, not the argument check under test).
        if (r == 1 && (opt_.gpu || !first)) return rng_.pick(other_device_);
        return rng_.pick(tensors_);
    };
    const Tensor p = arg(true), q = arg(false);
    auto make_out = [&](const Tensor& like) {
        if (!readable(like) || rng_.chance(0.4))
            return Tensor::empty(random_shape(2, 3), random_dtype(), dev_);
        return Tensor::empty(like.shape(), like.dtype(), like.device());
    };
    switch (rng_.range(0, 4)) {
        case 0:
            attempt({{"fuzz_add", "add", "mul"}}, [&] {
                (void)f_add(p, q);
                return Array();
            });
            break;
        case 1: {
            Tensor o = make_out(p);
            std::vector<Poisoned> outs{poisoned(o)};
            attempt(
                {{"fuzz_add", "add", "mul"}},
                [&] {
                    f_add(p, q, o);
                    return Array();
                },
                outs);
            break;
        }
        case 2:
            attempt({{"fuzz_norm", "softmax", "sum", "add"}}, [&] {
                (void)f_norm(p);
                return Array();
            });
            break;
        default: {
            Tensor o1 = make_out(p), o2 = rng_.chance(0.2) ? o1 : make_out(q);
            std::vector<Poisoned> outs{poisoned(o1)};
            if (o2.storage() != o1.storage()) outs.push_back(poisoned(o2));
            attempt(
                {{"fuzz_pair", "mul", "maximum"}},
                [&] {
                    f_pair(p, q, o1, o2);
                    return Array();
                },
                outs);
            break;
        }
    }
}

/// Below the DSL: no call site, so the message names the API but no line.
void Fuzzer::tensors() {
    const Shape s = wild_shape(random_shape(3, 4));
    const DType dt = random_dtype();
    switch (rng_.range(0, 3)) {
        case 0:
            attempt({{"Tensor::empty"}, false}, [&] {
                (void)Tensor::empty(s, dt, Device::cpu());
                return Array();
            });
            break;
        case 1: {
            const Tensor& t = rng_.pick(tensors_);
            Strides st;
            for (std::size_t k = 0; k < s.size(); ++k) st.push_back(rng_.range(-3, 6));
            if (rng_.chance(0.2)) st.push_back(1);
            const std::int64_t off = rng_.range(-2, 40);
            attempt({{"Tensor::as_strided"}, false}, [&] {
                (void)t.as_strided(s, st, off);
                return Array();
            });
            break;
        }
        case 2:
            attempt({{"Tensor::view"}, false}, [&] {
                (void)Tensor::view(rng_.chance(0.5) ? nullptr : fake_.data(), s, dt, {}, Device::cpu());
                return Array();
            });
            break;
        default: {
            const Tensor undefined;
            attempt({{"Array"}}, [&] { return Array(undefined); });
            break;
        }
    }
}

}  // namespace fuzz_api

namespace {

bool parse(int argc, char** argv, FuzzOptions& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (a == "--gpu")
            o.gpu = true;
        else if (a == "--verbose")
            o.verbose = true;
        else if (a == "--seed" || a == "--count") {
            const char* v = next();
            if (!v) return false;
            if (a == "--seed")
                o.seed = std::strtoull(v, nullptr, 10);
            else
                o.count = std::atoll(v);
        } else {
            std::fprintf(stderr, "usage: loom_fuzz_api [--seed S] [--count N] [--gpu] [--verbose]\n");
            return false;
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    FuzzOptions opt;
    if (!parse(argc, argv, opt)) return 2;
    if (opt.gpu && !cuda_available()) {
        std::printf("loom_fuzz_api: --gpu without a CUDA device: host tensors instead\n");
        opt.gpu = false;
    }
    std::printf("loom_fuzz_api: seed %llu, %lld calls, %s tensors\n",
                static_cast<unsigned long long>(opt.seed), opt.count, opt.gpu ? "device" : "host");
    std::fflush(stdout);
    try {
        return Fuzzer(opt).run();
    } catch (const std::exception& e) {
        std::printf("fuzz_api: FAILURE: escaped the fuzzer: %s\n", e.what());
        return 1;
    }
}

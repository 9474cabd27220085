// Node constructors: typing, broadcasting, explicit casts, IEEE-safe folding, interning.
#include "loom/ir/build.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "loom/ir/elementwise.hpp"
#include "loom/ir/elementwise_impl.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"

namespace loom::ir {

std::string describe(const Node& n) {
    return fmt::format("{} {}", to_string(n.shape()), name(n.dtype()));
}

namespace {

[[noreturn]] void fail(std::string_view api, const Loc& loc, const std::string& msg) {
    throw Error(fmt::format("{}(): {} ({})", api, msg, short_location(loc)));
}

NodeDesc desc_of(Op op, DType dt, Shape shape, std::vector<NodePtr> ops, const Loc& loc) {
    NodeDesc d;
    d.op = op;
    d.dtype = dt;
    d.shape = std::move(shape);
    d.operands = std::move(ops);
    d.loc = loc;
    return d;
}

bool is_const(const NodePtr& n) {
    return n->op() == Op::Constant;
}

// Element counts are int64 everywhere: a shape whose product overflows is an error, never a wrapped count.
void check_numel(std::string_view api, const Shape& shape, const Loc& loc) {
    std::int64_t n = 1;
    for (auto e : shape)
        if (e >= 0 && __builtin_mul_overflow(n, e, &n))
            fail(api, loc,
                 fmt::format("shape {} has more elements than a 64-bit count can hold", to_string(shape)));
}

bool const_equals(const NodePtr& n, double v, bool require_sign = false) {
    if (!is_const(n)) return false;
    const ScalarValue& s = n->value();
    if (s.is_float) {
        if (s.f != v) return false;
        return !require_sign || std::signbit(s.f) == std::signbit(v);
    }
    return static_cast<double>(s.i) == v;
}

// Operands of an elementwise op, all cast to `dt` where `dt` is given.
NodePtr cast_to(const NodePtr& a, DType dt, const Loc& loc) {
    return a->dtype() == dt ? a : cast(a, dt, loc);
}

Shape broadcast_all(std::string_view api, const std::vector<NodePtr>& ops, const Loc& loc) {
    Shape out = ops[0]->shape();
    for (std::size_t k = 1; k < ops.size(); ++k) {
        Shape next;
        if (!broadcast_shapes(out, ops[k]->shape(), next)) {
            std::string shapes;
            for (std::size_t j = 0; j < ops.size(); ++j)
                shapes += fmt::format("{}{}", j ? " and " : "", describe(*ops[j]));
            fail(api, loc, fmt::format("shapes {} do not broadcast", shapes));
        }
        out = std::move(next);
    }
    return out;
}

// All operands constant: compute the value now, exactly as the reference would.
NodePtr fold(Op op, DType out, DType in, const std::vector<NodePtr>& ops, const Loc& loc) {
    ScalarValue args[3];
    for (std::size_t k = 0; k < ops.size(); ++k) args[k] = ops[k]->value();
    return constant(eval_elementwise(op, out, in, args), out, loc);
}

// IEEE-754-safe algebraic identities with a constant operand. Returns nullptr when none applies. Never
// x*0 -> 0, x-x -> 0, x/x -> 1 or x+0 -> x for floats (NaN, Inf and -0.0 make them wrong).
NodePtr simplify_binary(Op op, const NodePtr& a, const NodePtr& b) {
    const bool fl = is_float(a->dtype());
    switch (op) {
        case Op::Add:
            if (fl ? const_equals(b, -0.0, true) : const_equals(b, 0)) return a;  // x + (-0.0) == x
            if (fl ? const_equals(a, -0.0, true) : const_equals(a, 0)) return b;
            return nullptr;
        case Op::Sub:
            if (fl ? const_equals(b, 0.0, true) : const_equals(b, 0)) return a;  // x - (+0.0) == x
            if (!fl && a == b) return constant(ScalarValue::of_int(0), a->dtype(), a->loc());
            return nullptr;
        case Op::Mul:
            if (const_equals(b, 1)) return a;
            if (const_equals(a, 1)) return b;
            if (!fl && a->dtype() != DType::Bool && (const_equals(b, 0) || const_equals(a, 0)))
                return constant(ScalarValue::of_int(0), a->dtype(), a->loc());
            return nullptr;
        case Op::Div:
            if (const_equals(b, 1)) return a;
            return nullptr;
        case Op::BitXor:
            if (a == b) return constant(ScalarValue::of_int(0), a->dtype(), a->loc());
            return nullptr;
        case Op::BitAnd:
        case Op::BitOr:
            if (a == b) return a;
            return nullptr;
        default:
            return nullptr;
    }
}

}  // namespace

ScalarValue make_scalar_value(double v, DType dtype, std::string_view api, Loc loc) {
    switch (dtype) {
        case DType::Float64:
            return ScalarValue::of_float(v);
        case DType::Float32:
            return ScalarValue::of_float(static_cast<double>(static_cast<float>(v)));
        case DType::Float16:
            return ScalarValue::of_float(half_bits_to_float(double_to_half_bits(v)));
        case DType::BFloat16:
            return ScalarValue::of_float(bf16_bits_to_float(double_to_bf16_bits(v)));
        case DType::Bool:
            return ScalarValue::of_int(v != 0.0 ? 1 : 0);
        default:
            break;
    }
    if (!std::isfinite(v) || v != std::trunc(v) || v < -9223372036854775808.0 || v >= 9223372036854775808.0)
        fail(api, loc, fmt::format("scalar {} is not a value of the integer dtype {}", v, name(dtype)));
    return make_scalar_value(static_cast<std::int64_t>(v), dtype, api, loc);
}

ScalarValue make_scalar_value(std::int64_t v, DType dtype, std::string_view api, Loc loc) {
    std::int64_t lo = 0, hi = 0;
    switch (dtype) {
        case DType::Bool:
            return ScalarValue::of_int(v != 0 ? 1 : 0);
        case DType::Int8:
            lo = -128;
            hi = 127;
            break;
        case DType::UInt8:
            lo = 0;
            hi = 255;
            break;
        case DType::Int32:
            lo = std::numeric_limits<std::int32_t>::min();
            hi = std::numeric_limits<std::int32_t>::max();
            break;
        case DType::Int64:
            return ScalarValue::of_int(v);
        case DType::Float64:
            return ScalarValue::of_float(static_cast<double>(v));  // rounds once (above 2^53)
        case DType::Float32:
        case DType::Float16:
        case DType::BFloat16:
            // Rounded once, as a cast of an int64 array is (docs/semantics.md, section 6): through a double
            // rounded to odd, exact below 2^53, which the narrower format then rounds to nearest even; a
            // plain double would round a second time.
            return make_scalar_value(ew::int64_to_double_odd(v), dtype, api, loc);
        default:  // a value cast to DType that names none (the double overload comes back here)
            fail(api, loc, fmt::format("{} is not a Loom dtype", static_cast<int>(dtype)));
    }
    if (v < lo || v > hi)
        fail(api, loc, fmt::format("scalar {} is out of range for {} [{}, {}]", v, name(dtype), lo, hi));
    return ScalarValue::of_int(v);
}

NodePtr input(DType dtype, const Shape& shape, std::string label, std::shared_ptr<const void> payload,
              Loc loc) {
    check_shape("input", shape, dtype, loc);
    NodeDesc d = desc_of(Op::Input, dtype, shape, {}, loc);
    d.ints = {static_cast<std::int64_t>(next_input_id())};
    d.label = std::move(label);
    d.payload = std::move(payload);
    return intern(std::move(d));
}

NodePtr scalar(ScalarValue v, DType dtype, Loc loc) {
    NodeDesc d = desc_of(Op::Scalar, dtype, {}, {}, loc);
    d.value = v;
    return intern(std::move(d));
}

NodePtr constant(ScalarValue v, DType dtype, Loc loc) {
    NodeDesc d = desc_of(Op::Constant, dtype, {}, {}, loc);
    d.value = v;
    return intern(std::move(d));
}

void check_shape(std::string_view api, const Shape& shape, DType dtype, Loc loc) {
    check_shape(api, shape, loc);
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(numel(shape), static_cast<std::int64_t>(itemsize(dtype)), &bytes))
        fail(api, loc,
             fmt::format("shape {} {} has more bytes than a 64-bit count can hold", to_string(shape),
                         name(dtype)));
}

void check_shape(std::string_view api, const Shape& shape, Loc loc) {
    if (shape.size() > static_cast<std::size_t>(kMaxRank))
        fail(api, loc,
             fmt::format("rank {} of shape {} exceeds the maximum rank {}", shape.size(), to_string(shape),
                         kMaxRank));
    for (auto e : shape)
        if (e < 0) fail(api, loc, fmt::format("negative extent in shape {}", to_string(shape)));
    check_numel(api, shape, loc);
}

NodePtr iota(const Shape& shape, std::int64_t axis, std::int64_t device, std::string_view api, Loc loc) {
    check_shape(api, shape, DType::Int64, loc);
    const auto r = static_cast<std::int64_t>(shape.size());
    if (r == 0) fail(api, loc, "an index needs an axis; the shape [] has none");
    if (axis < -r || axis >= r)
        fail(api, loc, fmt::format("axis {} is out of range for shape {}", axis, to_string(shape)));
    NodeDesc d = desc_of(Op::Iota, DType::Int64, shape, {}, loc);
    d.ints = {axis < 0 ? axis + r : axis, device};
    return intern(std::move(d));
}

NodePtr row_major_index(const Shape& shape, std::int64_t device, std::string_view api, Loc loc) {
    check_shape(api, shape, loc);
    if (shape.size() == 1) return iota(shape, 0, device, api, loc);
    // One iota over the elements, reshaped: a contiguous index, so that a kernel reads element e's index as
    // e plus a base, and a vector's consecutive elements as consecutive indices (the random numbers' blocks
    // of 4 shared by a vector's lanes: docs/semantics.md, "Random numbers"). The count fits: checked.
    std::int64_t count = 1;
    for (std::int64_t e : shape) count *= e;
    return reshape(iota({count}, 0, device, api, loc), shape, loc);
}

NodePtr random_values(Op op, const Shape& shape, std::uint64_t seed, DType dtype, std::int64_t device,
                      std::string_view api, Loc loc) {
    if (!is_float(dtype)) fail(api, loc, fmt::format("dtype {} is not a float dtype", name(dtype)));
    const NodePtr s = scalar(ScalarValue::of_int(static_cast<std::int64_t>(seed)), DType::Int64, loc);
    return random(op, row_major_index(shape, device, api, loc), s, dtype, loc);
}

NodePtr fill(ScalarValue v, DType dtype, const Shape& shape, std::int64_t device, std::string_view api,
             Loc loc) {
    check_shape(api, shape, dtype, loc);
    NodeDesc d = desc_of(Op::Fill, dtype, shape, {}, loc);
    d.value = v;
    d.ints = {device};
    return intern(std::move(d));
}

NodePtr cast(NodePtr a, DType to, Loc loc) {
    if (a->dtype() == to) return a;
    if (is_const(a)) {
        ScalarValue arg = a->value();
        return constant(eval_elementwise(Op::Cast, to, a->dtype(), &arg), to, loc);
    }
    Shape s = a->shape();  // read before `a` is moved: argument evaluation order is unspecified
    return intern(desc_of(Op::Cast, to, std::move(s), {std::move(a)}, loc));
}

NodePtr unary(Op op, NodePtr a, Loc loc) {
    const OpInfo& oi = info(op);
    if (oi.kind != OpKind::Unary) throw InternalError(fmt::format("unary(): {} is not a unary op", oi.name));
    DType out = a->dtype();
    switch (oi.rule) {
        case Rule::Numeric:
            if (a->dtype() == DType::Bool)
                fail(oi.name, loc, fmt::format("operand {} is bool", describe(*a)));
            break;
        case Rule::FloatMath:
            if (!is_float(a->dtype())) a = cast(a, DType::Float32, loc);
            out = a->dtype();
            break;
        case Rule::Rounding:
            if (a->dtype() == DType::Bool)
                fail(oi.name, loc, fmt::format("operand {} is bool", describe(*a)));
            if (is_integer(a->dtype())) return a;  // integers are already whole
            break;
        case Rule::ToBool:
            out = DType::Bool;
            break;
        default:
            throw InternalError(fmt::format("unary(): rule of {} is not a unary rule", oi.name));
    }
    if (op == Op::Neg && a->op() == Op::Neg) return a->operand_ptr(0);  // exact for every value
    if (op == Op::LogicalNot && a->op() == Op::LogicalNot && a->operand(0)->dtype() == DType::Bool)
        return a->operand_ptr(0);
    if (is_const(a)) return fold(op, out, a->dtype(), {a}, loc);
    Shape s = a->shape();
    return intern(desc_of(op, out, std::move(s), {std::move(a)}, loc));
}

NodePtr binary(Op op, NodePtr a, NodePtr b, Loc loc) {
    const OpInfo& oi = info(op);
    if (oi.kind != OpKind::Binary)
        throw InternalError(fmt::format("binary(): {} is not a binary op", oi.name));
    const Shape shape = broadcast_all(oi.name, {a, b}, loc);
    DType p = promote(a->dtype(), b->dtype());
    DType in = p, out = p;
    auto operands_desc = [&] { return fmt::format("operands {} and {}", describe(*a), describe(*b)); };
    switch (oi.rule) {
        case Rule::Arith:
            if (p == DType::Bool)
                fail(oi.name, loc, fmt::format("{}: arithmetic on bool; cast first", operands_desc()));
            break;
        case Rule::FloatMath:
            if (!is_float(p)) in = out = DType::Float32;
            break;
        case Rule::Compare:
            out = DType::Bool;
            break;
        case Rule::Logical:
            in = out = DType::Bool;
            break;
        case Rule::Bitwise:
            if (is_float(p))
                fail(oi.name, loc, fmt::format("{}: bitwise ops take integers or bool", operands_desc()));
            break;
        case Rule::Shift:
            if (!is_integer(a->dtype()) || !is_integer(b->dtype()))
                fail(oi.name, loc, fmt::format("{}: shifts take integers", operands_desc()));
            in = out = a->dtype();
            break;
        case Rule::Random:
            return random(op, std::move(a), std::move(b), DType::Float32, loc);
        default:
            throw InternalError(fmt::format("binary(): rule of {} is not a binary rule", oi.name));
    }
    if (oi.rule == Rule::Shift && b->dtype() != in) {
        // The amount moves to the left operand's dtype; clamp it first so that an amount out of that
        // dtype's range cannot wrap into a small one (int8 x << 256 must stay an oversized shift).
        const DType bd = b->dtype();
        b = ternary(Op::Clamp, b, constant(ScalarValue::of_int(is_signed_integer(bd) ? -1 : 0), bd, loc),
                    constant(ScalarValue::of_int(64), bd, loc), loc);
    }
    a = cast_to(a, in, loc);
    b = cast_to(b, in, loc);
    if (is_const(a) && is_const(b)) return broadcast_to(fold(op, out, in, {a, b}, loc), shape, loc);
    if (out == in) {
        if (NodePtr s = simplify_binary(op, a, b)) return broadcast_to(s, shape, loc);
    }
    a = broadcast_to(a, shape, loc);
    b = broadcast_to(b, shape, loc);
    return intern(desc_of(op, out, shape, {std::move(a), std::move(b)}, loc));
}

NodePtr random(Op op, NodePtr index, NodePtr seed, DType dtype, Loc loc) {
    const OpInfo& oi = info(op);
    if (oi.rule != Rule::Random) throw InternalError(fmt::format("random(): {} is not a random op", oi.name));
    if (is_float(index->dtype()) || is_float(seed->dtype()))
        fail(
            oi.name, loc,
            fmt::format("index {} and seed {}: random ops take integers", describe(*index), describe(*seed)));
    if (!is_float(dtype)) fail(oi.name, loc, fmt::format("dtype {} is not a float dtype", name(dtype)));
    const Shape shape = broadcast_all(oi.name, {index, seed}, loc);
    index = cast_to(index, DType::Int64, loc);
    seed = cast_to(seed, DType::Int64, loc);
    if (is_const(index) && is_const(seed))
        return broadcast_to(fold(op, dtype, DType::Int64, {index, seed}, loc), shape, loc);
    index = broadcast_to(index, shape, loc);
    seed = broadcast_to(seed, shape, loc);
    return intern(desc_of(op, dtype, shape, {std::move(index), std::move(seed)}, loc));
}

NodePtr ternary(Op op, NodePtr a, NodePtr b, NodePtr c, Loc loc) {
    const OpInfo& oi = info(op);
    if (oi.kind != OpKind::Ternary)
        throw InternalError(fmt::format("ternary(): {} is not a ternary op", oi.name));
    const Shape shape = broadcast_all(oi.name, {a, b, c}, loc);
    DType in{}, out{};
    switch (oi.rule) {
        case Rule::Select:
            a = cast_to(a, DType::Bool, loc);
            in = out = promote(b->dtype(), c->dtype());
            b = cast_to(b, out, loc);
            c = cast_to(c, out, loc);
            break;
        case Rule::FloatArith:
        case Rule::Clamp: {
            DType p = promote(promote(a->dtype(), b->dtype()), c->dtype());
            if (oi.rule == Rule::FloatArith && !is_float(p)) p = DType::Float32;
            if (p == DType::Bool)
                fail(oi.name, loc,
                     fmt::format("operands {}, {} and {}: arithmetic on bool; cast first", describe(*a),
                                 describe(*b), describe(*c)));
            in = out = p;
            a = cast_to(a, p, loc);
            b = cast_to(b, p, loc);
            c = cast_to(c, p, loc);
            break;
        }
        default:
            throw InternalError(fmt::format("ternary(): rule of {} is not a ternary rule", oi.name));
    }
    if (is_const(a) && is_const(b) && is_const(c))
        return broadcast_to(fold(op, out, in, {a, b, c}, loc), shape, loc);
    if (op == Op::Where && is_const(a)) return broadcast_to(a->value().i ? b : c, shape, loc);
    if (op == Op::Where && b == c) return broadcast_to(b, shape, loc);
    a = broadcast_to(a, shape, loc);
    b = broadcast_to(b, shape, loc);
    c = broadcast_to(c, shape, loc);
    return intern(desc_of(op, out, shape, {std::move(a), std::move(b), std::move(c)}, loc));
}

NodePtr broadcast_to(NodePtr a, const Shape& shape, Loc loc) {
    if (a->shape() == shape) return a;
    for (const auto e : shape)
        if (e < 0)
            fail("broadcast_to", loc,
                 fmt::format("negative extent in {} for operand {}", to_string(shape), describe(*a)));
    Shape check;
    if (shape.size() < a->shape().size() || !broadcast_shapes(a->shape(), shape, check) || check != shape)
        fail("broadcast_to", loc,
             fmt::format("operand {} does not broadcast to {}", describe(*a), to_string(shape)));
    if (shape.size() > static_cast<std::size_t>(kMaxRank))
        fail("broadcast_to", loc,
             fmt::format("rank of {} exceeds the maximum rank {}", to_string(shape), kMaxRank));
    check_numel("broadcast_to", shape, loc);
    if (a->op() == Op::BroadcastTo) a = a->operand_ptr(0);  // broadcast of a broadcast: one view
    const DType dt = a->dtype();  // read before `a` is moved: argument evaluation order is unspecified
    return intern(desc_of(Op::BroadcastTo, dt, shape, {std::move(a)}, loc));
}

NodePtr reshape(NodePtr a, Shape shape, Loc loc) {
    int infer = -1;
    std::int64_t known = 1;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == -1) {
            if (infer >= 0) fail("reshape", loc, fmt::format("more than one -1 in {}", to_string(shape)));
            infer = static_cast<int>(k);
        } else if (shape[k] < 0) {
            fail("reshape", loc, fmt::format("negative extent in {}", to_string(shape)));
        } else if (__builtin_mul_overflow(known, shape[k], &known)) {
            fail("reshape", loc,
                 fmt::format("shape {} has more elements than a 64-bit count can hold", to_string(shape)));
        }
    }
    const std::int64_t n = a->numel();
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            fail("reshape", loc, fmt::format("cannot reshape {} to {}", describe(*a), to_string(shape)));
        shape[static_cast<std::size_t>(infer)] = n / known;
    } else if (known != n) {
        fail("reshape", loc,
             fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", describe(*a), n,
                         to_string(shape), known));
    }
    if (shape.size() > static_cast<std::size_t>(kMaxRank))
        fail("reshape", loc,
             fmt::format("rank of {} exceeds the maximum rank {}", to_string(shape), kMaxRank));
    if (shape == a->shape()) return a;
    if (a->op() == Op::Reshape) a = a->operand_ptr(0);  // reshape of a reshape: one view
    if (shape == a->shape()) return a;
    if (is_const(a) || (a->op() == Op::BroadcastTo && is_const(a->operand_ptr(0))))
        return broadcast_to(is_const(a) ? a : a->operand_ptr(0), shape, loc);
    const DType dt = a->dtype();  // read before `a` is moved: argument evaluation order is unspecified
    return intern(desc_of(Op::Reshape, dt, std::move(shape), {std::move(a)}, loc));
}

NodePtr permute(NodePtr a, std::vector<std::int64_t> perm, Loc loc) {
    const int r = a->rank();
    if (static_cast<int>(perm.size()) != r)
        fail("permute", loc,
             fmt::format("permutation [{}] has {} entries for operand {}", fmt::join(perm, ", "), perm.size(),
                         describe(*a)));
    std::vector<bool> seen(static_cast<std::size_t>(r), false);
    for (auto& p : perm) {
        int ax = normalize_axis(p, r);
        if (ax < 0 || seen[static_cast<std::size_t>(ax)])
            fail("permute", loc,
                 fmt::format("[{}] is not a permutation of the axes of {}", fmt::join(perm, ", "),
                             describe(*a)));
        seen[static_cast<std::size_t>(ax)] = true;
        p = ax;
    }
    if (a->op() == Op::Permute) {  // compose: out[k] = in[inner[perm[k]]]
        const auto& inner = a->ints();
        for (auto& p : perm) p = inner[static_cast<std::size_t>(p)];
        a = a->operand_ptr(0);
    }
    bool identity = true;
    for (int k = 0; k < r; ++k) identity = identity && perm[static_cast<std::size_t>(k)] == k;
    if (identity) return a;
    Shape shape(static_cast<std::size_t>(r));
    for (int k = 0; k < r; ++k)
        shape[static_cast<std::size_t>(k)] =
            a->shape()[static_cast<std::size_t>(perm[static_cast<std::size_t>(k)])];
    const DType dt = a->dtype();  // read before `a` is moved: argument evaluation order is unspecified
    NodeDesc d = desc_of(Op::Permute, dt, std::move(shape), {std::move(a)}, loc);
    d.ints = std::move(perm);
    return intern(std::move(d));
}

NodePtr transpose(NodePtr a, Loc loc) {
    if (a->rank() < 2) fail("transpose", loc, fmt::format("operand {} has rank below 2", describe(*a)));
    std::vector<std::int64_t> perm(static_cast<std::size_t>(a->rank()));
    for (std::size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<std::int64_t>(k);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return permute(std::move(a), std::move(perm), loc);
}

NodePtr slice(NodePtr a, const std::vector<SliceSpec>& spec, Loc loc) {
    const int r = a->rank();
    if (static_cast<int>(spec.size()) > r)
        fail("slice", loc, fmt::format("{} slice entries for operand {}", spec.size(), describe(*a)));
    Shape shape = a->shape();
    std::vector<std::int64_t> ints;
    bool identity = true;
    for (int k = 0; k < r; ++k) {
        const std::int64_t n = a->shape()[static_cast<std::size_t>(k)];
        SliceSpec s = k < static_cast<int>(spec.size()) ? spec[static_cast<std::size_t>(k)] : SliceSpec{};
        if (s.step == SliceSpec::kNone) s.step = 1;  // Python's x[a:b:None]
        if (s.step == 0) fail("slice", loc, fmt::format("step 0 on axis {} of {}", k, describe(*a)));
        // Python's semantics for indices in [-n, n]; anything beyond is an error rather than clamped.
        auto resolve = [&](std::int64_t v, std::int64_t dflt, const char* what) {
            if (v == SliceSpec::kNone) return dflt;
            if (v < -n || v > n)
                fail("slice", loc,
                     fmt::format("{} {} out of range on axis {} of {}", what, v, k, describe(*a)));
            return v < 0 ? v + n : v;
        };
        std::int64_t start, count;
        if (s.step > 0) {
            start = resolve(s.start, 0, "start");
            const std::int64_t stop = resolve(s.stop, n, "stop");
            count = start < stop ? (stop - start - 1) / s.step + 1 : 0;
        } else {
            start = resolve(s.start, n - 1, "start");
            if (start == n) start = n - 1;  // Python clamps a start of n to the last element for step < 0
            const std::int64_t stop = s.stop == SliceSpec::kNone ? -1 : resolve(s.stop, -1, "stop");
            count = stop < start ? (start - stop - 1) / (-s.step) + 1 : 0;
        }
        if (count == 0) start = 0;
        shape[static_cast<std::size_t>(k)] = count;
        ints.push_back(start);
        ints.push_back(s.step);
        identity = identity && start == 0 && s.step == 1 && count == n;
    }
    if (identity) return a;
    const DType dt = a->dtype();  // read before `a` is moved: argument evaluation order is unspecified
    NodeDesc d = desc_of(Op::Slice, dt, std::move(shape), {std::move(a)}, loc);
    d.ints = std::move(ints);
    return intern(std::move(d));
}

NodePtr reduce(Op op, NodePtr a, std::vector<std::int64_t> axes, bool keepdims, Loc loc) {
    const OpInfo& oi = info(op);
    if (oi.kind != OpKind::Reduce)
        throw InternalError(fmt::format("reduce(): {} is not a reduction", oi.name));
    const int r = a->rank();
    std::vector<bool> reduced(static_cast<std::size_t>(r), false);
    if (axes.empty()) {
        std::fill(reduced.begin(), reduced.end(), true);
    } else {
        for (auto ax : axes) {
            int n = normalize_axis(ax, r);
            if (n < 0)
                fail(oi.name, loc, fmt::format("axis {} out of range for operand {}", ax, describe(*a)));
            if (reduced[static_cast<std::size_t>(n)])
                fail(oi.name, loc,
                     fmt::format("axis {} repeated in [{}] for operand {}", ax, fmt::join(axes, ", "),
                                 describe(*a)));
            reduced[static_cast<std::size_t>(n)] = true;
        }
    }
    std::vector<std::int64_t> norm;
    Shape shape;
    std::int64_t count = 1;
    for (int k = 0; k < r; ++k) {
        const auto e = a->shape()[static_cast<std::size_t>(k)];
        if (reduced[static_cast<std::size_t>(k)]) {
            norm.push_back(k);
            count *= e;
            if (keepdims) shape.push_back(1);
        } else {
            shape.push_back(e);
        }
    }
    DType in = a->dtype(), out = in;
    switch (oi.rule) {
        case Rule::SumProd:
            if (!is_float(in)) out = DType::Int64;
            break;
        case Rule::MinMax:
            break;
        case Rule::Mean:
            if (!is_float(in)) out = DType::Float32;
            break;
        case Rule::ArgMinMax:
            out = DType::Int64;
            break;
        case Rule::AnyAll:
            out = DType::Bool;
            break;
        default:
            throw InternalError(fmt::format("reduce(): rule of {} is not a reduction rule", oi.name));
    }
    const bool has_identity = op == Op::Sum || op == Op::Prod || op == Op::Any || op == Op::All;
    if (count == 0 && !has_identity && numel(shape) > 0) {
        std::int64_t empty_axis = 0;
        for (auto k : norm)
            if (a->shape()[static_cast<std::size_t>(k)] == 0) empty_axis = k;
        fail(oi.name, loc,
             fmt::format(
                 "reduction of operand {} over axes [{}]: axis {} has length 0 and {} has no identity (sum, "
                 "prod, any and all have one)",
                 describe(*a), fmt::join(norm, ", "), empty_axis, oi.name));
    }
    NodeDesc d = desc_of(op, out, std::move(shape), {std::move(a)}, loc);
    d.ints = std::move(norm);
    d.keepdims = keepdims;
    return intern(std::move(d));
}

namespace {

bool product_dtype(DType d) {
    return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64 ||
           d == DType::Int8;
}

Shape concat(Shape head, std::initializer_list<std::int64_t> tail) {
    head.insert(head.end(), tail);
    return head;
}

}  // namespace

NodePtr matmul(NodePtr a, NodePtr b, Loc loc, ProductTile tile) {
    const auto operands = [&] { return fmt::format("operands {} and {}", describe(*a), describe(*b)); };
    if (a->rank() == 0 || b->rank() == 0)
        fail("matmul", loc,
             fmt::format("{}: a matrix product takes operands of rank 1 or more, not scalars", operands()));
    const DType p = promote(a->dtype(), b->dtype());
    if (!product_dtype(p))
        fail("matmul", loc,
             fmt::format("{}: products take float16, bfloat16, float32, float64 or int8 operands, and "
                         "these promote to {}",
                         operands(), name(p)));
    // NumPy: a vector is a matrix of one row (left) or one column (right) whose extent-1 axis is dropped.
    const bool a_vector = a->rank() == 1, b_vector = b->rank() == 1;
    const Shape as = a_vector ? Shape{1, a->shape()[0]} : a->shape();
    const Shape bs = b_vector ? Shape{b->shape()[0], 1} : b->shape();
    const std::int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    if (bs[bs.size() - 2] != K)
        fail("matmul", loc,
             fmt::format("{}: the contraction extents differ ({} and {})", operands(), K, bs[bs.size() - 2]));
    const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    Shape batch;
    if (!broadcast_shapes(a_batch, b_batch, batch))
        fail("matmul", loc,
             fmt::format("{}: the batch axes {} and {} do not broadcast", operands(), to_string(a_batch),
                         to_string(b_batch)));
    const Shape out = concat(batch, {M, N});
    check_numel("matmul", out, loc);
    // Views only: [K] -> [1, K] is a broadcast, [K] -> [K, 1] a broadcast to [1, K] transposed; the batch
    // axes broadcast with stride 0. The casts of promotion come first, on the operands as given.
    NodePtr x = cast_to(a, p, loc), y = cast_to(b, p, loc);
    if (a_vector) x = broadcast_to(std::move(x), {1, K}, loc);
    if (b_vector) y = permute(broadcast_to(std::move(y), {1, K}, loc), {1, 0}, loc);
    x = broadcast_to(std::move(x), concat(batch, {M, K}), loc);
    y = broadcast_to(std::move(y), concat(batch, {K, N}), loc);
    if (tile.rows < 0 || tile.cols < 0 || tile.depth < 0)
        fail("matmul", loc,
             fmt::format("{}: tile({}, {}, {}) has a negative extent (0: the planner chooses)", operands(),
                         tile.rows, tile.cols, tile.depth));
    NodeDesc d =
        desc_of(Op::MatMul, p == DType::Int8 ? DType::Int32 : p, out, {std::move(x), std::move(y)}, loc);
    if (!tile.empty())
        d.ints = {tile.rows, tile.cols, tile.depth};  // the per-op hint, part of the node's identity
    NodePtr product = intern(std::move(d));
    if (!a_vector && !b_vector) return product;
    Shape squeezed = batch;
    if (!a_vector) squeezed.push_back(M);
    if (!b_vector) squeezed.push_back(N);
    return reshape(std::move(product), std::move(squeezed), loc);
}

}  // namespace loom::ir

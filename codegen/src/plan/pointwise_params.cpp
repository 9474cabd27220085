// PointwisePlan's launch rule, hash and description; packing the kernel parameters of one call; choosing
// the vector or the scalar variant from the actual pointers.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "loom/codegen/plan/pointwise_plan.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/hash.hpp"

namespace loom::codegen {

LaunchConfig PointwisePlan::launch(std::int64_t numel, Variant v) const {
    LaunchConfig c;
    c.block_x = static_cast<std::uint32_t>(block);
    c.vector = v == Variant::Vector;
    if (numel <= 0) return c;
    const std::int64_t per_block =
        static_cast<std::int64_t>(block) * (v == Variant::Vector ? vector_width : 1);
    std::int64_t grid = (numel + per_block - 1) / per_block;
    if (v == Variant::Vector && grid_stride_blocks > 0)
        grid = std::min<std::int64_t>(grid, grid_stride_blocks);
    if (grid > 2147483647)
        throw Error(fmt::format("pointwise launch: {} elements need {} blocks, above the grid limit 2^31 - 1",
                                numel, grid));
    c.grid_x = static_cast<std::uint32_t>(grid);
    return c;
}

bool PointwisePlan::checks_indices() const {
    for (const GatherPlan& g : gathers)
        if (g.mode == ir::IndexMode::Checked) return true;
    return false;
}

int PointwisePlan::bytes_per_element() const {
    int s = 0;
    for (const auto& o : loads) s += o.bytes_per_element;
    for (const auto& o : outputs) s += o.bytes_per_element;
    return s;
}

namespace {
void hash_operand(Hasher& h, const OperandPlan& o) {
    h.add(static_cast<std::uint64_t>(o.input + 1));
    h.add(o.index ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(o.dtype));
    h.add(static_cast<std::uint64_t>(o.access));
    h.add(o.dim_mask);
    h.add(o.unit_inner ? 1u : 0u);
    h.add(o.derived.size());
    for (int m : o.derived) h.add(static_cast<std::uint64_t>(m));
    if (!o.positions.empty()) {  // (absent from plans without gathers: their hashes are unchanged)
        h.add(o.positions.size());
        for (int q : o.positions) h.add(static_cast<std::uint64_t>(q));
    }
}
}  // namespace

std::uint64_t PointwisePlan::hash() const {
    Hasher h;
    h.add(std::string_view("pointwise"));
    h.add(static_cast<std::uint64_t>(rank));
    h.add(static_cast<std::uint64_t>(block));
    h.add(static_cast<std::uint64_t>(vector_width));
    h.add(vector_flat ? 1u : 0u);
    h.add(static_cast<std::uint64_t>(grid_stride_blocks));
    h.add(static_cast<std::uint64_t>(vector_registers));
    h.add(static_cast<std::uint64_t>(index));
    h.add(loads.size());
    for (const auto& o : loads) hash_operand(h, o);
    h.add(outputs.size());
    for (const auto& o : outputs) hash_operand(h, o);
    h.add(derived.size());
    for (const auto& d : derived) {
        h.add(d.dim_mask);
        h.add(d.derived.size());
        for (int m : d.derived) h.add(static_cast<std::uint64_t>(m));
        h.add((d.has_div ? 1u : 0u) | (d.has_mod ? 2u : 0u));
    }
    h.add(scalar_dtypes.size());
    for (DType t : scalar_dtypes) h.add(static_cast<std::uint64_t>(t));
    if (!gathers.empty()) {
        h.add(std::string_view("gathers"));
        h.add(gathers.size());
        for (const GatherPlan& g : gathers) h.add(static_cast<std::uint64_t>(g.mode));
    }
    h.add(params_in_memory ? 1u : 0u);  // the device's parameter limit decides it, not the fields above
    return h.digest();                  // params are a function of the fields above
}

std::string PointwisePlan::to_string() const {
    return describe(true);
}

std::string PointwisePlan::describe(bool kernel_grid) const {
    std::string s;
    auto out = std::back_inserter(s);
    const int ept = vector_width;
    fmt::format_to(
        out, "pointwise plan: rank {}, block {}, vector width {}{}, {} indexing\n", rank, block, vector_width,
        vector_width > 1       ? std::string(" (16-byte vectors)")
        : vector_registers > 0 ? fmt::format(" (no vector variant: its loaded vectors would take about {} "
                                             "registers per thread, above {})",
                                             vector_registers, kVectorRegisterBudget)
                               : std::string(" (no vector variant)"),
        index == IndexWidth::I32 ? "32-bit" : "64-bit");
    if (!kernel_grid)
        ;  // the space of another kernel (a reduction's element or row space): that kernel's banner gives its
           // grid
    else if (vector_width > 1 && grid_stride_blocks > 0)
        fmt::format_to(
            out,
            "grid: min(ceil(n / {}), {}) blocks of {} (vector variant, grid-stride over vectors of {}, the "
            "next vector's loads issued before this one's arithmetic), ceil(n / {}) blocks of {} (scalar "
            "variant)\n",
            block * ept, grid_stride_blocks, block, ept, block, block);
    else if (vector_width > 1)
        fmt::format_to(
            out,
            "grid: ceil(n / {}) blocks of {} (vector variant, {} elements per thread{}), ceil(n / {}) "
            "blocks of {} (scalar variant)\n",
            block * ept, block, ept, vector_flat ? ", flat" : ", rows", block, block);
    else
        fmt::format_to(out, "grid: ceil(n / {}) blocks of {} (scalar variant, 1 element per thread)\n", block,
                       block);
    if (kernel_grid)
        fmt::format_to(
            out, "bytes per element: {}; parameters: {} bytes{}\n", bytes_per_element(), params.size,
            params_in_memory
                ? " in device memory (above the kernel parameter limit; the kernel takes a pointer)"
                : "");
    else
        fmt::format_to(out, "parameters: {} bytes\n", params.size);
    auto mask_text = [&](const OperandPlan& o) {
        if (o.access != Access::Strided && o.access != Access::Gathered && o.access != Access::Indirect)
            return std::string();
        std::string m = " dims {";
        bool first = true;
        for (int d = 0; d < rank; ++d)
            if (o.dim_mask >> d & 1u) {
                m += fmt::format("{}{}", first ? "" : ",", d);
                first = false;
            }
        m += "}";
        for (int t : o.derived) m += fmt::format(" t{}", t);
        for (int q : o.positions) m += fmt::format(" g{}", q);
        if (o.unit_inner) m += " unit-inner";
        return m;
    };
    for (std::size_t k = 0; k < loads.size(); ++k)
        fmt::format_to(out, "in{}: input {}, {}, {}{}, {}\n", k, loads[k].input, name(loads[k].dtype),
                       access_name(loads[k].access), mask_text(loads[k]),
                       loads[k].index ? std::string("an index, computed (no memory)")
                                      : fmt::format("{} B/element", loads[k].bytes_per_element));
    for (std::size_t k = 0; k < outputs.size(); ++k)
        if (kernel_grid)
            fmt::format_to(out, "out{}: {}, {}, {} B/element\n", k, name(outputs[k].dtype),
                           access_name(outputs[k].access), outputs[k].bytes_per_element);
        else  // a reduction's operands stay in registers; its element and row outputs are written contiguous
            fmt::format_to(out, "out{}: {}\n", k, name(outputs[k].dtype));
    for (std::size_t m = 0; m < derived.size(); ++m)
        fmt::format_to(out, "t{}: derived index{}{}\n", m, derived[m].has_div ? " div" : "",
                       derived[m].has_mod ? " mod" : "");
    for (std::size_t q = 0; q < gathers.size(); ++q)
        fmt::format_to(
            out, "g{}: gather position, {}{}\n", q,
            gathers[q].mode == ir::IndexMode::Checked
                ? "checked (an out-of-range index is recorded in the error word; position 0 is read)"
                : "clamped",
            gathers_per_vector()
                ? fmt::format("; the same in every lane: computed once per vector of {} elements, each "
                              "indirect site read with one load per vector",
                              vector_width)
                : std::string());
    if (!scalar_dtypes.empty()) {
        std::string ts;
        for (std::size_t k = 0; k < scalar_dtypes.size(); ++k)
            ts += fmt::format("{}{}", k ? ", " : "", name(scalar_dtypes[k]));
        fmt::format_to(out, "scalars: {}\n", ts);
    }
    return s;
}

namespace {

template <class T>
void put(std::span<std::byte> out, std::size_t off, T v) {
    std::memcpy(out.data() + off, &v, sizeof(T));
}

void put_index(std::span<std::byte> out, const ParamField& f, std::int64_t v) {
    if (f.size == 4)
        put(out, f.offset, static_cast<std::int32_t>(v));
    else
        put(out, f.offset, v);
}

void put_scalar(std::span<std::byte> out, const ParamField& f, DType t, const ir::ScalarValue& v) {
    switch (t) {
        case DType::Bool:
            put(out, f.offset, static_cast<std::uint8_t>(v.as_double() != 0.0 ? 1 : 0));
            break;
        case DType::Int8:
            put(out, f.offset, static_cast<std::int8_t>(v.i));
            break;
        case DType::UInt8:
            put(out, f.offset, static_cast<std::uint8_t>(v.i));
            break;
        case DType::Int32:
            put(out, f.offset, static_cast<std::int32_t>(v.i));
            break;
        case DType::Int64:
            put(out, f.offset, static_cast<std::int64_t>(v.i));
            break;
        // A float16 or bfloat16 scalar is held as the float of its value: rounded to the dtype here, so the
        // kernel sees a value of the dtype whatever made the scalar (the constructors round it already).
        case DType::Float16:
            put(out, f.offset, half_bits_to_float(double_to_half_bits(v.as_double())));
            break;
        case DType::BFloat16:
            put(out, f.offset, bf16_bits_to_float(double_to_bf16_bits(v.as_double())));
            break;
        case DType::Float32:
            put(out, f.offset, static_cast<float>(v.as_double()));
            break;
        case DType::Float64:
            put(out, f.offset, v.as_double());
            break;
    }
}

}  // namespace

const void* site_pointer(const PointwisePlan& plan, const PointwiseBinding& b,
                         std::span<const void* const> inputs, std::size_t s) {
    const auto* base = static_cast<const std::byte*>(inputs[static_cast<std::size_t>(plan.loads[s].input)]);
    return base + b.sites[s].offset * static_cast<std::int64_t>(itemsize(plan.loads[s].dtype));
}

void pack_params(const PointwisePlan& plan, const PointwiseBinding& b, std::span<const void* const> inputs,
                 std::span<void* const> outputs, std::span<std::byte> out, void* error_word) {
    if (out.size() < plan.params.size || outputs.size() != plan.outputs.size() ||
        b.sites.size() != plan.loads.size())
        throw InternalError(fmt::format("pack_params: buffer of {} bytes for {}, {} outputs for {}",
                                        out.size(), plan.params.size, outputs.size(), plan.outputs.size()));
    for (const auto& o : plan.loads)
        if (static_cast<std::size_t>(o.input) >= inputs.size())
            throw InternalError(
                fmt::format("pack_params: {} input pointers, input {} needed", inputs.size(), o.input));
    std::memset(out.data(), 0, plan.params.size);
    using K = ParamField::Kind;
    for (const ParamField& f : plan.params.fields) {
        const auto a = static_cast<std::size_t>(f.a);
        const auto c = static_cast<std::size_t>(f.b);
        switch (f.kind) {
            case K::InputPointer:
                if (plan.loads[a].index)
                    put(out, f.offset, static_cast<std::int64_t>(b.sites[a].offset));
                else
                    put(out, f.offset, site_pointer(plan, b, inputs, a));
                break;
            case K::OutputPointer:
                put(out, f.offset, outputs[a]);
                break;
            case K::NumElements:
                put_index(out, f, b.numel);
                break;
            case K::Extent:
                put_index(out, f, b.extents[a]);
                break;
            case K::SiteCoef:
                put_index(out, f, b.sites[a].coefs[c]);
                break;
            case K::SiteDerived:
                put_index(out, f, b.sites[a].dcoefs[c]);
                break;
            case K::DerivedOffset:
                put_index(out, f, b.derived[a].offset);
                break;
            case K::DerivedCoef:
                put_index(out, f, b.derived[a].coefs[c]);
                break;
            case K::DerivedDerived:
                put_index(out, f, b.derived[a].dcoefs[c]);
                break;
            case K::DerivedDiv:
                put_index(out, f, b.derived[a].div);
                break;
            case K::DerivedMod:
                put_index(out, f, b.derived[a].mod);
                break;
            case K::Scalar:
                put_scalar(out, f, plan.scalar_dtypes[a], b.scalars[a]);
                break;
            case K::OutputCoef:
                put_index(out, f, b.outputs[a][c]);
                break;
            case K::SitePosition:
                put_index(out, f, b.sites[a].pcoefs[c]);
                break;
            case K::GatherExtent:
                put(out, f.offset, b.gather_extents[a]);
                break;
            case K::GatherId:
                put(out, f.offset, static_cast<std::int64_t>(b.gather_ids[a]));
                break;
            case K::ErrorWord:
                if (!error_word)
                    throw InternalError("pack_params: a kernel with checked gathers and no error word");
                put(out, f.offset, error_word);
                break;
            case K::ElementSpace:
            case K::RowSpace:
            case K::Rows:
            case K::Length:
            case K::Chunks:
            case K::ChunksPerBlock:
            case K::BlocksPerRow:
            case K::Counters:
            case K::Partials:
            case K::Product:
            case K::Epilogue:
                throw InternalError(
                    fmt::format("pack_params: reduction parameter {} in a pointwise plan", f.name));
        }
    }
}

std::vector<std::byte> pack_params(const PointwisePlan& plan, const PointwiseBinding& binding,
                                   std::span<const void* const> inputs, std::span<void* const> outputs,
                                   void* error_word) {
    std::vector<std::byte> bytes(plan.params.size);
    pack_params(plan, binding, inputs, outputs, bytes, error_word);
    return bytes;
}

namespace {

// An index site read per lane (its lanes consecutive) starts every vector at a multiple of the vector width
// W: its offset and every coefficient but the innermost (which is 1) divide by W, and lane 0 sits at a
// multiple of W of the innermost dimension. The vector variants write lane j's index as lm::vector_lane (lane
// 0's with its low bits cleared, or j), which tells the compiler those bits, so that it computes once what W
// consecutive indices share, such as a block of random words (docs/semantics.md, "Random numbers").
bool index_lanes_aligned(const PointwisePlan& plan, const PointwiseBinding& b, std::size_t s) {
    const OperandPlan& o = plan.loads[s];
    const std::int64_t W = plan.vector_width;
    const PointwiseBinding::Site& site = b.sites[s];
    if (o.access == Access::Scalar || o.access == Access::Indirect) return true;  // one index per vector
    const bool moves = o.access == Access::Contiguous || o.access == Access::RowBroadcast ||
                       (o.dim_mask >> (plan.rank - 1) & 1u);
    if (!moves) return true;  // the same in every lane
    if (site.offset % W != 0) return false;
    if (o.access == Access::Contiguous || o.access == Access::RowBroadcast) return true;
    for (std::size_t d = 0; d + 1 < site.coefs.size(); ++d)
        if (site.coefs[d] % W != 0) return false;
    for (std::int64_t c : site.dcoefs)
        if (c % W != 0) return false;
    return true;
}

}  // namespace

Variant select_variant(const PointwisePlan& plan, const PointwiseBinding& b,
                       std::span<const void* const> inputs, std::span<void* const> outputs) {
    if (!plan.has_vector_variant()) return Variant::Scalar;
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    for (std::size_t s = 0; s < plan.loads.size(); ++s) {
        const OperandPlan& o = plan.loads[s];
        if (o.index && !index_lanes_aligned(plan, b, s)) return Variant::Scalar;
        const bool streamed =
            !o.index && (o.access == Access::Contiguous || o.access == Access::RowBroadcast ||
                         ((o.access == Access::Strided || o.access == Access::Indirect) && o.unit_inner));
        if (streamed && !aligned(site_pointer(plan, b, inputs, s))) return Variant::Scalar;
    }
    for (void* p : outputs)
        if (!aligned(p)) return Variant::Scalar;
    return Variant::Vector;
}

}  // namespace loom::codegen

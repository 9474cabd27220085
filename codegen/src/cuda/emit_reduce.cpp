// The CUDA emitter of reduction kernels (reduce_plan.hpp): the element and row parts as pointwise pieces,
// then the entry points that walk the documented reduction order (docs/semantics.md, "Reduction order"):
// chunks of 8192 elements, 256 lanes that each take runs of 4 consecutive elements 1024 apart, a butterfly
// over the lanes (s = 128, 64, ..., 1: lane l takes lane l + s), and a pairwise tree over the chunks of a
// row (a binary counter whose final right fold equals the bottom-up tree with the odd partial carried).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/prelude.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/codegen/plan/reduce_plan.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

// The inner schedule's loops are written out for this order: chunks of 8192 elements as 8 blocks of 1024,
// 256 lanes taking runs of 4, the butterfly from s = 128; the column schedule's chunks of 256 rows.
static_assert(
    kReduceChunk == 8192 && kReduceLanes == 256 && kReduceRun == 4 && kColumnChunk == 256,
    "the emitted reduction loops are written for the order's constants of loom/ir/reduce_order.hpp");

namespace {

using detail::store_expr;

using ir::Op;

// A statement with its comment aligned at column 72.
void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    detail::write_line(s, indent, code, comment, 72);
}

// The guard of a run's position j past the row's end (a run of 4 that the row ends inside). It skips the
// position with `continue`, not `break`: the two mean the same here (the positions past the end are the
// last ones), but with `break` NVVM (CUDA 13.0, -O3) merged the exits of the unrolled load loop wrongly when
// the loaded value was the same for every position (a stride-0 operand read once, hoisted): position 1's
// value was set only on the path where position 2 was in the row too, so a row of 2 reduced an undefined
// register (max(x, 0) of a bfloat16 row of 2 where each element was x). Each `continue` keeps its position's
// value under its own test.
std::string row_end_guard(const std::string& r0) {
    return fmt::format("if ({} + j >= p.len) continue;", r0);
}

bool sumlike(Op op) {
    return op == Op::Sum || op == Op::Prod || op == Op::Mean;
}
bool is_arg(Op op) {
    return op == Op::ArgMin || op == Op::ArgMax;
}

// Register type of the operand's values.
std::string in_reg(const ReduceOpPlan& r) {
    return std::string(register_type(r.in));
}

// The CUDA spelling of the reduction's accumulator (accumulator_of, reduce_plan.hpp).
std::string acc_type(const ReduceOpPlan& r) {
    const Accumulator a = accumulator_of(r);
    switch (a.kind) {
        case Accumulator::Kind::Value:
            return std::string(register_type(a.dtype));
        case Accumulator::Kind::Flag:
            return "unsigned char";
        case Accumulator::Kind::Indexed:
            return fmt::format("lm::argacc<{}>", register_type(a.dtype));
    }
    throw InternalError("acc_type: bad accumulator");
}

std::string int_limit(DType t, bool max) {
    switch (t) {
        case DType::Bool:
            return max ? "true" : "false";
        case DType::Int8:
            return max ? "(signed char)127" : "(signed char)(-128)";
        case DType::UInt8:
            return max ? "(unsigned char)255" : "(unsigned char)0";
        case DType::Int32:
            return max ? "2147483647" : "(-2147483647 - 1)";
        case DType::Int64:
            return max ? "9223372036854775807LL" : "(-9223372036854775807LL - 1)";
        default:
            throw InternalError("int_limit: not an integer dtype");
    }
}

std::string identity(const ReduceOpPlan& r) {
    const bool dbl = r.in == DType::Float64;
    switch (r.op) {
        case Op::Sum:
        case Op::Mean:
            if (!is_float(r.in)) return "0LL";
            return dbl ? "-0.0" : "-0.0f";
        case Op::Prod:
            if (!is_float(r.in)) return "1LL";
            return dbl ? "1.0" : "1.0f";
        case Op::Min:
            if (is_float(r.in))
                return dbl ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
            return int_limit(r.in, true);
        case Op::Max:
            if (is_float(r.in))
                return dbl ? "__longlong_as_double((long long)0xfff0000000000000ULL)"
                           : "__int_as_float((int)0xff800000u)";
            return int_limit(r.in, false);
        case Op::ArgMin:
        case Op::ArgMax:
            return fmt::format("lm::arg_none<{}>()", in_reg(r));
        case Op::Any:
            return "(unsigned char)0";
        case Op::All:
            return "(unsigned char)1";
        default:
            throw InternalError("identity: not a reduction");
    }
}

std::string combine(const ReduceOpPlan& r, const std::string& a, const std::string& b) {
    switch (r.op) {
        case Op::Sum:
        case Op::Mean:
            return fmt::format("lm::add({}, {})", a, b);
        case Op::Prod:
            return fmt::format("lm::mul({}, {})", a, b);
        case Op::Min:
            return fmt::format("lm::minimum({}, {})", a, b);
        case Op::Max:
            return fmt::format("lm::maximum({}, {})", a, b);
        case Op::ArgMin:
            return fmt::format("lm::arg_combine<true>({}, {})", a, b);
        case Op::ArgMax:
            return fmt::format("lm::arg_combine<false>({}, {})", a, b);
        case Op::Any:
            return fmt::format("lm::red_or({}, {})", a, b);
        case Op::All:
            return fmt::format("lm::red_and({}, {})", a, b);
        default:
            throw InternalError("combine: not a reduction");
    }
}

// A float32 max or min (float16 and bfloat16 values are floats in registers): its runs of 4 fold with
// lm::max_run / lm::min_run.
bool run_foldable(const ReduceOpPlan& r) {
    if (r.op != Op::Max && r.op != Op::Min) return false;
    const Accumulator a = accumulator_of(r);
    return a.kind == Accumulator::Kind::Value && register_type(a.dtype) == std::string_view("float");
}

// The accumulator contribution of one element value `v` at reduced index `ri`.
std::string element_of(const ReduceOpPlan& r, const std::string& v, const std::string& ri) {
    if (is_arg(r.op)) return fmt::format("lm::arg_of<{}>({}, {})", in_reg(r), v, ri);
    if (r.op == Op::Any || r.op == Op::All) return fmt::format("(unsigned char)({} != 0)", v);
    if (sumlike(r.op) && !is_float(r.in)) return fmt::format("(long long)({})", v);
    return v;
}

// The reduced value (register type of the result) from the final accumulator `a`; `len` is L.
std::string finish(const ReduceOpPlan& r, const std::string& a) {
    auto round_half = [&](const std::string& x) {
        if (r.out == DType::Float16) return fmt::format("lm::round_f16({})", x);
        if (r.out == DType::BFloat16) return fmt::format("lm::round_bf16({})", x);
        return x;
    };
    const bool dbl = r.in == DType::Float64;
    switch (r.op) {
        case Op::Sum:
            if (!is_float(r.in)) return a;
            return round_half(fmt::format("(p.len == 0 ? {} : {})", dbl ? "0.0" : "0.0f", a));
        case Op::Prod:
            return is_float(r.in) ? round_half(a) : a;
        case Op::Mean:
            if (is_float(r.in))
                return round_half(dbl ? fmt::format("__ddiv_rn({}, __ll2double_rn(p.len))", a)
                                      : fmt::format("__fdiv_rn({}, __ll2float_rn(p.len))", a));
            if (r.out == DType::Float64)
                return fmt::format("__ddiv_rn(__ll2double_rn({}), __ll2double_rn(p.len))", a);
            return fmt::format("__double2float_rn(__ddiv_rn(__ll2double_rn({}), __ll2double_rn(p.len)))", a);
        case Op::Min:
        case Op::Max:
            return a;
        case Op::ArgMin:
        case Op::ArgMax:
            return fmt::format("{}.i", a);
        case Op::Any:
        case Op::All:
            return fmt::format("({} != 0)", a);
        default:
            throw InternalError("finish: not a reduction");
    }
}

struct ReduceEmitter {
    const ReducePlan& plan;
    std::string name;
    detail::PointwisePart el, row;
    bool has_row = false;
    std::size_t nred = 0;
    bool inner = true;

    std::string ev(std::size_t s) const { return fmt::format("s{}", s); }  // site value name
    // The register of element-space site k: its value, or for an indirect site (a gather's operand) the
    // affine part of its offset, which the body completes with the gathers' positions and loads.
    std::string site_type(std::size_t k) const {
        const OperandPlan& o = plan.element.loads[k];
        return o.access == Access::Indirect ? el.idx : std::string(register_type(o.dtype));
    }
    bool is_rv_site(std::size_t s) const {
        return plan.element_row_value[static_cast<std::size_t>(plan.element.loads[s].input)] >= 0;
    }
    int rv_of_site(std::size_t s) const {
        return plan.element_row_value[static_cast<std::size_t>(plan.element.loads[s].input)];
    }
    std::string rv_type(std::size_t j) const { return std::string(register_type(plan.ops[j].out)); }

    // i0/i1 of the element space from the row o and the reduced index r.
    std::string index_args(const std::string& o, const std::string& r) const {
        const std::string& idx = el.idx;
        if (plan.element.rank == 2)
            return inner ? fmt::format("({}){}, ({}){}", idx, o, idx, r)
                         : fmt::format("({}){}, ({}){}", idx, r, idx, o);
        return inner ? fmt::format("({})({} * p.len + {}), ({})0", idx, o, r, idx)
                     : fmt::format("({})({} * p.n_out + {}), ({})0", idx, r, o, idx);
    }

    bool is_cached(std::size_t k) const {
        return std::find(plan.cached_sites.begin(), plan.cached_sites.end(), static_cast<int>(k)) !=
               plan.cached_sites.end();
    }
    // Sites a load function covers: every site ("" suffix), or the sites not held in registers ("u").
    bool covers(std::size_t k, bool uncached_only) const {
        return !is_rv_site(k) && (!uncached_only || !is_cached(k));
    }
    std::vector<std::size_t> sites_of(bool uncached_only) const {
        std::vector<std::size_t> r;
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k)
            if (covers(k, uncached_only)) r.push_back(k);
        return r;
    }

    // Operand loads. The column (outer) schedule reads its operands through the read-only data path
    // (lm::ldg, lm::load_vec_ro; a reduction kernel never writes what it reads), which the column sums
    // read faster. The row (inner) schedule keeps plain loads: there the read-only path was no faster and
    // took more registers (a block fewer per multiprocessor for layernorm; docs/performance.md).
    std::string load_fn(bool uncached_only = false) const {
        std::string s = fmt::format(
            "// The operands of element (i0, i1) of the element space{} (row values come from registers).\n"
            "__device__ __forceinline__ void {}_el_load{}(const {}_el_params& p, const {} i0, const {} i1",
            uncached_only ? " not held in registers" : "", name, uncached_only ? "u" : "", name, el.idx,
            el.idx);
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k)
            if (covers(k, uncached_only)) s += fmt::format(", {}& {}", site_type(k), ev(k));
        s += ") {\n";
        line(s, 4, "(void)i0; (void)i1;");
        s += el.derived;  // already indented by 4
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k) {
            if (!covers(k, uncached_only)) continue;
            if (plan.element.loads[k].access == Access::Indirect)
                line(s, 4, fmt::format("{} = ({})({});", ev(k), el.idx, el.site_offset[k]),
                     fmt::format("in{} (indirect): the affine part of its offset, loaded by the body", k));
            else if (plan.element.loads[k].index)
                line(s, 4, fmt::format("{} = p.in{}_base + (long long)({});", ev(k), k, el.site_offset[k]),
                     fmt::format("in{} ({}): an index, computed", k,
                                 access_name(plan.element.loads[k].access)));
            else
                line(s, 4,
                     fmt::format(fmt::runtime(inner ? "{} = lm::to_reg(p.in{}[{}]);"
                                                    : "{} = lm::to_reg(lm::ldg(p.in{} + ({})));"),
                                 ev(k), k, el.site_offset[k]),
                     fmt::format("in{} ({})", k, access_name(plan.element.loads[k].access)));
        }
        s += "}\n";
        return s;
    }

    // 4 consecutive elements along the reduced index (inner schedule, vector variant).
    std::string load4_fn(bool uncached_only = false) const {
        std::string s = fmt::format(
            "// Elements (i0, i1 .. i1 + 3) (rank 2) or i0 .. i0 + 3 (rank 1), 4-element runs{}.\n"
            "__device__ __forceinline__ void {}_el_load{}4(const {}_el_params& p, const {} i0, const {} i1",
            uncached_only ? ", sites not held in registers" : "", name, uncached_only ? "u" : "", name,
            el.idx, el.idx);
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k)
            if (covers(k, uncached_only)) s += fmt::format(", {} (&{})[4]", site_type(k), ev(k));
        s += ") {\n";
        line(s, 4, "(void)i0; (void)i1;");
        const int rdim = plan.element.rank - 1;
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k) {
            if (!covers(k, uncached_only)) continue;
            const OperandPlan& o = plan.element.loads[k];
            const bool zero_r =
                o.access == Access::Scalar || (o.access == Access::Strided && !(o.dim_mask >> rdim & 1u));
            const std::string_view st = storage_type(o.dtype);
            if (o.index) {  // consecutive along the run (the plan has a vector variant only for a unit
                            // stride)
                line(s, 4,
                     fmt::format("for (int j = 0; j < 4; ++j) {}[j] = p.in{}_base + (long long)({}){};",
                                 ev(k), k, el.site_offset[k], zero_r ? "" : " + j"),
                     fmt::format("in{}: an index, computed", k));
            } else if (zero_r) {
                line(s, 4,
                     fmt::format(fmt::runtime(inner ? "{{ const {} v = lm::to_reg(p.in{}[{}]); {}[0] = {}[1] "
                                                      "= {}[2] = {}[3] = v; }}"
                                                    : "{{ const {} v = lm::to_reg(lm::ldg(p.in{} + ({}))); "
                                                      "{}[0] = {}[1] = {}[2] = {}[3] = v; }}"),
                                 register_type(o.dtype), k, el.site_offset[k], ev(k), ev(k), ev(k), ev(k)),
                     fmt::format("in{} (same along the run)", k));
            } else {
                line(s, 4,
                     fmt::format("{{ const lm::vec<{}, 4> a = lm::{}<{}, 4>(p.in{} + ({})); for (int j = 0; "
                                 "j < 4; ++j) {}[j] = lm::to_reg(a.v[j]); }}",
                                 st, inner ? "load_vec" : "load_vec_ro", st, k, el.site_offset[k], ev(k)),
                     fmt::format("in{} ({} bytes)", k, 4 * itemsize(o.dtype)));
            }
        }
        s += "}\n";
        return s;
    }

    std::string row_fn() const {
        std::string s = fmt::format(
            "// The epilogue of row i0: the row outputs from the reduced values.\n"
            "__device__ __forceinline__ void {}_row_at(const {}_row_params& p, const {} i0",
            name, name, row.idx);
        for (std::size_t j = 0; j < nred; ++j) s += fmt::format(", const {} rv{}", rv_type(j), j);
        s += ") {\n";
        for (std::size_t j = 0; j < nred; ++j) line(s, 4, fmt::format("(void)rv{};", j));
        s += row.derived;
        std::vector<std::string> args;
        if (row.body_needs_params) args.push_back("p");
        for (std::size_t k = 0; k < plan.row.loads.size(); ++k) {
            const int j = plan.row_row_value[static_cast<std::size_t>(plan.row.loads[k].input)];
            if (j >= 0) {
                args.push_back(fmt::format("rv{}", j));
            } else if (plan.row.loads[k].access == Access::Indirect) {
                args.push_back(fmt::format("({})({})", row.idx, row.site_offset[k]));
            } else if (plan.row.loads[k].index) {
                line(s, 4,
                     fmt::format("const long long s{} = p.in{}_base + (long long)({});", k, k,
                                 row.site_offset[k]),
                     fmt::format("in{} ({}): an index, computed", k, access_name(plan.row.loads[k].access)));
                args.push_back(fmt::format("s{}", k));
            } else {
                line(s, 4,
                     fmt::format("const {} s{} = lm::to_reg(p.in{}[{}]);",
                                 register_type(plan.row.loads[k].dtype), k, k, row.site_offset[k]),
                     fmt::format("in{} ({})", k, access_name(plan.row.loads[k].access)));
                args.push_back(fmt::format("s{}", k));
            }
        }
        for (std::size_t o = 0; o < plan.row.outputs.size(); ++o) {
            line(s, 4, fmt::format("{} y{};", register_type(plan.row.outputs[o].dtype), o));
            args.push_back(fmt::format("y{}", o));
        }
        line(s, 4, fmt::format("{}_row_body({});", name, fmt::join(args, ", ")));
        for (std::size_t o = 0; o < plan.row.outputs.size(); ++o)
            line(s, 4,
                 fmt::format("p.out{}[i0] = {};", o,
                             store_expr(plan.row.outputs[o].dtype, fmt::format("y{}", o))),
                 fmt::format("row output {}", o));
        s += "}\n";
        return s;
    }

    std::string params_struct() const {
        std::string s = fmt::format("struct {}_params {{\n", name);
        using K = ParamField::Kind;
        for (const ParamField& f : plan.params.fields) {
            std::string note;
            switch (f.kind) {
                case K::ElementSpace:
                    note = "element space";
                    break;
                case K::RowSpace:
                    note = "row space (epilogue)";
                    break;
                case K::Rows:
                    note = "O: rows (output elements)";
                    break;
                case K::Length:
                    note = "L: elements reduced per row";
                    break;
                case K::Chunks:
                    note = fmt::format("ceil(L / {})", inner ? kReduceChunk : kColumnChunk);
                    break;
                case K::ChunksPerBlock:
                    note = "chunks per block (outer split: a power of two)";
                    break;
                case K::BlocksPerRow:
                    note = "blocks per row";
                    break;
                case K::Counters:
                    note = "split: integer counters, zero at launch and left zero";
                    break;
                case K::Partials:
                    note = fmt::format("split: partials of reduction {}", f.a);
                    break;
                case K::InputPointer:
                case K::OutputPointer:
                case K::NumElements:
                case K::Extent:
                case K::SiteCoef:
                case K::SiteDerived:
                case K::DerivedOffset:
                case K::DerivedCoef:
                case K::DerivedDerived:
                case K::DerivedDiv:
                case K::DerivedMod:
                case K::Scalar:
                case K::OutputCoef:
                case K::SitePosition:
                case K::GatherExtent:
                case K::GatherId:
                case K::ErrorWord:
                case K::Product:
                case K::Epilogue:
                    throw InternalError(
                        fmt::format("emit_reduce: pointwise parameter {} in a reduction plan", f.name));
            }
            line(s, 4, detail::param_declaration(f, IndexWidth::I64, name), note);
        }
        s += "};\n";
        s += fmt::format(
            "static_assert(sizeof({}_params) == {}, \"kernel parameter layout differs from the host's\");\n",
            name, plan.params.size);
        return s;
    }

    // A call of the element body with site values `vals` (per non-row-value site) and the current row values.
    // Declares outputs y<k> (k over every element-plan output) in scope `ind`.
    void body_call(std::string& s, int ind, const std::function<std::string(std::size_t)>& val,
                   const std::string& rv_index = {}) const {
        std::vector<std::string> args;
        if (el.body_needs_params) args.push_back("pe");
        for (std::size_t k = 0; k < plan.element.loads.size(); ++k)
            args.push_back(is_rv_site(k) ? fmt::format("rv{}{}", rv_of_site(k),
                                                       rv_index.empty() ? "" : "[" + rv_index + "]")
                                         : val(k));
        std::string decl;
        for (std::size_t o = 0; o < plan.element.outputs.size(); ++o) {
            decl += fmt::format("{} y{}; ", register_type(plan.element.outputs[o].dtype), o);
            args.push_back(fmt::format("y{}", o));
        }
        line(s, ind, decl);
        line(s, ind, fmt::format("{}_el_body({});", name, fmt::join(args, ", ")));
    }

    std::vector<std::size_t> stage_ops(int st) const {
        std::vector<std::size_t> r;
        for (std::size_t j = 0; j < nred; ++j)
            if (plan.ops[j].stage == st) r.push_back(j);
        return r;
    }

    // Butterfly of the lane partials of reduction j after one chunk, then the chunk partial: pushed on the
    // binary counter, or stored for the counter tree of a split (inner schedule).
    void inner_chunk_end(std::string& s, int ind, std::size_t j, int chunk = 0) const {
        const ReduceOpPlan& r = plan.ops[j];
        const std::string A = acc_type(r);
        const int G = plan.group;
        line(s, ind, "{",
             fmt::format("reduction {}: butterfly over the 256 lanes, then the chunk partial", j));
        if (G == 256) {
            // One barrier per chunk: the 256 lane partials go to one of two alternating 4 KiB slots (fixed
            // byte offsets, whatever the accumulator type of each reduction of the stage; a slot is written
            // again two chunk ends later, after a barrier that every warp passes only once it has read it),
            // and a warp runs the whole butterfly from shared memory: lane t takes lanes t + 32 k, so s =
            // 128, 64 and 32 combine its own values, then shuffles. Rows held in registers (at most two
            // chunks) have every warp run it and every thread keep the chunk partials in registers
            // (cp<j>_<c>), so no broadcast is needed; otherwise warp 0 runs it and thread 0 pushes the
            // partial on the counter.
            const bool all = plan.cached_blocks > 0;
            line(s, ind + 4,
                 fmt::format("{}* red = reinterpret_cast<{}*>(lm_smem + lm_par * 4096); lm_par ^= 1;", A, A),
                 "this chunk end's slot (4 KiB: 256 accumulators of up to 16 bytes)");
            line(s, ind + 4, fmt::format("red[tid] = acc{}[0];", j));
            line(s, ind + 4, "__syncthreads();");
            const int ti = all ? ind + 4 : ind + 8;
            if (!all) line(s, ind + 4, "if (tid < 32) {");
            line(s, ti, fmt::format("{} b[8];", A));
            line(s, ti, "#pragma unroll");
            line(s, ti, "for (int k = 0; k < 8; ++k) b[k] = red[(tid & 31) + 32 * k];");
            line(s, ti, "#pragma unroll");
            line(s, ti, fmt::format("for (int k = 0; k < 4; ++k) b[k] = {};", combine(r, "b[k]", "b[k + 4]")),
                 "s = 128");
            line(s, ti, "#pragma unroll");
            line(s, ti, fmt::format("for (int k = 0; k < 2; ++k) b[k] = {};", combine(r, "b[k]", "b[k + 2]")),
                 "s = 64");
            line(s, ti, fmt::format("{} v = {};", A, combine(r, "b[0]", "b[1]")), "s = 32");
            for (int sft = 16; sft >= 1; sft /= 2)
                line(s, ti, fmt::format("v = {};", combine(r, "v", fmt::format("lm::shfl_down(v, {})", sft))),
                     fmt::format("s = {}", sft));
            if (all) {
                line(s, ti, fmt::format("cp{}_{} = lm::shfl0(v);", j, chunk),
                     "lane 0's value: the chunk partial, in every thread");
            } else if (plan.split) {
                line(s, ti,
                     fmt::format(
                         "if (tid == 0) reinterpret_cast<{}*>(p.part{})[o * (p.chunks + lm_groups) + c] = v;",
                         A, j),
                     "the chunk partial");
                line(s, ind + 4, "}");
            } else {
                line(s, ti, fmt::format("if (tid == 0) {{ {} }}", push(j, "v")));
                line(s, ind + 4, "}");
            }
        } else {  // a warp per row: thread w holds lanes w + 32 k, k < 8
            line(s, ind + 4,
                 fmt::format("for (int k = 0; k < 4; ++k) acc{}[k] = {};", j,
                             combine(r, fmt::format("acc{}[k]", j), fmt::format("acc{}[k + 4]", j))),
                 "s = 128");
            line(s, ind + 4,
                 fmt::format("for (int k = 0; k < 2; ++k) acc{}[k] = {};", j,
                             combine(r, fmt::format("acc{}[k]", j), fmt::format("acc{}[k + 2]", j))),
                 "s = 64");
            line(s, ind + 4,
                 fmt::format("{} v = {};", A,
                             combine(r, fmt::format("acc{}[0]", j), fmt::format("acc{}[1]", j))),
                 "s = 32");
            for (int sft = 16; sft >= 1; sft /= 2)
                line(s, ind + 4,
                     fmt::format("v = {};", combine(r, "v", fmt::format("lm::shfl_down(v, {})", sft))),
                     fmt::format("s = {}", sft));
            line(s, ind + 4, fmt::format("if (w == 0) {{ {} }}", push(j, "v")));
        }
        line(s, ind + 4, fmt::format("for (int k = 0; k < {}; ++k) acc{}[k] = {};", 256 / G, j, identity(r)));
        line(s, ind, "}");
    }

    std::string push(std::size_t j, const std::string& v) const {
        const ReduceOpPlan& r = plan.ops[j];
        return fmt::format(
            "{} xp = {}; for (long long q = cnt{}; q & 1; q >>= 1) xp = {}; stk{}[top{}++] = xp; ++cnt{};",
            acc_type(r), v, j, combine(r, fmt::format("stk{}[--top{}]", j, j), "xp"), j, j, j);
    }

    // Declarations of the binary counters and accumulators of reduction j.
    void declare_acc(std::string& s, int ind, std::size_t j, int A, bool counter = true) const {
        const ReduceOpPlan& r = plan.ops[j];
        const std::string T = acc_type(r);
        line(s, ind,
             fmt::format("{} acc{}[{}]; for (int k = 0; k < {}; ++k) acc{}[k] = {};", T, j, A, A, j,
                         identity(r)),
             fmt::format("reduction {}: {} of {}, lane accumulators", j, ir::op_name(r.op), name_of(r.in)));
        if (counter)
            line(s, ind, fmt::format("{} stk{}[40]; int top{} = 0; long long cnt{} = 0;", T, j, j, j),
                 "binary counter over chunk partials");
    }
    static std::string name_of(DType t) { return std::string(loom::name(t)); }

    // The final accumulator of reduction j from its counter (in the thread that pushed).
    std::string fold(std::size_t j) const { return fold_into(j, fmt::format("fin{}", j)); }
    std::string fold_into(std::size_t j, const std::string& f) const {
        const ReduceOpPlan& r = plan.ops[j];
        return fmt::format("{} {} = {}; if (top{} > 0) {{ {} = stk{}[--top{}]; while (top{} > 0) {} = {}; }}",
                           acc_type(r), f, identity(r), j, f, j, j, j, f,
                           combine(r, fmt::format("stk{}[--top{}]", j, j), f));
    }

    // ---- inner schedule -------------------------------------------------------------------------------
    // A row's group of G lanes (G = 256: a block per row; G = 32: a warp per row) takes the chunks of 8192
    // elements of the row in 8 blocks of 1024; lane w of the group holds A = 256 / G lane accumulators, and
    // its positions in block m of chunk c are r0 = c * 8192 + m * 1024 + 4 * (w + G K), K < A, each the start
    // of a run of 4 elements.

    // What every part of one variant of the inner kernel is written for.
    struct InnerShape {
        bool vec = false;     // the 4-wide variant: a run of 4 is loaded as one vector
        int G = 256;          // lanes of a row's group
        int A = 1;            // lane accumulators per thread: 256 / G
        int M = 0;            // blocks of 1024 elements of the row held in registers (0: the row streams)
        bool cached = false;  // the row is held in registers (M > 0)
        // Held rows of a full-rows plan in the 4-wide variant: every position is inside the row, so no bounds
        // check is written (the compiler then computes row-level values, such as a normalization's
        // 1/sqrt(var + eps), once instead of once per guarded position).
        bool inside = false;
    };
    InnerShape inner_shape(bool vec) const {
        InnerShape sh;
        sh.vec = vec;
        sh.G = plan.group;
        sh.A = 256 / sh.G;
        sh.M = plan.cached_blocks;
        sh.cached = plan.cached_blocks > 0;
        sh.inside = sh.cached && vec && plan.full_rows;
        return sh;
    }

    // The inner kernel `<name>_v` (4-wide runs) or `<name>_s` (general): the prologue, the held row, each
    // stage's pass over the row, then the element outputs and the row's epilogue (a split kernel ends in the
    // split finisher instead).
    std::string inner_kernel(bool vec) const {
        const InnerShape sh = inner_shape(vec);
        std::string s = inner_prologue(sh);
        if (sh.cached) inner_held_row_load(s, sh);
        for (int st = 0; st < plan.stages; ++st) inner_stage(s, sh, st);
        if (plan.element_outputs > 0 && !plan.split) inner_element_outputs(s, sh);
        if (has_row && !plan.split) inner_row_epilogue(s, sh);
        s += "}\n";
        return s;
    }

    // The signature and the binding of the kernel's indices: the lane w and row o of this thread, the block's
    // range of the row's chunks [c_begin, c_end), and the row values rv<j> that later stages read.
    std::string inner_prologue(const InnerShape& sh) const {
        const std::string entry = sh.vec ? name + "_v" : name + "_s";
        // A split kernel runs as one wave of kSplitBlocksPerSM blocks per SM: the bound keeps them resident.
        const std::string bounds =
            plan.split ? fmt::format("{}, {}", plan.block, kSplitBlocksPerSM) : fmt::format("{}", plan.block);
        std::string s = fmt::format(
            "extern \"C\" __global__ void __launch_bounds__({}) {}(const __grid_constant__ {}_params p) {{\n",
            bounds, entry, name);
        detail::write_kernel_prologue(s, !plan.split, 72);  // a split grid is one wave
        line(s, 4, "__shared__ __align__(16) unsigned char lm_smem[8192];",
             plan.split ? "butterfly exchange (two slots); the split finisher's trees"
                        : "butterfly exchange (two slots)");
        if (sh.G == 256) line(s, 4, "int lm_par = 0;", "the butterfly slot of the next chunk end");
        line(s, 4, fmt::format("const {}_el_params& pe = p.el;", name));
        line(s, 4, "const int tid = threadIdx.x;");
        if (sh.G == 256) {
            line(s, 4, "const int w = tid;", "lane of the row's group");
            line(s, 4, "const long long o = blockIdx.x;", "one row per block");
        } else {
            line(s, 4, "const int w = tid & 31;", "lane of the row's warp");
            line(s, 4, "const long long o = (long long)blockIdx.x * 8 + (tid >> 5);", "one row per warp");
            line(s, 4, "if (o >= p.n_out) return;", "whole warps leave together");
        }
        if (plan.split) {
            line(s, 4, "const long long c_begin = (long long)blockIdx.y * p.chunks / p.nblk;",
                 "this block's balanced range of the row's chunks");
            line(s, 4, "const long long c_end = ((long long)blockIdx.y + 1) * p.chunks / p.nblk;");
            line(s, 4, "const long long lm_groups = (p.chunks + 255) >> 8;", "groups of 256 chunk partials");
        } else {
            line(s, 4, "const long long c_begin = (long long)blockIdx.y * p.cpb;");
            line(s, 4, "const long long c_end = c_begin + p.cpb < p.chunks ? c_begin + p.cpb : p.chunks;");
        }
        line(s, 4, "(void)c_end; (void)w;");
        for (std::size_t j = 0; j < nred; ++j)
            line(s, 4, fmt::format("{} rv{} = {{}};", rv_type(j), j), "row value");
        return s;
    }

    // The held row: the sites held in registers (plan.cached_sites) read once, as c<k>[q][j] for the M A
    // positions q of the thread, so that every stage and the element outputs reuse them.
    void inner_held_row_load(std::string& s, const InnerShape& sh) const {
        const int G = sh.G, A = sh.A, M = sh.M;
        line(s, 4,
             fmt::format("// the row, held in registers: {} positions of 4 elements per thread", M * A));
        for (int k : plan.cached_sites)
            line(s, 4, fmt::format("{} c{}[{}][4];", site_type(static_cast<std::size_t>(k)), k, M * A));
        if (plan.cached_sites.empty()) return;
        line(s, 4, "#pragma unroll");
        line(s, 4, fmt::format("for (int q = 0; q < {}; ++q) {{", M * A));
        line(s, 8,
             fmt::format("const long long r0 = (long long)(q / {}) * 1024 + 4 * (w + {} * (q % {}));", A, G,
                         A));
        emit_load_run(
            s, 8, sh.vec, "r0", [&](std::size_t k) { return fmt::format("c{}[q]", k); }, false, true,
            sh.inside);
        line(s, 4, "}");
    }

    // In the loops over a held row: site k's value at position q, element j (held, or loaded where used).
    std::string held_value(std::size_t k) const {
        return is_cached(k) ? fmt::format("c{}[q][j]", k) : fmt::format("u{}[j]", k);
    }

    // In the loops over a held row: the sites not held in registers, loaded as u<k>[4] at position q.
    void load_unheld(std::string& s, int ind, const InnerShape& sh) const {
        const std::vector<std::size_t> usites = sites_of(true);
        if (usites.empty()) return;
        for (std::size_t k : usites) line(s, ind, fmt::format("{} u{}[4];", site_type(k), k));
        emit_load_run(
            s, ind, sh.vec, "r0", [&](std::size_t k) { return fmt::format("u{}", k); }, true, false,
            sh.inside);
    }

    // Stage st in its own scope: its accumulators, the pass over the row that folds every element into them,
    // then the row values (or, split, the split finisher, which ends the kernel).
    void inner_stage(std::string& s, const InnerShape& sh, int st) const {
        const std::vector<std::size_t> ops = stage_ops(st);
        line(s, 4, fmt::format("{{  // ---- stage {} ----", st));
        inner_stage_accumulators(s, sh, ops);
        if (sh.cached)
            inner_held_pass(s, sh, ops);
        else if (sh.G == 256 && sites_of(false).size() <= 2)
            inner_pipelined_pass(s, sh, ops);
        else
            inner_streamed_pass(s, sh, ops);
        if (plan.split) {
            line(s, 8, fmt::format("{}_split_finish(p, o, c_begin, c_end, lm_smem);", name),
                 "the chunk partials climb the counter tree; whoever completes the row finishes it");
            line(s, 8, "return;");
        } else {
            inner_row_values(s, sh, ops);
        }
        line(s, 4, "}");
    }

    // The stage's lane accumulators; the binary counters over chunk partials, unless a held row's block keeps
    // its (at most two) chunk partials cp<j>_<c> in registers or a split stores them.
    void inner_stage_accumulators(std::string& s, const InnerShape& sh,
                                  const std::vector<std::size_t>& ops) const {
        const bool held_partials = sh.cached && sh.G == 256;
        const int cached_chunks = sh.cached ? (sh.M + 7) / 8 : 0;
        for (std::size_t j : ops) {
            declare_acc(s, 8, j, sh.A, !held_partials && !plan.split);
            if (held_partials)
                for (int c = 0; c < cached_chunks; ++c)
                    line(s, 8,
                         fmt::format("{} cp{}_{} = {};", acc_type(plan.ops[j]), j, c, identity(plan.ops[j])),
                         fmt::format("the partial of chunk {}", c));
        }
    }

    // The fold of the run of 4 at r0 into the lane accumulators acc<j>[K] of the stage's reductions: the
    // element body per element j of the run (site values from `val`), then each reduction's contribution at
    // reduced index r0 + j. `guard`: the run may end past the row's end (the scalar variant).
    void accumulate_run(std::string& s, int ind, const std::vector<std::size_t>& ops, const std::string& r0,
                        const std::function<std::string(std::size_t)>& val, bool guard) const {
        // A full run of 4 folds a float max or min with lm::max_run / lm::min_run: one FMNMX per element, the
        // same bits as the exact fold (the run is folded again where they could differ).
        auto run_fold = [&](std::size_t j) { return !guard && run_foldable(plan.ops[j]); };
        for (std::size_t j : ops)
            if (run_fold(j))
                line(s, ind, fmt::format("float ry{}[4];", j),
                     fmt::format("reduction {}'s run of 4 values", j));
        line(s, ind, "#pragma unroll");
        line(s, ind, "for (int j = 0; j < 4; ++j) {");
        if (guard) line(s, ind + 4, row_end_guard(r0));
        body_call(s, ind + 4, val);
        for (std::size_t j : ops) {
            if (run_fold(j)) {
                line(s, ind + 4, fmt::format("ry{}[j] = y{};", j, j));
                continue;
            }
            line(s, ind + 4,
                 fmt::format(
                     "acc{}[K] = {};", j,
                     combine(plan.ops[j], fmt::format("acc{}[K]", j),
                             element_of(plan.ops[j], fmt::format("y{}", j), fmt::format("({} + j)", r0)))));
        }
        line(s, ind, "}");
        for (std::size_t j : ops)
            if (run_fold(j))
                line(s, ind,
                     fmt::format("acc{}[K] = lm::{}_run(acc{}[K], ry{});", j,
                                 plan.ops[j].op == Op::Max ? "max" : "min", j, j),
                     "ascending j, the exact fold's bits");
    }

    // A held row's pass: chunk c covers positions q in [c * 8 A, (c + 1) * 8 A); each chunk present in the
    // row is folded from registers and ends in its butterfly.
    void inner_held_pass(std::string& s, const InnerShape& sh, const std::vector<std::size_t>& ops) const {
        const int G = sh.G, A = sh.A, M = sh.M;
        const int chunks = (M + 7) / 8;
        if (chunks > 2) throw InternalError("emit_reduce: rows held in registers span at most two chunks");
        for (int c = 0; c < chunks; ++c) {
            const int q0 = c * 8 * A, q1 = std::min(M * A, (c + 1) * 8 * A);
            line(s, 8, fmt::format("if ({}LL * 8192 < p.len) {{", c), fmt::format("chunk {}", c));
            line(s, 12, "#pragma unroll");
            line(s, 12, fmt::format("for (int q = {}; q < {}; ++q) {{", q0, q1));
            line(s, 16,
                 fmt::format("const long long r0 = (long long)(q / {}) * 1024 + 4 * (w + {} * (q % {}));", A,
                             G, A));
            line(s, 16, fmt::format("const int K = q % {};", A));
            line(s, 16, sh.inside ? "{" : "if (r0 < p.len) {", sh.inside ? "full rows: inside the row" : "");
            load_unheld(s, 20, sh);
            accumulate_run(
                s, 20, ops, "r0", [&](std::size_t k) { return held_value(k); }, !sh.vec);
            line(s, 16, "}");
            line(s, 12, "}");
            for (std::size_t j : ops) inner_chunk_end(s, 12, j, c);
            line(s, 8, "}");
        }
    }

    // The loads of the 8 blocks of 1024 of chunk `c` into nx<k>[m] (the software pipeline's next chunk).
    void load_next_chunk(std::string& s, int ind, bool vec, const std::string& c) const {
        line(s, ind, "#pragma unroll");
        line(s, ind, "for (int m = 0; m < 8; ++m) {");
        line(s, ind + 4, fmt::format("const long long r0 = ({}) * 8192 + m * 1024 + 4 * w;", c));
        emit_load_run(s, ind + 4, vec, "r0", [&](std::size_t k) { return fmt::format("nx{}[m]", k); });
        line(s, ind, "}");
    }

    // A block per row reading at most two sites: a software pipeline, so that the next chunk's loads are in
    // flight while this chunk is accumulated and its butterfly waits at its barrier.
    void inner_pipelined_pass(std::string& s, const InnerShape& sh,
                              const std::vector<std::size_t>& ops) const {
        const std::vector<std::size_t> csites = sites_of(false);
        for (std::size_t k : csites)
            line(s, 8, fmt::format("{} nx{}[8][4];", site_type(k), k), "the next chunk's values");
        line(s, 8, "if (c_begin < c_end) {");
        load_next_chunk(s, 12, sh.vec, "c_begin");
        line(s, 8, "}");
        line(s, 8, "for (long long c = c_begin; c < c_end; ++c) {", "the chunks of this block");
        for (std::size_t k : csites) {
            const std::string rt(site_type(k));
            line(s, 12, fmt::format("{} cu{}[8][4];", rt, k));
            line(s, 12, "#pragma unroll");
            line(s, 12,
                 fmt::format(
                     "for (int m = 0; m < 8; ++m) for (int j = 0; j < 4; ++j) cu{}[m][j] = nx{}[m][j];", k,
                     k));
        }
        line(s, 12, "if (c + 1 < c_end) {");
        load_next_chunk(s, 16, sh.vec, "c + 1");
        line(s, 12, "}");
        line(s, 12, "#pragma unroll");
        line(s, 12, "for (int m = 0; m < 8; ++m) {");
        line(s, 16, "const int K = 0;");
        line(s, 16, "const long long r0 = c * 8192 + m * 1024 + 4 * w;");
        line(s, 16, "if (r0 < p.len) {");
        accumulate_run(
            s, 20, ops, "r0", [&](std::size_t k) { return fmt::format("cu{}[m][j]", k); }, !sh.vec);
        line(s, 16, "}");
        line(s, 12, "}");
        for (std::size_t j : ops) inner_chunk_end(s, 12, j);
        line(s, 8, "}");
    }

    // Otherwise (a warp per row, or more sites): each position's run is loaded where it is folded.
    void inner_streamed_pass(std::string& s, const InnerShape& sh,
                             const std::vector<std::size_t>& ops) const {
        line(s, 8, "for (long long c = c_begin; c < c_end; ++c) {", "the chunks of this block");
        line(s, 12, sh.G == 256 ? "#pragma unroll" : "#pragma unroll 1");
        line(s, 12, "for (int m = 0; m < 8; ++m) {");
        line(s, 16, "#pragma unroll");
        line(s, 16, fmt::format("for (int K = 0; K < {}; ++K) {{", sh.A));
        line(s, 20, fmt::format("const long long r0 = c * 8192 + m * 1024 + 4 * (w + {} * K);", sh.G));
        line(s, 20, "if (r0 < p.len) {");
        for (std::size_t k : sites_of(false)) line(s, 24, fmt::format("{} v{}[4];", site_type(k), k));
        emit_load_run(s, 24, sh.vec, "r0", [&](std::size_t k) { return fmt::format("v{}", k); });
        accumulate_run(
            s, 24, ops, "r0", [&](std::size_t k) { return fmt::format("v{}[j]", k); }, !sh.vec);
        line(s, 20, "}");
        line(s, 16, "}");
        line(s, 12, "}");
        for (std::size_t j : ops) inner_chunk_end(s, 12, j);
        line(s, 8, "}");
    }

    // The stage's row values rv<j> in every thread of the row, from the chunk partials: each thread's own
    // (a held row's block), or the counter folded by the thread that pushed, finished and broadcast.
    void inner_row_values(std::string& s, const InnerShape& sh, const std::vector<std::size_t>& ops) const {
        const std::string who = sh.G == 256 ? "tid == 0" : "w == 0";
        const int cached_chunks = sh.cached ? (sh.M + 7) / 8 : 0;
        for (std::size_t j : ops) {
            const ReduceOpPlan& r = plan.ops[j];
            if (sh.G == 256 &&
                sh.cached) {  // every thread holds the chunk partials: each finishes the row value
                const std::string fin =
                    cached_chunks == 1
                        ? fmt::format("cp{}_0", j)
                        : fmt::format("(p.len > 8192 ? {} : cp{}_0)",
                                      combine(r, fmt::format("cp{}_0", j), fmt::format("cp{}_1", j)), j);
                line(s, 8, fmt::format("rv{} = {};", j, finish(r, fin)),
                     "the row value, in every thread (pairwise over the chunks)");
            } else if (sh.G == 256) {
                line(s, 8,
                     fmt::format("if ({}) {{ {} rv{} = {}; }}", who, fold(j), j,
                                 finish(r, fmt::format("fin{}", j))));
                line(s, 8,
                     fmt::format("{{ __shared__ {} b; if (tid == 0) b = rv{}; __syncthreads(); rv{} = b; }}",
                                 rv_type(j), j, j),
                     "the row value to every thread");
            } else {
                line(s, 8,
                     fmt::format("if ({}) {{ {} rv{} = {}; }}", who, fold(j), j,
                                 finish(r, fmt::format("fin{}", j))));
                line(s, 8, fmt::format("rv{} = lm::shfl0(rv{});", j, j), "the row value to every lane");
            }
        }
    }

    // The element outputs of the run at r0 (site values from `val`): one vector store per output in the
    // 4-wide variant, else a store per element inside the row.
    void write_element_run(std::string& s, int ind, bool vec, const std::string& r0,
                           const std::function<std::string(std::size_t)>& val) const {
        if (!vec) {
            line(s, ind, "#pragma unroll");
            line(s, ind, "for (int j = 0; j < 4; ++j) {");
            line(s, ind + 4, row_end_guard(r0));
            body_call(s, ind + 4, val);
            for (int e = 0; e < plan.element_outputs; ++e) {
                const std::size_t oi = nred + static_cast<std::size_t>(e);
                line(s, ind + 4,
                     fmt::format("pe.out{}[o * p.len + {} + j] = {};", oi, r0,
                                 store_expr(plan.element.outputs[oi].dtype, fmt::format("y{}", oi))));
            }
            line(s, ind, "}");
            return;
        }
        for (int e = 0; e < plan.element_outputs; ++e) {
            const DType dt = plan.element.outputs[nred + static_cast<std::size_t>(e)].dtype;
            line(s, ind, fmt::format("lm::vec<{}, 4> ov{};", storage_type(dt), e));
        }
        line(s, ind, "#pragma unroll");
        line(s, ind, "for (int j = 0; j < 4; ++j) {");
        body_call(s, ind + 4, val);
        for (int e = 0; e < plan.element_outputs; ++e) {
            const std::size_t oi = nred + static_cast<std::size_t>(e);
            line(s, ind + 4,
                 fmt::format("ov{}.v[j] = {};", e,
                             store_expr(plan.element.outputs[oi].dtype, fmt::format("y{}", oi))));
        }
        line(s, ind, "}");
        for (int e = 0; e < plan.element_outputs; ++e) {
            const std::size_t oi = nred + static_cast<std::size_t>(e);
            const DType dt = plan.element.outputs[oi].dtype;
            line(s, ind,
                 fmt::format("lm::store_vec<{}, 4>(pe.out{} + (o * p.len + {}), ov{});", storage_type(dt), oi,
                             r0, e));
        }
    }

    // The element outputs, once every stage's row values are known: a last pass over the row (from registers
    // for a held row, else read again from memory).
    void inner_element_outputs(std::string& s, const InnerShape& sh) const {
        const int G = sh.G, A = sh.A;
        line(s, 4, "// ---- element outputs ----");
        if (sh.cached) {
            line(s, 4, "#pragma unroll");
            line(s, 4, fmt::format("for (int q = 0; q < {}; ++q) {{", sh.M * A));
            line(s, 8,
                 fmt::format("const long long r0 = (long long)(q / {}) * 1024 + 4 * (w + {} * (q % {}));", A,
                             G, A));
            line(s, 8, sh.inside ? "{" : "if (r0 < p.len) {", sh.inside ? "full rows: inside the row" : "");
            load_unheld(s, 12, sh);
            write_element_run(s, 12, sh.vec, "r0", [&](std::size_t k) { return held_value(k); });
            line(s, 8, "}");
            line(s, 4, "}");
            return;
        }
        line(s, 4, "for (long long c = 0; c < p.chunks; ++c) {");
        line(s, 8, "#pragma unroll 1");
        line(s, 8, "for (int m = 0; m < 8; ++m) {");
        line(s, 12, "#pragma unroll");
        line(s, 12, fmt::format("for (int K = 0; K < {}; ++K) {{", A));
        line(s, 16, fmt::format("const long long r0 = c * 8192 + m * 1024 + 4 * (w + {} * K);", G));
        line(s, 16, "if (r0 < p.len) {");
        for (std::size_t k : sites_of(false)) line(s, 20, fmt::format("{} v{}[4];", site_type(k), k));
        emit_load_run(s, 20, sh.vec, "r0", [&](std::size_t k) { return fmt::format("v{}", k); });
        write_element_run(s, 20, sh.vec, "r0", [&](std::size_t k) { return fmt::format("v{}[j]", k); });
        line(s, 16, "}");
        line(s, 12, "}");
        line(s, 8, "}");
        line(s, 4, "}");
    }

    // The row's epilogue: the row outputs from the row values, written once per row by its first lane.
    void inner_row_epilogue(std::string& s, const InnerShape& sh) const {
        std::vector<std::string> a{"p.row", fmt::format("({})o", row.idx)};
        for (std::size_t j = 0; j < nred; ++j) a.push_back(fmt::format("rv{}", j));
        line(s, 4,
             fmt::format("if ({}) {}_row_at({});", sh.G == 256 ? "tid == 0" : "w == 0", name,
                         fmt::join(a, ", ")),
             "the epilogue, once per row");
    }

    // Loads the 4 elements of the run at r0 of row o into `dst(k)` (an array of 4 per site).
    // `uncached_only`: the sites not held in registers (the "u" load functions); `cached_only`: the sites
    // held in registers, through the full load function (the others are then loaded into a scratch value).
    // `inside`: every position is inside the row (held rows of a full-rows plan, 4-wide variant), so no
    // bounds check is written.
    void emit_load_run(std::string& s, int ind, bool vec, const std::string& r0,
                       const std::function<std::string(std::size_t)>& dst, bool uncached_only = false,
                       bool cached_only = false, bool inside = false) const {
        const std::vector<std::size_t> sites = sites_of(uncached_only);
        if (sites.empty()) return;
        const std::string suffix = uncached_only ? "u" : "";
        std::vector<std::string> scratch;
        auto target = [&](std::size_t k, bool four) {
            if (!cached_only || is_cached(k)) return dst(k);
            const std::string nm = fmt::format("scratch{}", k);
            if (std::find(scratch.begin(), scratch.end(), nm) == scratch.end()) {
                scratch.push_back(nm);
                line(s, ind, fmt::format("{} {}{};", site_type(k), nm, four ? "[4]" : ""));
            }
            return nm;
        };
        if (cached_only && plan.cached_sites.size() == sites.size()) cached_only = false;
        if (vec) {
            std::vector<std::string> a{"pe", index_args("o", r0)};
            for (std::size_t k : sites) a.push_back(target(k, true));
            if (inside)
                line(s, ind, fmt::format("{}_el_load{}4({});", name, suffix, fmt::join(a, ", ")));
            else
                line(s, ind,
                     fmt::format("if ({} < p.len) {}_el_load{}4({});", r0, name, suffix, fmt::join(a, ", ")));
        } else {
            line(s, ind, "#pragma unroll");
            line(s, ind, "for (int j = 0; j < 4; ++j) {");
            line(s, ind + 4, row_end_guard(r0));
            std::vector<std::string> a{"pe", index_args("o", fmt::format("({} + j)", r0))};
            for (std::size_t k : sites) {
                const std::string t = target(k, false);
                a.push_back(t.rfind("scratch", 0) == 0 ? t : fmt::format("{}[j]", t));
            }
            line(s, ind + 4, fmt::format("{}_el_load{}({});", name, suffix, fmt::join(a, ", ")));
            line(s, ind, "}");
        }
    }

    // ---- outer schedule (the column order) -------------------------------------------------------------
    // Thread t of block (bx, by) owns VO consecutive outputs o0 = (bx * 256 + t) * VO (VO = 4 in the vector
    // variant: 16-byte loads across outputs, so a block reads 4 KiB of every row it visits) and the chunks
    // [by * cpb, (by + 1) * cpb) of 256 rows, each summed in sequence; chunk partials go through the binary
    // counter. Split: the block's partials are written and the last block of the column group folds the
    // block partials of each of its outputs in order (the same pairwise tree), one thread per output.
    std::string outer_kernel(bool vec) const {
        const int VO = vec ? 4 : 1;
        std::string s = outer_prologue(vec);
        for (int st = 0; st < plan.stages; ++st) {
            const std::vector<std::size_t> ops = stage_ops(st);
            line(s, 4, fmt::format("{{  // ---- stage {} ----", st));
            outer_chunk_pass(s, vec, ops);
            outer_block_partials(s, VO, ops);
            if (plan.split) {
                outer_split_finish(s, VO, ops);
            } else {
                for (std::size_t j : ops)
                    line(s, 8,
                         fmt::format("for (int v = 0; v < {}; ++v) rv{}[v] = {};", VO, j,
                                     finish(plan.ops[j], fmt::format("blk{}[v]", j))));
            }
            line(s, 4, "}");
        }
        if (has_row) outer_row_epilogue(s, VO);
        s += "}\n";
        return s;
    }

    // The signature and the binding of the kernel's indices: this thread's first output o0, the block's range
    // of chunks [c_first, c_last), and the row values rv<j>[VO] that later stages read.
    std::string outer_prologue(bool vec) const {
        const int VO = vec ? 4 : 1;
        const std::string entry = vec ? name + "_v" : name + "_s";
        std::string s = fmt::format(
            "extern \"C\" __global__ void __launch_bounds__({}) {}(const __grid_constant__ {}_params p) {{\n",
            plan.block, entry, name);
        detail::write_kernel_prologue(s, !plan.split, 72);  // a split grid is one wave
        line(s, 4, fmt::format("const {}_el_params& pe = p.el;", name));
        line(s, 4, "const int tid = threadIdx.x;");
        line(s, 4, fmt::format("const long long o0 = ((long long)blockIdx.x * 256 + tid) * {};", VO),
             "this thread's first output");
        line(s, 4, "const bool live = o0 < p.n_out;");
        line(s, 4, "const long long c_first = (long long)blockIdx.y * p.cpb;");
        line(s, 4, "const long long c_last = c_first + p.cpb < p.chunks ? c_first + p.cpb : p.chunks;");
        for (std::size_t j = 0; j < nred; ++j)
            line(s, 4, fmt::format("{} rv{}[{}] = {{}};", rv_type(j), j, VO), "row values");
        return s;
    }

    // The stage's pass over the block's chunks: per chunk, the accumulators a<j>[VO] folded over its rows in
    // sequence, then the chunk partial of each output pushed on the stage's binary counters.
    void outer_chunk_pass(std::string& s, bool vec, const std::vector<std::size_t>& ops) const {
        const int VO = vec ? 4 : 1;
        for (std::size_t j : ops) {
            const ReduceOpPlan& r = plan.ops[j];
            line(s, 8,
                 fmt::format("{} stk{}[{}][40]; int top{} = 0; long long cnt{} = 0;", acc_type(r), j, VO, j,
                             j),
                 fmt::format("reduction {}: {} of {}; binary counter over chunk partials", j,
                             ir::op_name(r.op), name_of(r.in)));
        }
        line(s, 8, "for (long long c = c_first; live && c < c_last; ++c) {");
        line(s, 12, "const long long r_end = (c + 1) * 256 < p.len ? (c + 1) * 256 : p.len;");
        for (std::size_t j : ops)
            line(s, 12,
                 fmt::format("{} a{}[{}]; for (int v = 0; v < {}; ++v) a{}[v] = {};", acc_type(plan.ops[j]),
                             j, VO, VO, j, identity(plan.ops[j])));
        outer_chunk_rows(s, vec, ops);
        for (std::size_t j : ops) {
            const ReduceOpPlan& r = plan.ops[j];
            line(s, 12,
                 fmt::format(
                     "for (int v = 0; v < {}; ++v) {{ {} xp = a{}[v]; int t = top{}; for (long long q = "
                     "cnt{}; q & 1; q >>= 1) xp = {}; stk{}[v][t++] = xp; if (v == {}) top{} = t; }}",
                     VO, acc_type(r), j, j, j, combine(r, fmt::format("stk{}[v][--t]", j), "xp"), j, VO - 1,
                     j));
            line(s, 12, fmt::format("++cnt{};", j));
        }
        line(s, 8, "}");
    }

    // The rows of chunk c, one after the other: the VO outputs' operands loaded (one 4-wide load per site in
    // the vector variant), the element body per output, each reduction's contribution at reduced index r.
    void outer_chunk_rows(std::string& s, bool vec, const std::vector<std::size_t>& ops) const {
        const int VO = vec ? 4 : 1;
        const std::vector<std::size_t> sites = sites_of(false);
        const bool flat = plan.element.rank != 2;
        // The flat index is of the element space's index type (32-bit when it fits): a signed induction
        // variable the compiler turns into a pointer increment. 16 rows in flight per thread.
        if (flat) {
            line(s, 12,
                 fmt::format("const {} f0 = ({})(c * 256 * p.n_out + o0), fs = ({})p.n_out;", el.idx, el.idx,
                             el.idx),
                 "flat index of (row c * 256, output o0); row step");
            line(s, 12, "const int nr = (int)(r_end - c * 256);");
        }
        line(s, 12, "#pragma unroll 16");
        line(s, 12, flat ? "for (int k = 0; k < nr; ++k) {" : "for (long long r = c * 256; r < r_end; ++r) {",
             "the chunk's rows, one after the other");
        if (flat) {
            line(s, 16, "const long long r = c * 256 + k; (void)r;");
            line(s, 16, fmt::format("const {} fi = f0 + ({})k * fs;", el.idx, el.idx));
        }
        for (std::size_t k : sites) line(s, 16, fmt::format("{} v{}[{}];", site_type(k), k, VO));
        std::vector<std::string> a{"pe", flat ? fmt::format("fi, ({})0", el.idx) : index_args("o0", "r")};
        for (std::size_t k : sites) a.push_back(vec ? fmt::format("v{}", k) : fmt::format("v{}[0]", k));
        if (!sites.empty())
            line(s, 16, fmt::format("{}_el_load{}({});", name, vec ? "4" : "", fmt::join(a, ", ")));
        line(s, 16, "#pragma unroll");
        line(s, 16, fmt::format("for (int v = 0; v < {}; ++v) {{", VO));
        body_call(
            s, 20, [&](std::size_t k) { return fmt::format("v{}[v]", k); }, "v");
        for (std::size_t j : ops)
            line(s, 20,
                 fmt::format("a{}[v] = {};", j,
                             combine(plan.ops[j], fmt::format("a{}[v]", j),
                                     element_of(plan.ops[j], fmt::format("y{}", j), "r"))));
        line(s, 16, "}");
        line(s, 12, "}");
    }

    // This block's partial blk<j>[v] of each output: the stage's binary counter folded from the top.
    void outer_block_partials(std::string& s, int VO, const std::vector<std::size_t>& ops) const {
        for (std::size_t j : ops) {
            const ReduceOpPlan& r = plan.ops[j];
            const std::string A = acc_type(r);
            line(s, 8, fmt::format("{} blk{}[{}];", A, j, VO),
                 fmt::format("reduction {}: this block's partial per output", j));
            line(s, 8,
                 fmt::format("for (int v = 0; v < {}; ++v) {{ int t = top{}; {} f = {}; if (t > 0) {{ f "
                             "= stk{}[v][--t]; while (t > 0) f = {}; }} blk{}[v] = f; }}",
                             VO, j, A, identity(r), j, combine(r, fmt::format("stk{}[v][--t]", j), "f"), j));
        }
    }

    // Split: the block partials are written for the column group; the last block of the group to arrive
    // (which resets the counter) goes on to fold every block's partials into the row values.
    void outer_split_finish(std::string& s, int VO, const std::vector<std::size_t>& ops) const {
        for (std::size_t j : ops)
            line(s, 8,
                 fmt::format("if (live) for (int v = 0; v < {}; ++v) "
                             "reinterpret_cast<{}*>(p.part{})[blockIdx.y * p.n_out + o0 + v] = blk{}[v];",
                             VO, acc_type(plan.ops[j]), j, j),
                 "split: this block's partials, [block][output]");
        line(s, 8, "__shared__ bool lm_last;");
        line(s, 8, "__threadfence();", "the partials are visible device-wide before the count");
        line(s, 8, "__syncthreads();");
        line(s, 8,
             "if (tid == 0) lm_last = lm::arrive(reinterpret_cast<unsigned int*>(p.count) + "
             "blockIdx.x, 1u, (unsigned int)p.nblk);",
             "the last block of the row group; it resets the counter");
        line(s, 8, "__syncthreads();");
        line(s, 8, "if (!lm_last || !live) return;");
        line(s, 8, "__threadfence();");
        for (std::size_t j : ops) outer_split_tree(s, VO, j);
    }

    // The block partials of reduction j in block order through the same binary counter (the pairwise tree
    // over chunks), finished into rv<j>[v]: 8 blocks' partials of every output of the thread are loaded
    // before any is combined, so that the finisher waits for one L2 round trip per 8 blocks, not per partial.
    void outer_split_tree(std::string& s, int VO, std::size_t j) const {
        const ReduceOpPlan& r = plan.ops[j];
        const std::string A = acc_type(r);
        line(s, 8, "{", fmt::format("reduction {}: the block partials in order, the same pairwise tree", j));
        line(s, 12, fmt::format("const {}* part = reinterpret_cast<const {}*>(p.part{}) + o0;", A, A, j));
        line(s, 12, fmt::format("{} st[{}][24]; int t = 0;", A, VO));
        line(s, 12, "for (long long b0 = 0; b0 < p.nblk; b0 += 8) {");
        line(s, 16, fmt::format("{} pv[8][{}];", A, VO));
        line(s, 16, "#pragma unroll");
        line(s, 16,
             fmt::format("for (int k = 0; k < 8; ++k) if (b0 + k < p.nblk) for (int v = 0; v < "
                         "{}; ++v) pv[k][v] = lm::ldcg(part + (b0 + k) * p.n_out + v);",
                         VO));
        line(s, 16, "#pragma unroll");
        line(s, 16, "for (int k = 0; k < 8; ++k) {");
        line(s, 20, "if (b0 + k >= p.nblk) break;");
        line(s, 20, "int u = t;");
        line(s, 20,
             fmt::format("for (int v = 0; v < {}; ++v) {{ {} xp = pv[k][v]; u = t; for (long "
                         "long q = b0 + k; q & 1; q >>= 1) xp = {}; st[v][u++] = xp; }}",
                         VO, A, combine(r, "st[v][--u]", "xp")));
        line(s, 20, "t = u;");
        line(s, 16, "}");
        line(s, 12, "}");
        line(s, 12,
             fmt::format("for (int v = 0; v < {}; ++v) {{ int u = t; {} f = st[v][--u]; while (u "
                         "> 0) f = {}; rv{}[v] = {}; }}",
                         VO, A, combine(r, "st[v][--u]", "f"), j, finish(r, "f")));
        line(s, 8, "}");
    }

    // The epilogue: the row outputs of each of the thread's VO outputs from their row values.
    void outer_row_epilogue(std::string& s, int VO) const {
        std::vector<std::string> a{"p.row", fmt::format("({})(o0 + v)", row.idx)};
        for (std::size_t j = 0; j < nred; ++j) a.push_back(fmt::format("rv{}[v]", j));
        line(s, 4,
             fmt::format("if (live) for (int v = 0; v < {}; ++v) {}_row_at({});", VO, name,
                         fmt::join(a, ", ")),
             "the epilogue, once per output");
    }

    // ---- inner split: the chunk partials climb a counter tree
    // ---------------------------------------------- Block y of row o summed the chunks [c_begin, c_end) and
    // wrote one partial per chunk. Per group of 256 chunks an integer counter (no floating-point atomics)
    // counts the chunk partials written; the block whose addition completes a group combines its partials
    // (the pairwise tree over them, read through L2 with
    // __ldcg: other blocks wrote them) into the group partial and counts it on the row's counter; the block
    // that completes the row combines the group partials (windows of 256 pushed on a binary counter), then
    // finishes and runs the epilogue. Every counter is reset by the block that completes it, so the counters
    // are zero again after the launch. The order is the pairwise tree over chunks, whatever the ranges are.
    std::string split_finish_fn() const {
        std::string s = fmt::format(
            "// The split finisher of block (o, y): count its chunk partials in; complete groups and the "
            "row.\n"
            "__device__ __noinline__ void {}_split_finish(const {}_params& p, const long long o, "
            "const long long c_begin, const long long c_end, unsigned char* buf) {{\n",
            name, name);
        line(s, 4, "__shared__ bool lm_last;");
        line(s, 4, "const int tid = threadIdx.x;");
        line(s, 4, "const long long groups = (p.chunks + 255) >> 8;");
        line(s, 4, "unsigned int* cnt = reinterpret_cast<unsigned int*>(p.count) + o * (groups + 1);",
             "per row: a counter per group, then the row's");
        line(s, 4, "if (c_begin >= c_end) return;", "no chunks (more blocks than chunks): nothing to count");
        line(s, 4, "for (long long g = c_begin >> 8; g <= (c_end - 1) >> 8; ++g) {",
             "the groups this block's chunks belong to");
        line(s, 8, "__syncthreads();", "lm_last and buf are free again");
        line(s, 8,
             "const long long lo = c_begin > (g << 8) ? c_begin : (g << 8), hi = c_end < ((g + 1) << 8) ? "
             "c_end : ((g + 1) << 8);");
        line(s, 8, "const long long kids = p.chunks - (g << 8) < 256 ? p.chunks - (g << 8) : 256;",
             "chunks in group g");
        line(s, 8, "if (tid == 0) {");
        line(s, 12, "__threadfence();", "the chunk partials are visible device-wide before the count");
        line(s, 12, "lm_last = lm::arrive(cnt + g, (unsigned int)(hi - lo), (unsigned int)kids);",
             "this block completed group g");
        line(s, 8, "}");
        line(s, 8, "__syncthreads();");
        line(s, 8, "if (!lm_last) continue;");
        line(s, 8, "__threadfence();");
        for (std::size_t j = 0; j < nred; ++j) {
            const ReduceOpPlan& r = plan.ops[j];
            const std::string A = acc_type(r);
            line(s, 8,
                 fmt::format("{}* part{} = reinterpret_cast<{}*>(p.part{}) + o * (p.chunks + groups);", A, j,
                             A, j));
            line(s, 8,
                 fmt::format("const {} gv{} = {}_tree{}(part{} + (g << 8), kids, buf);", A, j, name, j, j),
                 "group g's partial, in thread 0");
        }
        line(s, 8, "if (groups > 1) {");
        line(s, 12, "if (tid == 0) {");
        for (std::size_t j = 0; j < nred; ++j) line(s, 16, fmt::format("part{}[p.chunks + g] = gv{};", j, j));
        line(s, 16, "__threadfence();");
        line(s, 16, "lm_last = lm::arrive(cnt + groups, 1u, (unsigned int)groups);",
             "this block completed the row");
        line(s, 12, "}");
        line(s, 12, "__syncthreads();");
        line(s, 12, "if (!lm_last) continue;");
        line(s, 12, "__threadfence();");
        line(s, 8, "}");
        for (std::size_t j = 0; j < nred; ++j) {
            const ReduceOpPlan& r = plan.ops[j];
            const std::string A = acc_type(r);
            line(s, 8, fmt::format("{} fin{} = gv{};", A, j, j));
            line(s, 8, "if (groups > 1) {", "the row: pairwise over the group partials, 256 at a time");
            line(s, 12, fmt::format("{} stk{}[40]; int top{} = 0; long long cnt{} = 0;", A, j, j, j),
                 "binary counter over windows");
            line(s, 12, "for (long long w0 = 0; w0 < groups; w0 += 256) {");
            line(s, 16,
                 fmt::format("const {} v = {}_tree{}(part{} + p.chunks + w0, groups - w0 < 256 ? groups - w0 "
                             ": 256, buf);",
                             A, name, j, j));
            line(s, 16, fmt::format("if (tid == 0) {{ {} }}", push(j, "v")));
            line(s, 12, "}");
            line(s, 12, fmt::format("if (tid == 0) {{ {} fin{} = f; }}", fold_into(j, "f"), j));
            line(s, 8, "}");
        }
        std::vector<std::string> a{"p.row", fmt::format("({})o", row.idx)};
        for (std::size_t j = 0; j < nred; ++j) a.push_back(finish(plan.ops[j], fmt::format("fin{}", j)));
        line(s, 8, fmt::format("if (tid == 0) {}_row_at({});", name, fmt::join(a, ", ")),
             "finish and the epilogue");
        line(s, 8, "return;");
        line(s, 4, "}");
        s += "}\n";
        return s;
    }

    // The pairwise tree over n <= 256 partials of reduction j at src (identities pad it to 256, which
    // changes nothing), by the whole block; the value in thread 0. Lane t of warp 0 takes 8 consecutive
    // partials, then shuffles at distances 1, 2, ..., 16.
    std::string tree_fn(std::size_t j) const {
        const ReduceOpPlan& r = plan.ops[j];
        const std::string A = acc_type(r);
        std::string s = fmt::format(
            "// Reduction {}: the pairwise tree over n <= 256 partials at src (identities pad it to 256), by "
            "the\n"
            "// block; the value in thread 0.\n"
            "__device__ __forceinline__ {} {}_tree{}(const {}* src, const long long n, unsigned char* buf) "
            "{{\n",
            j, A, name, j, A);
        line(s, 4, "const int tid = threadIdx.x;");
        line(s, 4, fmt::format("{}* t = reinterpret_cast<{}*>(buf);", A, A));
        line(s, 4, fmt::format("t[tid] = tid < n ? lm::ldcg(src + tid) : {};", identity(r)));
        line(s, 4, "__syncthreads();");
        line(s, 4, fmt::format("{} v = {};", A, identity(r)));
        line(s, 4, "if (tid < 32) {");
        line(s, 8, fmt::format("{} b[8];", A));
        line(s, 8, "#pragma unroll");
        line(s, 8, "for (int k = 0; k < 8; ++k) b[k] = t[tid * 8 + k];");
        line(s, 8,
             fmt::format("#pragma unroll\n        for (int k = 0; k < 8; k += 2) b[k] = {};",
                         combine(r, "b[k]", "b[k + 1]")));
        line(s, 8,
             fmt::format("#pragma unroll\n        for (int k = 0; k < 8; k += 4) b[k] = {};",
                         combine(r, "b[k]", "b[k + 2]")));
        line(s, 8, fmt::format("v = {};", combine(r, "b[0]", "b[4]")));
        for (int sft = 1; sft <= 16; sft *= 2)
            line(s, 8, fmt::format("v = {};", combine(r, "v", fmt::format("lm::shfl_down(v, {})", sft))));
        line(s, 4, "}");
        line(s, 4, "__syncthreads();", "buf is read before anyone writes it again");
        line(s, 4, "return v;");
        s += "}\n";
        return s;
    }
};

}  // namespace

KernelSource emit_reduce(std::string_view user_name, const PlannedReduce& pr) {
    const ReducePlan& plan = pr.plan;
    KernelSource rs;
    rs.user_name = std::string(user_name);
    rs.name = kernel_name(user_name);
    ReduceEmitter em{plan,
                     rs.name,
                     {},
                     {},
                     !pr.row_roots.empty(),
                     plan.ops.size(),
                     plan.schedule == ReduceSchedule::Inner};
    em.el = detail::pointwise_part(rs.name + "_el", pr.element_roots, plan.element);
    if (em.has_row) em.row = detail::pointwise_part(rs.name + "_row", pr.row_roots, plan.row);
    if (plan.split && !em.has_row) throw InternalError("emit_reduce: a split plan needs row outputs");

    rs.scalar_entry = rs.name + "_s";
    if (plan.vector_variant) rs.vector_entry = rs.name + "_v";
    rs.param_bytes = reduce_params_size(plan);

    std::string& s = rs.kernel;
    s += detail::banner("reduction", rs.name, user_name, plan.to_string());
    s += fmt::format("// entry points: {}{}{}\n\n",
                     rs.vector_entry.empty() ? "" : rs.vector_entry + " (4-element runs), ",
                     rs.scalar_entry + " (general)", "");
    s += em.el.params_struct + "\n";
    if (em.has_row) s += em.row.params_struct + "\n";
    s += em.params_struct() + "\n";
    s += em.el.body + "\n";
    s += em.load_fn() + "\n";
    if (!rs.vector_entry.empty()) s += em.load4_fn() + "\n";
    if (plan.cached_blocks > 0 && !em.sites_of(true).empty()) {
        s += em.load_fn(true) + "\n";
        if (!rs.vector_entry.empty()) s += em.load4_fn(true) + "\n";
    }
    if (em.has_row) {
        s += em.row.body + "\n";
        s += em.row_fn() + "\n";
    }
    if (plan.split && em.inner) {
        for (std::size_t j = 0; j < em.nred; ++j) s += em.tree_fn(j) + "\n";
        s += em.split_finish_fn() + "\n";
    }
    if (em.inner) {
        if (!rs.vector_entry.empty()) s += em.inner_kernel(true) + "\n";
        s += em.inner_kernel(false);
    } else {
        if (!rs.vector_entry.empty()) s += em.outer_kernel(true) + "\n";
        s += em.outer_kernel(false);
    }

    rs.source = fmt::format("{}\n{}", prelude_source(), rs.kernel);
    return rs;
}

}  // namespace loom::codegen

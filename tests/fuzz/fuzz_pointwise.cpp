// loom_fuzz: a differential fuzzer of Loom's partitioner and kernels. Random graphs run on the GPU and on
// the CPU reference and are compared with the contract's tolerances (docs/semantics.md,
// testing::check_against_reference); every graph also runs unfused (loom::Options::fusion off: every op its
// own kernel, every value materialized in its dtype), whose results must equal the fused ones bit for bit
// (any NaN equals any NaN): results never depend on fusion. Half of the seeds (--reduce-share) make
// pointwise graphs: every op of the elementwise table, every dtype, ranks 1-4 with size-1 dimensions,
// broadcasts, permuted, sliced and reshaped views, strided and misaligned inputs, scalars and constants
// including NaN, Inf and -0, several outputs. The others make graphs with reductions over every dtype: sum,
// prod, min, max, mean, argmin, argmax, any and all over random axis sets with and without keepdims, with
// elementwise prologues and epilogues, several reductions of one operand, softmax, layernorm, rmsnorm and
// random variants that broadcast reduced values back, comparisons against reductions broadcast back
// (`x == max(x, axes, true)`) with counts, `where` and casts over them, casts between any two dtypes, arrays
// evaluated together with their reductions, reductions of reductions, on ranks 1-4 with extents from 0 to
// 8193 and transposed, sliced and strided inputs. A failing graph is shrunk (nodes replaced by their
// operands, smaller shapes, simpler layouts and axis sets) and printed with ir::print.
//
// Modes:
//   (default)       on the GPU: fused against the reference, unfused against fused bit for bit (float16 and
//                   bfloat16 products on CUDA cores, which give the reference's bits); graphs with a float16
//                   or bfloat16 product again on tensor cores (their default), unfused against fused bit for
//                   bit; graphs with float16 or bfloat16 attention likewise (on CUDA cores, the reference's
//                   bits, against the reference; on tensor cores, unfused against fused bit for bit);
//   --compile-only  each graph's kernels generated and compiled with NVRTC (the GPU path's planner and
//                   emitters), plus the partition checks of --reference; the default without a GPU;
//   --reference     no NVRTC, no GPU: each graph's fused, strict and unfused partitions are followed kernel
//   by
//                   kernel on the CPU reference (reference::evaluate_partition) and compared bit for bit with
//                   the whole graph evaluated at once. This checks the partitions (what is materialized, at
//                   which dtype and shape, which kernel writes what), not the CUDA emitters, and is fast
//                   enough for tens of thousands of graphs per CI run.
//   --llvm          no GPU: each graph runs on host tensors through the LLVM back end (the host plans and the
//                   LLVM emitters, JIT-compiled), fused into poisoned (sometimes misaligned) outputs and
//                   compared bit for bit with the CPU reference (the back end calls the reference's own
//                   functions for exp, log, ..., so every result has the reference's bits), then unfused and
//                   compared bit for bit with the fused results. It checks the host plans and the LLVM
//                   emitters, not the CUDA emitters. The kernels of --batch graphs (default 16) are built
//                   together before they run (testing::build_host_kernels: one LLVM module for the fused and
//                   unfused plans of all of them, the same IR, pipeline and JIT), which each graph's
//                   evaluations then find in the in-memory cache; `--batch 1` compiles each graph's alone.
//
//   loom_fuzz [--seed S] [--count N] [--seconds T] [--compile-only | --reference | --llvm] [--max-numel N]
//             [--reduce-share F] [--attention-share F] [--batch N] [--no-shrink] [--verbose]
//
// Graph k of a run uses seed S + k, so `--seed S+k --count 1` replays it (with the same mode, --reduce-share
// and --max-numel). Exit status 0 when every graph passed, 1 on any failure, 2 on bad arguments. The last
// lines are the rate in graphs per minute and "fuzz: N graphs, M failures".
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_program.hpp"
#include "loom/codegen/cuda/fusion_plan.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/executor.hpp"
#include "loom/runtime/host_backend.hpp"
#include "loom/runtime/kernel_cache.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/reference.hpp"
#include "loom/runtime/reference_plan.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/testing.hpp"

using namespace loom;
using namespace loom::fuzz;

namespace {

using Clock = std::chrono::steady_clock;

enum class Mode { Gpu, CompileOnly, Reference, Llvm };

struct FuzzOptions {
    std::uint64_t seed = 1;
    long long count = -1;  // -1: until --seconds, or 100 when neither is given
    double seconds = -1;
    Mode mode = Mode::Gpu;
    bool shrink = true;
    bool verbose = false;
    long long batch = 16;  // --llvm: graphs whose kernels are compiled together
    GenOptions gen;
};

enum class Kind {
    Pass,
    Invalid,
    Mismatch,
    FusionMismatch,
    PartitionMismatch,
    LlvmMismatch,
    CompileFailure,
    Failure,
    Sticky
};
std::string_view kind_name(Kind k) {
    switch (k) {
        case Kind::Pass:
            return "pass";
        case Kind::Invalid:
            return "invalid";
        case Kind::Mismatch:
            return "GPU result differs from the reference";
        case Kind::FusionMismatch:
            return "the unfused result differs from the fused one";
        case Kind::PartitionMismatch:
            return "a partition followed kernel by kernel differs from the whole graph";
        case Kind::LlvmMismatch:
            return "the LLVM back end's result differs from the reference";
        case Kind::CompileFailure:
            return "NVRTC or LLVM rejected the generated kernel";
        case Kind::Failure:
            return "evaluation threw";
        case Kind::Sticky:
            return "sticky CUDA error";
    }
    return "?";
}

struct Outcome {
    Kind kind = Kind::Pass;
    std::string message;
};

template <class F>
Outcome guarded(F&& body) {
    try {
        return body();
    } catch (const CompileError& e) {
        return {Kind::CompileFailure, e.what()};
    } catch (const CudaError& e) {
        return {runtime_poisoned() ? Kind::Sticky : Kind::Failure, e.what()};
    } catch (const InternalError& e) {
        return {Kind::Failure, fmt::format("InternalError: {}", e.what())};
    } catch (const std::exception& e) {
        return {Kind::Failure, e.what()};
    }
}

/// Whether the graph has a matrix product of float16 or bfloat16 operands (which has a tensor-core path).
// Whether a graph slices one input twice or more (a stencil, or what looks like one).
bool has_shifted_slices(const std::vector<ir::NodePtr>& roots) {
    std::map<const ir::Node*, int> slices;
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::Slice && ++slices[n->operand(0)] == 2) return true;
    return false;
}

/// Whether a product of `roots` multiplies operands for which `pick` holds (a half dtype, float32).
template <class Pick>
bool has_product(const std::vector<ir::NodePtr>& roots, Pick pick) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::MatMul && pick(n->operand(0)->dtype())) return true;
    return false;
}

/// Whether `roots` hold an attention of float16 or bfloat16 (which runs on tensor cores by default).
bool has_half_attention(const std::vector<ir::NodePtr>& roots) {
    for (const ir::Node* n : ir::topo_order(roots))
        if (n->op() == ir::Op::Attention && is_half(n->dtype())) return true;
    return false;
}

/// The tensor-core runs of a graph's products, each checked fused against unfused: float16 and bfloat16 on
/// both tensor-core paths (TensorCores: wgmma on Hopper where the copies allow; mma.sync forced), float32 in
/// TF32 and in 3xTF32 (Options::product_precision). float16 and bfloat16 attention takes its tensor-core
/// path (AttentionPath::Mma) on either.
std::vector<Options> tensor_core_runs(const std::vector<ir::NodePtr>& roots) {
    std::vector<Options> runs;
    if (has_product(roots, [](DType d) { return is_half(d); }) || has_half_attention(roots))
        for (ProductPath path : {ProductPath::TensorCores, ProductPath::MmaSync}) {
            Options o = current_options();
            o.product_path = path;
            runs.push_back(o);
        }
    if (has_product(roots, [](DType d) { return d == DType::Float32; }))
        for (ProductPrecision precision : {ProductPrecision::TF32, ProductPrecision::TF32x3}) {
            Options o = current_options();
            if (o.product_path == ProductPath::CudaCores)
                o.product_path = ProductPath::Auto;  // CUDA cores forced conflicts with TF32
            o.product_precision = precision;
            runs.push_back(o);
        }
    return runs;
}

/// Runs a program on the GPU (twice: into poisoned outputs, then into outputs holding random values, so
/// that an unwritten element fails against any expected value, NaN included) and compares with the
/// reference (testing::check_against_reference: the tolerance derived from each root's graph); then runs it
/// unfused (every op its own kernel, every value materialized in its dtype) into poisoned outputs and
/// compares with the fused results bit for bit; a graph with shifted slices runs fused again with shared
/// halo tiles, and one with a float16, bfloat16 or float32 product again on tensor cores (tensor_core_runs),
/// each fused against unfused bit for bit.
Outcome run_gpu(const Program& p) {
    const Device dev = Device::cuda(current_device());
    std::optional<Built> b;
    try {
        b = build(p, dev);
    } catch (const std::exception& e) {
        return {Kind::Failure, fmt::format("building the inputs threw: {}", e.what())};
    }
    if (!b) return {Kind::Invalid, {}};
    // float16 and bfloat16 products and attention run on tensor cores by default (within a bound, not the
    // reference's bits): the runs compared with the reference put them on CUDA cores (where attention gives
    // the reference's bits, docs/semantics.md section 13), and tensor_core_runs() takes them to tensor cores
    // after.
    Options pinned = current_options();
    if (pinned.product_path == ProductPath::Auto &&
        (has_product(b->roots, [](DType d) { return is_half(d); }) || has_half_attention(b->roots)))
        pinned.product_path = ProductPath::CudaCores;
    const OptionsScope pin(pinned);
    return guarded([&]() -> Outcome {
        const bool misaligned = p.data_seed % 8 == 0;
        auto make_outputs = [&] {
            std::vector<Tensor> outs;
            for (const auto& r : b->roots) {
                if (misaligned) {
                    Tensor big = Tensor::empty({r->numel() + 1}, r->dtype(), dev);
                    outs.push_back(big.as_strided(r->shape(), contiguous_strides(r->shape()), 1));
                } else {
                    outs.push_back(Tensor::empty(r->shape(), r->dtype(), dev));
                }
            }
            return outs;
        };
        const std::vector<Tensor> outs = make_outputs();
        for (int run = 0; run < 2; ++run) {
            for (std::size_t k = 0; k < outs.size(); ++k) {
                if (outs[k].numel() == 0) continue;
                Tensor o = outs[k];
                if (run == 0)
                    testing::poison(o);  // contiguous, also when misaligned
                else
                    testing::fill_random(o, 99 + k);
            }
            evaluate_into(b->roots, outs);
            synchronize();
            const testing::Comparison c = testing::check_against_reference(b->roots, outs);
            if (!c.ok)
                return {Kind::Mismatch,
                        fmt::format("{} outputs{}: {}", run == 0 ? "poisoned" : "random-filled",
                                    misaligned ? " (misaligned)" : "", c.message)};
        }
        const std::vector<Tensor> unfused = make_outputs();
        for (Tensor t : unfused)
            if (t.numel() > 0) testing::poison(t);
        {
            Options off = current_options();
            off.fusion = false;
            const OptionsScope scope(off);
            evaluate_into(b->roots, unfused);
        }
        synchronize();
        for (std::size_t k = 0; k < outs.size(); ++k) {
            const testing::Comparison c =
                testing::compare(unfused[k].to_host(), outs[k].to_host(), testing::Tolerance::exact(),
                                 fmt::format("output {} unfused against fused", k));
            if (!c.ok) return {Kind::FusionMismatch, c.message};
        }
        // A graph with shifted slices runs fused again with its stencils' taps from shared halo tiles
        // (Options::stencil_reuse): the same bits as unfused.
        if (has_shifted_slices(b->roots)) {
            Options halo = current_options();
            halo.stencil_reuse = StencilReuse::SharedHalo;
            const std::vector<Tensor> staged = make_outputs();
            for (Tensor t : staged)
                if (t.numel() > 0) testing::poison(t);
            {
                const OptionsScope scope(halo);
                evaluate_into(b->roots, staged);
            }
            synchronize();
            for (std::size_t k = 0; k < outs.size(); ++k) {
                const testing::Comparison c = testing::compare(
                    unfused[k].to_host(), staged[k].to_host(), testing::Tolerance::exact(),
                    fmt::format("output {} with shared halo tiles, unfused against fused", k));
                if (!c.ok) return {Kind::FusionMismatch, c.message};
            }
        }
        // Products on tensor cores too (tensor_core_runs): their bits are not the reference's (the bounds of
        // docs/semantics.md, section 12), but the plan does not depend on what is fused, so fused and unfused
        // still agree bit for bit.
        {
            for (Options tc : tensor_core_runs(b->roots)) {
                std::vector<Tensor> runs[2] = {make_outputs(), make_outputs()};
                for (int fused = 0; fused < 2; ++fused) {
                    for (Tensor t : runs[fused])
                        if (t.numel() > 0) testing::poison(t);
                    tc.fusion = fused == 1;
                    const OptionsScope scope(tc);
                    evaluate_into(b->roots, runs[fused]);
                }
                synchronize();
                for (std::size_t k = 0; k < outs.size(); ++k) {
                    const testing::Comparison c = testing::compare(
                        runs[0][k].to_host(), runs[1][k].to_host(), testing::Tolerance::exact(),
                        fmt::format("output {} on tensor cores ({}, {}), unfused against fused", k,
                                    product_path_name(tc.product_path),
                                    product_precision_name(tc.product_precision)));
                    if (!c.ok) return {Kind::FusionMismatch, c.message};
                }
            }
        }
        return {Kind::Pass, {}};
    });
}

/// The partitions of a graph (fused, strict, unfused), each followed kernel by kernel on the reference and
/// compared bit for bit with the whole graph evaluated at once (host tensors).
Outcome check_partitions(const Built& b) {
    const std::vector<ir::NodePtr> graph = ir::run_pipeline(b.roots, ir::standard_passes());
    const std::vector<Tensor> whole = reference::evaluate(graph);
    struct Case {
        const char* name;
        codegen::PartitionOptions options;
    };
    std::vector<Case> cases(3);
    cases[0].name = "fused";
    cases[1].name = "strict";
    cases[1].options.strict = true;
    cases[1].options.strict_reason = "the fuzzer's strict case";
    cases[2].name = "unfused";
    cases[2].options.fusion = false;
    for (const Case& c : cases) {
        const codegen::Partition part = codegen::partition(graph, c.options);
        const std::vector<Tensor> got = reference::evaluate_partition(part, graph);
        for (std::size_t k = 0; k < got.size(); ++k) {
            const testing::Comparison cmp =
                testing::compare(got[k], whole[k], testing::Tolerance::exact(),
                                 fmt::format("{} partition, output {}", c.name, k));
            if (!cmp.ok)
                return {Kind::PartitionMismatch,
                        fmt::format("{}\npartition:\n{}", cmp.message, part.to_string())};
        }
    }
    return {Kind::Pass, {}};
}

/// Builds `p` on host tensors into `b`. Returns the outcome when there is nothing to run: building threw
/// (a failure) or the program is not valid.
std::optional<Outcome> build_on_host(const Program& p, std::optional<Built>& b) {
    try {
        b = build(p, Device::cpu());
    } catch (const std::exception& e) {
        return Outcome{Kind::Failure, fmt::format("building the inputs threw: {}", e.what())};
    }
    if (!b) return Outcome{Kind::Invalid, {}};
    return std::nullopt;
}

/// The partition checks alone (no NVRTC, no GPU).
Outcome run_reference(const Program& p) {
    std::optional<Built> b;
    if (auto failed = build_on_host(p, b)) return *failed;
    return guarded([&]() -> Outcome { return check_partitions(*b); });
}

/// Generates and compiles the program's kernels with NVRTC (no launch; one graph in eight also unfused),
/// then runs the partition checks.
Outcome run_compile_only(const Program& p) {
    std::optional<Built> b;
    if (auto failed = build_on_host(p, b)) return *failed;
    return guarded([&]() -> Outcome {
        const CompileReport rep = compile(b->roots, "fuzz");
        if (rep.kernels < 1 || rep.image_bytes == 0)
            return {Kind::Failure,
                    fmt::format("compile() reported {} kernels, {} bytes", rep.kernels, rep.image_bytes)};
        if (p.data_seed % 8 == 1) {  // one graph in eight: the unfused kernels compile too
            Options off = current_options();
            off.fusion = false;
            const OptionsScope scope(off);
            const CompileReport un = compile(b->roots, "fuzz_unfused");
            if (un.kernels < rep.kernels)
                return {Kind::Failure, fmt::format("unfused: {} kernels, fewer than the {} fused ones",
                                                   un.kernels, rep.kernels)};
        }
        return check_partitions(*b);
    });
}

/// Where the time of --llvm goes (seconds, summed over the graphs; printed at the end of the run).
struct LlvmPhases {
    double generate = 0, inputs = 0, batch = 0, reference = 0, fused = 0, unfused = 0, compare = 0;
    double batch_compile_ms = 0, fused_compile_ms = 0, unfused_compile_ms = 0;
    long long batches = 0, rejected_batches = 0;
};
LlvmPhases g_llvm_phases;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The LLVM back end on host tensors: fused into poisoned outputs (misaligned for one graph in eight) against
/// the reference bit for bit, then unfused (every op its own kernel) against the fused results bit for bit.
Outcome check_llvm(const Program& p, const std::optional<Built>& b) {
    LlvmPhases& ph = g_llvm_phases;
    auto t = Clock::now();
    return guarded([&]() -> Outcome {
        const bool misaligned = p.data_seed % 8 == 0;
        auto make_outputs = [&] {
            std::vector<Tensor> outs;
            for (const auto& r : b->roots) {
                Tensor o = misaligned ? Tensor::host({r->numel() + 1}, r->dtype())
                                            .as_strided(r->shape(), contiguous_strides(r->shape()), 1)
                                      : Tensor::host(r->shape(), r->dtype());
                if (o.numel() > 0) testing::poison(o);
                outs.push_back(o);
            }
            return outs;
        };
        t = Clock::now();
        const std::vector<Tensor> expected = reference::evaluate(b->roots);
        ph.reference += seconds_since(t);
        const std::vector<Tensor> fused = make_outputs();
        t = Clock::now();
        double compiled_ms = host_kernel_cache_stats().compile_ms;
        evaluate_into(b->roots, fused);
        ph.fused += seconds_since(t);
        ph.fused_compile_ms += host_kernel_cache_stats().compile_ms - compiled_ms;
        t = Clock::now();
        for (std::size_t k = 0; k < fused.size(); ++k) {
            const testing::Comparison c = testing::compare(
                fused[k], expected[k], testing::Tolerance::exact(),
                fmt::format("output {} (LLVM, fused{})", k, misaligned ? ", misaligned" : ""));
            if (!c.ok) return {Kind::LlvmMismatch, c.message};
        }
        ph.compare += seconds_since(t);
        const std::vector<Tensor> unfused = make_outputs();
        {
            Options off = current_options();
            off.fusion = false;
            const OptionsScope scope(off);
            t = Clock::now();
            compiled_ms = host_kernel_cache_stats().compile_ms;
            evaluate_into(b->roots, unfused);
            ph.unfused += seconds_since(t);
            ph.unfused_compile_ms += host_kernel_cache_stats().compile_ms - compiled_ms;
        }
        t = Clock::now();
        for (std::size_t k = 0; k < fused.size(); ++k) {
            const testing::Comparison c =
                testing::compare(unfused[k], fused[k], testing::Tolerance::exact(),
                                 fmt::format("output {} unfused against fused (LLVM)", k));
            if (!c.ok) return {Kind::FusionMismatch, c.message};
        }
        ph.compare += seconds_since(t);
        return {Kind::Pass, {}};
    });
}

/// --llvm for one program: its inputs, then check_llvm.
Outcome run_llvm(const Program& p) {
    std::optional<Built> b;
    const auto t = Clock::now();
    if (auto failed = build_on_host(p, b)) return *failed;
    g_llvm_phases.inputs += seconds_since(t);
    return check_llvm(p, b);
}

/// A program of a batch of --llvm, ready to be checked.
struct Prepared {
    std::optional<Program> program;  // none: generation threw (`error`)
    std::string error;
    std::optional<Built> built;  // none: `outcome` says why
    std::optional<Outcome> outcome;
};

/// --llvm a batch at a time (--batch): the programs of seeds [seed, seed + n) generated and built on host
/// tensors, then the kernels of their fused and unfused evaluations built together
/// (testing::build_host_kernels: one LLVM compilation for the batch instead of up to two per graph, whose
/// fixed costs were a tenth of the fuzzer's time), so that each graph's check_llvm finds its kernels in the
/// in-memory cache. When LLVM rejects the batch's module, nothing of it is cached: each graph then compiles
/// its own kernels in its own evaluations, and the failing one is reported with its seed.
std::deque<Prepared> prepare_llvm_batch(std::uint64_t seed, long long n, const GenOptions& gen) {
    LlvmPhases& ph = g_llvm_phases;
    std::deque<Prepared> out(static_cast<std::size_t>(n));
    std::vector<std::vector<ir::NodePtr>> graphs;
    std::vector<Options> options;
    Options off = current_options();
    off.fusion = false;
    for (long long i = 0; i < n; ++i) {
        Prepared& q = out[static_cast<std::size_t>(i)];
        auto t = Clock::now();
        try {
            q.program = generate(seed + static_cast<std::uint64_t>(i), gen);
        } catch (const std::exception& e) {
            q.error = e.what();
            continue;
        }
        ph.generate += seconds_since(t);
        t = Clock::now();
        q.outcome = build_on_host(*q.program, q.built);
        ph.inputs += seconds_since(t);
        if (q.outcome) continue;
        graphs.push_back(q.built->roots);
        options.push_back(current_options());
        graphs.push_back(q.built->roots);
        options.push_back(off);
    }
    const auto t = Clock::now();
    const double compiled_ms = host_kernel_cache_stats().compile_ms;
    ++ph.batches;
    try {
        testing::build_host_kernels(graphs, options);
    } catch (const std::exception&) {
        ++ph.rejected_batches;
    }
    ph.batch += seconds_since(t);
    ph.batch_compile_ms += host_kernel_cache_stats().compile_ms - compiled_ms;
    return out;
}

/// Candidate simplifications of `p`, most aggressive first.
std::vector<Program> candidates(const Program& p) {
    std::vector<Program> out;
    if (p.outputs.size() > 1)
        for (std::size_t k = 0; k < p.outputs.size(); ++k) {
            Program q = p;
            q.outputs.erase(q.outputs.begin() + static_cast<std::ptrdiff_t>(k));
            out.push_back(collect(q));
        }
    // Replace a node by one of its operands everywhere.
    for (std::size_t i = p.code.size(); i-- > 0;) {
        for (int a : p.code[i].args) {
            Program q = p;
            for (std::size_t j = i + 1; j < q.code.size(); ++j)
                for (int& x : q.code[j].args)
                    if (x == static_cast<int>(i)) x = a;
            for (int& o : q.outputs)
                if (o == static_cast<int>(i)) o = a;
            out.push_back(collect(q));
        }
    }
    // Smaller shapes: drop a dimension, set it to 1, halve it.
    for (std::size_t d = 0; d < p.base.size(); ++d) {
        if (p.base.size() > 1) {
            Program q = p;
            q.base.erase(q.base.begin() + static_cast<std::ptrdiff_t>(d));
            for (Instr& ins : q.code) {
                const std::uint32_t low = ins.ones & ((1u << d) - 1u), high = ins.ones >> (d + 1);
                ins.ones = low | (high << d);
                ins.drop = std::min<int>(ins.drop, static_cast<int>(q.base.size()));
            }
            out.push_back(q);
        }
        if (p.base[d] > 1) {
            Program q = p;
            q.base[d] = 1;
            out.push_back(q);
            q.base[d] = (p.base[d] + 1) / 2;
            if (q.base[d] > 1) out.push_back(q);
        }
    }
    // Simpler inputs and values.
    for (std::size_t i = 0; i < p.code.size(); ++i) {
        const Instr& ins = p.code[i];
        auto with = [&](auto&& change) {
            Program q = p;
            change(q.code[i]);
            out.push_back(q);
        };
        if (ins.kind == Instr::Kind::Input) {
            if (ins.layout != Layout::Contiguous) with([](Instr& x) { x.layout = Layout::Contiguous; });
            if (ins.pre != PreView::None) with([](Instr& x) { x.pre = PreView::None; });
            if (ins.ones != 0) with([](Instr& x) { x.ones = 0; });
            if (ins.drop != 0) with([](Instr& x) { x.drop = 0; });
        }
        if ((ins.kind == Instr::Kind::Scalar || ins.kind == Instr::Kind::Constant) &&
            !(ins.value.as_double() == 1.0))
            with([](Instr& x) {
                x.value = is_float(x.dtype) ? ir::ScalarValue::of_float(1.0) : ir::ScalarValue::of_int(1);
            });
        if (ins.kind == Instr::Kind::View && ins.step != 1) with([](Instr& x) { x.step = 1; });
        if (ins.kind == Instr::Kind::Scan) {
            if (ins.keepdims) with([](Instr& x) { x.keepdims = false; });  // inclusive
            if (ins.op != ir::Op::CumSum) with([](Instr& x) { x.op = ir::Op::CumSum; });
        }
        if (ins.kind == Instr::Kind::Scatter && ins.op != ir::Op::Scatter)
            with([](Instr& x) { x.op = ir::Op::Scatter; });  // no sum
        if (ins.kind == Instr::Kind::Reduce) {
            if (ins.axes == 0) with([](Instr& x) { x.axes = 1; });
            if ((ins.axes & (ins.axes - 1)) != 0)  // several axes: each one alone
                for (int d = 0; d < 32; ++d)
                    if (ins.axes >> d & 1u) with([d](Instr& x) { x.axes = 1u << d; });
            if (ins.negative) with([](Instr& x) { x.negative = false; });
            if (ins.keepdims) with([](Instr& x) { x.keepdims = false; });
        }
        if (ins.kind == Instr::Kind::Attention) {
            if (ins.args.size() == 4) {  // no bias
                Program q = p;
                q.code[i].args.pop_back();
                out.push_back(collect(q));
            }
            if (ins.causal != ir::CausalMask::None) with([](Instr& x) { x.causal = ir::CausalMask::None; });
            if (ins.scale != 1.0) with([](Instr& x) { x.scale = 1.0; });
        }
    }
    return out;
}

struct Shrunk {
    Program program;
    Outcome outcome;
    int steps = 0;
};

/// Greedy shrinking: take the first candidate that still fails the same way, until none does or the
/// budget (attempts and seconds) runs out.
Shrunk shrink(const Program& p, const Outcome& first, const std::function<Outcome(const Program&)>& run) {
    Shrunk s{p, first, 0};
    const auto t0 = Clock::now();
    int attempts = 0;
    bool progress = true;
    while (progress && attempts < 600 && std::chrono::duration<double>(Clock::now() - t0).count() < 60.0) {
        progress = false;
        for (const Program& c : candidates(s.program)) {
            if (++attempts > 600) break;
            const Outcome o = run(c);
            if (o.kind == Kind::Sticky) return s;  // the context is gone: keep what we have
            if (o.kind == first.kind) {
                s.program = c;
                s.outcome = o;
                ++s.steps;
                progress = true;
                break;
            }
        }
    }
    return s;
}

/// Prints a failure; shrinks it first when `shrink_it` (the first few failures of a run: a systematic bug
/// would otherwise spend the whole run shrinking).
void print_failure(std::uint64_t seed, const Program& p, const Outcome& o, const FuzzOptions& opt, Device dev,
                   const std::function<Outcome(const Program&)>& run, bool shrink_it) {
    std::printf("FAIL graph seed %llu (replay: loom_fuzz --seed %llu --count 1%s): %s\n%s\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
                opt.mode == Mode::CompileOnly ? " --compile-only"
                : opt.mode == Mode::Reference ? " --reference"
                : opt.mode == Mode::Llvm      ? " --llvm"
                                              : "",
                std::string(kind_name(o.kind)).c_str(), o.message.c_str());
    Shrunk s{p, o, 0};
    if (shrink_it && o.kind != Kind::Sticky) s = shrink(p, o, run);
    if (s.steps > 0) {  // the graph as generated, then the shrunk one
        try {
            if (auto b = build(p, dev)) std::printf("graph as generated:\n%s\n", ir::print(b->roots).c_str());
        } catch (const std::exception& e) {
            std::printf("(could not rebuild the graph: %s)\n", e.what());
        }
    }
    std::printf("shrunk in %d steps from %zu to %zu instructions:\n%s", s.steps, p.code.size(),
                s.program.code.size(), describe(s.program).c_str());
    try {
        if (auto b = build(s.program, dev)) {
            for (const auto& line : b->input_lines) std::printf("  %s\n", line.c_str());
            std::printf("%s\n", ir::print(b->roots).c_str());
        }
    } catch (const std::exception& e) {
        std::printf("(could not rebuild the shrunk graph: %s)\n", e.what());
    }
    std::printf("shrunk failure: %s: %s\n\n", std::string(kind_name(s.outcome.kind)).c_str(),
                s.outcome.message.c_str());
    std::fflush(stdout);
}

bool parse(int argc, char** argv, FuzzOptions& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&](const char* what) -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "loom_fuzz: %s needs a value\n", what);
                return nullptr;
            }
            return argv[++i];
        };
        if (a == "--seed") {
            const char* v = value("--seed");
            if (!v) return false;
            o.seed = std::strtoull(v, nullptr, 10);
        } else if (a == "--count") {
            const char* v = value("--count");
            if (!v) return false;
            o.count = std::atoll(v);
        } else if (a == "--seconds") {
            const char* v = value("--seconds");
            if (!v) return false;
            o.seconds = std::atof(v);
        } else if (a == "--max-numel") {
            const char* v = value("--max-numel");
            if (!v) return false;
            o.gen.max_numel = std::max(1LL, std::atoll(v));
        } else if (a == "--reduce-share") {
            const char* v = value("--reduce-share");
            if (!v) return false;
            o.gen.reduce_share = std::clamp(std::atof(v), 0.0, 1.0);
        } else if (a == "--attention-share") {
            const char* v = value("--attention-share");
            if (!v) return false;
            o.gen.attention_share = std::clamp(std::atof(v), 0.0, 1.0);
        } else if (a == "--compile-only") {
            o.mode = Mode::CompileOnly;
        } else if (a == "--reference") {
            o.mode = Mode::Reference;
        } else if (a == "--llvm") {
            o.mode = Mode::Llvm;
        } else if (a == "--batch") {
            const char* v = value("--batch");
            if (!v) return false;
            o.batch = std::max(1LL, std::atoll(v));
        } else if (a == "--no-shrink") {
            o.shrink = false;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else {
            std::fprintf(stderr,
                         "usage: loom_fuzz [--seed S] [--count N] [--seconds T] [--compile-only | "
                         "--reference | --llvm] [--max-numel N] "
                         "[--reduce-share F] [--attention-share F] [--batch N] [--no-shrink] [--verbose]\n");
            return false;
        }
    }
    if (o.count < 0 && o.seconds < 0) o.count = 100;
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    FuzzOptions opt;
    if (!parse(argc, argv, opt)) return 2;
    if (opt.mode == Mode::Gpu && !cuda_available()) {
        std::printf(
            "loom_fuzz: no CUDA device: compile-only mode (graphs are generated, compiled with NVRTC and "
            "their "
            "partitions checked on the reference, not launched)\n");
        opt.mode = Mode::CompileOnly;
    }
    if (opt.mode == Mode::Llvm && !host_backend_info().llvm) {
        std::printf("loom_fuzz: --llvm: the LLVM back end is not available: %s\n",
                    host_backend_info().reason.c_str());
        return 2;
    }
    const Device dev = opt.mode == Mode::Gpu ? Device::cuda(current_device()) : Device::cpu();
    const std::function<Outcome(const Program&)> run = opt.mode == Mode::Gpu           ? run_gpu
                                                       : opt.mode == Mode::CompileOnly ? run_compile_only
                                                       : opt.mode == Mode::Llvm        ? run_llvm
                                                                                       : run_reference;
    const char* what = opt.mode == Mode::Gpu ? "GPU against the CPU reference, unfused against fused"
                       : opt.mode == Mode::CompileOnly ? "compile-only, partitions on the reference"
                       : opt.mode == Mode::Llvm
                           ? "the LLVM back end against the reference, unfused against fused"
                           : "partitions on the reference";
    std::printf("loom_fuzz: seed %llu, %s, %s\n", static_cast<unsigned long long>(opt.seed), what,
                opt.count >= 0 ? fmt::format("{} graphs", opt.count).c_str()
                               : fmt::format("{} s", opt.seconds).c_str());
    std::fflush(stdout);

    const auto t0 = Clock::now();
    long long graphs = 0, failures = 0, invalid = 0, reduction_graphs = 0, product_graphs = 0,
              attention_graphs = 0, scan_graphs = 0, scatter_graphs = 0;
    const bool batched = opt.mode == Mode::Llvm && opt.batch > 1;
    std::deque<Prepared> ready;  // --llvm: the rest of the current batch, from seed opt.seed + k on
    for (std::uint64_t k = 0;; ++k) {
        if (opt.count >= 0 && graphs >= opt.count) break;
        if (opt.seconds >= 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= opt.seconds)
            break;
        const std::uint64_t seed = opt.seed + k;
        if (batched && ready.empty())
            ready = prepare_llvm_batch(
                seed, opt.count >= 0 ? std::min(opt.batch, opt.count - graphs) : opt.batch, opt.gen);
        const auto g0 = Clock::now();
        Program p;
        Outcome o;
        std::string generation_error;
        if (batched) {
            Prepared q = std::move(ready.front());
            ready.pop_front();
            if (q.program) {
                p = std::move(*q.program);
                o = q.outcome ? *q.outcome : check_llvm(p, q.built);
            } else {
                generation_error = q.error;
            }
        } else {
            try {
                p = generate(seed, opt.gen);
                g_llvm_phases.generate += seconds_since(g0);
            } catch (const std::exception& e) {
                generation_error = e.what();
            }
            if (generation_error.empty()) o = run(p);
        }
        if (!generation_error.empty()) {  // a generator bug: reported with its seed, counted as invalid
            std::printf("loom_fuzz: seed %llu: generation failed: %s\n",
                        static_cast<unsigned long long>(seed), generation_error.c_str());
            ++invalid;
            continue;
        }
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - g0).count();
        if (o.kind == Kind::Invalid) {  // generation only returns valid programs; count it, do not retry
            ++invalid;
            continue;
        }
        ++graphs;
        const bool attention = std::any_of(p.code.begin(), p.code.end(),
                                           [](const Instr& x) { return x.kind == Instr::Kind::Attention; });
        attention_graphs += attention;
        scan_graphs += std::any_of(p.code.begin(), p.code.end(),
                                   [](const Instr& x) { return x.kind == Instr::Kind::Scan; });
        scatter_graphs += std::any_of(p.code.begin(), p.code.end(),
                                      [](const Instr& x) { return x.kind == Instr::Kind::Scatter; });
        product_graphs += p.products && !attention;
        reduction_graphs += p.reductions && !p.products;
        if (opt.verbose) {
            std::printf("graph seed %llu: %s, %zu instructions, %s (%.0f ms)\n",
                        static_cast<unsigned long long>(seed),
                        attention      ? "attention"
                        : p.products   ? "products"
                        : p.reductions ? "reductions"
                                       : "pointwise",
                        p.code.size(), std::string(kind_name(o.kind)).c_str(), ms);
            if (auto b = build(p, Device::cpu())) std::printf("%s\n", ir::print(b->roots).c_str());
        }
        if (o.kind != Kind::Pass) {
            ++failures;
            print_failure(seed, p, o, opt, dev, run, opt.shrink && failures <= 3);
            if (o.kind == Kind::Sticky || runtime_poisoned()) {
                std::printf("loom_fuzz: the CUDA context is unusable after a sticky error; stopping\n");
                break;
            }
        }
        if (opt.mode == Mode::Gpu && graphs % 500 == 0) clear_kernel_cache();  // bound the loaded modules
    }
    if (invalid > 0)
        std::printf("loom_fuzz: %lld generated programs did not build (generator bug)\n", invalid);
    std::printf(
        "loom_fuzz: %lld pointwise graphs, %lld graphs with reductions, %lld graphs with products, %lld "
        "graphs with attention, %lld pointwise graphs with a scan, %lld with a scatter\n",
        graphs - reduction_graphs - product_graphs - attention_graphs, reduction_graphs, product_graphs,
        attention_graphs, scan_graphs, scatter_graphs);
    if (opt.mode == Mode::Llvm) {
        const HostKernelCacheStats hs = host_kernel_cache_stats();
        std::printf(
            "loom_fuzz: host kernels: %llu compiled by LLVM in %.0f ms, %llu sharing the code of one built "
            "before, "
            "%llu from the disk cache, %llu in-memory hits\n",
            static_cast<unsigned long long>(hs.compiles), hs.compile_ms,
            static_cast<unsigned long long>(hs.shared), static_cast<unsigned long long>(hs.disk_hits),
            static_cast<unsigned long long>(hs.hits));
        const LlvmPhases& ph = g_llvm_phases;
        if (ph.batches > 0)
            std::printf(
                "loom_fuzz: %lld batches of up to %lld graphs had their kernels built together, %lld of them "
                "rejected by LLVM "
                "(their graphs compiled alone)\n",
                ph.batches, opt.batch, ph.rejected_batches);
        std::printf(
            "loom_fuzz: time: generation %.1f s, inputs %.1f s, batches' kernels %.1f s (LLVM compile %.1f "
            "s), reference %.1f s, "
            "fused %.1f s (LLVM compile %.1f s), unfused %.1f s (LLVM compile %.1f s), comparisons %.1f s\n",
            ph.generate, ph.inputs, ph.batch, ph.batch_compile_ms / 1000, ph.reference, ph.fused,
            ph.fused_compile_ms / 1000, ph.unfused, ph.unfused_compile_ms / 1000, ph.compare);
    }
    const double minutes = std::chrono::duration<double>(Clock::now() - t0).count() / 60.0;
    std::printf("loom_fuzz: %.0f graphs per minute\n",
                minutes > 0 ? static_cast<double>(graphs) / minutes : 0.0);
    std::printf("fuzz: %lld graphs, %lld failures\n", graphs, failures);
    return failures == 0 && invalid == 0 ? 0 : 1;
}

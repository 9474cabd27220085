// The CUDA emitter of Hopper matmul kernels (matmul_plan.hpp, "Hopper"): the warpgroup MMA of the plan's tile
// width, the persistent grid's tile order, the producer warpgroup's bulk tensor copies into the stage ring,
// the consumer warpgroups' MMAs, and the epilogue on the accumulators, from registers or through shared
// memory.
#include <fmt/format.h>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/matmul_plan.hpp"

namespace loom::codegen::detail {

namespace {

void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    write_line(s, indent, code, comment, 72);
}

// The shared-memory layout of one operand's stage tile and its matrix descriptors (PTX ISA, "Shared Memory
// Matrix Layout", 128-byte swizzling): a K-major tile is rows of 64 k (128 bytes) along m or n, 16 k further
// is 32 bytes on within the swizzle's row, 8 rows are 1024 bytes apart; an MN-major tile is copies of 64 k
// rows of 64 m or n (8 KiB each, one per 64 of m or n), 16 k further is 16 rows (2048 bytes) on, 8 k rows are
// 1024 bytes apart and the copies 8 KiB apart.
struct OperandTile {
    bool mn_major = false;
    int k_step_bytes() const { return mn_major ? 2048 : 32; }
    int leading_bytes() const {
        return mn_major ? 8192 : 16;
    }  // K-major: unused by the swizzled layout (1 by the ISA)
    static constexpr int stride_bytes = 1024;
};

const char* operand_type(DType in) {
    return in == DType::BFloat16 ? "bf16" : "f16";
}

// The epilogue through shared memory (MatmulPlan::staged_epilogue, ping-pong plans): per 64 rows of the
// consumer's tile, its threads store the accumulators rounded to the product's dtype (pairs of columns as 32
// bits) into the consumer's buffer, then walk it in row-major order, consecutive threads on consecutive
// columns, and run the epilogue on each value. The buffer's rows are tile_n values whose 16-byte pieces are
// swizzled by the row (piece ^ row % 8): a warp's stores (8 rows, 4 pairs each) and its reads (32 values of
// one row) each meet in no bank. The rounding is the product's own and the bits pass unchanged: the same
// values as the epilogue from registers. Named barrier 3 + c (the consumer's 128 threads) orders the buffer's
// uses.
void staged_epilogue(std::string& s, const MatmulPlan& p, const std::string& name,
                     const std::string& ep_idx) {
    const int tn = p.tile_n, per_thread = 64 * tn / 128;
    const char* to_bits = p.out == DType::BFloat16 ? "lm::float_to_bf16" : "lm::float_to_f16";
    const char* from_bits = p.out == DType::BFloat16 ? "lm::bf16_to_float" : "lm::f16_to_float";
    line(s, 12,
         "// The epilogue on the accumulators, through shared memory: the product's value in its dtype, then "
         "the fused");
    line(s, 12, "// elementwise work, consecutive threads on consecutive columns.");
    line(s, 12,
         fmt::format("unsigned char* const ct = {}_smem + (epilogue0 - lm::smem_addr({}_smem)) + c * {};",
                     name, name, 64 * tn * 2),
         fmt::format("this consumer's buffer: 64 rows of {} values", tn));
    line(s, 12, "const int tid = threadIdx.x % 128;");
    line(s, 12, "#pragma unroll");
    line(s, 12, fmt::format("for (int r = 0; r < {}; ++r) {{", p.consumer_mmas()),
         "64 rows at a time (unrolled: d[r] stays in registers)");
    line(s, 16, "lm::named_barrier_sync(3 + c, 128);", "the buffer's last reads are done");
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int j = 0; j < {}; ++j)", tn / 8));
    line(s, 20, "#pragma unroll");
    line(s, 20, "for (int h = 0; h < 2; ++h) {");
    line(s, 24, "const int row = 16 * warp + lane / 4 + 8 * h;", "row % 8 is lane / 4");
    line(s, 24,
         fmt::format("const unsigned pair = (unsigned){}(d[r][4 * j + 2 * h]) | (unsigned){}(d[r][4 * j + 2 "
                     "* h + 1]) << 16;",
                     to_bits, to_bits),
         "columns 8 j + 2 (lane % 4) and + 1");
    line(s, 24,
         fmt::format(
             "*reinterpret_cast<unsigned*>(ct + row * {} + ((j ^ (lane / 4)) << 4) + 4 * (lane % 4)) = pair;",
             2 * tn));
    line(s, 20, "}");
    line(s, 16, "lm::named_barrier_sync(3 + c, 128);", "the 64 rows are in the buffer");
    line(s, 16, "#pragma unroll 4");
    line(s, 16, fmt::format("for (int q = 0; q < {}; ++q) {{", per_thread));
    line(s, 20, fmt::format("const int e = tid + 128 * q, row = e / {}, col = e % {};", tn, tn));
    line(s, 20, "const long long m = m0 + 64 * r + row, n = n0 + col;");
    line(s, 20, "if (m < p.M && n < p.N) {");
    line(s, 24,
         fmt::format("const unsigned short bits = *reinterpret_cast<const unsigned short*>(ct + row * {} + "
                     "(((col >> 3) ^ (row & 7)) << 4) + 2 * (col & 7));",
                     2 * tn));
    line(s, 24,
         fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {}(bits));", name, ep_idx,
                     from_bits),
         "element (batch, m, n) of the product's shape");
    line(s, 20, "}");
    line(s, 16, "}");
    line(s, 12, "}");
}

// The stage ring's pieces (MatmulPlan::wgmma_stage_bytes()): a stage holds A's tile (tile_m rows of 64 k,
// 128 bytes each), then B's (tile_n rows of 64 k).
struct StageRing {
    std::size_t a_bytes, b_bytes, stage_bytes;
    explicit StageRing(const MatmulPlan& p)
        : a_bytes(static_cast<std::size_t>(p.tile_m) * 128),
          b_bytes(static_cast<std::size_t>(p.tile_n) * 128),
          stage_bytes(p.wgmma_stage_bytes()) {}
};

// `<name>_tile`: the persistent grid's tile order, tile t to its batch entry and first row and column.
void tile_order(std::string& s, const MatmulPlan& p, const std::string& name) {
    s += fmt::format(
        "// Tile t of the persistent grid's order: batch entries one after another; within one, groups of "
        "{0} tile rows,\n"
        "// walked down a group's rows before across its columns, so the tiles in flight at once share rows "
        "of A and\n"
        "// columns of B in L2.\n",
        kWgmmaGroupRows);
    s += fmt::format(
        "__device__ __forceinline__ void {}_tile(long long t, long long tiles_m, long long tiles_n, long "
        "long& batch, long long& m0,\n"
        "                                        long long& n0) {{\n",
        name);
    line(s, 4, "const long long per_batch = tiles_m * tiles_n;");
    line(s, 4, "batch = t / per_batch;");
    line(s, 4, "t %= per_batch;");
    line(s, 4,
         fmt::format("const long long first = t / ({} * tiles_n) * {};", kWgmmaGroupRows, kWgmmaGroupRows),
         "the group's first tile row");
    line(
        s, 4,
        fmt::format("const long long rows = tiles_m - first < {0} ? tiles_m - first : {0};", kWgmmaGroupRows),
        "tile rows in this group");
    line(s, 4, fmt::format("const long long r = t % ({} * tiles_n);", kWgmmaGroupRows));
    line(s, 4, fmt::format("m0 = (first + r % rows) * {};", p.tile_m));
    line(s, 4, fmt::format("n0 = r / rows * {};", p.tile_n));
    s += "}\n\n";
}

// The kernel's head, shared by every warpgroup: the shared memory's layout (the stage ring, its mbarriers,
// the epilogue buffers), the mbarriers' initialization, and the counts of tiles and K steps.
void kernel_head(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int tm = p.tile_m, tn = p.tile_n, stages = p.stages;
    const StageRing ring(p);
    s += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}, 1) {}(const __grid_constant__ {}_params p) {{\n",
        p.threads(), name, name);
    detail::write_kernel_prologue(s, true, 72);
    line(s, 4,
         fmt::format("// Shared memory: {} stages of A ({} bytes) then B ({} bytes), 1024-byte aligned for "
                     "the 128-byte swizzle,",
                     stages, ring.a_bytes, ring.b_bytes));
    line(s, 4,
         p.staged_epilogue
             ? "// then a full and an empty mbarrier per stage, then the consumers' epilogue buffers."
             : "// then a full and an empty mbarrier per stage.");
    line(s, 4, fmt::format("const unsigned ring = (lm::smem_addr({}_smem) + 1023u) & ~1023u;", name));
    line(s, 4,
         fmt::format("const unsigned full0 = ring + {}u, empty0 = full0 + {}u;", stages * ring.stage_bytes,
                     8 * stages),
         "stage s: full0 + 8 s, empty0 + 8 s");
    if (p.staged_epilogue)
        line(s, 4, fmt::format("const unsigned epilogue0 = empty0 + {}u;", 8 * stages),
             "then the consumers' epilogue buffers");
    line(s, 4, "const int warpgroup = threadIdx.x / 128;");
    line(s, 4, "if (threadIdx.x == 0) {");
    line(s, 8, fmt::format("for (int s = 0; s < {}; ++s) {{", stages));
    line(s, 12, "lm::mbar_init(full0 + 8 * s, 1);", "the producer's arrival, with the copies' bytes");
    line(
        s, 12, fmt::format("lm::mbar_init(empty0 + 8 * s, {});", p.pingpong ? 4 : 4 * p.consumers),
        p.pingpong ? "the release by each warp of the consumer of its tile" : "each consumer warp's release");
    line(s, 8, "}");
    line(s, 8, "lm::mbar_init_fence();");
    line(s, 4, "}");
    line(s, 4, "__syncthreads();");
    line(s, 4,
         fmt::format("const long long tiles_m = (p.M + {}) / {}, tiles_n = (p.N + {}) / {};", tm - 1, tm,
                     tn - 1, tn));
    line(s, 4, "const long long tiles = tiles_m * tiles_n * p.batches;");
    line(s, 4, fmt::format("const int k_steps = (int)((p.K + {}) / {});", kWgmmaDepth - 1, kWgmmaDepth),
         "one pass over all of K");
}

// The producer's bulk tensor copies of one K step into stage s: per operand, a box of `extent` rows
// (columns) of 64 k when K-major, else one box of 64 k rows of 64 m (n) per 64 of the extent, 8 KiB apart.
void producer_copies(std::string& s, const MatmulPlan& p) {
    auto copy = [&](int rank, const char* map, const std::string& dst, const std::string& c0,
                    const std::string& c1) {
        if (rank == 3)
            return fmt::format("lm::tma_load_3d({}, &p.{}, full0 + 8 * s, {}, {}, (int)batch);", dst, map, c0,
                               c1);
        return fmt::format("lm::tma_load_2d({}, &p.{}, full0 + 8 * s, {}, {});", dst, map, c0, c1);
    };
    auto operand_copies = [&](char op, bool mn_major, int rank, int extent, const char* lines, char axis) {
        const std::string map = fmt::format("tmap_{}", op == 'A' ? 'a' : 'b'),
                          dst = fmt::format("{}s", map.back());
        const std::string origin = fmt::format("(int){}0", axis);
        if (!mn_major) {
            line(s, 20, copy(rank, map.c_str(), dst, "k0", origin),
                 fmt::format("{}: {} {} of 64 k", op, extent, lines));
            return;
        }
        for (int i = 0; i < extent / 64; ++i)
            line(s, 20,
                 copy(rank, map.c_str(), i ? fmt::format("{} + {}u", dst, 8192 * i) : dst,
                      fmt::format("{} + {}", origin, 64 * i), "k0"),
                 i == 0 ? fmt::format("{}: 64 k rows of 64 {} per copy", op, axis) : "");
    };
    operand_copies('A', p.a_mn_major, p.a_map_rank, p.tile_m, "rows", 'm');
    operand_copies('B', p.b_mn_major, p.b_map_rank, p.tile_n, "columns", 'n');
}

// The producer warpgroup's loop: one thread walks the block's tiles and their K steps, waits for each
// stage's release by the consumers and fills it with the step's copies.
void producer_loop(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int stages = p.stages;
    const StageRing ring(p);
    line(s, 8,
         "// The producer warpgroup: one thread issues every copy; the stage of K step `it` (counted over "
         "the block's tiles)");
    line(s, 8, "// is it % stages, in its (it / stages)-th use.");
    if (p.consumers > 1) line(s, 8, "lm::setmaxnreg_dec<40>();", "its registers to the consumers");
    line(s, 8, "if (threadIdx.x == 0) {");
    line(s, 12, "int it = 0;");
    line(s, 12, "for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {");
    line(s, 16, "long long batch, m0, n0;");
    line(s, 16, fmt::format("{}_tile(t, tiles_m, tiles_n, batch, m0, n0);", name));
    line(s, 16, "for (int ks = 0; ks < k_steps; ++ks, ++it) {");
    line(s, 20, fmt::format("const int s = it % {};", stages));
    line(s, 20, fmt::format("lm::mbar_wait(empty0 + 8 * s, ((it / {}) & 1) ^ 1);", stages),
         "the consumers have released it");
    line(s, 20, fmt::format("lm::mbar_expect_tx(full0 + 8 * s, {}u);", ring.stage_bytes),
         "whole boxes: zeros past M, N and K count too");
    line(s, 20,
         fmt::format("const unsigned as = ring + s * {}u, bs = as + {}u;", ring.stage_bytes, ring.a_bytes));
    line(s, 20, fmt::format("const int k0 = ks * {};", kWgmmaDepth));
    producer_copies(s, p);
    line(s, 16, "}");
    line(s, 12, "}");
    line(s, 8, "}");
}

// A consumer warpgroup's walk over its tiles, up to its first K step: whole tiles in turn with the other
// consumer (ping-pong plans) or 64 rows of every tile, and the tile's accumulators, zero.
void consumer_tile_start(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int mmas = p.consumer_mmas(), regs = p.tile_n / 2;
    if (p.pingpong) {
        line(s, 8,
             "// A consumer warpgroup: whole tiles, the two consumers taking the block's tiles in turn (tile "
             "j of the block's");
        line(s, 8,
             "// list is consumer j % 2's); the ring hands out its stages in tile order, so one consumer's "
             "MMAs run while the");
        line(s, 8, "// other's epilogue does.");
    } else {
        line(s, 8, "// A consumer warpgroup: rows 64 c to 64 c + 63 of each tile.");
    }
    if (p.consumers > 1) line(s, 8, "lm::setmaxnreg_inc<232>();", "the accumulators' registers");
    line(s, 8, "const int c = warpgroup - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;");
    if (p.pingpong) {
        line(
            s, 8,
            "for (long long t = blockIdx.x + c * gridDim.x, j = c; t < tiles; t += 2 * gridDim.x, j += 2) {");
        line(s, 12, "int it = (int)j * k_steps;", "the K steps of the block's tiles before this one");
    } else {
        line(s, 8, "int it = 0;");
        line(s, 8, "for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {");
    }
    line(s, 12, "long long batch, m0, n0;");
    line(s, 12, fmt::format("{}_tile(t, tiles_m, tiles_n, batch, m0, n0);", name));
    line(s, 12, fmt::format("float d[{}][{}];", mmas, regs),
         mmas > 1 ? fmt::format("the accumulators: {} blocks of 64 rows", mmas) : "the accumulators");
    line(s, 12, "#pragma unroll");
    line(s, 12, fmt::format("for (int r = 0; r < {}; ++r)", mmas));
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int i = 0; i < {}; ++i) d[r][i] = 0.0f;", regs), "K = 0: +0");
    line(s, 12, "int held = -1;", "the stage whose MMAs may still read it");
}

// A consumer's K steps of one tile: its turn at the ring (ping-pong plans), then per step the wait for the
// stage's copies, the MMAs over its 64 k, and the release of the stage before once its MMAs are done; at the
// end the last stage's release and the accumulators, final.
void consumer_k_steps(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int mmas = p.consumer_mmas(), regs = p.tile_n / 2, stages = p.stages;
    const StageRing ring(p);
    const OperandTile ta{p.a_mn_major}, tb{p.b_mn_major};
    if (p.pingpong) {
        line(s, 12,
             "// The consumers' turns at the ring, in tile order: this one waits until the other has taken "
             "every stage of");
        line(s, 12,
             "// the tile before (so that no consumer waits on a stage more than one use ahead of the "
             "producer).");
        line(s, 12, "if (j >= 2 || c == 1) lm::named_barrier_sync(1 + c, 256);");
    }
    line(s, 12, "for (int ks = 0; ks < k_steps; ++ks, ++it) {");
    line(s, 16, fmt::format("const int s = it % {};", stages));
    line(s, 16, fmt::format("lm::mbar_wait(full0 + 8 * s, (it / {}) & 1);", stages),
         "its copies have landed");
    if (p.pingpong)
        line(s, 16,
             fmt::format("const unsigned as = ring + s * {}u, bs = as + {}u;", ring.stage_bytes,
                         ring.a_bytes));
    else
        line(s, 16,
             fmt::format("const unsigned as = ring + s * {}u + c * 8192u, bs = ring + s * {}u + {}u;",
                         ring.stage_bytes, ring.stage_bytes, ring.a_bytes),
             "this consumer's 64 rows of A");
    line(s, 16, "lm::wgmma_fence();");
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int kk = 0; kk < {}; ++kk) {{", kWgmmaDepth / 16), "16 k per MMA");
    line(s, 20,
         fmt::format("const unsigned long long desc_b = lm::wgmma_desc(bs + kk * {}u, {}u, {}u);",
                     tb.k_step_bytes(), tb.leading_bytes(), OperandTile::stride_bytes));
    line(s, 20, "#pragma unroll");
    line(s, 20, fmt::format("for (int r = 0; r < {}; ++r)", mmas),
         mmas > 1 ? "64 rows of A per MMA (8 KiB apart)" : "");
    line(s, 24,
         fmt::format("{}_mma(d[r], lm::wgmma_desc(as + r * 8192u + kk * {}u, {}u, {}u), desc_b);", name,
                     ta.k_step_bytes(), ta.leading_bytes(), OperandTile::stride_bytes));
    line(s, 16, "}");
    line(s, 16, "lm::wgmma_commit();");
    line(s, 16, "lm::wgmma_wait<1>();", "the previous step's MMAs are done ...");
    line(s, 16, "if (held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held);",
         "... so its stage goes back to the producer");
    line(s, 16, "held = s;");
    line(s, 12, "}");
    if (p.pingpong)
        line(s, 12, "if (t + gridDim.x < tiles) lm::named_barrier_arrive(2 - c, 256);",
             "the next tile's consumer may start");
    line(s, 12, "lm::wgmma_wait<0>();");
    line(s, 12, "if (held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held);");
    line(s, 12, "#pragma unroll");
    line(s, 12, fmt::format("for (int r = 0; r < {}; ++r)", mmas));
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int i = 0; i < {}; ++i) lm::wgmma_hold(d[r][i]);", regs),
         "the MMAs' results, read only from here");
}

// The epilogue from registers: each thread runs the epilogue on the values its accumulators hold (the
// layout of wgmma_mma_function's comment), `value_of` giving the product's value in its dtype.
void register_epilogue(std::string& s, const MatmulPlan& p, const std::string& name,
                       const std::string& ep_idx,
                       const std::function<std::string(const std::string&)>& value_of) {
    const int mmas = p.consumer_mmas();
    line(s, 12,
         "// The epilogue on the accumulators: the product's value in its dtype, then the fused elementwise "
         "work.");
    line(s, 12,
         fmt::format("const long long row = m0 + {}16 * warp + lane / 4, col = n0 + 2 * (lane % 4);",
                     p.pingpong ? "" : "64 * c + "));
    line(s, 12, "#pragma unroll");
    line(s, 12, fmt::format("for (int r = 0; r < {}; ++r)", mmas));
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int j = 0; j < {}; ++j)", p.tile_n / 8));
    line(s, 20, "#pragma unroll");
    line(s, 20, "for (int v = 0; v < 4; ++v) {");
    line(s, 24, "const long long m = row + 64 * r + 8 * (v / 2), n = col + 8 * j + v % 2;");
    line(s, 24, "if (m < p.M && n < p.N)");
    line(s, 28,
         fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {});", name, ep_idx,
                     value_of("d[r][4 * j + v]")),
         "element (batch, m, n) of the product's shape");
    line(s, 20, "}");
}

}  // namespace

std::string wgmma_mma_function(const MatmulPlan& p, const std::string& name) {
    const int n = p.tile_n, regs = n / 2;
    std::string s = fmt::format(
        "// One warpgroup MMA, d (64 x {0}, float32) += A (64 x 16) B (16 x {0}), both operands from shared "
        "memory through\n"
        "// their descriptors; A {1}, B {2} (the transpose bits). Thread t of the warpgroup holds rows 16 (t "
        "/ 32) + (t % 32) / 4\n"
        "// and + 8 of columns 8 j + 2 (t % 4) and + 1: d[4 j + 2 h + c] is row + 8 h, column + c.\n",
        n, p.a_mn_major ? "M-major" : "K-major", p.b_mn_major ? "N-major" : "K-major");
    s += fmt::format(
        "__device__ __forceinline__ void {}_mma(float (&d)[{}], unsigned long long desc_a, unsigned long "
        "long desc_b) {{\n",
        name, regs);
    line(s, 4, "asm volatile(");
    line(s, 8, "\"{\\n\"");
    line(s, 8, "\".reg .pred scale_d;\\n\"");
    line(s, 8, fmt::format("\"setp.ne.b32 scale_d, %{}, 0;\\n\"", regs + 2), "d += A B (scale-d 1)");
    line(s, 8,
         fmt::format("\"wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{}\\n\"", n, operand_type(p.in),
                     operand_type(p.in)));
    for (int r = 0; r < regs; r += 8) {
        std::string regs_text;
        for (int i = r; i < r + 8 && i < regs; ++i)
            regs_text += fmt::format("%{}{}", i, i + 1 == regs ? "" : i + 1 == r + 8 ? "," : ", ");
        line(s, 8, fmt::format("\"{}{}{}\\n\"", r == 0 ? "{" : "", regs_text, r + 8 >= regs ? "}," : ""));
    }
    line(s, 8,
         fmt::format("\"%{}, %{}, scale_d, 1, 1, {}, {};\\n\"", regs, regs + 1, p.a_mn_major ? 1 : 0,
                     p.b_mn_major ? 1 : 0),
         "descriptors, scale-d, scale A and B by 1, transpose A, B");
    line(s, 8, "\"}\\n\"");
    for (int r = 0; r < regs; r += 8) {
        std::string ops;
        for (int i = r; i < r + 8 && i < regs; ++i)
            ops += fmt::format("\"+f\"(d[{}]){}", i, i + 1 == regs ? "" : i + 1 == r + 8 ? "," : ", ");
        line(s, 8, fmt::format("{}{}", r == 0 ? ": " : "  ", ops));
    }
    line(s, 8, ": \"l\"(desc_a), \"l\"(desc_b), \"n\"(1));");
    s += "}\n";
    return s;
}

std::string wgmma_kernel(const PlannedMatmul& pm, const std::string& name, const std::string& ep_idx,
                         const std::function<std::string(const std::string&)>& value_of) {
    const MatmulPlan& p = pm.plan;
    std::string s;
    tile_order(s, p, name);
    kernel_head(s, p, name);
    line(s, 4, "if (warpgroup == 0) {");
    producer_loop(s, p, name);
    line(s, 4, "} else {");
    consumer_tile_start(s, p, name);
    consumer_k_steps(s, p, name);
    if (p.staged_epilogue)
        staged_epilogue(s, p, name, ep_idx);
    else
        register_epilogue(s, p, name, ep_idx, value_of);
    line(s, 8, "}");  // the consumer's loop over its tiles
    line(s, 4, "}");
    s += "}\n";
    return s;
}

}  // namespace loom::codegen::detail

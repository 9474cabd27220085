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

// The staged epilogue's walk in vectors (MatmulPlan::vector_epilogue, where the call's pointers and N allow:
// bit 2 of `pieces`): each thread takes W consecutive columns of a row, one read of the buffer (within one
// swizzled 16-byte piece), one index computation, the epilogue's loads, then the W elements' arithmetic side
// by side and W-wide stores. The same body per element: the same bits as the walk element by element.
void staged_vectors(std::string& s, const MatmulPlan& p, const std::string& name, const std::string& ep_idx) {
    const int tn = p.tile_n, w = p.vector_epilogue, per_row = tn / w, steps = 64 * tn / (128 * w);
    const char* from_bits = p.out == DType::BFloat16 ? "lm::bf16_to_float" : "lm::f16_to_float";
    line(s, 16, "if (p.pieces & 4) {",
         fmt::format("the epilogue's pointers aligned and N whole vectors: {} columns at once", w));
    line(s, 20, "#pragma unroll 2");
    line(s, 20, fmt::format("for (int q = 0; q < {}; ++q) {{", steps));
    line(s, 24,
         fmt::format("const int e = tid + 128 * q, row = e / {}, col = e % {} * {};", per_row, per_row, w));
    line(s, 24, "const long long m = m0 + 64 * r + row, n = n0 + col;");
    line(s, 24, "if (m < p.M && n < p.N) {",
         fmt::format("N is whole vectors: n .. n + {} all in the product", w - 1));
    line(s, 28,
         fmt::format(
             "const lm::vec<unsigned short, {}> bits = *reinterpret_cast<const lm::vec<unsigned short, "
             "{}>*>(ct + row * {} + (((col >> 3) ^ (row & 7)) << 4) + 2 * (col & 7));",
             w, w, 2 * tn));
    line(s, 28, fmt::format("lm::vec<float, {}> acc;", w));
    line(s, 28, "#pragma unroll");
    line(s, 28, fmt::format("for (int j = 0; j < {}; ++j) acc.v[j] = {}(bits.v[j]);", w, from_bits));
    line(s, 28,
         fmt::format("{}_ep_element{}(p.ep, ({})((batch * p.M + m) * p.N + n), acc);", name, w, ep_idx),
         fmt::format("elements (batch, m, n .. n + {})", w - 1));
    line(s, 24, "}");
    line(s, 20, "}");
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
    if (p.vector_epilogue > 0) {
        staged_vectors(s, p, name, ep_idx);
        line(s, 16, "} else {");
    }
    const int ind = p.vector_epilogue > 0 ? 20 : 16;  // inside the vectors' else
    line(s, ind, "#pragma unroll 4");
    line(s, ind, fmt::format("for (int q = 0; q < {}; ++q) {{", per_thread));
    line(s, ind + 4, fmt::format("const int e = tid + 128 * q, row = e / {}, col = e % {};", tn, tn));
    line(s, ind + 4, "const long long m = m0 + 64 * r + row, n = n0 + col;");
    line(s, ind + 4, "if (m < p.M && n < p.N) {");
    line(s, ind + 8,
         fmt::format("const unsigned short bits = *reinterpret_cast<const unsigned short*>(ct + row * {} + "
                     "(((col >> 3) ^ (row & 7)) << 4) + 2 * (col & 7));",
                     2 * tn));
    line(s, ind + 8,
         fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {}(bits));", name, ep_idx,
                     from_bits),
         "element (batch, m, n) of the product's shape");
    line(s, ind + 4, "}");
    line(s, ind, "}");
    if (p.vector_epilogue > 0) line(s, 16, "}");
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
    line(s, 4,
         fmt::format("const int k_steps = (int)((p.K + {}) / {});", p.wgmma_depth() - 1, p.wgmma_depth()),
         "one pass over all of K");
}

// The producer's bulk tensor copies of one K step into stage s: per operand, a box of `extent` rows
// (columns) of a stage's k when K-major, else one box of the stage's k rows of 128 bytes of m (n) per 128
// bytes of the extent (64 k rows of 64 16-bit values, 8 KiB; 32 k rows of 32 float32 values, 4 KiB).
void producer_copies(std::string& s, const MatmulPlan& p) {
    const int depth = p.wgmma_depth();
    // One copy of operand `o` ('a' or 'b') at (c0, c1) and the tile's batch coordinates: the flat batch entry
    // of a flat rank-3 map, else those map_coordinates() computed.
    auto copy = [&](char o, const std::string& dst, const std::string& c0, const std::string& c1) {
        const int rank = o == 'a' ? p.a_map_rank : p.b_map_rank;
        std::string coords = fmt::format("{}, {}", c0, c1);
        if (rank == 3 && (o == 'a' ? p.a_map_flat : p.b_map_flat))
            coords += ", (int)batch";
        else
            for (int d = 0; d + 2 < rank; ++d) coords += fmt::format(", {}_b{}", o, d);
        return fmt::format("lm::tma_load_{}d({}, &p.tmap_{}, full0 + 8 * s, {});", rank, dst, o, coords);
    };
    auto operand_copies = [&](char op, bool mn_major, int extent, const char* lines, char axis) {
        const char o = op == 'A' ? 'a' : 'b';
        const std::string dst = fmt::format("{}s", o), origin = fmt::format("(int){}0", axis);
        if (!mn_major) {
            line(s, 20, copy(o, dst, "k0", origin),
                 fmt::format("{}: {} {} of {} k", op, extent, lines, depth));
            return;
        }
        for (int i = 0; i < extent / depth; ++i)
            line(s, 20,
                 copy(o, i ? fmt::format("{} + {}u", dst, 128 * depth * i) : dst,
                      fmt::format("{} + {}", origin, depth * i), "k0"),
                 i == 0 ? fmt::format("{}: {} k rows of {} {} per copy", op, depth, depth, axis) : "");
    };
    operand_copies('A', p.a_mn_major, p.tile_m, "rows", 'm');
    operand_copies('B', p.b_mn_major, p.tile_n, "columns", 'n');
}

// The producer's coordinates of the tile's batch entry in each operand's tensor map whose batch dimensions
// are not the flat entry: dimension d at (batch / divisor) % extent (MatmulBinding::MapBatch).
void map_coordinates(std::string& s, const MatmulPlan& p) {
    for (int which : {0, 1}) {
        const int rank = which == 0 ? p.a_map_rank : p.b_map_rank;
        if (rank == 2 || (which == 0 ? p.a_map_flat : p.b_map_flat)) continue;
        const char op = which == 0 ? 'a' : 'b';
        std::vector<std::string> dims;
        for (int d = 0; d + 2 < rank; ++d)
            dims.push_back(
                fmt::format("{}_b{} = (int)(batch / p.{}_bdiv{} % p.{}_bext{})", op, d, op, d, op, d));
        line(s, 16, fmt::format("const int {};", fmt::join(dims, ", ")),
             fmt::format("{}'s batch coordinates", which == 0 ? 'A' : 'B'));
    }
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
    map_coordinates(s, p);
    line(s, 16, "for (int ks = 0; ks < k_steps; ++ks, ++it) {");
    line(s, 20, fmt::format("const int s = it % {};", stages));
    line(s, 20, fmt::format("lm::mbar_wait(empty0 + 8 * s, ((it / {}) & 1) ^ 1);", stages),
         "the consumers have released it");
    line(s, 20, fmt::format("lm::mbar_expect_tx(full0 + 8 * s, {}u);", ring.stage_bytes),
         "whole boxes: zeros past M, N and K count too");
    line(s, 20,
         fmt::format("const unsigned as = ring + s * {}u, bs = as + {}u;", ring.stage_bytes, ring.a_bytes));
    line(s, 20, fmt::format("const int k0 = ks * {};", p.wgmma_depth()));
    producer_copies(s, p);
    line(s, 16, "}");
    line(s, 12, "}");
    line(s, 8, "}");
}

// A consumer warpgroup's walk over its tiles, up to its first K step: whole tiles in turn with the other
// consumer (ping-pong plans) or 64 rows of every tile, and the tile's accumulators, zero.
void consumer_tile_start(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int mmas = p.consumer_mmas(), regs = p.wgmma_n() / 2;
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

// The MMAs of one stage with both operands from shared memory: per MMA k step, B's descriptor, then one
// MMA per 64 rows of A; the stage's MMAs committed as one group.
void shared_operand_mmas(std::string& s, const MatmulPlan& p, const std::string& name) {
    const OperandTile ta{p.a_mn_major}, tb{p.b_mn_major};
    const int mmas = p.consumer_mmas(), k = p.wgmma_k();
    line(s, 16, "lm::wgmma_fence();");
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int kk = 0; kk < {}; ++kk) {{", p.wgmma_depth() / k),
         fmt::format("{} k per MMA", k));
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
}

// TF32 with an MN-major operand: per k step of 8, the MMAs' A fragments read from that operand's tile (A's,
// or B's when swapped) into registers, then one MMA per 64 of its rows against the K-major operand's
// descriptor, each k step its own group. The fragments alternate between two sets, so the loads of step kk
// + 1 run beside step kk's MMAs, and a set is loaded again only once the group that read it is done (the
// wait for all but the newest group before each load).
void register_operand_mmas(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int mmas = p.consumer_mmas(), steps = p.wgmma_depth() / p.wgmma_k();
    const char* regs_tile = p.wgmma_swap() ? "bs" : "as";
    const char* desc_tile = p.wgmma_swap() ? "as" : "bs";
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int kk = 0; kk < {}; ++kk) {{", steps), "8 k per MMA");
    line(s, 20, "unsigned (&a)[" + std::to_string(mmas) + "][4] = frag[kk % 2];");
    line(s, 20, "#pragma unroll");
    line(s, 20, fmt::format("for (int r = 0; r < {}; ++r)", mmas), "64 rows of the MMAs' A: 8 KiB apart");
    line(s, 24, fmt::format("{}_fragment(a[r], {} + r * 8192u, 8 * kk, warp, lane);", name, regs_tile));
    line(s, 20, "lm::wgmma_fence();");
    line(s, 20,
         fmt::format("const unsigned long long desc_b = lm::wgmma_desc({} + kk * 32u, 16u, {}u);", desc_tile,
                     OperandTile::stride_bytes),
         p.wgmma_swap() ? "A's K-major tile as the MMAs' B" : "B's K-major tile");
    line(s, 20, "#pragma unroll");
    line(s, 20, fmt::format("for (int r = 0; r < {}; ++r) {}_mma(d[r], a[r], desc_b);", mmas, name));
    line(s, 20, "lm::wgmma_commit();");
    line(s, 20, "lm::wgmma_wait<1>();", "the step before is done: its fragments may be loaded again");
    line(s, 20, "if (kk == 0 && held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held);",
         "and the stage before is read");
    line(s, 16, "}");
}

// A consumer's K steps of one tile: its turn at the ring (ping-pong plans), then per step the wait for the
// stage's copies, the MMAs over its k, and the release of the stage before once its MMAs are done; at the
// end the last stage's release and the accumulators, final.
void consumer_k_steps(std::string& s, const MatmulPlan& p, const std::string& name) {
    const int mmas = p.consumer_mmas(), regs = p.wgmma_n() / 2, stages = p.stages;
    const StageRing ring(p);
    if (p.pingpong) {
        line(s, 12,
             "// The consumers' turns at the ring, in tile order: this one waits until the other has taken "
             "every stage of");
        line(s, 12,
             "// the tile before (so that no consumer waits on a stage more than one use ahead of the "
             "producer).");
        line(s, 12, "if (j >= 2 || c == 1) lm::named_barrier_sync(1 + c, 256);");
    }
    if (p.wgmma_a_registers())
        line(s, 12, fmt::format("unsigned frag[2][{}][4];", mmas), "the MMAs' A operand: two sets");
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
    if (p.wgmma_a_registers()) {
        register_operand_mmas(s, p, name);
    } else {
        shared_operand_mmas(s, p, name);
        line(s, 16, "lm::wgmma_wait<1>();", "the previous step's MMAs are done ...");
        line(s, 16, "if (held >= 0 && lane == 0) lm::mbar_arrive(empty0 + 8 * held);",
             "... so its stage goes back to the producer");
    }
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
// layout of wgmma_mma_function's comment), `value_of` giving the product's value in its dtype. The MMAs' row
// of an accumulator is the tile's row (m), or its column (n) when the operands are swapped; with A fragments
// from registers, the rows are permuted as <name>_fragment reads them.
void register_epilogue(std::string& s, const MatmulPlan& p, const std::string& name,
                       const std::string& ep_idx,
                       const std::function<std::string(const std::string&)>& value_of) {
    const int mmas = p.consumer_mmas();
    line(s, 12,
         "// The epilogue on the accumulators: the product's value in its dtype, then the fused elementwise "
         "work.");
    const std::string first_row =
        p.wgmma_a_registers() ? "32 * (warp / 2) + 16 * (lane / 16) + 8 * (warp % 2) + 2 * (lane / 4 % 4)"
                              : "16 * warp + lane / 4";
    const char* row0 = p.wgmma_swap() ? "n0" : p.pingpong ? "m0" : "m0 + 64 * c";
    const char* col0 = p.wgmma_swap() ? "m0" : "n0";
    line(s, 12,
         fmt::format("const long long row = {} + {}, col = {} + 2 * (lane % 4);", row0, first_row, col0),
         p.wgmma_swap() ? "the MMAs' rows are n, their columns m" : "");
    line(s, 12, "#pragma unroll");
    line(s, 12, fmt::format("for (int r = 0; r < {}; ++r)", mmas));
    line(s, 16, "#pragma unroll");
    line(s, 16, fmt::format("for (int j = 0; j < {}; ++j)", p.wgmma_n() / 8));
    line(s, 20, "#pragma unroll");
    line(s, 20, "for (int v = 0; v < 4; ++v) {");
    line(s, 24,
         fmt::format("const long long {} = row + 64 * r + {}, {} = col + 8 * j + v % 2;",
                     p.wgmma_swap() ? "n" : "m", p.wgmma_a_registers() ? "v / 2" : "8 * (v / 2)",
                     p.wgmma_swap() ? "m" : "n"));
    line(s, 24, "if (m < p.M && n < p.N)");
    line(s, 28,
         fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {});", name, ep_idx,
                     value_of("d[r][4 * j + v]")),
         "element (batch, m, n) of the product's shape");
    line(s, 20, "}");
}

// The accumulators' operand list of the MMA's asm: "{%0, ..., %7,\n" lines of 8, the last ending "},".
void accumulator_operands(std::string& s, int regs) {
    for (int r = 0; r < regs; r += 8) {
        std::string regs_text;
        for (int i = r; i < r + 8 && i < regs; ++i)
            regs_text += fmt::format("%{}{}", i, i + 1 == regs ? "" : i + 1 == r + 8 ? "," : ", ");
        line(s, 8, fmt::format("\"{}{}{}\\n\"", r == 0 ? "{" : "", regs_text, r + 8 >= regs ? "}," : ""));
    }
}

// The accumulators' constraints: "+f"(d[0]), ... in lines of 8.
void accumulator_constraints(std::string& s, int regs) {
    for (int r = 0; r < regs; r += 8) {
        std::string ops;
        for (int i = r; i < r + 8 && i < regs; ++i)
            ops += fmt::format("\"+f\"(d[{}]){}", i, i + 1 == regs ? "" : i + 1 == r + 8 ? "," : ", ");
        line(s, 8, fmt::format("{}{}", r == 0 ? ": " : "  ", ops));
    }
}

// TF32 with an MN-major operand: `<name>_fragment` reads the MMAs' A fragment of one k step from that
// operand's tile (wgmma_mma_function's layout). The tile is boxes of 32 rows (of m, or n when swapped) by 32
// k, 4 KiB each: each k a 128-byte row whose 16-byte pieces are swizzled by k % 8. A fragment's rows g and g
// + 8 (g = lane / 4) are taken from two adjacent rows of the tile (one 8-byte read per k), and a warp's rows
// from two halves of a box, so that each read of the warp meets every bank twice: the fewest wavefronts.
// The values go in as they are: the tensor cores read TF32 from float32 (docs/semantics.md, "TF32").
std::string fragment_function(const std::string& name) {
    std::string s =
        "// The MMAs' A fragment of k step k0 .. k0 + 7 from an MN-major tile (rows: 64 of the MMAs' M, in 2 "
        "boxes of 32):\n"
        "// a[0], a[1] are rows row, row + 1 at k0 + lane % 4; a[2], a[3] the same rows at 4 k further.\n";
    s += fmt::format(
        "__device__ __forceinline__ void {}_fragment(unsigned (&a)[4], unsigned rows, int k0, int warp, int "
        "lane) {{\n",
        name);
    line(s, 4, "const int row = 16 * (lane / 16) + 8 * (warp % 2) + 2 * (lane / 4 % 4);",
         "in box warp / 2; and row + 1");
    line(s, 4, "const unsigned box = rows + (warp / 2) * 4096u;");
    line(s, 4, "#pragma unroll");
    line(s, 4, "for (int q = 0; q < 2; ++q) {");
    line(s, 8, "const int k = k0 + lane % 4 + 4 * q;");
    line(s, 8, "const unsigned at = box + k * 128u + (((row >> 2) ^ (k & 7)) << 4) + (row & 3) * 4u;");
    line(s, 8,
         "asm volatile(\"ld.shared.v2.b32 {%0, %1}, [%2];\\n\" : \"=r\"(a[2 * q]), \"=r\"(a[2 * q + 1]) : "
         "\"r\"(at));");
    line(s, 4, "}");
    s += "}\n\n";
    return s;
}

}  // namespace

std::string wgmma_mma_function(const MatmulPlan& p, const std::string& name) {
    const int n = p.wgmma_n(), regs = n / 2, k = p.wgmma_k();
    const bool tf32 = p.in == DType::Float32;
    const char* type = tf32 ? "tf32" : operand_type(p.in);
    std::string s = p.wgmma_a_registers() ? fragment_function(name) : std::string();
    s += fmt::format(
        "// One warpgroup MMA, d (64 x {0}, float32) += A (64 x {1}) B ({1} x {0}), {2}\n"
        "// {3}; A {4}, B {5}{6}. Thread t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4\n"
        "// and + 8 of columns 8 j + 2 (t % 4) and + 1: d[4 j + 2 h + c] is row + 8 h, column + c.\n",
        n, k,
        p.wgmma_a_registers() ? "A from registers, B from shared memory"
                              : "both operands from shared memory through",
        p.wgmma_a_registers() ? "through its descriptor" : "their descriptors",
        p.wgmma_a_registers() ? "in registers"
        : p.a_mn_major        ? "M-major"
                              : "K-major",
        p.b_mn_major && !p.wgmma_swap() ? "N-major" : "K-major",
        tf32 ? " (TF32: no transpose bits)" : " (the transpose bits)");
    s += fmt::format(
        "__device__ __forceinline__ void {}_mma(float (&d)[{}], {}, unsigned long long desc_b) {{\n", name,
        regs, p.wgmma_a_registers() ? "const unsigned (&a)[4]" : "unsigned long long desc_a");
    const int after = p.wgmma_a_registers() ? regs + 4 : regs + 1;  // the operand after A's: desc_b
    line(s, 4, "asm volatile(");
    line(s, 8, "\"{\\n\"");
    line(s, 8, "\".reg .pred scale_d;\\n\"");
    line(s, 8, fmt::format("\"setp.ne.b32 scale_d, %{}, 0;\\n\"", after + 1), "d += A B (scale-d 1)");
    line(s, 8, fmt::format("\"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{}\\n\"", n, k, type, type));
    accumulator_operands(s, regs);
    const std::string a_operand =
        p.wgmma_a_registers() ? fmt::format("{{%{}, %{}, %{}, %{}}}", regs, regs + 1, regs + 2, regs + 3)
                              : fmt::format("%{}", regs);
    if (tf32)
        line(s, 8, fmt::format("\"{}, %{}, scale_d, 1, 1;\\n\"", a_operand, after),
             "A, B's descriptor, scale-d, scale A and B by 1 (TF32 has no transpose bits)");
    else
        line(s, 8,
             fmt::format("\"{}, %{}, scale_d, 1, 1, {}, {};\\n\"", a_operand, after, p.a_mn_major ? 1 : 0,
                         p.b_mn_major ? 1 : 0),
             "descriptors, scale-d, scale A and B by 1, transpose A, B");
    line(s, 8, "\"}\\n\"");
    accumulator_constraints(s, regs);
    if (p.wgmma_a_registers())
        line(s, 8, ": \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc_b), \"n\"(1));");
    else
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

// The CUDA emitter of matmul kernels (matmul_plan.hpp): the epilogue's pointwise pieces, the parameter
// struct, the two tile loaders (cp.async pieces, element loads), the stage pipeline, the CUDA-core and the
// tensor-core (mma.sync) loops over K, the epilogue and the entry point.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/prelude.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/reduce_order.hpp"

namespace loom::codegen {

namespace {

void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    detail::write_line(s, indent, code, comment, 72);
}

struct MatmulEmitter {
    const PlannedMatmul& pm;
    const MatmulPlan& p;
    std::string name;
    std::string st;              // the operands' storage type
    std::string acc;             // the accumulator type
    std::string pa_idx, pb_idx;  // the prologues' index types

    int rank() const { return p.rank; }

    std::string operand_comment(int which) const {
        const ir::Node& in = *pm.inputs[which == 0 ? 0 : pm.a_inputs];
        const ir::Node& op = *pm.product->operand(which);
        return fmt::format("{}: {}, a view of input \"{}\" {} ({})", which == 0 ? "A" : "B", ir::describe(op),
                           in.label(), name_of(in.dtype()), short_location(in.loc()));
    }
    static std::string name_of(DType t) { return std::string(loom::name(t)); }

    std::string params_struct() const {
        std::string s = fmt::format("struct {}_params {{\n", name);
        for (const ParamField& f : p.params.fields) {
            std::string comment;
            if (f.kind == ParamField::Kind::Epilogue) {
                comment = f.a == 2 ? "the epilogue's parameters"
                                   : fmt::format("the prologue of {}: its parameters", f.a == 3 ? "A" : "B");
            } else if (f.name == "a") {
                comment = operand_comment(0);
            } else if (f.name == "b") {
                comment = operand_comment(1);
            } else if (f.name == "M" || f.name == "N" || f.name == "K") {
                comment = f.name == "K" ? "K: the contraction's length"
                                        : fmt::format("{}: the product's {}", f.name,
                                                      f.name == "M" ? "rows" : "columns");
            } else if (f.name == "chunks") {
                comment = fmt::format("ceil(K / {}): chunks of the contraction", kProductChunk);
            } else if (f.name == "batches") {
                comment = "batch entries (the product of the batch extents)";
            } else if (f.name == "tmap_a" || f.name == "tmap_b") {
                comment = fmt::format("the tensor map of {} (CUtensorMap, encoded by the runtime)",
                                      f.name == "tmap_a" ? "A" : "B");
            } else if (f.name == "pieces") {
                comment = p.wgmma ? "bit 2: the epilogue in vectors (the pointers aligned, N whole vectors)"
                          : p.vector_epilogue > 0
                              ? "bit 0 (A), bit 1 (B): the operand's K steps arrive as 16-byte cp.async "
                                "pieces; else element loads; bit 2: the epilogue in vectors"
                              : "bit 0 (A), bit 1 (B): the operand's K steps arrive as 16-byte cp.async "
                                "pieces; else element loads";
            } else if (f.name == "ws") {
                comment = p.split_k ? "per group of chunks, its tree's stack (bit_width(group_chunks) "
                                      "slots), then per group its partial; "
                                      "each slot batches x M x N accumulators"
                                    : "the chunk tree's partials: levels x batches x M x N accumulators";
            } else if (f.name == "group_chunks") {
                comment =
                    "chunks per block along the grid's z (a power of two): block z takes chunks [z g, (z + "
                    "1) g)";
            } else if (f.name == "count") {
                comment =
                    "unsigned counters, one per output tile and batch entry: zero at launch and left zero";
            } else if (f.name.starts_with("batch")) {
                comment = fmt::format("extent of batch axis {}", f.b);
            } else {
                const bool is_a = f.name[0] == 'a';
                const int d = f.b;
                const char* axis = d == rank() - 2   ? (is_a ? "m" : "k")
                                   : d == rank() - 1 ? (is_a ? "k" : "n")
                                                     : "batch";
                comment = fmt::format("{} stride along axis {} ({}), elements", is_a ? "A" : "B", d, axis);
            }
            line(s, 4, detail::param_declaration(f, IndexWidth::I64, name), comment);
        }
        s += "};\n";
        s += fmt::format(
            "static_assert(sizeof({}_params) == {}, \"kernel parameter layout differs from the host's\");\n",
            name, p.params.size);
        return s;
    }

    // The operand pointers of batch entry `batch` (A and B of this block).
    std::string pointer(bool prologue, const char* field) const {
        return prologue ? std::string("nullptr") : fmt::format("p.{}", field);
    }
    // `const T* A<sfx>` and `B<sfx>`: the operands of batch entry `batch` (row-major batch axes).
    void batch_offsets(std::string& s, int ind, const std::string& batch = "batch",
                       const std::string& sfx = {}) const {
        if (rank() == 2) {
            line(s, ind, fmt::format("const {}* A{} = {};", st, sfx, pointer(p.a_prologue, "a")),
                 p.a_prologue ? "A: computed by its prologue" : "one matrix: no batch axes");
            line(s, ind, fmt::format("const {}* B{} = {};", st, sfx, pointer(p.b_prologue, "b")),
                 p.b_prologue ? "B: computed by its prologue" : "");
            return;
        }
        line(s, ind, fmt::format("long long a_off{0} = 0, b_off{0} = 0, q{0} = {1};", sfx, batch),
             fmt::format("batch entry {} -> offsets of A and B (row-major batch axes)", batch));
        for (int d = rank() - 3; d >= 0; --d) {
            line(s, ind,
                 fmt::format("{{ const long long i = q{0} % p.batch{1}; q{0} /= p.batch{1}; a_off{0} += i * "
                             "p.a_s{1}; b_off{0} += i * p.b_s{1}; }}",
                             sfx, d));
        }
        line(s, ind,
             fmt::format("const {}* A{} = {};", st, sfx,
                         p.a_prologue ? std::string("nullptr") : "p.a + a_off" + sfx),
             p.a_prologue ? "A: computed by its prologue" : "");
        line(s, ind,
             fmt::format("const {}* B{} = {};", st, sfx,
                         p.b_prologue ? std::string("nullptr") : "p.b + b_off" + sfx),
             p.b_prologue ? "B: computed by its prologue" : "");
        if (p.a_prologue || p.b_prologue) line(s, ind, fmt::format("(void)a_off{0}; (void)b_off{0};", sfx));
    }

    // Zero in the operands' storage type: `T{0}` for float16 and bfloat16, `(T)0` for the others.
    std::string zero() const {
        return p.in == DType::Float16 || p.in == DType::BFloat16 ? fmt::format("{}{{0}}", st)
                                                                 : fmt::format("({})0", st);
    }
    // The head of loader `<name>_load_<operand>_<what>` (what: pieces or elements) into stage buffer
    // `buffer`.
    std::string loader_head(const char* what, const char* operand, const char* buffer) const {
        return fmt::format(
            "__device__ __forceinline__ void {}_load_{}_{}(const {}_params& p, const {}* {}, {}* {},\n"
            "        long long batch, long long m0, long long n0, long long k0) {{\n",
            name, operand, what, name, st, operand[0] == 'a' ? "A" : "B", st, buffer);
    }

    // A's stage tile in 16-byte cp.async pieces, along k (A's rows divide into pieces).
    std::string a_pieces_loader() const {
        const int piece = p.piece();
        const int a_pieces = p.tile_m * p.tile_k / piece, a_row = p.tile_k / piece;
        const std::string am = fmt::format("p.a_s{}", rank() - 2);
        std::string s = loader_head("pieces", "a", "as");
        line(s, 4, "(void)batch; (void)n0;");
        line(s, 4, fmt::format("for (int q = threadIdx.x; q < {}; q += {}) {{", a_pieces, p.threads()),
             fmt::format("{} pieces of {} elements", a_pieces, piece));
        line(s, 8, fmt::format("const int row = q / {}, col = q % {} * {};", a_row, a_row, piece));
        line(s, 8, "const long long m = m0 + row, k = k0 + col;");
        line(s, 8, "const bool in = m < p.M && k < p.K;");
        line(s, 8,
             fmt::format("lm::cp_async16(as + row * {} + col, in ? A + m * {} + k : A, in ? 16 : 0);",
                         p.pitch_a, am));
        line(s, 4, "}");
        s += "}\n\n";
        return s;
    }

    // A's stage tile element by element, through any strides or from A's prologue, consecutive threads along
    // A's unit-stride axis.
    std::string a_elements_loader() const {
        const int r = rank();
        const std::string am = fmt::format("p.a_s{}", r - 2), ak = fmt::format("p.a_s{}", r - 1);
        std::string s = loader_head("elements", "a", "as");
        line(s, 4, "(void)batch; (void)n0;");
        line(s, 4,
             fmt::format("for (int q = threadIdx.x; q < {}; q += {}) {{", p.tile_m * p.tile_k, p.threads()),
             p.a_m_fastest ? "along m (A's unit stride)" : "along k");
        if (p.a_m_fastest)
            line(s, 8, fmt::format("const int row = q % {}, col = q / {};", p.tile_m, p.tile_m));
        else
            line(s, 8, fmt::format("const int row = q / {}, col = q % {};", p.tile_k, p.tile_k));
        line(s, 8, "const long long m = m0 + row, k = k0 + col;");
        if (p.a_prologue)
            line(s, 8,
                 fmt::format("as[row * {} + col] = m < p.M && k < p.K ? {} : {};", p.pitch_a,
                             detail::store_expr(
                                 p.in, fmt::format("{}_pa_element(p.pa, ({})((batch * p.M + m) * p.K + k))",
                                                   name, pa_idx)),
                             zero()),
                 "the prologue's value of A[batch, m, k]");
        else
            line(s, 8,
                 fmt::format("as[row * {} + col] = m < p.M && k < p.K ? A[m * {} + k * {}] : {};", p.pitch_a,
                             am, ak, zero()));
        line(s, 4, "}");
        s += "}\n\n";
        return s;
    }

    // B's stage tile in 16-byte cp.async pieces, along n (B's rows divide into pieces).
    std::string b_pieces_loader() const {
        const int piece = p.piece();
        const int b_pieces = p.tile_k * p.tile_n / piece, b_row = p.tile_n / piece;
        const std::string bk = fmt::format("p.b_s{}", rank() - 2);
        std::string s = loader_head("pieces", "b", "bs");
        line(s, 4, "(void)batch; (void)m0;");
        line(s, 4, fmt::format("for (int q = threadIdx.x; q < {}; q += {}) {{", b_pieces, p.threads()),
             fmt::format("{} pieces of {} elements", b_pieces, piece));
        line(s, 8, fmt::format("const int row = q / {}, col = q % {} * {};", b_row, b_row, piece));
        line(s, 8, "const long long k = k0 + row, n = n0 + col;");
        line(s, 8, "const bool in = k < p.K && n < p.N;");
        line(s, 8,
             fmt::format("lm::cp_async16(bs + row * {} + col, in ? B + k * {} + n : B, in ? 16 : 0);",
                         p.pitch_b, bk));
        line(s, 4, "}");
        s += "}\n\n";
        return s;
    }

    // A one-column B tile whose column is contiguous along k (a matrix times a vector): pieces along k.
    std::string b_column_pieces_loader() const {
        const int piece = p.piece();
        const int b_pieces = p.tile_k / piece;
        const std::string bn = fmt::format("p.b_s{}", rank() - 1);
        std::string s = loader_head("pieces", "b", "bs");
        line(s, 4, "(void)batch; (void)m0;");
        line(s, 4, fmt::format("for (int q = threadIdx.x; q < {}; q += {}) {{", b_pieces, p.threads()),
             fmt::format("{} pieces of {} consecutive k of the column", b_pieces, piece));
        line(s, 8, fmt::format("const int row = q * {};", piece));
        line(s, 8, "const long long k = k0 + row, n = n0;");
        line(s, 8, "const bool in = k < p.K && n < p.N;");
        line(s, 8, fmt::format("lm::cp_async16(bs + row, in ? B + k + n * {} : B, in ? 16 : 0);", bn),
             "B's stride along k is 1");
        line(s, 4, "}");
        s += "}\n\n";
        return s;
    }

    // B's stage tile element by element, through any strides or from B's prologue, consecutive threads along
    // B's unit-stride axis.
    std::string b_elements_loader() const {
        const int r = rank();
        const std::string bk = fmt::format("p.b_s{}", r - 2), bn = fmt::format("p.b_s{}", r - 1);
        std::string s = loader_head("elements", "b", "bs");
        line(s, 4, "(void)batch; (void)m0;");
        line(s, 4,
             fmt::format("for (int q = threadIdx.x; q < {}; q += {}) {{", p.tile_k * p.tile_n, p.threads()),
             p.b_k_fastest ? "along k (B's unit stride)" : "along n");
        if (p.b_k_fastest)
            line(s, 8, fmt::format("const int row = q % {}, col = q / {};", p.tile_k, p.tile_k));
        else
            line(s, 8, fmt::format("const int row = q / {}, col = q % {};", p.tile_n, p.tile_n));
        line(s, 8, "const long long k = k0 + row, n = n0 + col;");
        if (p.b_prologue)
            line(s, 8,
                 fmt::format("bs[row * {} + col] = k < p.K && n < p.N ? {} : {};", p.pitch_b,
                             detail::store_expr(
                                 p.in, fmt::format("{}_pb_element(p.pb, ({})((batch * p.K + k) * p.N + n))",
                                                   name, pb_idx)),
                             zero()),
                 "the prologue's value of B[batch, k, n]");
        else
            line(s, 8,
                 fmt::format("bs[row * {} + col] = k < p.K && n < p.N ? B[k * {} + n * {}] : {};", p.pitch_b,
                             bk, bn, zero()));
        line(s, 4, "}");
        s += "}\n\n";
        return s;
    }

    // `<name>_load`: both operands' loads of one K step, the pieces or the elements as p.pieces says.
    std::string load_dispatch() const {
        auto pick = [&](bool pieces, const char* operand, int bit) {
            const std::string call = fmt::format("{}_load_{}_{{}}(p, {}, {}s, batch, m0, n0, k0);", name,
                                                 operand, operand[0] == 'a' ? "A" : "B", operand);
            if (!pieces) return fmt::format("    {}\n", fmt::format(fmt::runtime(call), "elements"));
            return fmt::format("    if (p.pieces & {}) {}\n    else {}\n", bit,
                               fmt::format(fmt::runtime(call), "pieces"),
                               fmt::format(fmt::runtime(call), "elements"));
        };
        std::string s = fmt::format(
            "// The loads the runtime chose for this call's operands (p.pieces, the same for every block).\n"
            "__device__ __forceinline__ void {0}_load(const {0}_params& p, const {1}* A, const {1}* B, {1}* "
            "as, {1}* bs,\n"
            "                                       long long batch, long long m0, long long n0, long long "
            "k0) {{\n",
            name, st);
        s += pick(p.vector_a, "a", 1);
        s += pick(p.vector_b || p.vector_b_column, "b", 2);
        s += "}\n";
        return s;
    }

    // The loaders of one operand's stage buffer: 16-byte cp.async pieces (when the plan allows them) and
    // element loads through any strides, walking the operand's unit-stride axis across the threads.
    std::string loaders() const {
        std::string s = fmt::format(
            "// Stage buffers `as` (A: {} rows of {}, k fastest, pitch {}) and `bs` (B: {} rows of {}, n "
            "fastest, pitch {}) of\n"
            "// the K step at k0, zeros outside the matrices: per operand, 16-byte cp.async pieces (its row "
            "length divides\n"
            "// into pieces) or element loads through any strides (transposed, sliced, broadcast views), "
            "consecutive\n"
            "// threads walking its unit-stride axis.\n",
            p.tile_m, p.tile_k, p.pitch_a, p.tile_k, p.tile_n, p.pitch_b);
        if (p.vector_a) s += a_pieces_loader();
        s += a_elements_loader();
        if (p.vector_b) s += b_pieces_loader();
        if (p.vector_b_column) s += b_column_pieces_loader();
        s += b_elements_loader();
        s += load_dispatch();
        return s;
    }

    // One k of the thread's register tile: the A column and B row fragments from shared memory, one fma each.
    // `a4`: the A values come from the 16-byte reads a4[i] (a_read), element q of them; else from shared
    // memory.
    void k_step(std::string& s, int ind, const std::string& kk, const std::string& q = {}) const {
        line(s, ind, fmt::format("{} fa[{}], fb[{}];", acc, p.thread_m, p.thread_n));
        line(s, ind, "#pragma unroll");
        if (q.empty())
            line(s, ind,
                 fmt::format(
                     "for (int i = 0; i < {}; ++i) fa[i] = ({})lm::to_reg(as[(row0 + {} * i) * {} + {}]);",
                     p.thread_m, acc, p.lanes_m, p.pitch_a, kk),
                 p.a_read > 1 ? "4-byte reads (the last, partial step only)"
                              : "rows of a warp in distinct banks");
        else
            line(s, ind, fmt::format("for (int i = 0; i < {}; ++i) fa[i] = a4[i].v[{}];", p.thread_m, q),
                 "k + q of the row's 16-byte read");
        if (!q.empty() && p.b_column_read()) {
            line(s, ind, fmt::format("fb[0] = b4k.v[{}];", q), "k + q of the vector's 16-byte read");
        } else if (p.b_read > 1) {
            line(s, ind, "#pragma unroll");
            line(s, ind, fmt::format("for (int j = 0; j < {}; j += {}) {{", p.thread_n, p.b_read),
                 fmt::format("{} consecutive columns in one 16-byte read", p.b_read));
            line(s, ind + 4,
                 fmt::format(
                     "const lm::vec<{}, {}> b4 = lm::load_vec<{}, {}>(bs + {} * {} + col0 + {} * (j / {}));",
                     acc, p.b_read, acc, p.b_read, kk, p.pitch_b, p.col_step(), p.b_read),
                 "a quarter warp: 128 consecutive bytes");
            line(s, ind + 4, "#pragma unroll");
            line(s, ind + 4, fmt::format("for (int q4 = 0; q4 < {}; ++q4) fb[j + q4] = b4.v[q4];", p.b_read));
            line(s, ind, "}");
        } else {
            line(s, ind, "#pragma unroll");
            line(s, ind,
                 fmt::format(
                     "for (int j = 0; j < {}; ++j) fb[j] = ({})lm::to_reg(bs[{} * {} + col0 + {} * j]);",
                     p.thread_n, acc, kk, p.pitch_b, p.lanes_n),
                 "consecutive words across the lanes");
        }
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 4, "#pragma unroll");
        const std::string step = p.in == DType::Int8      ? "c[i][j] += fa[i] * fb[j];"
                                 : p.in == DType::Float64 ? "c[i][j] = __fma_rn(fa[i], fb[j], c[i][j]);"
                                                          : "c[i][j] = __fmaf_rn(fa[i], fb[j], c[i][j]);";
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j) {}", p.thread_n, step),
             p.in == DType::Int8 ? "int32 products and sums, wrapping (unsigned)"
                                 : "acc = fma(a[i, k], b[k, j], acc): one rounding");
    }

    // Tensor cores: the warp's MMA tiles over one stage (tile_k in steps of mma_k; zeros past K add nothing
    // to an int8 sum and +0 products to a float one). The fragments follow the PTX ISA's layouts for
    // m16n8k16 (two values per register) and m16n8k32 (four): lane = 4 grp + tig (the ISA's groupID and
    // threadID_in_group); A register r holds row grp + 8 (r % 2) at k = (r / 2) mk / 2 + tig per, B register
    // r column grp at k = r mk / 2 + tig per.
    void mma_step(std::string& s, int ind) const {
        if (p.in == DType::Float32) {
            tf32_step(s, ind);
            return;
        }
        const int mk = p.mma_k(), per = p.in == DType::Int8 ? 4 : 2, half = mk / 2;
        const char* mma = p.in == DType::Int8       ? "lm::mma_m16n8k32_s8"
                          : p.in == DType::BFloat16 ? "lm::mma_m16n8k16_bf16"
                                                    : "lm::mma_m16n8k16_f16";
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int kk = 0; kk < {}; kk += {}) {{", p.tile_k, mk),
             fmt::format("one mma.sync step of k = {}", mk));
        line(s, ind + 4, fmt::format("unsigned fa[{}][4], fb[{}][2];", p.frags_m(), p.frags_n()),
             "A and B fragments of the warp tile");
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int i = 0; i < {}; ++i)", p.frags_m()));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, "for (int r = 0; r < 4; ++r)");
        line(s, ind + 12,
             fmt::format("fa[i][r] = lm::load_u32(as + (wm0 + 16 * i + grp + 8 * (r % 2)) * {} + kk + {} * "
                         "(r / 2) + {} * tig);",
                         p.pitch_a, half, per),
             fmt::format("{} consecutive k of one row", per));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j)", p.frags_n()));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, "for (int r = 0; r < 2; ++r)");
        line(s, ind + 12,
             fmt::format(
                 "fb[j][r] = lm::pack_column(bs + (kk + {} * r + {} * tig) * {} + wn0 + 8 * j + grp, {});",
                 half, per, p.pitch_b, p.pitch_b),
             fmt::format("{} consecutive k of one column", per));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int i = 0; i < {}; ++i)", p.frags_m()));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8,
             fmt::format("for (int j = 0; j < {}; ++j) {}(c[i][j], fa[i], fb[j]);", p.frags_n(), mma),
             p.in == DType::Int8 ? "exact int32 sums, wrapping" : "float32 accumulators");
        line(s, ind, "}");
    }

    // TF32 and 3xTF32 (float32 operands, MatmulPlan::precision()): m16n8k8 MMAs, one value per register (A
    // register r holds row grp + 8 (r % 2) at k = 4 (r / 2) + tig, B register r column grp at k = 4 r + tig),
    // each operand read as TF32 as its fragment is read: truncated (lm::tf32_truncate), as the wgmma kernel's
    // tensor cores read it, for TF32; 3xTF32 rounds the big part to nearest and keeps the small part tf32(x -
    // big) and takes a_small b_big + a_big b_small + a_big b_big, the small terms first; the cross terms take
    // the big parts of Inf and NaN as 0 (lm::tf32_split), so only a_big b_big carries them.
    void tf32_step(std::string& s, int ind) const {
        const bool split = p.precision() == ProductPrecision::TF32x3;
        const std::string a_at =
            fmt::format("as[(wm0 + 16 * i + grp + 8 * (r % 2)) * {} + kk + 4 * (r / 2) + tig]", p.pitch_a);
        const std::string b_at = fmt::format("bs[(kk + 4 * r + tig) * {} + wn0 + 8 * j + grp]", p.pitch_b);
        if (split) {
            // Unrolled, the compiler hoisted the next steps' splits and spilled (255 registers); one step at
            // a time it keeps 170 and no spills.
            line(s, ind, "// One step at a time: unrolled, the next steps' splits are hoisted and spill.");
            line(s, ind, "#pragma unroll 1");
            line(s, ind, fmt::format("for (int kk = 0; kk < {}; kk += 8) {{", p.tile_k),
                 "one step of k = 8: three mma.sync per MMA tile");
            line(s, ind + 4,
                 fmt::format("unsigned b_big[{0}][2], b_cross[{0}][2], b_small[{0}][2];", p.frags_n()),
                 "the warp tile's B fragments split (lm::tf32_split)");
        } else {
            line(s, ind, "#pragma unroll");
            line(s, ind, fmt::format("for (int kk = 0; kk < {}; kk += 8) {{", p.tile_k),
                 "one mma.sync step of k = 8");
            line(s, ind + 4, fmt::format("unsigned fb[{}][2];", p.frags_n()),
                 "TF32 B fragments of the warp tile");
        }
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j)", p.frags_n()));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, "for (int r = 0; r < 2; ++r)");
        line(s, ind + 12,
             split ? fmt::format("lm::tf32_split({}, b_big[j][r], b_cross[j][r], b_small[j][r]);", b_at)
                   : fmt::format("fb[j][r] = lm::tf32_truncate({});", b_at),
             "k rows 8 words apart mod 32: distinct banks");
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int i = 0; i < {}; ++i) {{", p.frags_m()),
             "one A fragment at a time: fewer registers");
        line(s, ind + 8, split ? "unsigned a_big[4], a_cross[4], a_small[4];" : "unsigned fa[4];");
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, "for (int r = 0; r < 4; ++r)");
        line(s, ind + 12,
             split ? fmt::format("lm::tf32_split({}, a_big[r], a_cross[r], a_small[r]);", a_at)
                   : fmt::format("fa[r] = lm::tf32_truncate({});", a_at),
             "rows of a warp in distinct banks");
        line(s, ind + 8, "#pragma unroll");
        if (split) {
            line(s, ind + 8, fmt::format("for (int j = 0; j < {}; ++j) {{", p.frags_n()),
                 "the small terms first");
            line(s, ind + 12, "lm::mma_m16n8k8_tf32(c[i][j], a_small, b_cross[j]);",
                 "a_small b_big (Inf and NaN as 0)");
            line(s, ind + 12, "lm::mma_m16n8k8_tf32(c[i][j], a_cross, b_small[j]);",
                 "a_big b_small (Inf and NaN as 0)");
            line(s, ind + 12, "lm::mma_m16n8k8_tf32(c[i][j], a_big, b_big[j]);",
                 "a_big b_big: carries Inf and NaN");
            line(s, ind + 8, "}");
        } else {
            line(s, ind + 8,
                 fmt::format("for (int j = 0; j < {}; ++j) lm::mma_m16n8k8_tf32(c[i][j], fa, fb[j]);",
                             p.frags_n()),
                 "float32 accumulators");
        }
        line(s, ind + 4, "}");
        line(s, ind, "}");
    }

    // CUDA cores: the block-tile column of a thread's register column `j`.
    std::string column(const std::string& j) const {
        if (p.b_read == 1) return fmt::format("col0 + {} * {}", p.lanes_n, j);
        return fmt::format("col0 + {} * ({} / {}) + {} % {}", p.col_step(), j, p.b_read, j, p.b_read);
    }

    std::string add(const std::string& x, const std::string& y) const {
        if (p.in == DType::Int8) return fmt::format("{} + {}", x, y);
        return fmt::format("{}({}, {})", p.in == DType::Float64 ? "__dadd_rn" : "__fadd_rn", x, y);
    }

    std::string value_of(const std::string& c) const {
        switch (p.out) {
            case DType::Float16:
                return fmt::format("lm::round_f16({})", c);
            case DType::BFloat16:
                return fmt::format("lm::round_bf16({})", c);
            case DType::Int32:
                return fmt::format("(int){}", c);
            default:
                return c;
        }
    }

    // The stage pipeline over the K steps from k0 to kend: the first stages - 1 steps in flight, then per
    // step a wait, a barrier, the refill of the buffers the previous step read, and `body` on this step's
    // buffers.
    template <class Body>
    void pipeline(std::string& s, int ind, const Body& body) const {
        line(s, ind, fmt::format("const int steps = (int)((kend - k0 + {}) / {});", p.tile_k - 1, p.tile_k),
             fmt::format("K steps of {}", p.tile_k));
        auto load_of = [&](const std::string& stage, const std::string& step) {
            return fmt::format(
                "{}_load(p, A, B, as_all + {} * {}, bs_all + {} * {}, batch, m0, n0, k0 + (long long)({}) * "
                "{});",
                name, stage, p.tile_m * p.pitch_a, stage, p.tile_k * p.pitch_b, step, p.tile_k);
        };
        line(s, ind, fmt::format("for (int s = 0; s < {}; ++s) {{", p.stages - 1),
             fmt::format("the pipeline's first {} K steps in flight", p.stages - 1));
        line(s, ind + 4, fmt::format("if (s < steps) {}", load_of("s", "s")));
        line(s, ind + 4, "lm::cp_async_commit();",
             "a group per step, empty or not, so the waits count steps");
        line(s, ind, "}");
        line(s, ind, "for (int t = 0; t < steps; ++t) {");
        line(s, ind + 4, fmt::format("lm::cp_async_wait<{}>();", p.stages - 2),
             "step t's copies have landed");
        line(s, ind + 4, "__syncthreads();", "... for every thread, and step t - 1's buffers are free");
        line(s, ind + 4, fmt::format("if (t + {} < steps) {{", p.stages - 1),
             fmt::format("refill the buffers of step t - 1 with step t + {}", p.stages - 1));
        line(s, ind + 8,
             load_of(fmt::format("((t + {}) % {})", p.stages - 1, p.stages),
                     fmt::format("t + {}", p.stages - 1)));
        line(s, ind + 4, "}");
        line(s, ind + 4, "lm::cp_async_commit();");
        line(s, ind + 4,
             fmt::format("const {}* as = as_all + (t % {}) * {};", st, p.stages, p.tile_m * p.pitch_a));
        line(s, ind + 4,
             fmt::format("const {}* bs = bs_all + (t % {}) * {};", st, p.stages, p.tile_k * p.pitch_b));
        body(s, ind + 4);
        line(s, ind, "}");
        line(s, ind, "lm::cp_async_wait<0>();");
        line(s, ind, "__syncthreads();", "every buffer read before the next copies");
    }

    // CUDA cores: one K step on the stage buffers `as` and `bs` (step t of the K range from k0 to kend):
    // every k of the step that exists, ascending, one fma each.
    void cuda_core_step(std::string& b, int in) const {
        line(b, in,
             fmt::format("const long long kn = min((long long){}, kend - (k0 + (long long)t * {}));",
                         p.tile_k, p.tile_k),
             "the k of this step that exist");
        line(b, in, fmt::format("if (kn == {}) {{", p.tile_k));
        line(b, in + 4, "#pragma unroll");
        if (p.a_read > 1) {
            line(b, in + 4, fmt::format("for (int k4 = 0; k4 < {}; k4 += {}) {{", p.tile_k, p.a_read),
                 "ascending k");
            line(b, in + 8, fmt::format("lm::vec<{}, {}> a4[{}];", acc, p.a_read, p.thread_m));
            line(b, in + 8, "#pragma unroll");
            line(b, in + 8,
                 fmt::format("for (int i = 0; i < {}; ++i) a4[i] = lm::load_vec<{}, {}>(as + (row0 + {} * i) "
                             "* {} + k4);",
                             p.thread_m, acc, p.a_read, p.lanes_m, p.pitch_a),
                 fmt::format("{} k of a row in one 16-byte read: a warp's {} rows meet in no bank", p.a_read,
                             p.lanes_m));
            if (p.b_column_read())
                line(b, in + 8,
                     fmt::format("const lm::vec<{}, {}> b4k = lm::load_vec<{}, {}>(bs + k4);", acc, p.a_read,
                                 acc, p.a_read),
                     "the same 4 k of the vector, one broadcast read");
            line(b, in + 8, "#pragma unroll");
            line(b, in + 8, fmt::format("for (int q = 0; q < {}; ++q) {{", p.a_read));
            line(b, in + 12, "const int kk = k4 + q;");
            k_step(b, in + 12, "kk", "q");
            line(b, in + 8, "}");
        } else {
            line(b, in + 4, fmt::format("for (int kk = 0; kk < {}; ++kk) {{", p.tile_k), "ascending k");
            k_step(b, in + 8, "kk");
        }
        line(b, in + 4, "}");
        line(b, in, "} else {");
        line(b, in + 4, "for (int kk = 0; kk < (int)kn; ++kk) {",
             "the last, partial step: no padding term enters a sum");
        k_step(b, in + 8, "kk");
        line(b, in + 4, "}");
        line(b, in, "}");
    }

    // CUDA cores: a loop at `ind` over this thread's register tile of outputs that exist, `body` at ind + 8
    // with i, j, m, n and `e`, the output's flat index over the batches (its workspace slot).
    void each_output(std::string& s, int ind, const std::function<void(int)>& body) const {
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j) {{", p.thread_n));
        line(s, ind + 8,
             fmt::format("const long long m = m0 + row0 + {} * i, n = n0 + {};", p.lanes_m, column("j")));
        line(s, ind + 8, "if (m >= p.M || n >= p.N) continue;");
        line(s, ind + 8, "const long long e = (batch * p.M + m) * p.N + n;");
        body(ind + 8);
        line(s, ind + 4, "}");
    }

    // CUDA cores: the chunks of K, each through the pipeline from +0 with one fma per k, then onto the tree.
    void cuda_core_loop(std::string& s, int ind) const {
        line(s, ind, fmt::format("{} c[{}][{}];", acc, p.thread_m, p.thread_n), "the accumulators");
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j) c[i][j] = 0;", p.thread_n),
             "K = 0: the empty sum, +0");
        if (p.split_k) {
            line(s, ind,
                 "const long long c_begin = (long long)blockIdx.z * p.group_chunks, c_end = min(p.chunks, "
                 "c_begin + p.group_chunks);",
                 "this block's group of chunks: an aligned subtree");
            line(s, ind, "for (long long chunk = c_begin; chunk < c_end; ++chunk) {",
                 fmt::format("chunks of {} along K (docs/semantics.md, section 12)", kProductChunk));
        } else {
            line(s, ind, "for (long long chunk = 0; chunk < p.chunks; ++chunk) {",
                 fmt::format("chunks of {} along K (docs/semantics.md, section 12)", kProductChunk));
        }
        line(s, ind + 4,
             fmt::format("const long long k0 = chunk * {}, kend = min(p.K, k0 + {});", kProductChunk,
                         kProductChunk));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, fmt::format("for (int j = 0; j < {}; ++j) c[i][j] = 0;", p.thread_n),
             "each chunk from +0");
        pipeline(s, ind + 4, [&](std::string& b, int in) { cuda_core_step(b, in); });
        if (p.chunked) {
            // The chunk's place in the order: its index, or (split K) its index within the block's group.
            const std::string place = p.split_k ? "g" : "chunk";
            line(s, ind + 4,
                 "// The chunk's partial onto the pairwise tree of each output (section 12, step 3): the "
                 "stack holds the");
            if (p.split_k) {
                line(s, ind + 4,
                     "// binary digits of the chunk's place in its group; a partial merges (older on the "
                     "left) with each");
                line(s, ind + 4,
                     "// completed subtree below it, so the group's last partial is the group's subtree.");
                line(s, ind + 4, "const long long g = chunk - c_begin;", "the chunk within its group");
            } else {
                line(s, ind + 4,
                     "// binary digits of `chunk`; a partial merges (older on the left) with each completed "
                     "subtree below it.");
            }
            line(s, ind + 4,
                 fmt::format("const bool last = chunk + 1 == {};", p.split_k ? "c_end" : "p.chunks"));
            line(s, ind + 4,
                 fmt::format("const int merges = last ? __popcll({0}) : __ffsll(~{0}) - 1;", place),
                 "the last partial closes the whole stack");
            line(s, ind + 4, fmt::format("const int depth = __popcll({});", place),
                 "partials on the stack before this one");
            line(s, ind + 4, "const long long plane = p.batches * p.M * p.N;");
            if (p.split_k)
                line(s, ind + 4,
                     fmt::format("{}* ws = static_cast<{}*>(p.ws) + (long long)blockIdx.z * (64 - "
                                 "__clzll(p.group_chunks)) * plane;",
                                 acc, acc),
                     "the group's stack");
            else
                line(s, ind + 4, fmt::format("{}* ws = static_cast<{}*>(p.ws);", acc, acc));
            each_output(s, ind + 4, [&](int in) {
                line(s, in, fmt::format("{} v = c[i][j];", acc));
                line(s, in, "int top = depth;");
                line(s, in,
                     fmt::format("for (int k = 0; k < merges; ++k) {{ --top; v = {}; }}",
                                 add("ws[top * plane + e]", "v")));
                line(s, in, "if (!last) ws[top * plane + e] = v;", "pushed: a subtree of the tree");
                line(s, in, "c[i][j] = v;");
            });
        }
        line(s, ind, "}");
        if (p.split_k) split_k_finish(s, ind);
    }

    // split_k: the group's partial to the workspace, counted on the tile's counter; the block that completes
    // the count combines the groups' partials in the pairwise tree over groups (section 12, step 3: each
    // group is an aligned subtree, an odd last one carried up) and goes on to the epilogue, the others to the
    // next entry.
    void split_k_finish(std::string& s, int ind) const {
        line(s, ind, "{", "the groups' partials: the block that completes the tile combines them");
        line(s, ind + 4, "const long long plane = p.batches * p.M * p.N;");
        line(s, ind + 4,
             fmt::format("{}* gp = static_cast<{}*>(p.ws) + (long long)gridDim.z * (64 - "
                         "__clzll(p.group_chunks)) * plane;",
                         acc, acc),
             "after the groups' stacks: one partial per group");
        each_output(s, ind + 4, [&](int in) { line(s, in, "gp[blockIdx.z * plane + e] = c[i][j];"); });
        line(s, ind + 4, "__threadfence();", "the partials visible before they are counted");
        line(s, ind + 4, "__syncthreads();");
        line(s, ind + 4, "__shared__ bool lm_last;");
        line(s, ind + 4, "if (threadIdx.x == 0) {");
        line(s, ind + 8,
             "unsigned* count = static_cast<unsigned*>(p.count) + (batch * gridDim.x + blockIdx.x);",
             "the tile's counter");
        line(s, ind + 8, "lm_last = atomicAdd(count, 1u) + 1 == gridDim.z;");
        line(s, ind + 8, "if (lm_last) *count = 0;", "every group counted: zero again for the next launch");
        line(s, ind + 4, "}");
        line(s, ind + 4, "__syncthreads();");
        line(s, ind + 4, "if (!lm_last) continue;", "another group's block completes this tile");
        line(s, ind + 4, "__threadfence();", "the other groups' partials, read through L2");
        each_output(s, ind + 4, [&](int in) {
            line(s, in, fmt::format("{} v[16];", acc), "the groups' partials (at most 16 groups)");
            line(s, in, "int live = (int)gridDim.z;", "values on this level of the tree");
            line(s, in, "for (int g = 0; g < live; ++g) v[g] = __ldcg(gp + g * plane + e);");
            line(s, in, "for (; live > 1; live = (live + 1) / 2) {",
                 "the pairwise tree: (0, 1), (2, 3), ..., an odd last carried up");
            line(
                s, in + 4,
                fmt::format("for (int g = 0; g + 1 < live; g += 2) v[g / 2] = {};", add("v[g]", "v[g + 1]")));
            line(s, in + 4, "if (live % 2) v[live / 2] = v[live - 1];");
            line(s, in, "}");
            line(s, in, "c[i][j] = v[0];");
        });
        line(s, ind, "}");
    }

    // Tensor cores: all of K through the pipeline, one mma.sync per MMA tile and step.
    void tensor_core_loop(std::string& s, int ind) const {
        line(s, ind, fmt::format("{} c[{}][{}][4];", acc, p.frags_m(), p.frags_n()),
             "the accumulators: per MMA tile, rows grp and grp + 8, columns 2 tig and 2 tig + 1");
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.frags_m()));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j)", p.frags_n()));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, "for (int r = 0; r < 4; ++r) c[i][j][r] = 0;", "K = 0: +0");
        line(s, ind, "{");
        line(s, ind + 4, "const long long k0 = 0, kend = p.K;",
             "one pass over K: the bound of section 12 holds for any order");
        pipeline(s, ind + 4, [&](std::string& b, int in) { mma_step(b, in); });
        line(s, ind, "}");
    }

    // The epilogue on the accumulators: the product's value in its dtype, then the fused elementwise work.
    void epilogue(std::string& s, int ind, const std::string& ep_idx) const {
        if (p.staged_epilogue) {
            staged_epilogue(s, ind, ep_idx);
            return;
        }
        line(s, ind,
             "// The epilogue on the accumulators: the product's value in its dtype, then the fused "
             "elementwise work.");
        const std::string element =
            fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {});", name, ep_idx,
                        value_of(p.tensor_cores ? "c[i][j][r]" : "c[i][j]"));
        line(s, ind, "#pragma unroll");
        if (p.tensor_cores) {
            line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.frags_m()));
            line(s, ind + 4, "#pragma unroll");
            line(s, ind + 4, fmt::format("for (int j = 0; j < {}; ++j)", p.frags_n()));
            line(s, ind + 8, "#pragma unroll");
            line(s, ind + 8, "for (int r = 0; r < 4; ++r) {");
            line(s, ind + 12,
                 "const long long m = m0 + wm0 + 16 * i + grp + 8 * (r / 2), n = n0 + wn0 + 8 * j + 2 * tig "
                 "+ r % 2;");
            line(s, ind + 12, "if (m < p.M && n < p.N)");
            line(s, ind + 16, element, "element (batch, m, n) of the product's shape");
            line(s, ind + 8, "}");
            return;
        }
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i) {{", p.thread_m));
        line(s, ind + 4, fmt::format("const long long m = m0 + row0 + {} * i;", p.lanes_m));
        line(s, ind + 4, "if (m >= p.M) continue;");
        int in = ind + 4;
        if (p.vector_epilogue > 0) {
            const int W = p.vector_epilogue;
            line(s, ind + 4, "if (p.pieces & 4) {",
                 fmt::format("the epilogue's pointers aligned and N whole vectors: {} columns at once", W));
            line(s, ind + 8, "#pragma unroll");
            line(s, ind + 8, fmt::format("for (int j = 0; j < {}; j += {}) {{", p.thread_n, W));
            line(s, ind + 12, fmt::format("const long long n = n0 + {};", column("j")),
                 fmt::format("{} consecutive columns", W));
            line(s, ind + 12, "if (n >= p.N) continue;");
            line(s, ind + 12,
                 fmt::format("{}_ep_element{}(p.ep, ({})((batch * p.M + m) * p.N + n), {});", name, W, ep_idx,
                             vector_of("c[i][j", W)),
                 "elements (batch, m, n .. n + 3)");
            line(s, ind + 8, "}");
            line(s, ind + 8, "continue;");
            line(s, ind + 4, "}");
        }
        line(s, in, "#pragma unroll");
        line(s, in, fmt::format("for (int j = 0; j < {}; ++j) {{", p.thread_n));
        line(s, in + 4, fmt::format("const long long n = n0 + {};", column("j")));
        line(s, in + 4, "if (n >= p.N) continue;");
        line(s, in + 4, element, "element (batch, m, n) of the product's shape");
        line(s, in, "}");
        line(s, ind, "}");
    }

    // `lm::vec<acc, W>{{c[i][j], c[i][j + 1], ...}}` of the accumulators named `prefix` + "]" (j + 0), ...
    std::string vector_of(const std::string& prefix, int W) const {
        std::vector<std::string> lanes;
        for (int q = 0; q < W; ++q)
            lanes.push_back(q == 0 ? prefix + "]" : fmt::format("{} + {}]", prefix, q));
        return fmt::format("lm::vec<{}, {}>{{{{{}}}}}", acc, W, fmt::join(lanes, ", "));
    }

    // The epilogue through shared memory (staged_epilogue): the accumulators go to a tile of tile_m rows of
    // epilogue_pitch() in the stage buffers (read by every thread already), then the threads walk the tile
    // in row-major order, consecutive threads taking consecutive columns, so the epilogue's loads and stores
    // are whole 128-byte lines per warp. The values pass through shared memory unchanged: the same bits.
    void staged_epilogue(std::string& s, int ind, const std::string& ep_idx) const {
        const int pitch = p.epilogue_pitch(), per_thread = p.tile_m * p.tile_n / p.threads();
        line(s, ind,
             "// The epilogue on the accumulators, through shared memory: the product's value in its dtype, "
             "then the fused");
        line(s, ind, "// elementwise work, consecutive threads on consecutive columns.");
        line(s, ind, "__syncthreads();", "every thread's last reads of the stage buffers are done");
        line(s, ind, fmt::format("{}* ct = reinterpret_cast<{}*>(as_all);", acc, acc),
             fmt::format("the block's outputs: {} rows of {}", p.tile_m, pitch));
        line(s, ind, "#pragma unroll");
        line(s, ind, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int j = 0; j < {}; j += {})", p.thread_n, p.b_read));
        line(s, ind + 8,
             fmt::format("lm::store_vec<{}, {}>(ct + (row0 + {} * i) * {} + {}, lm::vec<{}, {}>{{{{c[i][j], "
                         "c[i][j + 1], c[i][j + 2], c[i][j + 3]}}}});",
                         acc, p.b_read, p.lanes_m, pitch, column("j"), acc, p.b_read),
             "a quarter warp: 128 consecutive bytes");
        line(s, ind, "__syncthreads();");
        int in = ind;
        if (p.vector_epilogue > 0) {
            const int W = p.vector_epilogue;
            line(s, ind, "if (p.pieces & 4) {",
                 fmt::format("the epilogue's pointers aligned and N whole vectors: a thread's {} consecutive "
                             "columns at once",
                             W));
            line(s, ind + 4, "#pragma unroll 2");
            line(s, ind + 4, fmt::format("for (int r = 0; r < {}; ++r) {{", per_thread / W));
            line(s, ind + 8,
                 fmt::format("const int e = (threadIdx.x + {} * r) * {}, row = e / {}, col = e % {};",
                             p.threads(), W, p.tile_n, p.tile_n),
                 fmt::format("a warp: {} consecutive bytes of a row", 32 * W * 4));
            line(s, ind + 8, "const long long m = m0 + row, n = n0 + col;");
            line(s, ind + 8, "if (m < p.M && n < p.N)",
                 fmt::format("N is whole vectors: n .. n + {} all in the product", W - 1));
            line(s, ind + 12,
                 fmt::format("{}_ep_element{}(p.ep, ({})((batch * p.M + m) * p.N + n), lm::load_vec<{}, "
                             "{}>(ct + row * {} + col));",
                             name, W, ep_idx, acc, W, pitch),
                 "elements (batch, m, n .. n + 3)");
            line(s, ind + 4, "}");
            line(s, ind, "} else {");
            in = ind + 4;
        }
        line(s, in, "#pragma unroll 4");
        line(s, in, fmt::format("for (int r = 0; r < {}; ++r) {{", per_thread));
        line(s, in + 4,
             fmt::format("const int e = threadIdx.x + {} * r, row = e / {}, col = e % {};", p.threads(),
                         p.tile_n, p.tile_n));
        line(s, in + 4, "const long long m = m0 + row, n = n0 + col;");
        line(s, in + 4, "if (m < p.M && n < p.N)");
        line(s, in + 8,
             fmt::format("{}_ep_element(p.ep, ({})((batch * p.M + m) * p.N + n), {});", name, ep_idx,
                         value_of(fmt::format("ct[row * {} + col]", pitch))),
             "element (batch, m, n) of the product's shape");
        line(s, in, "}");
        if (p.vector_epilogue > 0) line(s, ind, "}");
        line(s, ind, "__syncthreads();", "the tile read by every thread before the stage buffers fill again");
    }

    // The kernel: one entry point for every choice of loads (p.pieces picks the loaders), its body inlined.
    std::string kernel(const std::string& ep_idx) const {
        const std::string bounds = p.blocks_per_sm > 1 ? fmt::format("{}, {}", p.threads(), p.blocks_per_sm)
                                                       : std::to_string(p.threads());
        std::string s = fmt::format(
            "extern \"C\" __global__ void __launch_bounds__({}) {}(const __grid_constant__ {}_params p) {{\n",
            bounds, name, name);
        detail::write_kernel_prologue(s, true, 72);
        line(s, 4, fmt::format("{}* as_all = reinterpret_cast<{}*>({}_smem);", st, st, name),
             fmt::format("{} stages of A, then {} of B", p.stages, p.stages));
        line(s, 4, fmt::format("{}* bs_all = as_all + {};", st, p.stages * p.tile_m * p.pitch_a));
        line(s, 4, "const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
        if (p.tensor_cores) {
            line(s, 4,
                 fmt::format("const int wm0 = warp / {} * {}, wn0 = warp % {} * {};", p.warps_n,
                             16 * p.frags_m(), p.warps_n, 8 * p.frags_n()),
                 "the warp's tile in the block's");
            line(s, 4, "const int grp = lane / 4, tig = lane % 4;",
                 "the lane's group and thread in the MMA fragments");
        } else {
            line(s, 4,
                 fmt::format("const int row0 = warp / {} * {} + lane / {};", p.warps_n,
                             p.lanes_m * p.thread_m, p.lanes_n),
                 fmt::format("this thread's first row in the tile (then every {})", p.lanes_m));
            if (p.b_read > 1)
                line(s, 4,
                     fmt::format("const int col0 = warp % {} * {} + lane % {} * {};", p.warps_n,
                                 p.lanes_n * p.thread_n, p.lanes_n, p.b_read),
                     fmt::format("this thread's first column (then groups of {} every {})", p.b_read,
                                 p.col_step()));
            else
                line(s, 4,
                     fmt::format("const int col0 = warp % {} * {} + lane % {};", p.warps_n,
                                 p.lanes_n * p.thread_n, p.lanes_n),
                     fmt::format("this thread's first column (then every {})", p.lanes_n));
        }
        line(s, 4, fmt::format("const long long tiles_n = (p.N + {}) / {};", p.tile_n - 1, p.tile_n));
        line(s, 4, fmt::format("const long long m0 = (long long)(blockIdx.x / tiles_n) * {};", p.tile_m),
             "the block's tile");
        line(s, 4, fmt::format("const long long n0 = (long long)(blockIdx.x % tiles_n) * {};", p.tile_n));
        if (p.batch_pipelined) {
            batch_pipeline(s, 4, ep_idx);
            s += "}\n";
            return s;
        }
        line(s, 4, "for (long long batch = blockIdx.y; batch < p.batches; batch += gridDim.y) {");
        batch_offsets(s, 8);
        if (p.tensor_cores)
            tensor_core_loop(s, 8);
        else
            cuda_core_loop(s, 8);
        epilogue(s, 8, ep_idx);
        line(s, 4, "}");
        s += "}\n";
        return s;
    }

    // CUDA cores, K in one step (batch_pipelined): the block walks its batch entries, the next entry's tiles
    // copying into the other stage while this one's are multiplied and stored. K is at most tile_k, so one
    // chunk and one step per entry; the order per output is the same fma chain.
    void batch_pipeline(std::string& s, int ind, const std::string& ep_idx) const {
        auto load_of = [&](const std::string& stage, const std::string& batch, const std::string& sfx) {
            return fmt::format("{}_load(p, A{}, B{}, as_all + {} * {}, bs_all + {} * {}, {}, m0, n0, 0);",
                               name, sfx, sfx, stage, p.tile_m * p.pitch_a, stage, p.tile_k * p.pitch_b,
                               batch);
        };
        line(s, ind,
             "// The batch entries blockIdx.y, + gridDim.y, ...: entry it + 1 copies into stage (it + 1) % 2 "
             "while entry it");
        line(s, ind,
             "// is multiplied from stage it % 2 (K is one step, so a stage holds all of an entry's K).");
        line(s, ind, "long long batch = blockIdx.y;");
        line(s, ind, "if (batch < p.batches) {");
        batch_offsets(s, ind + 4, "batch", "0");
        line(s, ind + 4, load_of("0", "batch", "0"));
        line(s, ind, "}");
        line(s, ind, "lm::cp_async_commit();");
        line(s, ind, "for (int it = 0; batch < p.batches; batch += gridDim.y, ++it) {");
        line(s, ind + 4, "const long long next = batch + gridDim.y;");
        line(s, ind + 4, "if (next < p.batches) {",
             "the next entry's tiles, in flight during this one's products");
        batch_offsets(s, ind + 8, "next", "1");
        line(s, ind + 8, load_of("((it + 1) % 2)", "next", "1"));
        line(s, ind + 4, "}");
        line(s, ind + 4, "lm::cp_async_commit();",
             "a group per entry, empty or not, so the wait counts entries");
        line(s, ind + 4, "lm::cp_async_wait<1>();", "this entry's copies have landed");
        line(s, ind + 4, "__syncthreads();", "... for every thread");
        line(s, ind + 4, fmt::format("const {}* as = as_all + (it % 2) * {};", st, p.tile_m * p.pitch_a));
        line(s, ind + 4, fmt::format("const {}* bs = bs_all + (it % 2) * {};", st, p.tile_k * p.pitch_b));
        line(s, ind + 4, fmt::format("{} c[{}][{}];", acc, p.thread_m, p.thread_n), "the accumulators");
        line(s, ind + 4, "#pragma unroll");
        line(s, ind + 4, fmt::format("for (int i = 0; i < {}; ++i)", p.thread_m));
        line(s, ind + 8, "#pragma unroll");
        line(s, ind + 8, fmt::format("for (int j = 0; j < {}; ++j) c[i][j] = 0;", p.thread_n),
             "one chunk from +0 (K = 0: the empty sum)");
        line(s, ind + 4, "{");
        line(s, ind + 8, "const long long k0 = 0, kend = p.K;", "all of K: one step");
        line(s, ind + 8, "const int t = 0;");
        cuda_core_step(s, ind + 8);
        line(s, ind + 4, "}");
        epilogue(s, ind + 4,
                 ep_idx);  // from the registers: batch-pipelined kernels do not stage their epilogue
        line(s, ind + 4, "__syncthreads();",
             "this stage read by every thread before entry it + 2 refills it");
        line(s, ind, "}");
        line(s, ind, "lm::cp_async_wait<0>();", "no copy outstanding at exit");
    }
};

std::string acc_type(DType in) {
    switch (in) {
        case DType::Float64:
            return "double";
        case DType::Int8:
            return "unsigned";
        default:
            return "float";
    }
}

}  // namespace

KernelSource emit_matmul(std::string_view user_name, const PlannedMatmul& pm) {
    KernelSource ks;
    ks.user_name = std::string(user_name);
    ks.name = kernel_name(user_name);
    ks.scalar_entry = ks.name;  // one entry point: the loads are the parameter `pieces`
    ks.plan = pm.plan.epilogue;
    ks.param_bytes = pm.plan.params.size;
    std::string parts;  // the prologues' pieces
    std::string pa_idx = "int", pb_idx = "int";
    for (int which : {0, 1}) {
        if (!(which == 0 ? pm.plan.a_prologue : pm.plan.b_prologue)) continue;
        const detail::EpiloguePart pro =
            detail::prologue_part(ks.name + (which == 0 ? "_pa" : "_pb"), pm.product->operand_ptr(which),
                                  which == 0 ? pm.plan.prologue_a : pm.plan.prologue_b);
        (which == 0 ? pa_idx : pb_idx) = pro.idx;
        parts += pro.params_struct + '\n' + pro.body + '\n' + pro.element + '\n';
    }
    MatmulEmitter em{pm,     pm.plan, ks.name, std::string(storage_type(pm.plan.in)), acc_type(pm.plan.in),
                     pa_idx, pb_idx};
    const detail::EpiloguePart ep =
        detail::epilogue_part(ks.name + "_ep", pm.epilogue_outputs, pm.plan.epilogue, pm.plan.acc_site,
                              pm.plan.staged_epilogue || pm.plan.wgmma, pm.plan.vector_epilogue > 0);
    std::string& s = ks.kernel;
    s += detail::banner("matmul", ks.name, user_name,
                        pm.plan.to_string() + "\nepilogue: " + pm.plan.epilogue.describe(false));
    if (pm.plan.wgmma)
        s += fmt::format("// entry point: {} (compiled for sm_90a: wgmma and setmaxnreg)\n\n",
                         ks.scalar_entry);
    else
        s += fmt::format(
            "// entry point: {} (the loads, 16-byte pieces or elements per operand, are the parameter "
            "`pieces`)\n\n",
            ks.scalar_entry);
    s += parts;
    s += ep.params_struct;
    s += '\n';
    s += em.params_struct();
    s += '\n';
    s += ep.body;
    s += '\n';
    s += ep.element;
    s += '\n';
    if (pm.plan.wgmma) {
        ks.arch_specific = true;  // wgmma and setmaxnreg: sm_90a
        s += fmt::format(
            "extern __shared__ __align__(1024) unsigned char {}_smem[];  // {} bytes: the stage ring and its "
            "mbarriers\n\n",
            ks.name, pm.plan.shared_bytes());
        s += detail::wgmma_mma_function(pm.plan, ks.name);
        s += '\n';
        s += detail::wgmma_kernel(pm, ks.name, ep.idx, [&](const std::string& c) { return em.value_of(c); });
        ks.source = fmt::format("{}\n{}", prelude_source(), ks.kernel);
        return ks;
    }
    s += fmt::format(
        "extern __shared__ __align__(16) unsigned char {}_smem[];  // {} bytes: the stage buffers\n\n",
        ks.name, pm.plan.shared_bytes());
    s += em.loaders();
    s += '\n';
    s += em.kernel(ep.idx);
    ks.source = fmt::format("{}\n{}", prelude_source(), ks.kernel);
    return ks;
}

}  // namespace loom::codegen

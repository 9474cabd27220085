// The CUDA emitter of tiled kernels (tile_plan.hpp): the pointwise kernel's parameter struct and body, and
// one entry point `<name>_tile` in which a block computes one tile of the iteration space.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../plan/pointwise_graph.hpp"
#include "emit_internal.hpp"
#include "loom/codegen/cuda/emit.hpp"
#include "loom/codegen/cuda/prelude.hpp"
#include "loom/codegen/plan/names.hpp"
#include "loom/ir/error.hpp"

namespace loom::codegen {

namespace {

void line(std::string& s, int indent, std::string_view code, std::string_view comment = {}) {
    detail::write_line(s, indent, code, comment, 60);
}

struct TileEmitter {
    const PointwisePlan& pw;
    const TilePlan& tp;
    const detail::PointwisePart& part;
    std::string name;
    std::string idx;
    int R = 0, a = 0, b = 0;
    int row_steps = 0,
        col_steps = 0;  // per thread: rows (one per warp per step) and columns (one per lane per step)

    int staged_number(std::size_t site) const {
        for (std::size_t k = 0; k < tp.staged.size(); ++k)
            if (tp.staged[k].site == static_cast<int>(site)) return static_cast<int>(k);
        return -1;
    }
    // The halo tile (index into tp.halos) and the tap number within it of a site read from one, or {-1, -1}.
    std::pair<int, int> halo_of(std::size_t site) const {
        for (std::size_t h = 0; h < tp.halos.size(); ++h)
            for (std::size_t k = 0; k < tp.halos[h].sites.size(); ++k)
                if (tp.halos[h].sites[k] == static_cast<int>(site))
                    return {static_cast<int>(h), static_cast<int>(k)};
        return {-1, -1};
    }
    bool direct(std::size_t site) const {
        const OperandPlan& o = pw.loads[site];
        return staged_number(site) < 0 && halo_of(site).first < 0 && !o.index && o.access != Access::Scalar;
    }
    // The flat (row-major) index of the element at i0 .. i<R-1>.
    std::string flat() const {
        std::string e = "i0";
        for (int d = 1; d < R; ++d) e = fmt::format("{} * p.ext{} + i{}", d == 1 ? e : "(" + e + ")", d, d);
        return e;
    }
    // Whether the direct loads (loads) or the outputs (!loads) use the flat index.
    bool needs_flat(bool loads) const {
        if (loads) {
            for (std::size_t k = 0; k < pw.loads.size(); ++k)
                if (pw.loads[k].access == Access::Contiguous && direct(k)) return true;
            return false;
        }
        for (const OperandPlan& o : pw.loads)  // an index computed in the compute loop
            if (o.index && o.access == Access::Contiguous) return true;
        for (const OperandPlan& o : pw.outputs)
            if (o.access == Access::Contiguous) return true;
        return false;
    }
    // Where output o is stored: the flat index, or a strided view's own index map.
    std::string output_offset(std::size_t o) const {
        const OperandPlan& op = pw.outputs[o];
        if (op.access == Access::Contiguous) return "e";
        std::vector<std::string> terms;
        for (int d = 0; d < R; ++d) {
            if (!(op.dim_mask >> d & 1u)) continue;
            if (op.unit_inner && d == R - 1)
                terms.push_back(fmt::format("i{}", d));
            else
                terms.push_back(fmt::format("i{} * p.out{}_s{}", d, o, d));
        }
        return terms.empty() ? std::string("0") : fmt::format("{}", fmt::join(terms, " + "));
    }
    std::string offset(std::size_t site) const {
        if (pw.loads[site].access == Access::Contiguous) return "e";
        return part.site_offset[site];
    }

    // The loads read into registers before any store: direct loads and values staged through shared memory.
    std::vector<std::size_t> gathered_loads() const {
        std::vector<std::size_t> out;
        for (std::size_t k = 0; k < pw.loads.size(); ++k)
            if (direct(k) || staged_number(k) >= 0 || halo_of(k).first >= 0) out.push_back(k);
        return out;
    }
    // The register arrays of the gathered loads, of extents `dims` ("[2][4]").
    void declare_gathered(std::string& s, const std::vector<std::size_t>& gathered,
                          const std::string& dims) const {
        for (std::size_t k : gathered) {
            std::string source;  // where the values come from
            if (staged_number(k) >= 0)
                source = fmt::format("from tile{}", staged_number(k));
            else if (halo_of(k).first >= 0)
                source = fmt::format("from halo{}", halo_of(k).first);
            else
                source = fmt::format("({})", access_name(pw.loads[k].access));
            line(s, 4, fmt::format("{} x{}{};", register_type(pw.loads[k].dtype), k, dims),
                 fmt::format("in{} {} at each of this thread's elements", k, source));
        }
    }
    // Reads gathered load k into its register at `at` ("[k][c]").
    void gather(std::string& s, int indent, std::size_t k, const std::string& at) const {
        const int st = staged_number(k);
        if (const auto [h, t] = halo_of(k); h >= 0) {
            const StagedHalo& sh = tp.halos[static_cast<std::size_t>(h)];
            const auto ti = static_cast<std::size_t>(t);
            line(s, indent,
                 fmt::format("x{}{} = lm::to_reg(halo{}[i{} - a0{}][i{} - b0{}]);", k, at, h, a,
                             plus(sh.shift_a[ti] - sh.lo_a), b, plus(sh.shift_b[ti] - sh.lo_b)),
                 fmt::format("in{} from shared memory (tap shifted {}, {} from in{})", k, sh.shift_a[ti],
                             sh.shift_b[ti], sh.ref));
        } else if (st >= 0)
            line(s, indent, fmt::format("x{}{} = lm::to_reg(tile{}[i{} - b0][i{} - a0]);", k, at, st, b, a),
                 fmt::format("in{} from shared memory (a column of tile{})", k, st));
        else
            line(s, indent, fmt::format("x{}{} = lm::to_reg(p.in{}[{}]);", k, at, k, offset(k)),
                 fmt::format("load in{} ({})", k, access_name(pw.loads[k].access)));
    }
    static std::string plus(std::int64_t v) {
        if (v == 0) return {};
        return v > 0 ? fmt::format(" + {}", v) : fmt::format(" - {}", -v);
    }
    // Stages halo tile h: the block's tile of the reference tap's elements plus the halo, read along rows
    // (coalesced) by all threads, each element once. Every staged element lies within the input: each tap
    // reads within it for every output of the space, so the box of their shifts does too.
    void stage_halo(std::string& s, std::size_t h) const {
        const StagedHalo& sh = tp.halos[h];
        const std::size_t ref = static_cast<std::size_t>(sh.ref);
        const int total = sh.rows * sh.pitch, steps = (total + kTileBlock - 1) / kTileBlock;
        const std::string tail = total % kTileBlock != 0 ? fmt::format("t >= {} || ", total) : std::string();
        // As in the transposes' staging, every load is issued before any store, so that they are in flight
        // together. Elements past the taps' reach are not read (their shared slots are never read either).
        line(s, 4, fmt::format("{} w{}[{}] = {{}};", storage_type(pw.loads[ref].dtype), h, steps),
             fmt::format("in{} as read, on its way to halo{}", ref, h));
        line(s, 4, "#pragma unroll");
        line(s, 4, fmt::format("for (int u = 0; u < {}; ++u) {{", steps),
             fmt::format("stage halo{}, 1/2: {} x {} elements of in{} in row order", h, sh.rows, sh.pitch,
                         ref));
        line(s, 8, fmt::format("const int t = threadIdx.x + {} * u;", kTileBlock),
             "an element of the halo tile");
        line(s, 8, fmt::format("const {} i{} = a0 + t / {}{};", idx, a, sh.pitch, plus(sh.lo_a)));
        line(s, 8, fmt::format("const {} i{} = b0 + t % {}{};", idx, b, sh.pitch, plus(sh.lo_b)));
        line(s, 8,
             fmt::format("if ({}i{} >= ext_a{} || i{} >= ext_b{}) continue;", tail, a, plus(sh.hi_a), b,
                         plus(sh.hi_b)),
             "past the last tap's reach");
        if (pw.loads[ref].access == Access::Contiguous)
            line(s, 8, fmt::format("const {} e = {};", idx, flat()), "flat index");
        line(s, 8, fmt::format("w{}[u] = p.in{}[{}];", h, ref, offset(ref)),
             fmt::format("load in{} ({})", ref, access_name(pw.loads[ref].access)));
        line(s, 4, "}");
        line(s, 4, "#pragma unroll");
        line(s, 4, fmt::format("for (int u = 0; u < {}; ++u) {{", steps),
             fmt::format("stage halo{}, 2/2: into shared memory", h));
        line(s, 8, fmt::format("const int t = threadIdx.x + {} * u;", kTileBlock));
        if (!tail.empty()) line(s, 8, fmt::format("if (t >= {}) continue;", total));
        line(s, 8, fmt::format("halo{}[t / {}][t % {}] = w{}[u];", h, sh.pitch, sh.pitch, h));
        line(s, 4, "}");
    }

    // Scalar operands, loaded (or their index taken) once per thread.
    void load_scalars(std::string& s) const {
        for (std::size_t k = 0; k < pw.loads.size(); ++k) {
            const OperandPlan& o = pw.loads[k];
            if (o.access != Access::Scalar) continue;
            if (o.index)
                line(s, 4, fmt::format("const long long x{} = p.in{}_base;", k, k),
                     fmt::format("index in{} (scalar)", k));
            else
                line(s, 4, fmt::format("const {} x{} = lm::to_reg(p.in{}[0]);", register_type(o.dtype), k, k),
                     fmt::format("load in{} once (scalar)", k));
        }
    }

    // The tile of this block and the indices of the dimensions outside it.
    void tile_position(std::string& s) const {
        std::string ext_a;
        if (a > 0) {
            ext_a = fmt::format("p.ext{}", a);
        } else {
            std::vector<std::string> rest;
            for (int d = 1; d < R; ++d) rest.push_back(fmt::format("p.ext{}", d));
            ext_a = fmt::format("p.n / ({})", fmt::join(rest, " * "));
        }
        line(s, 4, fmt::format("const {} ext_a = {};", idx, ext_a),
             fmt::format("extent of dimension {} (tile rows)", a));
        line(s, 4, fmt::format("const {} ext_b = p.ext{};", idx, b),
             fmt::format("extent of dimension {} (tile columns)", b));
        line(s, 4, fmt::format("{} q = ({})blockIdx.x;", idx, idx), "this block's tile");
        line(s, 4, fmt::format("const {} tiles_b = (ext_b + {}) / {};", idx, tp.tile_cols - 1, tp.tile_cols));
        line(s, 4, fmt::format("const {} b0 = q % tiles_b * {};", idx, tp.tile_cols),
             "first column of the tile");
        line(s, 4, "q /= tiles_b;");
        line(s, 4, fmt::format("const {} tiles_a = (ext_a + {}) / {};", idx, tp.tile_rows - 1, tp.tile_rows));
        line(s, 4, fmt::format("const {} a0 = q % tiles_a * {};", idx, tp.tile_rows),
             "first row of the tile");
        std::vector<int> other;
        for (int d = 0; d < b; ++d)
            if (d != a) other.push_back(d);
        if (!other.empty()) line(s, 4, "q /= tiles_a;");
        for (std::size_t k = other.size(); k-- > 0;) {
            const int d = other[k];
            if (k == 0) {
                line(s, 4, fmt::format("const {} i{} = q;", idx, d),
                     fmt::format("index of dimension {} (outside the tile)", d));
            } else {
                line(s, 4, fmt::format("const {} i{} = q % p.ext{};", idx, d, d),
                     fmt::format("index of dimension {} (outside the tile)", d));
                line(s, 4, fmt::format("q /= p.ext{};", d));
            }
        }
        line(s, 4, "const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;");
    }

    // Opens the loops over this thread's elements of the tile: rows warp + 8k, columns lane + 32c
    // (`rows_along_a`), or, for the staging reads, rows along the last dimension and columns along dim_a.
    void open_loops(std::string& s, bool staging, std::string_view comment) const {
        const int outer = staging ? tp.tile_cols / (kTileBlock / 32) : row_steps;
        const int inner = staging ? tp.tile_rows / 32 : col_steps;
        const int outer_dim = staging ? b : a, inner_dim = staging ? a : b;
        const char* outer_base = staging ? "b0" : "a0";
        const char* inner_base = staging ? "a0" : "b0";
        line(s, 4, "#pragma unroll");
        line(s, 4, fmt::format("for (int k = 0; k < {}; ++k) {{", outer), comment);
        line(s, 8,
             fmt::format("const {} i{} = {} + warp + {} * k;", idx, outer_dim, outer_base, kTileBlock / 32));
        line(s, 8, "#pragma unroll");
        line(s, 8, fmt::format("for (int c = 0; c < {}; ++c) {{", inner));
        line(s, 12, fmt::format("const {} i{} = {} + lane + 32 * c;", idx, inner_dim, inner_base));
        line(s, 12,
             "if (i" + std::to_string(a) + " >= ext_a || i" + std::to_string(b) + " >= ext_b) continue;",
             "outside the space");
    }
    void close_loops(std::string& s) const {
        line(s, 8, "}");
        line(s, 4, "}");
    }

    // The entry point's opening: its signature, the shared tiles and the tile's position.
    std::string opening(const std::string& entry_name) const {
        std::string s = fmt::format(
            "extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", kTileBlock, entry_name,
            pw.params_in_memory ? fmt::format("const {}_params* __restrict__ pp", name)
                                : fmt::format("const __grid_constant__ {}_params p", name));
        detail::write_kernel_prologue(s, true, 60);
        if (pw.params_in_memory)
            line(s, 4, fmt::format("const {}_params& p = *pp;", name),
                 fmt::format("{} bytes of parameters in device memory", pw.params.size));
        for (std::size_t k = 0; k < tp.staged.size(); ++k) {
            const StagedLoad& st = tp.staged[k];
            line(s, 4,
                 fmt::format("__shared__ {} tile{}[{}][{}];",
                             storage_type(pw.loads[static_cast<std::size_t>(st.site)].dtype), k, tp.tile_cols,
                             st.pitch),
                 fmt::format("in{} staged: a row per column of the tile, padded", st.site));
        }
        for (std::size_t h = 0; h < tp.halos.size(); ++h) {
            const StagedHalo& sh = tp.halos[h];
            line(s, 4,
                 fmt::format("__shared__ {} halo{}[{}][{}];",
                             storage_type(pw.loads[static_cast<std::size_t>(sh.ref)].dtype), h, sh.rows,
                             sh.pitch),
                 fmt::format("in{}'s tile and its halo", sh.ref));
        }
        tile_position(s);
        return s;
    }

    std::string entry() const {
        std::string s = opening(name + "_tile");
        // Every loop below only loads, or only stores: a thread's loads are then all in flight together (a
        // store through a generic pointer could alias them, so the compiler keeps loads after earlier
        // stores).
        if (!tp.staged.empty()) {
            const int rows = tp.tile_cols / (kTileBlock / 32), cols = tp.tile_rows / 32;
            for (std::size_t k = 0; k < tp.staged.size(); ++k) {
                const std::size_t site = static_cast<std::size_t>(tp.staged[k].site);
                line(s, 4, fmt::format("{} y{}[{}][{}];", storage_type(pw.loads[site].dtype), k, rows, cols),
                     fmt::format("in{} as read, on its way to tile{}", site, k));
            }
            open_loops(s, true,
                       fmt::format("stage, 1/2: read along dimension {} (the operands' unit stride)", a));
            for (std::size_t k = 0; k < tp.staged.size(); ++k) {
                const std::size_t site = static_cast<std::size_t>(tp.staged[k].site);
                line(s, 12, fmt::format("y{}[k][c] = p.in{}[{}];", k, site, part.site_offset[site]),
                     fmt::format("load in{} ({})", site, access_name(pw.loads[site].access)));
            }
            close_loops(s);
            open_loops(s, true, "stage, 2/2: into shared memory");
            for (std::size_t k = 0; k < tp.staged.size(); ++k)
                line(s, 12, fmt::format("tile{}[i{} - b0][i{} - a0] = y{}[k][c];", k, b, a, k));
            close_loops(s);
            line(s, 4, "__syncthreads();", "the tile is staged");
        }
        for (std::size_t h = 0; h < tp.halos.size(); ++h) stage_halo(s, h);
        if (!tp.halos.empty()) line(s, 4, "__syncthreads();", "the halo tiles are staged");
        const std::vector<std::size_t> gathered = gathered_loads();
        declare_gathered(s, gathered, fmt::format("[{}][{}]", row_steps, col_steps));
        if (!gathered.empty()) {
            open_loops(s, false, "load: this thread's elements, rows warp + 8k, columns lane + 32c");
            if (needs_flat(true)) line(s, 12, fmt::format("const {} e = {};", idx, flat()), "flat index");
            for (std::size_t k : gathered) gather(s, 12, k, "[k][c]");
            close_loops(s);
        }
        load_scalars(s);
        open_loops(s, false, "compute and store: columns along the lanes (coalesced)");
        if (needs_flat(false)) line(s, 12, fmt::format("const {} e = {};", idx, flat()), "flat index");
        std::vector<std::string> args;
        if (part.body_needs_params) args.push_back("p");
        for (std::size_t k = 0; k < pw.loads.size(); ++k) {
            const OperandPlan& o = pw.loads[k];
            const int st = staged_number(k);
            if (st >= 0)
                args.push_back(fmt::format("x{}[k][c]", k));
            else if (o.access == Access::Scalar)
                args.push_back(fmt::format("x{}", k));
            else if (o.index)
                args.push_back(fmt::format("(p.in{}_base + (long long)({}))", k, offset(k)));
            else
                args.push_back(fmt::format("x{}[k][c]", k));
        }
        for (std::size_t o = 0; o < pw.outputs.size(); ++o) {
            line(s, 12, fmt::format("{} r{};", register_type(pw.outputs[o].dtype), o));
            args.push_back(fmt::format("r{}", o));
        }
        line(s, 12, fmt::format("{}_body({});", name, fmt::join(args, ", ")));
        for (std::size_t o = 0; o < pw.outputs.size(); ++o) {
            line(s, 12,
                 fmt::format("p.out{}[{}] = {};", o, output_offset(o),
                             detail::store_expr(pw.outputs[o].dtype, fmt::format("r{}", o))),
                 pw.outputs[o].access == Access::Contiguous
                     ? fmt::format("store out{}", o)
                     : fmt::format("store out{} (strided: a view)", o));
        }
        close_loops(s);
        s += "}\n";
        return s;
    }

    // The vector variant's loops. Staging (`staging`): rows along the last dimension, vectors along dim_a, a
    // warp covering 4 rows of 8 vectors (each row 8 V elements, 128 contiguous bytes). Else rows along dim_a,
    // vectors along the last dimension, a warp covering V rows of 32 / V vectors (32 columns): its reads of a
    // staged tile's columns then fall into distinct words of distinct banks for V = 4, 8 and 16 (4-, 2- and
    // 1-byte elements) with rows of an odd number of words, and its stores are whole 32-byte sectors.
    void open_vector_loops(std::string& s, bool staging, std::string_view comment) const {
        const int V = tp.vector_width;
        const int wr = staging ? 4 : V, wc = 32 / wr;  // a warp's rows and vectors per row
        const int rows = staging ? tp.tile_cols : tp.tile_rows, cols = staging ? tp.tile_rows : tp.tile_cols;
        const int row_dim = staging ? b : a;
        const char* row_base = staging ? "b0" : "a0";
        const char* col_base = staging ? "a0" : "b0";
        const int block_rows = wr * (kTileBlock / 32);
        line(s, 4, "#pragma unroll");
        line(s, 4, fmt::format("for (int k = 0; k < {}; ++k) {{", rows / block_rows), comment);
        line(s, 8,
             fmt::format("const {} i{} = {} + warp * {} + lane / {} + {} * k;", idx, row_dim, row_base, wr,
                         wc, block_rows));
        line(s, 8, "#pragma unroll");
        line(s, 8, fmt::format("for (int c = 0; c < {}; ++c) {{", cols / (wc * V)));
        line(s, 12, fmt::format("const {} v0 = {} + {} * (lane % {} + {} * c);", idx, col_base, V, wc, wc),
             "the vector's first element");
        line(s, 12,
             fmt::format("if (i{} >= {} || v0 >= {}) continue;", row_dim, staging ? "ext_b" : "ext_a",
                         staging ? "ext_a" : "ext_b"),
             "outside the space (the extents divide by the vector width)");
    }

    std::string vector_entry() const {
        const int V = tp.vector_width;
        std::string s = opening(fmt::format("{}_tile_v{}", name, V));
        const int srows = tp.tile_cols / 32, scols = tp.tile_rows / (8 * V);
        for (std::size_t k = 0; k < tp.staged.size(); ++k) {
            const std::size_t site = static_cast<std::size_t>(tp.staged[k].site);
            line(s, 4,
                 fmt::format("lm::vec<{}, {}> y{}[{}][{}];", storage_type(pw.loads[site].dtype), V, k, srows,
                             scols),
                 fmt::format("in{} as read, on its way to tile{}", site, k));
        }
        open_vector_loops(s, true, fmt::format("stage, 1/2: {}-byte vectors along dimension {}", 16, a));
        line(s, 12, fmt::format("const {} i{} = v0;", idx, a));
        for (std::size_t k = 0; k < tp.staged.size(); ++k) {
            const std::size_t site = static_cast<std::size_t>(tp.staged[k].site);
            const std::string_view st = storage_type(pw.loads[site].dtype);
            line(s, 12,
                 fmt::format("y{}[k][c] = lm::load_vec<{}, {}>(p.in{} + ({}));", k, st, V, site,
                             part.site_offset[site]),
                 fmt::format("load in{} ({} bytes)", site, 16));
        }
        close_loops(s);
        open_vector_loops(s, true, "stage, 2/2: into shared memory");
        line(s, 12, "#pragma unroll");
        line(s, 12, fmt::format("for (int j = 0; j < {}; ++j) {{", V));
        for (std::size_t k = 0; k < tp.staged.size(); ++k)
            line(s, 16, fmt::format("tile{}[i{} - b0][v0 - a0 + j] = y{}[k][c].v[j];", k, b, k));
        line(s, 12, "}");
        close_loops(s);
        line(s, 4, "__syncthreads();", "the tile is staged");
        const int grows = tp.tile_rows / (V * (kTileBlock / 32)), gcols = tp.tile_cols / 32;
        const std::vector<std::size_t> gathered = gathered_loads();
        declare_gathered(s, gathered, fmt::format("[{}][{}][{}]", grows, gcols, V));
        open_vector_loops(s, false,
                          "load: this thread's vectors, rows along the warps, vectors along the lanes");
        line(s, 12, "#pragma unroll");
        line(s, 12, fmt::format("for (int j = 0; j < {}; ++j) {{", V));
        line(s, 16, fmt::format("const {} i{} = v0 + j;", idx, b));
        if (needs_flat(true)) line(s, 16, fmt::format("const {} e = {};", idx, flat()), "flat index");
        for (std::size_t k : gathered) gather(s, 16, k, "[k][c][j]");
        line(s, 12, "}");
        close_loops(s);
        load_scalars(s);
        open_vector_loops(s, false, "compute and store: 16-byte vectors along the last dimension");
        for (std::size_t o = 0; o < pw.outputs.size(); ++o)
            line(s, 12, fmt::format("lm::vec<{}, {}> o{};", storage_type(pw.outputs[o].dtype), V, o));
        line(s, 12, "#pragma unroll");
        line(s, 12, fmt::format("for (int j = 0; j < {}; ++j) {{", V));
        bool index_sites = false;  // an index computed at each element needs its column index
        for (std::size_t k = 0; k < pw.loads.size(); ++k)
            index_sites = index_sites ||
                          (pw.loads[k].index && pw.loads[k].access != Access::Scalar && staged_number(k) < 0);
        if (index_sites) line(s, 16, fmt::format("const {} i{} = v0 + j;", idx, b));
        std::vector<std::string> args;
        if (part.body_needs_params) args.push_back("p");
        for (std::size_t k = 0; k < pw.loads.size(); ++k) {
            const OperandPlan& o = pw.loads[k];
            if (o.access == Access::Scalar)
                args.push_back(fmt::format("x{}", k));
            else if (o.index && staged_number(k) < 0)
                args.push_back(fmt::format("(p.in{}_base + (long long)({}))", k, offset(k)));
            else
                args.push_back(fmt::format("x{}[k][c][j]", k));
        }
        bool index_flat = false;  // an index computed from the flat index (the stores use the vector's own)
        for (const OperandPlan& o : pw.loads)
            index_flat = index_flat || (o.index && o.access == Access::Contiguous);
        if (index_flat) line(s, 16, fmt::format("const {} e = {};", idx, flat()), "flat index");
        for (std::size_t o = 0; o < pw.outputs.size(); ++o) {
            line(s, 16, fmt::format("{} r{};", register_type(pw.outputs[o].dtype), o));
            args.push_back(fmt::format("r{}", o));
        }
        line(s, 16, fmt::format("{}_body({});", name, fmt::join(args, ", ")));
        for (std::size_t o = 0; o < pw.outputs.size(); ++o) {
            line(s, 16,
                 fmt::format("o{}.v[j] = {};", o,
                             detail::store_expr(pw.outputs[o].dtype, fmt::format("r{}", o))));
        }
        line(s, 12, "}");
        line(s, 12, fmt::format("const {} i{} = v0;", idx, b));
        line(s, 12, fmt::format("const {} e = {};", idx, flat()), "flat index of the vector's first element");
        for (std::size_t o = 0; o < pw.outputs.size(); ++o)
            line(s, 12,
                 fmt::format("lm::store_vec<{}, {}>(p.out{} + e, o{});", storage_type(pw.outputs[o].dtype), V,
                             o, o),
                 fmt::format("store out{} (16 bytes)", o));
        close_loops(s);
        s += "}\n";
        return s;
    }
};

}  // namespace

KernelSource emit_tile(std::string_view user_name, const std::vector<ir::NodePtr>& outputs,
                       const PointwisePlan& plan, const TilePlan& tile) {
    if (!tile.active()) throw InternalError("emit_tile: the plan has no tile");
    KernelSource ks;
    ks.user_name = std::string(user_name);
    ks.name = kernel_name(user_name);
    ks.scalar_entry = ks.name + "_tile";
    if (tile.vector_width > 1) ks.vector_entry = fmt::format("{}_tile_v{}", ks.name, tile.vector_width);
    ks.plan = plan;
    ks.param_bytes = plan.params_in_memory ? sizeof(void*) : plan.params.size;
    const detail::PointwisePart part = detail::pointwise_part(ks.name, outputs, plan);
    if (!part.derived.empty()) throw InternalError("emit_tile: a tiled plan with derived (reshape) indices");
    TileEmitter em{plan, tile, part, ks.name, part.idx};
    em.R = plan.rank;
    em.a = tile.dim_a;
    em.b = plan.rank - 1;
    em.row_steps = tile.tile_rows / (kTileBlock / 32);
    em.col_steps = tile.tile_cols / 32;
    std::string& s = ks.kernel;
    s += detail::banner("tiled", ks.name, user_name, plan.describe(false) + tile.to_string(plan));
    s += fmt::format("// entry points: {}{} (one block of {} threads per tile)\n\n",
                     ks.vector_entry.empty() ? "" : ks.vector_entry + " (vector), ",
                     ks.scalar_entry + " (scalar)", kTileBlock);
    s += part.params_struct;
    s += '\n';
    s += part.body;
    s += '\n';
    if (tile.vector_width > 1) {
        s += em.vector_entry();
        s += '\n';
    }
    s += em.entry();
    ks.source = fmt::format("{}\n{}", prelude_source(), ks.kernel);
    return ks;
}

}  // namespace loom::codegen

// Internal: writing LLVM IR as text for the host back end: types and exact literals, a module (its
// declarations and functions) and a function body (fresh names, one instruction per line with a `; `
// comment, allocas hoisted to the entry block). The emitters build textual IR, as drjit-core's LLVM back
// end does, so that code generation needs no LLVM library: the loom_llvm module parses the text, optimizes
// and JIT-compiles it (llvm/src/jit.cpp).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/llvm/host_plan.hpp"
#include "loom/ir/node.hpp"

namespace loom::codegen::llvm_ir {

/// The IR type of a compute value of dtype `t`: i8 for bool (holding 0 or 1), int8 and uint8; i32; i64;
/// float for float16, bfloat16 and float32 (a half value is computed in float32 and rounded once per op);
/// double for float64.
std::string_view scalar_type(DType t);
/// The IR type of one stored element: i16 for float16 and bfloat16 (their bits), else scalar_type(t).
std::string_view storage_type(DType t);
/// `ty` at width `w`: `float` (w == 1) or `<16 x float>`.
std::string vec(std::string_view ty, int w);
inline std::string type(DType t, int w) {
    return vec(scalar_type(t), w);
}
/// The suffix of an overloaded intrinsic for `ty` at width w: `f32`, `v16f32`, `i8`, `v8i64`.
std::string mangle(std::string_view ty, int w);
/// Bytes of one element of the IR type `ty` (i8 1, i16 2, i32 4, float 4, i64 8, double 8).
int bytes_of(std::string_view ty);

/// An exact constant of dtype `t`'s compute type: floats as IR hex doubles (`0x3FF8000000000000`; every
/// float32 value is exactly a double), integers in decimal (signed spelling), bool 0 or 1.
std::string literal(const ir::ScalarValue& v, DType t);
/// An exact float constant of the IR type `ty` ("float" or "double"): the hex spelling of `d` (d must be a
/// value of the type).
std::string float_constant(double d, std::string_view ty);
/// `c` (a scalar constant of type `ty`) at width w: `c` itself, or `splat (ty c)`.
std::string splat_constant(std::string_view ty, const std::string& c, int w);
/// The decimal value of a double, for comments ("1.5", "-0", "nan").
std::string decimal(double d);

/// The text of one module: named declarations (each once, in name order), internal helpers and functions.
class Module {
  public:
    /// `declare <signature>` of an intrinsic or of a function of the host's scalar library, once per name.
    void declare(const std::string& name, const std::string& declaration);
    /// A definition emitted once per name (internal helper functions).
    bool define_once(const std::string& name);
    void add_function(std::string text) { functions_.push_back(std::move(text)); }
    /// The module: a header comment, the functions, the helpers, the declarations and the attribute groups.
    std::string text(std::string_view header) const;
    const HostTarget* target = nullptr;

  private:
    std::map<std::string, std::string> declarations_;
    std::set<std::string> defined_;
    std::vector<std::string> functions_;
};

/// A function body under construction.
class Function {
  public:
    explicit Function(Module& m) : module(m) {}
    Module& module;

    /// Marks `%<name>` as taken (a function argument), so that fresh() never returns it.
    void reserve(std::string_view name) { names_.insert(fmt::format("%{}", name)); }
    /// A fresh SSA name `%<hint>` (with a numeric suffix after the first use of a hint).
    std::string fresh(std::string_view hint);
    /// A fresh label name (without `%`).
    std::string fresh_label(std::string_view hint);
    /// One instruction (or any body line), indented, with `comment` as a `; ` comment at column 76.
    void emit(std::string_view code, std::string_view comment = {});
    /// A comment line of its own.
    void note(std::string_view comment);
    /// Starts basic block `name`.
    void label(std::string_view name);
    /// A stack slot of type `ty` (allocated in the entry block, so mem2reg promotes it); returns its name.
    std::string alloca_(std::string_view hint, std::string_view ty, int align = 0);
    /// `define <header> {` + the allocas + the body + `}`.
    std::string finish(std::string_view header, std::string_view first_comment = {}) const;

  private:
    std::map<std::string, int, std::less<>> used_;
    std::set<std::string> names_;
    std::string allocas_;
    std::string body_;
};

/// Width-generic instruction helpers (w == 1: scalars).
struct Builder {
    Function& f;
    const HostTarget& target;

    Module& module() { return f.module; }
    /// `<name> = call <ret> @<intrinsic>.<mangle>(args)` for an overloaded intrinsic on type `ty` at width
    /// w; `args` are "type value" pairs. Declares the intrinsic.
    std::string intrinsic(std::string_view hint, std::string_view base, std::string_view ty, int w,
                          const std::vector<std::string>& args, std::string_view comment = {},
                          std::string_view ret_ty = {});
    /// A function of the host's scalar library `name`, `ret name(arg types)`, applied lane by lane
    /// (extractelement, call, insertelement for w > 1). `args` are values of `arg_tys` at width w.
    std::string scalar_call(std::string_view hint, const std::string& name, std::string_view ret,
                            const std::vector<std::string>& arg_tys, const std::vector<std::string>& args,
                            int w, std::string_view comment = {});
    /// A value broadcast to width w (w == 1: itself).
    std::string splat(std::string_view hint, std::string_view ty, const std::string& v, int w);
    /// `<W x i64> <0, 1, ..., w-1>` as a constant.
    static std::string iota(int w);
    /// Emits `<name> = <code>` and returns the name.
    std::string let(std::string_view hint, const std::string& code, std::string_view comment = {});

    /// A loop over the i64 held in `slot` (a stack slot, which SROA promotes to a register; the caller has
    /// stored the first value): `while (more(i)) { body(i); i = next(i); }`. Fresh labels <tag>.cond,
    /// <tag>.body and <tag>.done; the code emitted after it continues in <tag>.done.
    void loop(std::string_view tag, const std::string& slot,
              const std::function<std::string(const std::string& i)>& more,
              const std::function<void(const std::string& i)>& body,
              const std::function<std::string(const std::string& i)>& next);
    /// The same over a slot of its own starting at `from`.
    void loop_from(std::string_view tag, const std::string& from,
                   const std::function<std::string(const std::string& i)>& more,
                   const std::function<void(const std::string& i)>& body,
                   const std::function<std::string(const std::string& i)>& next);
    /// `for (i = from; i < end; i += step) body(i)`.
    void for_range(std::string_view tag, const std::string& from, const std::string& end, int step,
                   const std::function<void(const std::string& i)>& body);
    /// Steps over [i, end) with i in `slot`, for each width w of `widths` in turn: `while (i + w <= end) {
    /// body(i, w); i += w; }`. `{W, 1}` gives whole vectors of W, then a scalar tail.
    void steps(std::string_view tag, const std::string& slot, const std::string& end,
               std::initializer_list<int> widths,
               const std::function<void(const std::string& i, int w)>& body);

    /// float16 and bfloat16: the float32 value `v` rounded to the dtype (round to nearest even), kept in
    /// float; NaN stays NaN. Other dtypes: v.
    std::string round_half(DType t, const std::string& v, int w, std::string_view comment = {});
    /// Stored bits (i16) of a half dtype from its float32 compute value, and back.
    std::string half_to_bits(DType t, const std::string& v, int w);
    std::string half_from_bits(DType t, const std::string& bits, int w);
    /// A stored element -> compute value, and back (bool loads become 0 or 1).
    std::string from_storage(DType t, const std::string& v, int w);
    std::string to_storage(DType t, const std::string& v, int w);
};

}  // namespace loom::codegen::llvm_ir

namespace loom::codegen::detail {

/// The host kernels' banners (emit_pointwise.cpp), shared by every host emitter: a pointwise plan's iteration
/// space in words, and the comment block that opens a kernel's module.
std::string host_space_text(const PointwisePlan& plan);
std::string llvm_banner(std::string_view kind, const std::string& name, std::string_view user,
                        const std::string& lines);

}  // namespace loom::codegen::detail

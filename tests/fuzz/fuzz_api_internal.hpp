// Internals of loom_fuzz_api: the options, the statistics and the Fuzzer class, whose members are defined in
// fuzz_api.cpp (the calls and their operands: every call site that the messages name, "(fuzz_api.cpp:N)")
// and fuzz_api_support.cpp (random shapes, axes, slices, permutations and numbers, the checks of a call's
// outcome, the report); the check of one call (attempt, a template over the call) is here.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <loom/loom.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fuzz_api {

using namespace loom;

using Clock = std::chrono::steady_clock;

struct FuzzOptions {
    std::uint64_t seed = 1;
    long long count = 3000;
    bool gpu = false;
    bool verbose = false;
};

struct Rng {
    std::mt19937_64 g;
    std::int64_t range(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
    }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[static_cast<std::size_t>(range(0, static_cast<std::int64_t>(v.size()) - 1))];
    }
};

inline constexpr DType kDtypes[] = {DType::Bool,     DType::Int8,    DType::UInt8,
                                    DType::Int32,    DType::Int64,   DType::Float16,
                                    DType::BFloat16, DType::Float32, DType::Float64};

/// What one call must look like when it fails.
struct Expect {
    std::vector<std::string> apis;  // the message starts with one of these followed by "():"
    bool line = true;  // the message ends with "(fuzz_api.cpp:N)" (or "...; the function is defined at ...)")
};

struct Stats {
    long long calls = 0, valid = 0, errors = 0, clean = 0, failures = 0, evaluations = 0, checked = 0;
    long long named_operands = 0, operand_errors = 0;  // errors of ops on arrays that name an operand's shape
    std::map<std::string, long long> by_api;           // errors per API
};

class Fuzzer {
  public:
    explicit Fuzzer(const FuzzOptions& o);  // fuzz_api.cpp

    int run();

  private:
    // ---- random values (fuzz_api_support.cpp) ----
    Shape random_shape(int max_rank = 4, int max_extent = 4);
    /// A shape for a view or a tensor: usually plausible, sometimes absurd.
    Shape wild_shape(const Shape& like);
    DType random_dtype() { return kDtypes[rng_.range(0, 8)]; }
    Tensor random_tensor(int k);
    std::vector<std::int64_t> random_axes(int rank);
    std::vector<ir::SliceSpec> random_slice(const Shape& s);
    std::vector<std::int64_t> random_perm(int rank);

    // ---- operands (random_arg, with and as_array in fuzz_api.cpp) ----
    /// An operand: usually an Array of the pool, else a Tensor, a scalar of any kind, a Constant, an empty
    /// Array, a placeholder, or (rarely) an array on the other device. Built in the caller's try (some
    /// constructors throw), with the caller's location.
    enum class OpKind {
        PoolArray,
        Tensor,
        Double,
        Int,
        Bool,
        Unsigned,
        ConstantValue,
        Empty,
        Undefined,
        Placeholder,
        OtherDevice
    };
    OpKind random_operand_kind();
    double random_double();
    std::int64_t random_int();

    struct Arg {
        OpKind kind;
        Array array;  // PoolArray, Tensor (its Array), Placeholder, OtherDevice; empty for Empty
        Tensor tensor;
        double d = 0;
        std::int64_t i = 0;
        unsigned long long u = 0;
    };
    Arg random_arg();
    /// The shapes and dtypes of array operands, as messages print them ("[2, 3] float32").
    static std::string describe(const Arg& a);
    template <class F>
    static auto with(const Arg& a, F&& fn);
    static Array as_array(const Arg& a);

    // ---- the check of one call (fuzz_api_support.cpp, adopt in fuzz_api.cpp) ----
    struct Poisoned {
        Tensor t;
        std::vector<unsigned char> before;
    };
    static std::vector<unsigned char> bytes_of(const Tensor& t);
    static Poisoned poisoned(Tensor t);

    void failure(const std::string& what, const std::string& message);

    /// Runs one call. On success `fn` returns the array it made (or an empty one); on a loom::Error the
    /// message is checked against `e`, and the poisoned outputs must keep their bytes.
    template <class F>
    void attempt(const Expect& e, F&& fn, const std::vector<Poisoned>& outs = {},
                 const std::vector<Arg>& args = {}) {
        ++stats_.calls;
        std::string message;
        try {
            Array made = fn();
            ++stats_.valid;
            if (made.node()) adopt(made);
            return;
        } catch (const InternalError& x) {
            failure("InternalError", x.what());
            return;
        } catch (const Error& x) {
            message = x.what();
        } catch (const std::exception& x) {
            failure("not a loom::Error", x.what());
            return;
        } catch (...) {
            failure("not a std::exception", "?");
            return;
        }
        ++stats_.errors;
        bool ok = false;
        std::string api;
        for (const auto& a : e.apis)
            if (message.rfind(a + "(): ", 0) == 0) ok = true, api = a;
        // The host run's "cuda" views: a device evaluation without a GPU is a NoDeviceError naming the API
        // and, for a call that takes a call site, the caller's line: "no CUDA device found: eval()
        // (fuzz_api.cpp:N) needs a GPU".
        for (const auto& a : e.apis) {
            const std::string head = fmt::format("no CUDA device found: {}() ", a);
            if (opt_.gpu || message.rfind(head, 0) != 0) continue;
            const bool located = message.compare(head.size(), 14, "(fuzz_api.cpp:") == 0;
            if (e.line && !located) {
                failure("a NoDeviceError does not name the caller's (fuzz_api.cpp:N)", message);
                return;
            }
            ++stats_.clean;
            ++stats_.by_api["(no device) " + a];
            return;
        }
        if (!ok) {
            failure(fmt::format("message does not start with {}(): ", fmt::join(e.apis, "(), ")), message);
            return;
        }
        ++stats_.by_api[api];
        if (e.line) {
            const std::size_t at = message.rfind("(fuzz_api.cpp:");
            const bool ends = !message.empty() && message.back() == ')';
            if (at == std::string::npos || !ends) {
                failure("message does not end with the caller's (fuzz_api.cpp:N)", message);
                return;
            }
        }
        bool array_operand = false, named = false;
        for (const Arg& a : args) {
            const std::string d = describe(a);
            if (d.empty()) continue;
            array_operand = true;
            named = named || message.find(d) != std::string::npos;
        }
        if (array_operand) {
            ++stats_.operand_errors;
            stats_.named_operands += named;
            if (!named && opt_.verbose) std::printf("fuzz_api: no operand named: %s\n", message.c_str());
        }
        for (const Poisoned& p : outs)
            if (bytes_of(p.t) != p.before) {
                failure("an output was written by a call that failed", message);
                return;
            }
        ++stats_.clean;
        if (opt_.verbose) std::printf("fuzz_api: ok: %s\n", message.c_str());
    }

    /// A valid array joins the pool (small ones; big graphs are dropped so that calls stay quick).
    void adopt(const Array& a);
    /// On --gpu a device result is compared with the reference.
    void check(const Array& a, const Tensor& result);

    // ---- the calls (fuzz_api.cpp) ----
    void step();
    double wild_number();
    void factories();
    void tensor_views();
    void unary();
    void binary();
    void operators();
    void ternary();
    void cast();
    void views();
    void reductions();
    void composites();
    Tensor make_tensor(const Shape& s, DType dt, Device d);
    /// Whether a tensor's bytes can be read back (not a host run's "cuda" view).
    bool readable(const Tensor& t) const { return t.defined() && (opt_.gpu || !t.device().is_cuda()); }
    Tensor output_for(const Array& a);
    Device device_of(const Array& a) const;
    static bool small(const Array& a) { return a.node() && a.numel() <= 4096; }
    void evaluations();
    void traced();
    void tensors();

    FuzzOptions opt_;
    Rng rng_;
    Device dev_ = Device::cpu();
    std::vector<Tensor> tensors_;
    std::vector<Tensor> other_device_;
    std::vector<Array> pool_;
    std::vector<float> fake_ = std::vector<float>(64, 0.0f);
    Stats stats_;
};

}  // namespace fuzz_api

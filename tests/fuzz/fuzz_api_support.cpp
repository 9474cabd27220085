// loom_fuzz_api's machinery around the calls of fuzz_api.cpp: random shapes (plausible and absurd), tensors,
// axes, slices, permutations, numbers and operand kinds; the checks of a call's outcome (poisoned outputs,
// failures, results against the reference on --gpu); and the report at the end of a run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <loom/loom.hpp>
#include <string>
#include <vector>

#include "fuzz_api_internal.hpp"
#include "loom/runtime/testing.hpp"

namespace fuzz_api {

int Fuzzer::run() {
    const auto t0 = Clock::now();
    for (long long k = 0; k < opt_.count; ++k) step();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("fuzz_api: errors by API:");
    for (const auto& [api, n] : stats_.by_api) std::printf(" %s %lld", api.c_str(), n);
    std::printf("\n");
    std::printf(
        "fuzz_api: %lld evaluations (%lld checked against the reference); %lld of %lld errors of ops on "
        "arrays name an operand's shape; %.1f s\n",
        stats_.evaluations, stats_.checked, stats_.named_operands, stats_.operand_errors, s);
    std::printf("fuzz_api: %lld calls, %lld valid, %lld errors (%lld clean), %lld failures\n", stats_.calls,
                stats_.valid, stats_.errors, stats_.clean, stats_.failures);
    return stats_.failures == 0 ? 0 : 1;
}

// ---- random values ----
Shape Fuzzer::random_shape(int max_rank, int max_extent) {
    const int rank = static_cast<int>(rng_.range(0, max_rank));
    Shape s;
    for (int k = 0; k < rank; ++k) s.push_back(rng_.range(rng_.chance(0.15) ? 0 : 1, max_extent));
    return s;
}

Shape Fuzzer::wild_shape(const Shape& like) {
    switch (rng_.range(0, 9)) {
        case 0: {
            Shape s(static_cast<std::size_t>(rng_.range(7, 10)), 1);  // rank 9 and 10 are beyond the maximum
            return s;
        }
        case 1: {
            Shape s = like;
            s.push_back(-rng_.range(1, 2));
            return s;
        }
        case 2:
            return {std::int64_t{1} << 40, std::int64_t{1} << 40};
        case 3: {  // the same elements, another shape
            Shape s;
            std::int64_t n = numel(like);
            while (n > 1) {
                std::int64_t f = 2;
                while (n % f != 0) ++f;
                s.push_back(f);
                n /= f;
            }
            std::shuffle(s.begin(), s.end(), rng_.g);
            if (rng_.chance(0.3)) s.push_back(1);
            if (rng_.chance(0.3) && !s.empty()) s[0] = -1;  // one inferred extent
            return s;
        }
        case 4: {  // broadcast-compatible: ones added, size-1 axes stretched
            Shape s = like;
            for (auto& e : s)
                if (e == 1 && rng_.chance(0.5)) e = rng_.range(2, 4);
            if (rng_.chance(0.5)) s.insert(s.begin(), rng_.range(1, 3));
            return s;
        }
        default:
            return random_shape(4, 5);
    }
}

Tensor Fuzzer::random_tensor(int k) {
    const Shape s = random_shape(3, 5);
    const DType dt = random_dtype();
    testing::Random dist = is_float(dt) ? testing::Random::normal(0, 3) : testing::Random::uniform(-20, 20);
    Tensor h = testing::random_tensor(s, dt, opt_.seed * 1000 + static_cast<std::uint64_t>(k), dist);
    return opt_.gpu ? h.to(dev_) : h;
}

std::vector<std::int64_t> Fuzzer::random_axes(int rank) {
    std::vector<std::int64_t> axes;
    const int n = static_cast<int>(rng_.range(0, std::max(1, rank)));
    for (int k = 0; k < n; ++k) axes.push_back(rng_.range(-rank - 1, rank));  // out of range and repeats too
    if (rng_.chance(0.5)) {                                                   // usually a valid set
        std::vector<std::int64_t> valid;
        for (int a = 0; a < rank; ++a)
            if (rng_.chance(0.5)) valid.push_back(rng_.chance(0.3) ? a - rank : a);
        return valid;
    }
    return axes;
}

std::vector<ir::SliceSpec> Fuzzer::random_slice(const Shape& s) {
    std::vector<ir::SliceSpec> spec;
    const std::size_t n = rng_.chance(0.1)
                              ? s.size() + 1
                              : static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(s.size())));
    for (std::size_t k = 0; k < n; ++k) {
        const std::int64_t e = k < s.size() ? s[k] : 3;
        ir::SliceSpec sp;
        auto index = [&] {
            if (rng_.chance(0.2)) return ir::SliceSpec::kNone;
            return rng_.range(-e - 2, e + 2);  // out of range sometimes
        };
        sp.start = index();
        sp.stop = index();
        sp.step = rng_.chance(0.1) ? 0 : rng_.chance(0.3) ? -rng_.range(1, 3) : rng_.range(1, 3);
        spec.push_back(sp);
    }
    return spec;
}

std::vector<std::int64_t> Fuzzer::random_perm(int rank) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(rank));
    for (int k = 0; k < rank; ++k) p[static_cast<std::size_t>(k)] = k;
    std::shuffle(p.begin(), p.end(), rng_.g);
    switch (rng_.range(0, 4)) {
        case 0:
            if (!p.empty()) p[0] = p.back();
            break;  // a repeat
        case 1:
            p.push_back(static_cast<std::int64_t>(rank));
            break;  // too long / out of range
        case 2:
            if (!p.empty()) p.pop_back();
            break;  // too short
        default:
            break;  // valid
    }
    return p;
}

Fuzzer::OpKind Fuzzer::random_operand_kind() {
    const std::int64_t r = rng_.range(0, 99);
    if (r < 48) return OpKind::PoolArray;
    if (r < 58) return OpKind::Tensor;
    if (r < 66) return OpKind::Double;
    if (r < 75) return OpKind::Int;
    if (r < 78) return OpKind::Bool;
    if (r < 81) return OpKind::Unsigned;
    if (r < 85) return OpKind::ConstantValue;
    if (r < 88) return OpKind::Empty;
    if (r < 90) return OpKind::Undefined;
    if (r < 96) return OpKind::Placeholder;
    return OpKind::OtherDevice;
}

double Fuzzer::random_double() {
    static const double special[] = {0.0,         -0.0,        1.5,
                                     -2.25,       1e30,        -1e300,
                                     300.0,       65504.0 * 4, std::numeric_limits<double>::infinity(),
                                     std::nan("")};
    return rng_.chance(0.5) ? special[rng_.range(0, 9)] : static_cast<double>(rng_.range(-1000, 1000)) / 8.0;
}

std::int64_t Fuzzer::random_int() {
    static const std::int64_t special[] = {0,   1,    -1,           127,       128,      255,
                                           256, -129, 2147483648LL, INT64_MIN, INT64_MAX};
    return rng_.chance(0.5) ? special[rng_.range(0, 10)] : rng_.range(-300, 300);
}

std::string Fuzzer::describe(const Arg& a) {
    if (a.kind == OpKind::Tensor || a.kind == OpKind::OtherDevice)
        return fmt::format("{} {}", to_string(a.tensor.shape()), name(a.tensor.dtype()));
    if (a.array.node()) return fmt::format("{} {}", to_string(a.array.shape()), name(a.array.dtype()));
    return {};
}

// ---- the check of one call ----
std::vector<unsigned char> Fuzzer::bytes_of(const Tensor& t) {
    const Tensor h = t.device().is_cuda() ? t.to_host() : t;
    const auto* p = static_cast<const unsigned char*>(h.data());
    return {p, p + h.nbytes()};
}

Fuzzer::Poisoned Fuzzer::poisoned(Tensor t) {
    testing::poison(t);
    return {t, bytes_of(t)};
}

void Fuzzer::failure(const std::string& what, const std::string& message) {
    ++stats_.failures;
    if (stats_.failures <= 40)
        std::printf("fuzz_api: FAILURE (call %lld, seed %llu): %s: %s\n", stats_.calls,
                    static_cast<unsigned long long>(opt_.seed), what.c_str(), message.c_str());
}

void Fuzzer::check(const Array& a, const Tensor& result) {
    ++stats_.evaluations;
    if (!opt_.gpu || !result.device().is_cuda()) return;
    ++stats_.checked;
    const testing::Comparison c = testing::check_against_reference({a.node()}, {result});
    if (!c.ok) failure("GPU result differs from the reference", c.message);
}

}  // namespace fuzz_api

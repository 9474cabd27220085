// Checks of factories and of writes into strided views shared by the host tests
// (tests/unit/test_factories_views.cpp) and the GPU tests (tests/gpu/test_factories_views.cpp): the same
// programs on any device, against the CPU reference and against the memory around each view.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <loom/loom.hpp>
#include <vector>

namespace views_checks {

using namespace loom;
inline constexpr std::int64_t kNone = ir::SliceSpec::kNone;

/// The sizes of the contract's tests: empty, one element, around a warp and a vector, and an odd large one.
inline const std::vector<std::int64_t> kSizes{0, 1, 31, 32, 33, 4097};

/// A contiguous host copy of `t` (any device, any strides): never the same memory, unlike Tensor::to.
inline Tensor host_copy(const Tensor& t) {
    Tensor h = t.to(Device::cpu());  // the tensor itself when already contiguous on the host
    if (h.data() != t.data() || h.numel() == 0) return h;
    Tensor out = Tensor::host(t.shape(), t.dtype());
    std::memcpy(out.data(), h.data(), h.nbytes());
    return out;
}

/// Two values read as float64 agree: equal, or both NaN.
inline bool same_value(double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b));
}

/// Writes `value` into `view` (a view of contiguous `base`, same storage) with assign() and checks that every
/// element of the view equals the reference's value of `value` and that every element of `base` outside the
/// view kept its value. `value` must not read `base` (the reference evaluates it after the write).
inline void check_write(const Tensor& base, const Tensor& view, const Array& value) {
    REQUIRE(base.is_contiguous());
    const Tensor before = host_copy(base);
    const Tensor expected = reference::evaluate(value.node());
    // owner[o] = the view's row-major index of base element o, or -1 outside the view.
    std::vector<std::int64_t> owner(static_cast<std::size_t>(base.numel()), -1);
    const std::int64_t start = view.offset() - base.offset();
    const Shape& s = view.shape();
    const Strides& st = view.strides();
    std::vector<std::int64_t> idx(s.size(), 0);
    for (std::int64_t i = 0; i < view.numel(); ++i) {
        std::int64_t o = start;
        for (std::size_t a = 0; a < s.size(); ++a) o += idx[a] * st[a];
        REQUIRE(o >= 0);
        REQUIRE(o < base.numel());
        owner[static_cast<std::size_t>(o)] = i;
        for (std::size_t a = s.size(); a-- > 0;) {
            if (++idx[a] < s[a]) break;
            idx[a] = 0;
        }
    }
    assign(view, value);
    const Tensor after = host_copy(base);
    std::int64_t wrong_inside = 0, wrong_outside = 0, first_wrong = -1;
    for (std::int64_t o = 0; o < base.numel(); ++o) {
        const std::int64_t i = owner[static_cast<std::size_t>(o)];
        const double want = i >= 0 ? expected.get_double(i) : before.get_double(o);
        if (!same_value(after.get_double(o), want)) {
            (i >= 0 ? wrong_inside : wrong_outside) += 1;
            if (first_wrong < 0) first_wrong = o;
        }
    }
    CHECK_MESSAGE(wrong_inside == 0,
                  "elements of the view that differ from the reference (first at storage offset ",
                  first_wrong, ")");
    CHECK_MESSAGE(wrong_outside == 0, "elements outside the view that changed (first at storage offset ",
                  first_wrong, ")");
}

/// A random contiguous tensor on `dev`.
inline Tensor random_on(const Shape& s, DType d, std::uint64_t seed, Device dev) {
    return testing::random_tensor(s, d, seed).to(dev);
}

/// An expression of the view's shape that reads no view: a random source doubled (logical not for bool).
inline Array value_like(const Tensor& view, std::uint64_t seed, Device dev) {
    const Tensor src = random_on(view.shape(), view.dtype(), seed, dev);
    return view.dtype() == bool_ ? logical_not(Array(src)) : Array(src) + Array(src);
}

/// Writes into a column of the last axis, a strided slice of the first axis, a reversed slice, and (2-D)
/// a transposed view, of 2-D to 4-D tensors of several dtypes.
inline void check_strided_writes(Device dev) {
    std::uint64_t seed = 100;
    for (const Shape& s : {Shape{33, 31}, Shape{5, 7, 32}, Shape{3, 4, 5, 33}}) {
        CAPTURE(to_string(s));
        for (DType d : {float32, float16, bfloat16, int8, int32, int64, float64, bool_}) {
            CAPTURE(name(d));
            const int r = static_cast<int>(s.size());
            std::vector<ir::SliceSpec> column(static_cast<std::size_t>(r));
            column.back() = {1, 2, 1};
            std::vector<ir::SliceSpec> strided{{kNone, kNone, 2}};
            std::vector<ir::SliceSpec> reversed(static_cast<std::size_t>(r));
            reversed.back() = {kNone, kNone, -3};
            std::vector<std::vector<ir::SliceSpec>> specs{column, strided, reversed};
            for (std::size_t k = 0; k <= specs.size(); ++k) {
                const Tensor base = random_on(s, d, ++seed, dev);
                Tensor view;
                if (k < specs.size()) {
                    view = base.slice(specs[k]);
                } else if (r == 2) {
                    view = base.transposed().slice({{0, 31, 1}, {0, 31, 1}});
                } else {  // the axes rotated: the last axis first
                    std::vector<std::int64_t> perm(static_cast<std::size_t>(r));
                    for (int a = 0; a < r; ++a) perm[static_cast<std::size_t>(a)] = (a + r - 1) % r;
                    view = base.permute(perm);
                }
                CAPTURE(to_string(view.shape()));
                CAPTURE(to_string(view.strides()));
                check_write(base, view, value_like(view, ++seed, dev));
            }
        }
    }
}

/// Views at every element alignment of a vector (offsets 0-8), with steps 1, 2 and -1, of the contract's
/// sizes: the vector path must check each pointer and stride and fall back to scalar stores.
inline void check_aligned_writes(Device dev) {
    std::uint64_t seed = 500;
    for (DType d : {float32, float16, int8, float64}) {
        CAPTURE(name(d));
        for (std::int64_t n : kSizes) {
            CAPTURE(n);
            for (std::int64_t off = 0; off <= 8; ++off) {
                CAPTURE(off);
                for (std::int64_t step : {1, 2, -1}) {
                    CAPTURE(step);
                    const Tensor base = random_on({2 * n + 9}, d, ++seed, dev);
                    // Step -1: elements off + n - 1 down to off (stop off - 1, or "to the front" at offset
                    // 0).
                    const Tensor view = step > 0 || n == 0
                                            ? base.slice({{off, off + step * n, step}})
                                            : base.slice({{off + n - 1, off == 0 ? kNone : off - 1, -1}});
                    REQUIRE(view.numel() == n);
                    check_write(base, view, value_like(view, ++seed, dev));
                }
            }
        }
    }
}

/// A reduction written into a column, an update of a strided slice from itself, and a shifted copy of a
/// tensor into itself (the output overlaps the input: through a temporary).
inline void check_overlapping_writes(Device dev) {
    // A row sum into column 0 of a matrix.
    const Tensor m = random_on({4, 3}, float32, 13, dev);
    const Tensor rows = random_on({4, 100}, float32, 14, dev);
    check_write(m, m.slice({{kNone, kNone, 1}, {0, 1, 1}}).squeeze(1), sum(Array(rows), 1));
    // x[::2] = x[::2] * 2.
    const Tensor x = from_host(std::vector<float>{1, 2, 3, 4, 5, 6}, {6}, float32, dev);
    const Tensor even = x.slice({{kNone, kNone, 2}});
    assign(even, Array(even) * 2.0);
    CHECK(x.to_vector<float>() == std::vector<float>{2, 2, 6, 4, 10, 6});
    // y[1:] = y[:-1]: every element reads the one its neighbour writes.
    const Tensor y = arange(0.0, 4097.0, 1.0, int32, dev).eval();
    assign(y.slice({{1, kNone, 1}}), Array(y.slice({{0, 4096, 1}})));
    const auto v = y.to_vector<std::int32_t>();
    CHECK(v[0] == 0);
    bool shifted = true;
    for (std::size_t i = 1; i < v.size(); ++i) shifted = shifted && v[i] == static_cast<std::int32_t>(i - 1);
    CHECK(shifted);
    // A transposed copy of a matrix into itself: z = z^T.
    const Tensor z = random_on({33, 33}, float32, 15, dev);
    const Tensor zt = host_copy(z).transposed();
    assign(z, Array(z.transposed()));
    const testing::Comparison c = testing::compare(z, zt, testing::Tolerance::exact(), "z^T");
    CHECK_MESSAGE(c.ok, c.message);
}

/// arange, linspace, full, zeros, ones and eye made on `dev`, read back with to_vector.
inline void check_factories(Device dev) {
    for (std::int64_t n : kSizes) {
        CAPTURE(n);
        const auto v = arange(n, int64, dev).eval().to_vector<std::int64_t>();
        REQUIRE(static_cast<std::int64_t>(v.size()) == n);
        bool ok = true;
        for (std::int64_t i = 0; i < n; ++i) ok = ok && v[static_cast<std::size_t>(i)] == i;
        CHECK(ok);
        for (DType d : {int8, uint8, int32, float16, bfloat16, float32, float64}) {
            CAPTURE(name(d));
            const Tensor got = arange(0.0, static_cast<double>(n), 1.0, d, dev).eval();
            const Tensor want =
                reference::evaluate(arange(0.0, static_cast<double>(n), 1.0, d, Device::cpu()).node());
            const testing::Comparison c = testing::compare(got, want, testing::Tolerance::exact(), "arange");
            CHECK_MESSAGE(c.ok, c.message);
        }
    }
    const auto f = arange(0.5, 3.0, 0.1, float32, dev).eval().to_vector<float>();
    REQUIRE(f.size() == 25);
    for (std::size_t i = 0; i < f.size(); ++i)
        CHECK(f[i] == static_cast<float>(0.5 + static_cast<double>(i) * 0.1));
    const auto l = linspace(-1.0, 2.0, 7, float64, true, dev).eval().to_vector<double>();
    REQUIRE(l.size() == 7);
    for (std::size_t i = 0; i + 1 < l.size(); ++i) CHECK(l[i] == -1.0 + static_cast<double>(i) * 0.5);
    CHECK(l.back() == 2.0);
    CHECK(linspace(0.0, 1.0, 4, float32, false, dev).eval().to_vector<float>() ==
          std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f});
    for (DType d : kAllDTypes) {
        CAPTURE(name(d));
        for (double x : zeros({3, 33}, d, dev).eval().to_vector<double>()) REQUIRE(x == 0.0);
        for (double x : ones({2, 2, 5}, d, dev).eval().to_vector<double>()) REQUIRE(x == 1.0);
    }
    CHECK(full({4}, 2.5, bfloat16, dev).eval().to_vector<float>() == std::vector<float>(4, 2.5f));
    CHECK(eye(3, 4, 1, int32, dev).eval().to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    CHECK(eye(2, -1, 0, float32, dev).eval().to_vector<float>() == std::vector<float>{1, 0, 0, 1});
    CHECK(Tensor(zeros({3}, float32, dev)).device() == dev);
}

}  // namespace views_checks

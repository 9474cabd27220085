// Strided gathers for the CPU reference evaluator: coalesced layouts and block copies.
#include <algorithm>
#include <cstring>

#include "loom/ir/error.hpp"
#include "parallel.hpp"
#include "reference_internal.hpp"

namespace loom::reference::detail {

Layout Layout::of(const Tensor& t) {
    Layout l;
    l.base = static_cast<const char*>(t.data());
    l.esz = itemsize(t.dtype());
    // Drop extent-1 dimensions, then merge a dimension into its outer neighbour when contiguous in it.
    for (int k = 0; k < t.rank(); ++k) {
        const auto e = t.shape()[static_cast<std::size_t>(k)];
        const auto s = t.strides()[static_cast<std::size_t>(k)];
        if (e == 1) continue;
        if (l.rank > 0 && l.strides[l.rank - 1] == s * e) {
            l.shape[l.rank - 1] *= e;
            l.strides[l.rank - 1] = s;
            continue;
        }
        l.shape[l.rank] = e;
        l.strides[l.rank] = s;
        ++l.rank;
    }
    l.contiguous = l.rank == 0 || (l.rank == 1 && l.strides[0] == 1) || t.numel() == 0;
    return l;
}

namespace {

template <class T>
void gather_t(const Layout& l, std::int64_t begin, std::int64_t n, T* dst) {
    const T* src = reinterpret_cast<const T*>(l.base);
    if (n <= 0) return;
    if (l.rank == 0) {
        std::fill(dst, dst + n, src[0]);
        return;
    }
    std::int64_t idx[kMaxRank];
    std::int64_t rem = begin, offset = 0;
    for (int k = l.rank - 1; k >= 0; --k) {
        idx[k] = rem % l.shape[k];
        rem /= l.shape[k];
        offset += idx[k] * l.strides[k];
    }
    const int last = l.rank - 1;
    const std::int64_t s = l.strides[last], extent = l.shape[last];
    while (n > 0) {
        const std::int64_t run = std::min(n, extent - idx[last]);
        const T* p = src + offset;
        if (s == 1) {
            std::memcpy(dst, p, static_cast<std::size_t>(run) * sizeof(T));
        } else if (s == 0) {
            std::fill(dst, dst + run, p[0]);
        } else {
            for (std::int64_t j = 0; j < run; ++j) dst[j] = p[j * s];
        }
        dst += run;
        n -= run;
        offset += run * s;
        idx[last] += run;
        if (idx[last] == extent && n > 0) {
            offset -= extent * s;
            idx[last] = 0;
            for (int k = last - 1; k >= 0; --k) {
                ++idx[k];
                offset += l.strides[k];
                if (idx[k] < l.shape[k]) break;
                offset -= l.shape[k] * l.strides[k];
                idx[k] = 0;
            }
        }
    }
}

}  // namespace

void gather(const Layout& l, std::int64_t begin, std::int64_t n, void* dst) {
    if (l.contiguous) {
        if (l.rank == 0 && n > 0) {
            // a single element repeated (rank 0 or every extent 1)
            switch (l.esz) {
                case 1:
                    gather_t(l, begin, n, static_cast<std::uint8_t*>(dst));
                    return;
                case 2:
                    gather_t(l, begin, n, static_cast<std::uint16_t*>(dst));
                    return;
                case 4:
                    gather_t(l, begin, n, static_cast<std::uint32_t*>(dst));
                    return;
                case 8:
                    gather_t(l, begin, n, static_cast<std::uint64_t*>(dst));
                    return;
                default:
                    break;
            }
        } else {
            std::memcpy(dst, l.base + begin * static_cast<std::int64_t>(l.esz),
                        static_cast<std::size_t>(n) * l.esz);
            return;
        }
    }
    switch (l.esz) {
        case 1:
            gather_t(l, begin, n, static_cast<std::uint8_t*>(dst));
            return;
        case 2:
            gather_t(l, begin, n, static_cast<std::uint16_t*>(dst));
            return;
        case 4:
            gather_t(l, begin, n, static_cast<std::uint32_t*>(dst));
            return;
        case 8:
            gather_t(l, begin, n, static_cast<std::uint64_t*>(dst));
            return;
        default:
            break;
    }
    throw InternalError("reference gather: bad element size");
}

Tensor materialize(const Tensor& t) {
    Tensor out = Tensor::host(t.shape(), t.dtype());
    const Layout l = Layout::of(t);
    char* dst = static_cast<char*>(out.data());
    const auto esz = static_cast<std::int64_t>(l.esz);
    loom::detail::parallel_for(t.numel(), kBlock * 4,
                               [&](std::int64_t b, std::int64_t e) { gather(l, b, e - b, dst + b * esz); });
    return out;
}

}  // namespace loom::reference::detail

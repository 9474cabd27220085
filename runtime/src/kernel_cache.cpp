// The in-memory kernel cache: one build per (key, device), shared futures for concurrent builders.
#include "loom/runtime/kernel_cache.hpp"

#include <future>
#include <mutex>
#include <unordered_map>

namespace loom {

namespace {

struct CacheKey {
    std::uint64_t key;
    int device;
    bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
    std::size_t operator()(const CacheKey& k) const noexcept {
        return static_cast<std::size_t>(k.key ^
                                        (static_cast<std::uint64_t>(k.device) * 0x9e3779b97f4a7c15ull));
    }
};

using Future = std::shared_future<std::shared_ptr<const CompiledKernel>>;

std::mutex g_mu;
std::unordered_map<CacheKey, Future, CacheKeyHash> g_map;
KernelCacheStats g_stats;

}  // namespace

std::shared_ptr<const CompiledKernel> cached_kernel(std::uint64_t key, int device,
                                                    const std::function<CompiledKernel()>& build) {
    const CacheKey ck{key, device};
    std::promise<std::shared_ptr<const CompiledKernel>> promise;
    Future fut;
    {
        std::lock_guard lock(g_mu);
        auto it = g_map.find(ck);
        if (it != g_map.end()) {
            if (it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
                ++g_stats.hits;
                fut = it->second;
            } else {
                ++g_stats.misses;  // another thread is building it: wait for that build
                fut = it->second;
            }
        } else {
            ++g_stats.misses;
            g_map.emplace(ck, promise.get_future().share());
        }
    }
    if (fut.valid()) return fut.get();
    try {
        auto built = std::make_shared<const CompiledKernel>(build());
        {
            std::lock_guard lock(g_mu);
            ++g_stats.builds;
            if (!built->from_disk) {  // an image from the disk cache compiled nothing
                ++g_stats.compiles;
                g_stats.compile_ms += built->compile_ms;
            }
        }
        promise.set_value(built);
        return built;
    } catch (...) {
        {
            std::lock_guard lock(g_mu);
            g_map.erase(ck);  // not cached: a later call tries again
        }
        promise.set_exception(std::current_exception());
        throw;
    }
}

std::shared_ptr<const CompiledKernel> find_cached_kernel(std::uint64_t key, int device) {
    std::lock_guard lock(g_mu);
    auto it = g_map.find(CacheKey{key, device});
    if (it == g_map.end() || it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
        return nullptr;
    ++g_stats.hits;
    return it->second.get();
}

KernelCacheStats kernel_cache_stats() {
    std::lock_guard lock(g_mu);
    return g_stats;
}

void clear_kernel_cache() {
    std::lock_guard lock(g_mu);
    g_map.clear();
}

}  // namespace loom

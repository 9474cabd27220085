// Building host kernels (host_internal.hpp): the LLVM IR of each kernel of a plan (LOOM_DUMP=llvm), its
// object file from the disk cache or from LLVM, linked into the JIT, cached in memory by the plan's key. The
// kernels of one plan that miss both caches are compiled together, as one LLVM module: the fixed costs of a
// compilation (a target machine, the pass managers, the object file, one link) are paid once per plan. The
// disk cache is the GPU's (runtime/src/disk_cache.cpp, docs/kernel-cache.md) under the same rules; a host
// entry's key is one kernel's IR without its comments plus everything else that decides the object file:
// Loom's version, LLVM's, the target triple, CPU and features, the pipeline. A kernel compiled with others
// stores their common object file under its own key (its entry points are found in it by name).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "host_internal.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "loom/runtime/nvrtc.hpp"

#ifndef LOOM_VERSION_STRING
#error "LOOM_VERSION_STRING (the project version) must be defined by the build"
#endif

namespace loom::host {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The host entries' format: bump it when the module makes something else of the same IR.
constexpr int kHostCacheFormat = 1;

DiskCacheKey host_cache_key(const codegen::LlvmKernelSource& src, const Backend& be) {
    const std::string body = codegen::strip_llvm_comments(src.ir);
    std::string text = fmt::format("loom host object cache key\nformat {}\nloom {}\nllvm {}\ntriple {}\ncpu {}\nfeatures {}\n"
                                   "pipeline {}\nsource {} bytes\n",
                                   kHostCacheFormat, LOOM_VERSION_STRING, be.info.llvm_version, be.target.triple,
                                   be.target.cpu, be.target.features, be.table->pipeline(), body.size());
    text += body;
    DiskCacheKey key;
    key.digest = sha256_hex(text);
    key.text = std::move(text);
    return key;
}

std::string take(const Backend& be, loom_hb_buffer& b) {
    std::string s = b.data ? std::string(b.data, b.size) : std::string();
    be.table->free_buffer(&b);
    return s;
}

// One module from several: the functions of each, every declaration once, one set of attribute groups (the
// emitters write the same groups into every module).
std::string merge_modules(const std::vector<const codegen::LlvmKernelSource*>& sources) {
    std::string out, tail;
    std::set<std::string> seen;
    for (const auto* src : sources) {
        const std::string& t = src->ir;
        for (std::size_t b = 0; b < t.size();) {
            std::size_t e = t.find('\n', b);
            if (e == std::string::npos) e = t.size();
            const std::string line = t.substr(b, e - b);
            b = e + 1;
            if (line.rfind("declare ", 0) == 0 || line.rfind("attributes #", 0) == 0) {
                if (seen.insert(line).second) tail += line + '\n';
                continue;
            }
            out += line;
            out += '\n';
        }
    }
    return out + '\n' + tail;
}

// Saves the IR LLVM rejected (LOOM_DUMP_DIR, else <temp>/loom) and returns the path ("" if not written).
std::string save_failed(std::string_view name, std::string_view ir) {
    const char* d = std::getenv("LOOM_DUMP_DIR");
    std::error_code ec;
    const std::filesystem::path dir = d && *d ? std::filesystem::path(d) : std::filesystem::temp_directory_path(ec) / "loom";
    return dump::write_to(dir, fmt::format("{}.ll", name), ir);
}

using Future = std::shared_future<std::shared_ptr<const CompiledKernel>>;

struct Cache {
    std::mutex mu;
    HostKernelCacheStats stats;
    std::unordered_map<std::uint64_t, Future> map;
};
Cache& cache() {
    static Cache* c = new Cache;  // kernels may be released during static destruction
    return *c;
}

// Builds the kernels `which` of `plan` (whose keys are new): emission, the disk cache, one LLVM compilation of
// those that missed it, the JIT.
std::vector<std::shared_ptr<CompiledKernel>> build(const codegen::HostPlan& plan, const std::vector<std::size_t>& which) {
    const Backend& be = backend();
    DiskCache& disk = disk_cache();
    const bool dump_cache = env_list_contains("LOOM_DUMP", "cache");
    std::vector<std::shared_ptr<CompiledKernel>> out;
    std::vector<std::optional<DiskCacheKey>> keys;
    std::vector<std::vector<char>> objects;
    std::vector<std::size_t> to_compile;
    for (std::size_t j = 0; j < which.size(); ++j) {
        auto k = std::make_shared<CompiledKernel>();
        const auto t0 = Clock::now();
        k->source = emit_kernel(plan, which[j]);
        k->codegen_ms = ms_since(t0);
        keys.emplace_back();
        objects.emplace_back();
        if (disk.enabled()) {
            keys.back() = host_cache_key(k->source, be);
            const auto t1 = Clock::now();
            bool is_ptx = false;
            if (auto image = disk.load(*keys.back(), &is_ptx); image && !is_ptx) {
                objects.back() = std::move(*image);
                k->from_disk = true;
                if (dump_cache)
                    fmt::print(stderr, "loom cache: hit {} {} ({} bytes, {:.3f} ms, host object)\n", k->source.name,
                               keys.back()->digest.substr(0, 16), objects.back().size(), ms_since(t1));
            }
        }
        if (!k->from_disk) to_compile.push_back(j);
        out.push_back(std::move(k));
    }
    // The misses, as one module.
    std::vector<char> compiled;
    if (!to_compile.empty()) {
        std::vector<const codegen::LlvmKernelSource*> srcs;
        for (std::size_t j : to_compile) srcs.push_back(&out[j]->source);
        const std::string merged = srcs.size() == 1 ? srcs[0]->ir : merge_modules(srcs);
        const std::string name = srcs.size() == 1 ? srcs[0]->name : fmt::format("{}_and_{}_more", srcs[0]->name, srcs.size() - 1);
        loom_hb_buffer obj{}, err{};
        double ms[2] = {0, 0};
        const auto t1 = Clock::now();
        if (be.table->compile(merged.data(), merged.size(), name.c_str(), &obj, &err, ms) != 0) {
            const std::string log = take(be, err);
            const std::string path = save_failed(name, merged);
            throw CompileError(fmt::format("LLVM failed for host kernel {} (IR {}; target {} {}, pipeline {}):\n{}", name,
                                           path.empty() ? "not saved" : "saved to " + path, be.target.triple, be.target.cpu,
                                           be.table->pipeline(), log),
                               log, {be.table->pipeline()}, path);
        }
        const double compile_ms = ms_since(t1);
        compiled.assign(obj.data, obj.data + obj.size);
        be.table->free_buffer(&obj);
        for (std::size_t j : to_compile) {
            out[j]->compile_ms = compile_ms / static_cast<double>(to_compile.size());
            if (!keys[j]) continue;
            disk.store(*keys[j], std::string_view(compiled.data(), compiled.size()), false);
            if (dump_cache)
                fmt::print(stderr, "loom cache: miss {} {}: compiled by LLVM{} in {:.1f} ms (optimize {:.1f}, code {:.1f}), stored "
                                   "({} bytes, host object)\n",
                           out[j]->source.name, keys[j]->digest.substr(0, 16),
                           to_compile.size() > 1 ? fmt::format(" with {} other kernel(s)", to_compile.size() - 1) : "",
                           compile_ms, ms[0], ms[1], compiled.size());
        }
    }
    // Link: the compiled object once, each disk object once.
    std::shared_ptr<LoadedObject> compiled_obj;
    auto link = [&](const std::vector<char>& bytes, const std::string& name) {
        auto lo = std::make_shared<LoadedObject>();
        loom_hb_buffer err{};
        lo->handle = be.table->load(bytes.data(), bytes.size(), name.c_str(), &err);
        if (!lo->handle) throw InternalError(fmt::format("host kernel {}: the JIT cannot link its object: {}", name, take(be, err)));
        return lo;
    };
    for (std::size_t j = 0; j < out.size(); ++j) {
        CompiledKernel& k = *out[j];
        const auto t2 = Clock::now();
        if (k.from_disk) {
            k.object = link(objects[j], k.source.name);
        } else {
            if (!compiled_obj) compiled_obj = link(compiled, k.source.name);
            k.object = compiled_obj;
        }
        auto entry = [&](const std::string& sym) -> CompiledKernel::Entry {
            if (sym.empty()) return nullptr;
            loom_hb_buffer e{};
            void* p = be.table->symbol(k.object->handle, sym.c_str(), &e);
            if (!p) throw InternalError(fmt::format("host kernel {}: {}", k.source.name, take(be, e)));
            return reinterpret_cast<CompiledKernel::Entry>(p);
        };
        k.entry = entry(k.source.entry);
        k.partials = entry(k.source.partials_entry);
        k.finish = entry(k.source.finish_entry);
        k.load_ms = ms_since(t2);
    }
    return out;
}

}  // namespace

LoadedObject::~LoadedObject() {
    if (handle && backend().table) backend().table->unload(handle);
}

codegen::LlvmKernelSource emit_kernel(const codegen::HostPlan& plan, std::size_t i) {
    const codegen::FusedKernel& k = plan.partition.kernels[i];
    const codegen::HostKernel& h = plan.kernels[i];
    codegen::LlvmKernelSource src = k.family == codegen::Family::Pointwise
                                        ? codegen::emit_pointwise_llvm(k.name, k.outputs, h.pointwise.plan, h.schedule, plan.target)
                                        : codegen::emit_reduce_llvm(k.name, h.reduce, h.schedule, plan.target);
    if (env_list_contains("LOOM_DUMP", "llvm")) dump::write(src.name + ".ll", src.ir);
    return src;
}

Kernels build_kernels(const codegen::HostPlan& plan) {
    Cache& c = cache();
    Kernels out(plan.kernels.size());
    std::vector<std::size_t> missing;                  // kernels this call builds (first of each new key)
    std::vector<Future> waits(plan.kernels.size());    // every kernel's future
    std::vector<std::promise<std::shared_ptr<const CompiledKernel>>> promises;
    {
        std::lock_guard lock(c.mu);
        for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
            if (plan.partition.kernels[k].family == codegen::Family::MatMul) continue;  // runs on the reference: no code
            const std::uint64_t key = plan.kernels[k].key;
            if (auto it = c.map.find(key); it != c.map.end()) {
                const bool ready = it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
                bool ours = false;  // a key this call builds already (the same kernel twice in one plan)
                for (std::size_t q : missing) ours = ours || plan.kernels[q].key == key;
                if (ready && !ours) ++c.stats.hits;
                else ++c.stats.misses;
                waits[k] = it->second;
                continue;
            }
            ++c.stats.misses;
            promises.emplace_back();
            waits[k] = promises.back().get_future().share();
            c.map.emplace(key, waits[k]);
            missing.push_back(k);
        }
    }
    if (!missing.empty()) {
        try {
            const std::vector<std::shared_ptr<CompiledKernel>> built = build(plan, missing);
            {
                std::lock_guard lock(c.mu);
                for (const auto& k : built) {
                    if (k->from_disk) ++c.stats.disk_hits;
                    else ++c.stats.compiles;
                    c.stats.compile_ms += k->compile_ms;
                    c.stats.load_ms += k->load_ms;
                }
            }
            for (std::size_t j = 0; j < missing.size(); ++j) promises[j].set_value(built[j]);
        } catch (...) {
            {
                std::lock_guard lock(c.mu);
                for (std::size_t k : missing) c.map.erase(plan.kernels[k].key);  // not cached: a later call tries again
            }
            for (auto& p : promises) p.set_exception(std::current_exception());
            throw;
        }
    }
    for (std::size_t k = 0; k < plan.kernels.size(); ++k)
        if (waits[k].valid()) out[k] = waits[k].get();
    return out;
}

}  // namespace loom::host

namespace loom {

HostKernelCacheStats host_kernel_cache_stats() {
    auto& c = host::cache();
    std::lock_guard lock(c.mu);
    return c.stats;
}

void clear_host_kernel_cache() {
    auto& c = host::cache();
    std::lock_guard lock(c.mu);
    c.map.clear();
    c.stats = {};
}

}  // namespace loom

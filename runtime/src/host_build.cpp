// Building host kernels (host_internal.hpp): the LLVM IR of each kernel of a plan (LOOM_DUMP=llvm), its
// object file from the disk cache or from LLVM, linked into the JIT, cached in memory by the plan's key. The
// kernels of one plan that miss both caches are compiled together, as one LLVM module: the fixed costs of a
// compilation (the pass managers, the object file, one link) are paid once per plan; build_kernels() of
// several plans pays them once for all (a module per set of kernels whose function names differ). The disk
// cache is the GPU's (runtime/src/disk_cache.cpp, docs/kernel-cache.md) under the same rules; a host entry's
// key is one kernel's IR without its comments plus everything else that decides the object file: Loom's
// version, LLVM's, the target triple, CPU and features, the pipeline. A kernel compiled with others stores
// their common object file under its own key (its entry points are found in it by name).
//
// In front of the disk cache and LLVM sits the code of the kernels already built in this process, by their IR
// without comments and with the functions the kernel defines renamed from its name to a placeholder: a kernel
// whose plan key is new but whose IR is another's but for its name shares that kernel's code. Plan keys hold
// the options, which decide the partition but not every kernel's code: a kernel of an unfused plan (fusion
// off) is often one a fused plan has too, under another name (`pointwise_3`, `mean_1`: a plan's kernel
// index).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "host_internal.hpp"
#include "loom/codegen/llvm/host_family.hpp"
#include "loom/ir/env.hpp"
#include "loom/ir/error.hpp"
#include "loom/runtime/disk_cache.hpp"
#include "loom/runtime/dump.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "nvtx.hpp"
#include "stats_internal.hpp"

#ifndef LOOM_VERSION_STRING
#error "LOOM_VERSION_STRING (the project version) must be defined by the build"
#endif

namespace loom::host {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The host entries' format: bump it when the module makes something else of the same IR.
constexpr int kHostCacheFormat = 1;

DiskCacheKey host_cache_key(const codegen::LlvmKernelSource& src, const Backend& be) {
    const std::string body = codegen::strip_llvm_comments(src.ir);
    std::string text = fmt::format(
        "loom host object cache key\nformat {}\nloom {}\nllvm {}\ntriple {}\ncpu {}\nfeatures {}\n"
        "pipeline {}\nsource {} bytes\n",
        kHostCacheFormat, LOOM_VERSION_STRING, be.info.llvm_version, be.target.triple, be.target.cpu,
        be.target.features, be.table->pipeline(), body.size());
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

// One module from several: the functions of each, every declaration and every global constant (a line of its
// own, `@name = ...`: the same text in every module that has it) once, one set of attribute groups (the
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
            if (line.rfind("declare ", 0) == 0 || line.rfind("attributes #", 0) == 0 ||
                line.rfind("@", 0) == 0) {
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
    const std::filesystem::path dir =
        d && *d ? std::filesystem::path(d) : std::filesystem::temp_directory_path(ec) / "loom";
    return dump::write_to(dir, fmt::format("{}.ll", name), ir);
}

bool identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '$' || c == '-';
}

// The functions a module's text defines (lines `define ... @<name>(`).
std::set<std::string, std::less<>> defined_functions(std::string_view text) {
    std::set<std::string, std::less<>> defined;
    for (std::size_t b = 0; b < text.size();) {
        std::size_t e = text.find('\n', b);
        if (e == std::string_view::npos) e = text.size();
        const std::string_view line = text.substr(b, e - b);
        if (line.rfind("define ", 0) == 0)
            if (const std::size_t at = line.find('@'); at != std::string_view::npos) {
                std::size_t t = at + 1;
                while (t < line.size() && identifier_char(line[t])) ++t;
                defined.emplace(line.substr(at + 1, t - at - 1));
            }
        b = e + 1;
    }
    return defined;
}

// What decides a kernel's code apart from its name: the IR without comments, every function the module
// defines (the emitters name them `<name>`, `<name>_rows`, `<name>.chunk.s0`, ...) renamed from `<name>` to
// `%kernel` (no global identifier contains a '%'), and the entry points by their renamed names. Declared
// functions (the scalar library, intrinsics) keep their names. Two kernels with the same text compute the
// same thing with the same instructions: renaming the functions a module defines changes nothing else.
std::string code_text(const codegen::LlvmKernelSource& src) {
    const std::string body = codegen::strip_llvm_comments(src.ir);
    const std::set<std::string, std::less<>> defined = defined_functions(body);
    auto renamed = [&](std::string_view token) {
        return defined.count(token) && token.substr(0, src.name.size()) == src.name && !src.name.empty()
                   ? "%kernel" + std::string(token.substr(src.name.size()))
                   : std::string(token);
    };
    std::string out;
    out.reserve(body.size() + 64);
    for (std::size_t i = 0; i < body.size();) {
        if (body[i] != '@') {
            out += body[i++];
            continue;
        }
        std::size_t t = i + 1;
        while (t < body.size() && identifier_char(body[t])) ++t;
        out += '@';
        out += renamed(std::string_view(body).substr(i + 1, t - i - 1));
        i = t;
    }
    out += fmt::format("\nentries {} {} {}\n", renamed(src.entry), renamed(src.partials_entry),
                       renamed(src.finish_entry));
    return out;
}

using Future = std::shared_future<std::shared_ptr<const CompiledKernel>>;

// A kernel's code, for kernels of the same code text (code_text()).
struct SharedCode {
    std::weak_ptr<const LoadedObject> object;  // expired once no kernel holds it
    CompiledKernel::Entry entry = nullptr, partials = nullptr, finish = nullptr;
};

struct Cache {
    std::mutex mu;
    HostKernelCacheStats stats;
    std::unordered_map<std::uint64_t, Future> map;
    std::unordered_map<std::string, SharedCode> code;  // by SHA-256 of code_text()
};
Cache& cache() {
    static Cache* c = new Cache;  // kernels may be released during static destruction
    return *c;
}

// A kernel of a plan: the plan and the kernel's index in it.
using PlanKernel = std::pair<const codegen::HostPlan*, std::size_t>;

// The kernels of one build() call, in the order asked for, and what the build learns of each: its disk-cache
// key and object, the hash of its code text, the module it is compiled in. Its parts run in build()'s order.
struct Batch {
    const Backend& be = backend();
    DiskCache& disk = disk_cache();
    Cache& c = cache();
    const bool dump_cache = env_list_contains("LOOM_DUMP", "cache");
    // Per kernel: the kernel, its disk-cache key (when the disk cache is on), its object from the disk, the
    // SHA-256 of its code text (code_text()), its module.
    std::vector<std::shared_ptr<CompiledKernel>> out;
    std::vector<std::optional<DiskCacheKey>> keys;
    std::vector<std::vector<char>> objects;
    std::vector<std::string> code_keys;
    std::vector<std::size_t> module_of;
    std::vector<std::size_t> to_compile;  // the kernels that missed every cache
    // (j, i): kernel j has kernel i's code (i < j, both built here).
    std::vector<std::pair<std::size_t, std::size_t>> twins;
    std::vector<std::vector<std::size_t>> modules;  // per module, the kernels compiled together
    std::vector<std::vector<char>> compiled;        // per module, its object file

    // Emits kernel `pk` and looks for its code: in the kernels already built, in this batch, on the disk;
    // else it is one to compile.
    void add(const PlanKernel& pk) {
        const std::size_t j = out.size();
        auto k = std::make_shared<CompiledKernel>();
        const auto t0 = Clock::now();
        k->source = emit_kernel(*pk.first, pk.second);
        k->codegen_ms = ms_since(t0);
        keys.emplace_back();
        objects.emplace_back();
        code_keys.push_back(sha256_hex(code_text(k->source)));
        share_code(*k, j);
        if (k->shared) {
            if (dump_cache)
                fmt::print(stderr,
                           "loom cache: {} has the code of a kernel built before (host object shared)\n",
                           k->source.name);
            out.push_back(std::move(k));
            return;
        }
        if (disk.enabled()) {
            const detail::NvtxRange range([&] { return fmt::format("disk cache load {}", k->source.name); });
            load_from_disk(*k, j);
        }
        if (!k->from_disk) to_compile.push_back(j);
        out.push_back(std::move(k));
    }

    // Kernel j's code from a kernel of the same code text: one built before whose object is still loaded, or
    // one earlier in this batch (a twin, given its code once it is linked).
    void share_code(CompiledKernel& k, std::size_t j) {
        {
            std::lock_guard lock(c.mu);
            if (auto it = c.code.find(code_keys[j]); it != c.code.end())
                if (auto object = it->second.object.lock()) {
                    k.object = std::move(object);
                    k.entry = it->second.entry;
                    k.partials = it->second.partials;
                    k.finish = it->second.finish;
                    k.shared = true;
                }
        }
        if (!k.shared)
            for (std::size_t i = 0; i < j && !k.shared; ++i)
                if (code_keys[i] == code_keys[j]) {
                    twins.emplace_back(j, i);
                    k.shared = true;
                }
    }

    void load_from_disk(CompiledKernel& k, std::size_t j) {
        keys[j] = host_cache_key(k.source, be);
        const auto t1 = Clock::now();
        bool is_ptx = false;
        if (auto image = disk.load(*keys[j], &is_ptx); image && !is_ptx) {
            objects[j] = std::move(*image);
            k.from_disk = true;
            if (dump_cache)
                fmt::print(stderr, "loom cache: hit {} {} ({} bytes, {:.3f} ms, host object)\n",
                           k.source.name, keys[j]->digest.substr(0, 16), objects[j].size(), ms_since(t1));
        }
    }

    // The misses, as few modules as their function names allow (one, for the kernels of one plan): each
    // kernel goes into the first module that defines none of its functions.
    void group_modules() {
        std::vector<std::set<std::string, std::less<>>> names;
        for (std::size_t j : to_compile) {
            const auto mine = defined_functions(out[j]->source.ir);
            std::size_t m = 0;
            for (; m < modules.size(); ++m) {
                bool clash = false;
                for (const auto& f : mine) clash = clash || names[m].count(f) > 0;
                if (!clash) break;
            }
            if (m == modules.size()) {
                modules.emplace_back();
                names.emplace_back();
            }
            modules[m].push_back(j);
            names[m].insert(mine.begin(), mine.end());
        }
    }

    // Each module compiled once by LLVM, its object stored on the disk under the key of each of its kernels.
    void compile_modules() {
        compiled.resize(modules.size());
        module_of.assign(out.size(), 0);
        for (std::size_t m = 0; m < modules.size(); ++m) compile_module(m);
    }

    void compile_module(std::size_t m) {
        const std::vector<std::size_t>& group = modules[m];
        std::vector<const codegen::LlvmKernelSource*> srcs;
        for (std::size_t j : group) srcs.push_back(&out[j]->source);
        const std::string merged = srcs.size() == 1 ? srcs[0]->ir : merge_modules(srcs);
        const std::string name =
            srcs.size() == 1 ? srcs[0]->name : fmt::format("{}_and_{}_more", srcs[0]->name, srcs.size() - 1);
        loom_hb_buffer obj{}, err{};
        double ms[2] = {0, 0};
        const detail::NvtxRange range([&] { return fmt::format("LLVM {}", name); });
        const auto t1 = Clock::now();
        if (be.table->compile(merged.data(), merged.size(), name.c_str(), &obj, &err, ms) != 0) {
            const std::string log = take(be, err);
            const std::string path = save_failed(name, merged);
            throw CompileError(
                fmt::format("LLVM failed for host kernel {} (IR {}; target {} {}, pipeline {}):\n{}", name,
                            path.empty() ? "not saved" : "saved to " + path, be.target.triple, be.target.cpu,
                            be.table->pipeline(), log),
                log, {be.table->pipeline()}, path);
        }
        const double compile_ms = ms_since(t1);
        compiled[m].assign(obj.data, obj.data + obj.size);
        be.table->free_buffer(&obj);
        for (std::size_t j : group) {
            out[j]->compile_ms = compile_ms / static_cast<double>(group.size());
            module_of[j] = m;
            if (!keys[j]) continue;
            const bool stored =
                disk.store(*keys[j], std::string_view(compiled[m].data(), compiled[m].size()), false);
            if (dump_cache)
                fmt::print(stderr,
                           "loom cache: miss {} {}: compiled by LLVM{} in {:.1f} ms (optimize {:.1f}, code "
                           "{:.1f}), {} ({} bytes, host object)\n",
                           out[j]->source.name, keys[j]->digest.substr(0, 16),
                           group.size() > 1 ? fmt::format(" with {} other kernel(s)", group.size() - 1) : "",
                           compile_ms, ms[0], ms[1], stored ? "stored" : "not stored (the store failed)",
                           compiled[m].size());
        }
    }

    std::shared_ptr<LoadedObject> link(const std::vector<char>& bytes, const std::string& name) const {
        auto lo = std::make_shared<LoadedObject>();
        loom_hb_buffer err{};
        lo->handle = be.table->load(bytes.data(), bytes.size(), name.c_str(), &err);
        if (!lo->handle)
            throw InternalError(
                fmt::format("host kernel {}: the JIT cannot link its object: {}", name, take(be, err)));
        return lo;
    }

    // Entry point `sym` of kernel k's object (none for an empty name).
    CompiledKernel::Entry entry_point(const CompiledKernel& k, const std::string& sym) const {
        if (sym.empty()) return nullptr;
        loom_hb_buffer e{};
        void* p = be.table->symbol(k.object->handle, sym.c_str(), &e);
        if (!p) throw InternalError(fmt::format("host kernel {}: {}", k.source.name, take(be, e)));
        return reinterpret_cast<CompiledKernel::Entry>(p);
    }

    // Link: each compiled object once, each disk object once; then every kernel's entry points.
    void link_all() {
        std::vector<std::shared_ptr<LoadedObject>> compiled_objs(modules.size());
        for (std::size_t j = 0; j < out.size(); ++j) {
            CompiledKernel& k = *out[j];
            if (k.shared) continue;
            const auto t2 = Clock::now();
            if (k.from_disk) {
                k.object = link(objects[j], k.source.name);
            } else {
                const std::size_t m = module_of[j];
                if (!compiled_objs[m]) compiled_objs[m] = link(compiled[m], k.source.name);
                k.object = compiled_objs[m];
            }
            k.entry = entry_point(k, k.source.entry);
            k.partials = entry_point(k, k.source.partials_entry);
            k.finish = entry_point(k, k.source.finish_entry);
            k.load_ms = ms_since(t2);
        }
    }

    // The twins take their code from the kernels they share it with; every kernel's code is remembered for
    // the kernels of the same code text built later.
    void share_twins_and_remember() {
        for (const auto& [j, i] : twins) {
            out[j]->object = out[i]->object;
            out[j]->entry = out[i]->entry;
            out[j]->partials = out[i]->partials;
            out[j]->finish = out[i]->finish;
        }
        std::lock_guard lock(c.mu);
        for (std::size_t j = 0; j < out.size(); ++j) {
            const CompiledKernel& k = *out[j];
            SharedCode& sc = c.code[code_keys[j]];
            if (sc.object.expired()) sc = {k.object, k.entry, k.partials, k.finish};
        }
    }
};

// Builds the kernels `which` (whose keys are new): emission, the code of kernels already built, the disk
// cache, one LLVM compilation of those that missed both (several when two of them define functions of the
// same name, as kernels of different plans may), the JIT.
std::vector<std::shared_ptr<CompiledKernel>> build(const std::vector<PlanKernel>& which) {
    Batch batch;
    for (const PlanKernel& pk : which) batch.add(pk);
    batch.group_modules();
    batch.compile_modules();
    batch.link_all();
    batch.share_twins_and_remember();
    return std::move(batch.out);
}

}  // namespace

LoadedObject::~LoadedObject() {
    if (handle && backend().table) backend().table->unload(handle);
}

codegen::LlvmKernelSource emit_kernel(const codegen::HostPlan& plan, std::size_t i) {
    std::optional<codegen::LlvmKernelSource> src = codegen::emit_host_kernel(plan, i);
    if (!src)
        throw InternalError(
            fmt::format("host emit_kernel(): kernel {} has no code (it runs on the reference)",
                        plan.partition.kernels[i].name));
    if (env_list_contains("LOOM_DUMP", "llvm")) dump::write(src->name + ".ll", src->ir);
    return std::move(*src);
}

std::vector<Kernels> build_kernels(std::span<const codegen::HostPlan* const> plans) {
    Cache& c = cache();
    std::vector<PlanKernel> missing;                       // kernels this call builds (first of each new key)
    std::vector<std::vector<Future>> waits(plans.size());  // every kernel's future
    std::vector<std::promise<std::shared_ptr<const CompiledKernel>>> promises;
    {
        std::lock_guard lock(c.mu);
        for (std::size_t p = 0; p < plans.size(); ++p) {
            const codegen::HostPlan& plan = *plans[p];
            waits[p].resize(plan.kernels.size());
            for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
                if (!codegen::has_code(plan.kernels[k])) continue;  // runs on the reference
                const std::uint64_t key = plan.kernels[k].key;
                if (auto it = c.map.find(key); it != c.map.end()) {
                    const bool ready =
                        it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
                    bool ours = false;  // a key this call builds already (the same kernel twice in one plan,
                                        // or in two)
                    for (const auto& [q, i] : missing) ours = ours || q->kernels[i].key == key;
                    if (ready && !ours)
                        ++c.stats.hits;
                    else
                        ++c.stats.misses;
                    waits[p][k] = it->second;
                    continue;
                }
                ++c.stats.misses;
                promises.emplace_back();
                waits[p][k] = promises.back().get_future().share();
                c.map.emplace(key, waits[p][k]);
                missing.emplace_back(&plan, k);
            }
        }
    }
    if (!missing.empty()) {
        try {
            const std::vector<std::shared_ptr<CompiledKernel>> built = build(missing);
            {
                std::lock_guard lock(c.mu);
                for (const auto& k : built) {
                    if (k->shared)
                        ++c.stats.shared;
                    else if (k->from_disk)
                        ++c.stats.disk_hits;
                    else
                        ++c.stats.compiles;
                    c.stats.compile_ms += k->compile_ms;
                    c.stats.load_ms += k->load_ms;
                }
            }
            detail::register_stats_dump();
            for (std::size_t j = 0; j < missing.size(); ++j) promises[j].set_value(built[j]);
        } catch (...) {
            {
                std::lock_guard lock(c.mu);
                for (const auto& [q, i] : missing)
                    c.map.erase(q->kernels[i].key);  // not cached: a later call tries again
            }
            for (auto& pr : promises) pr.set_exception(std::current_exception());
            throw;
        }
    }
    std::vector<Kernels> out(plans.size());
    for (std::size_t p = 0; p < plans.size(); ++p) {
        out[p].resize(waits[p].size());
        for (std::size_t k = 0; k < waits[p].size(); ++k)
            if (waits[p][k].valid()) out[p][k] = waits[p][k].get();
    }
    return out;
}

Kernels build_kernels(const codegen::HostPlan& plan) {
    const codegen::HostPlan* const one[] = {&plan};
    return std::move(build_kernels(one)[0]);
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
    c.code.clear();
    c.stats = {};
}

}  // namespace loom

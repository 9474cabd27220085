// The pass pipeline: a list of passes run in order, verified between, dumped when they change the graph.
#include "loom/ir/pass.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>

#include "loom/ir/env.hpp"
#include "loom/ir/graph.hpp"

namespace loom::ir {

namespace {

bool verify_by_default() {
#ifdef NDEBUG
    return env_switch("LOOM_VERIFY", false);
#else
    return env_switch("LOOM_VERIFY", true);
#endif
}

void dump(const std::vector<NodePtr>& roots, int index, const std::string& pass) {
    const std::string text = fmt::format("// IR after pass {} ({})\n{}", index, pass, print(roots));
    if (const char* dir = std::getenv("LOOM_DUMP_DIR"); dir && *dir) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);  // as the other dumps do
        const std::string path = fmt::format("{}/ir_{}_{}.txt", dir, index, pass);
        if (std::FILE* f = std::fopen(path.c_str(), "w")) {
            std::fputs(text.c_str(), f);
            std::fclose(f);
            return;
        }
        static std::once_flag once;
        std::call_once(once, [&] {
            std::fprintf(stderr, "loom warning: cannot write IR dumps into %s; they go to stderr\n", dir);
        });
    }
    std::fputs(text.c_str(), stderr);
}

}  // namespace

std::vector<Pass> standard_passes(const PassOptions& options) {
    std::vector<Pass> passes;
    // First, while the scores' mask is still the arange comparisons and scalars the user wrote.
    if (options.rewrite_attention) passes.push_back({"rewrite_attention", rewrite_attention});
    passes.insert(passes.end(), {
                                    {"lower_factories", lower_factories},
                                    {"canonicalize_views", canonicalize_views},
                                    {"hoist_uniform", hoist_uniform},
                                });
    return passes;
}

std::vector<NodePtr> run_pipeline(const std::vector<NodePtr>& roots, const std::vector<Pass>& passes) {
    const bool check = verify_by_default();
    const bool dumping = env_list_contains("LOOM_DUMP", "ir");
    if (check) verify(roots);
    std::vector<NodePtr> cur = roots;
    int index = 0;
    for (const Pass& p : passes) {
        ++index;
        std::vector<NodePtr> next = p.run(cur);
        const bool changed = next != cur;  // interned nodes: pointer equality is graph equality
        if (changed) {
            if (check) verify(next);
            if (dumping) dump(next, index, p.name);
        }
        cur = std::move(next);
    }
    return cur;
}

}  // namespace loom::ir

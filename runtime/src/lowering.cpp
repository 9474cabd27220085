// The pass pipeline under loom::Options (lowering.hpp).
#include "lowering.hpp"

#include <cstdio>

#include "loom/ir/env.hpp"
#include "loom/ir/pass.hpp"

namespace loom {

std::vector<ir::NodePtr> lower_graph(const std::vector<ir::NodePtr>& roots, const Options& options,
                                     bool log) {
    if (log && env_list_contains("LOOM_EXPLAIN", "fusion"))
        std::fputs(explain_written_attention(roots, options).c_str(), stderr);
    return ir::run_pipeline(roots, ir::standard_passes({.rewrite_attention = options.attention_rewrite}));
}

std::string explain_written_attention(const std::vector<ir::NodePtr>& roots, const Options& options) {
    return ir::explain_attention_patterns(roots, options.attention_rewrite);
}

}  // namespace loom

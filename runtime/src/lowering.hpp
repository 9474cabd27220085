// The pass pipeline between the user's graph and the planners, under the options of the evaluation,
// traced function or explain that asked.
#pragma once

#include <vector>

#include "loom/codegen/options.hpp"
#include "loom/ir/node.hpp"

namespace loom {

/// ir::run_pipeline over ir::standard_passes, with the attention rewrite when `options.attention_rewrite`.
/// With `log` and LOOM_EXPLAIN containing "fusion", the written-out attentions found (rewritten or not, and
/// why) go to stderr before the plan does.
std::vector<ir::NodePtr> lower_graph(const std::vector<ir::NodePtr>& roots, const Options& options,
                                     bool log = true);

/// The explain log's lines for the written-out attentions in `roots` (ir::explain_attention_patterns).
std::string explain_written_attention(const std::vector<ir::NodePtr>& roots, const Options& options);

}  // namespace loom

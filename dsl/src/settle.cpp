// The lazy graph size limit (settle.hpp): a graph past the limit is evaluated at once, together with every
// value of it that something else holds (the loop's other state), and those values are remembered, so that
// the next ops read them as tensors. A loop that builds one step per iteration then cuts at the same place
// of every step and runs a handful of distinct kernels whatever the step count.
#include "settle.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "loom/ir/graph.hpp"
#include "loom/ir/op.hpp"
#include "loom/runtime/executor.hpp"

namespace loom::detail {

namespace {

// NVRTC's time grows faster than linearly with a kernel's size (about 3 s for a chain of 1,000 ops, 9 s for
// 2,000 on one core): 1,024 nodes keeps every kernel that the limit allows quick to compile.
constexpr std::uint32_t kDefaultLazyNodeLimit = 1024;
// At most this many held values of a graph are evaluated beside its root; a graph with more (a program that
// keeps every step's value) settles its root alone.
constexpr std::size_t kMaxSettledValues = 32;

std::uint32_t limit_from_environment() {
    const char* v = std::getenv("LOOM_LAZY_MAX_NODES");
    if (!v || !*v) return kDefaultLazyNodeLimit;
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || errno == ERANGE || n > UINT32_MAX || v[0] == '-') {
        std::fprintf(stderr, "loom: LOOM_LAZY_MAX_NODES=%s is not a node count (0 to %u); using %u\n", v,
                     UINT32_MAX, kDefaultLazyNodeLimit);
        return kDefaultLazyNodeLimit;
    }
    return static_cast<std::uint32_t>(n);
}

// Values evaluated by a settle, by the node that computed them: while that node lives (a user's Array
// holds it), a new op on it reads the input bound to the value instead. The node is held weakly, and the
// entry dropped once it is gone (the address may then be reused by another node). One table per thread:
// a value is read as a tensor only by the thread whose evaluation computed it (on its stream), and other
// threads keep the graph.
struct SettledValues {
    std::unordered_map<const ir::Node*, std::pair<std::weak_ptr<const ir::Node>, ir::NodePtr>> values;
};

SettledValues& settled() {
    thread_local SettledValues s;
    return s;
}

ir::NodePtr settled_value(const ir::NodePtr& n) {
    SettledValues& s = settled();
    const auto it = s.values.find(n.get());
    if (it == s.values.end()) return nullptr;
    if (it->second.first.lock() != n) {  // the node is gone and its address taken by another
        s.values.erase(it);
        return nullptr;
    }
    return it->second.second;
}

void remember(const std::vector<ir::NodePtr>& nodes, const std::vector<ir::NodePtr>& values) {
    SettledValues& s = settled();
    for (auto it = s.values.begin(); it != s.values.end();)
        it = it->second.first.expired() ? s.values.erase(it) : std::next(it);
    for (std::size_t k = 0; k < nodes.size(); ++k) s.values[nodes[k].get()] = {nodes[k], values[k]};
}

// `node` rebuilt on the settled values of its operands, or `node` itself.
ir::NodePtr with_settled_operands(ir::NodePtr node) {
    if (settled().values.empty() || node->operands().empty()) return node;
    std::vector<ir::NodePtr> ops = node->operands();
    bool changed = false;
    for (ir::NodePtr& o : ops)
        if (ir::NodePtr v = settled_value(o)) {
            o = std::move(v);
            changed = true;
        }
    return changed ? ir::rebuild(*node, ops) : node;
}

// The non-leaf nodes of a graph (`order`: its topological order) that something outside the graph holds (a
// user's Array, another lazy graph): their shared_ptr count passes the graph's own references to them.
std::vector<ir::NodePtr> held_values(const std::vector<const ir::Node*>& order) {
    std::unordered_map<const ir::Node*, std::pair<ir::NodePtr, long>> refs;
    for (const ir::Node* n : order)
        for (const ir::NodePtr& o : n->operands()) {
            auto& r = refs[o.get()];
            r.first = o;
            ++r.second;
        }
    std::vector<ir::NodePtr> out;
    for (const ir::Node* n : order) {
        const auto it = refs.find(n);
        if (it == refs.end() || ir::info(n->op()).kind == ir::OpKind::Leaf || n->numel() == 0) continue;
        // The count includes the map's own copy.
        if (it->second.first.use_count() > it->second.second + 1) out.push_back(it->second.first);
    }
    if (out.size() > kMaxSettledValues) out.clear();
    return out;
}

}  // namespace

std::atomic<std::uint32_t>& lazy_limit() {
    static std::atomic<std::uint32_t> limit{limit_from_environment()};
    return limit;
}

ir::NodePtr settle(ir::NodePtr node,
                   const std::function<ir::NodePtr(const Tensor&, const std::source_location&)>& input_of) {
    if (!node) return node;
    node = with_settled_operands(std::move(node));
    const std::uint32_t limit = lazy_limit().load(std::memory_order_relaxed);
    if (limit == 0 || node->size_bound() <= limit || node->reads_placeholder()) return node;
    // The bound counts a shared subexpression once per use: the graph's distinct nodes decide. (Counting them
    // walks at most limit + 1 nodes more than the bound's test, and only for graphs the bound cannot clear.)
    const std::vector<const ir::Node*> order = ir::topo_order({node});
    if (order.size() <= limit) return node;
    std::optional<Device> device;
    for (const ir::Node* n : order) {
        if (n->op() != ir::Op::Input) continue;
        const Device d = static_cast<const Tensor::Impl*>(n->payload().get())->storage->device;
        if (device && !(*device == d)) return node;  // evaluation would fail: left to the user's eval()
        device = d;
    }
    if (!device) return node;  // no inputs: nothing to bound
    const std::source_location loc = node->loc();
    std::vector<ir::NodePtr> roots = held_values(order);
    roots.insert(roots.begin(), node);
    const std::vector<Tensor> values = evaluate(roots, loc);
    std::vector<ir::NodePtr> inputs;
    for (std::size_t k = 0; k < roots.size(); ++k) inputs.push_back(input_of(values[k], roots[k]->loc()));
    remember({roots.begin() + 1, roots.end()}, {inputs.begin() + 1, inputs.end()});
    return inputs.front();
}

}  // namespace loom::detail

// Interning and iterative destruction of IR nodes.
//
// The intern table maps a structural hash to raw node pointers and holds no reference. A node is found
// only while its reference count is above zero (weak lock through the table's own control block is
// avoided: a node whose count reached zero is being destroyed and its entry is skipped). Destruction moves
// a dying node's operands onto a per-thread work list, so a 10,000-deep chain frees in a loop.
#include "loom/ir/node.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "loom/ir/error.hpp"
#include "loom/ir/hash.hpp"

namespace loom::ir {

bool ScalarValue::operator==(const ScalarValue& o) const {
    return is_float == o.is_float && std::bit_cast<std::uint64_t>(f) == std::bit_cast<std::uint64_t>(o.f) &&
           i == o.i;
}

namespace {

struct Entry {
    const Node* node;
    std::weak_ptr<const Node> weak;
};

constexpr int kShards = 16;
struct Shard {
    std::mutex mu;
    std::unordered_multimap<std::uint64_t, Entry> map;
};
Shard* shards() {
    static Shard s[kShards];  // never destroyed before nodes: function-local static of trivial lifetime
    return s;
}
Shard& shard_for(std::uint64_t h) {
    return shards()[h % kShards];
}

std::atomic<std::uint64_t> g_next_id{1};
std::atomic<std::uint64_t> g_next_input{1};
std::atomic<std::size_t> g_live{0};

// Gathers and scatters raise errors at run time (an index out of range) naming their call's file:line, so one
// written on another line is another node: merged, an error would name a line the user may never evaluate.
// On one line they merge as any op does.
bool keeps_its_line(const NodeDesc& d) {
    return is_gather(d.op) || is_scatter(d.op);
}

std::uint64_t hash_desc(const NodeDesc& d) {
    Hasher h;
    if (keeps_its_line(d)) {
        h.add(std::string_view(d.loc.file_name()));
        h.add(d.loc.line());
    }
    h.add(static_cast<std::uint64_t>(d.op));
    h.add(static_cast<std::uint64_t>(d.dtype));
    h.add(d.shape.size());
    for (auto e : d.shape) h.add(static_cast<std::uint64_t>(e));
    h.add(d.ints.size());
    for (auto e : d.ints) h.add(static_cast<std::uint64_t>(e));
    h.add(std::bit_cast<std::uint64_t>(d.value.f));
    h.add(static_cast<std::uint64_t>(d.value.i));
    h.add(d.value.is_float ? 1u : 0u);
    h.add(d.keepdims ? 1u : 0u);
    for (const auto& o : d.operands) h.add(o->hash());
    return h.digest();
}

bool same(const NodeDesc& a, const NodeDesc& b) {
    if (a.op != b.op || a.dtype != b.dtype || a.shape != b.shape || a.ints != b.ints ||
        !(a.value == b.value) || a.keepdims != b.keepdims || a.operands.size() != b.operands.size())
        return false;
    if (keeps_its_line(a) &&
        (a.loc.line() != b.loc.line() || std::strcmp(a.loc.file_name(), b.loc.file_name()) != 0))
        return false;
    for (std::size_t k = 0; k < a.operands.size(); ++k)
        if (a.operands[k].get() != b.operands[k].get()) return false;
    return true;
}

thread_local bool t_draining = false;
thread_local std::vector<NodePtr>* t_pending = nullptr;

}  // namespace

struct NodeDeleter {
    void operator()(const Node* cn) const {
        Node* n = const_cast<Node*>(cn);
        {
            Shard& s = shard_for(n->hash_);
            std::lock_guard lock(s.mu);
            auto [lo, hi] = s.map.equal_range(n->hash_);
            for (auto it = lo; it != hi; ++it) {
                if (it->second.node == n) {
                    s.map.erase(it);
                    break;
                }
            }
        }
        std::vector<NodePtr> ops = std::move(n->d_.operands);
        delete n;
        g_live.fetch_sub(1, std::memory_order_relaxed);
        if (t_draining) {
            for (auto& o : ops) t_pending->push_back(std::move(o));
            return;
        }
        t_draining = true;
        std::vector<NodePtr> work = std::move(ops);
        t_pending = &work;
        while (!work.empty()) {
            NodePtr p = std::move(work.back());
            work.pop_back();
            p.reset();  // may run this deleter again, which appends to `work` instead of recursing
        }
        t_pending = nullptr;
        t_draining = false;
    }
};

namespace {

// Every array's bytes are counted in int64 (allocation, offsets, copies): an array whose element count times
// its element size overflows is refused where it is made, naming the op and the user's line, rather than at
// an allocation inside eval() that no longer knows either. Factories check first under their own names.
void check_bytes(const NodeDesc& d) {
    for (auto e : d.shape)
        if (e == 0) return;  // no elements, whatever the other extents
    std::int64_t n = 1;
    bool overflow = false;
    for (auto e : d.shape) overflow = overflow || (e > 0 && __builtin_mul_overflow(n, e, &n));
    std::int64_t bytes = 0;
    if (overflow || __builtin_mul_overflow(n, static_cast<std::int64_t>(itemsize(d.dtype)), &bytes))
        throw Error(
            fmt::format("{}(): shape {} {} has more elements or bytes than a 64-bit count can hold ({})",
                        op_name(d.op), to_string(d.shape), name(d.dtype), short_location(d.loc)));
}

}  // namespace

NodePtr intern(NodeDesc desc) {
    const std::uint64_t h = hash_desc(desc);
    Shard& s = shard_for(h);
    std::lock_guard lock(s.mu);
    auto [lo, hi] = s.map.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
        if (same(it->second.node->d_, desc)) {
            if (NodePtr alive = it->second.weak.lock()) return alive;
        }
    }
    check_bytes(desc);  // a node found above was checked when it was made
    Node* raw = new Node(std::move(desc));
    raw->hash_ = h;
    std::uint64_t bound = 1;
    bool placeholder = raw->d_.op == Op::Input && !raw->d_.payload;
    const auto& ops = raw->d_.operands;
    for (std::size_t k = 0; k < ops.size(); ++k) {
        bool repeated = false;  // `x + x`: one operand used twice is one subgraph
        for (std::size_t j = 0; j < k; ++j) repeated = repeated || ops[j].get() == ops[k].get();
        if (!repeated) bound += ops[k]->size_bound_;
        placeholder = placeholder || ops[k]->reads_placeholder_;
    }
    raw->size_bound_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(bound, UINT32_MAX));
    raw->reads_placeholder_ = placeholder;
    raw->id_ = g_next_id.fetch_add(1, std::memory_order_relaxed);
    NodePtr p(raw, NodeDeleter{});
    s.map.emplace(h, Entry{raw, p});
    g_live.fetch_add(1, std::memory_order_relaxed);
    return p;
}

std::size_t live_node_count() {
    return g_live.load(std::memory_order_relaxed);
}
std::uint64_t next_input_id() {
    return g_next_input.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace loom::ir

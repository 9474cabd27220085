// Rewrites and the pass pipeline: rewrite/rebuild keep unchanged nodes, canonicalize_views and
// hoist_uniform do what their file comments promise, LOOM_DUMP=ir dumps only after passes that changed
// the graph.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/build.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/graph.hpp"
#include "loom/ir/pass.hpp"

using namespace loom;
using namespace loom::ir;
namespace fs = std::filesystem;

namespace {

NodePtr run_scalar(double v) {
    return scalar(ScalarValue::of_float(v), float32);
}

// Sets environment variables for the scope of a test and restores them after.
class ScopedEnv {
  public:
    void set(const char* name, const std::string& value) {
        const char* old = std::getenv(name);
        saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second)
                setenv(it->first, it->second->c_str(), 1);
            else
                unsetenv(it->first);
        }
    }

  private:
    std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

std::set<std::string> files_in(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("rewrite: unchanged nodes are kept, changed operands rebuild their users") {
    NodePtr x = input(float32, {4, 3}, "x"), y = input(float32, {3}, "y"), z = input(float32, {4, 3}, "z");
    NodePtr a = binary(Op::Add, x, y);
    NodePtr b = unary(Op::Exp, y);
    NodePtr c = reduce(Op::Sum, binary(Op::Mul, a, z), {1}, false);
    // Identity rewrite: the very same roots.
    auto same = rewrite({c, b}, [](const Node&, const std::vector<NodePtr>&) -> NodePtr { return nullptr; });
    CHECK(same[0].get() == c.get());
    CHECK(same[1].get() == b.get());
    // Replacing z rebuilds mul and sum only; exp(y) and x + y are kept.
    NodePtr w = input(float32, {4, 3}, "w");
    auto out = rewrite({c, b}, [&](const Node& n, const std::vector<NodePtr>&) -> NodePtr {
        return &n == z.get() ? w : nullptr;
    });
    CHECK(out[1].get() == b.get());
    REQUIRE(out[0]->op() == Op::Sum);
    CHECK(out[0].get() != c.get());
    CHECK(out[0]->operand(0)->operand(0) == a.get());
    CHECK(out[0]->operand(0)->operand(1) == w.get());
    CHECK(out[0].get() == reduce(Op::Sum, binary(Op::Mul, a, w), {1}, false).get());
}

TEST_CASE("rebuild: every view rebuilds to an equal node on the same operand") {
    constexpr auto N = SliceSpec::kNone;
    NodePtr x = input(float32, {10, 7}, "x");
    NodePtr y = input(float32, {10, 7}, "y");
    const std::vector<NodePtr> views = {
        slice(x, {{0, N, 3}}),       slice(x, {{1, 10, 4}, {N, N, 2}}),
        slice(x, {{N, N, -3}}),      slice(x, {{8, 1, -3}, {6, N, -2}}),
        slice(x, {{3, 3, 1}}),       slice(x, {{2, 9, 7}, {0, 7, 6}}),
        permute(x, {1, 0}),          reshape(x, {7, 10}),
        broadcast_to(x, {2, 10, 7}),
    };
    for (const NodePtr& v : views) {
        CAPTURE(print({v}));
        CHECK(rebuild(*v, {x}).get() == v.get());
        // On another operand of the same shape: same attributes, new operand.
        NodePtr r = rebuild(*v, {y});
        CHECK(r->op() == v->op());
        CHECK(r->shape() == v->shape());
        CHECK(r->ints() == v->ints());
        CHECK(r->operand(0) == y.get());
    }
}

TEST_CASE("canonicalize_views: views of broadcast rank-0 values become broadcasts, casts move under them") {
    NodePtr s = run_scalar(2.0);
    NodePtr x = input(float32, {3}, "x");
    SUBCASE("reshape, permute and slice of a broadcast scalar") {
        NodePtr b = broadcast_to(s, {4, 3});
        NodePtr r = reshape(b, {12});
        NodePtr p = permute(b, {1, 0});
        NodePtr sl = slice(b, {{1, 3, 1}});
        REQUIRE(r->op() == Op::Reshape);  // the constructors leave these alone for run-time scalars
        auto out = canonicalize_views({r, p, sl});
        CHECK(out[0].get() == broadcast_to(s, {12}).get());
        CHECK(out[1].get() == broadcast_to(s, {3, 4}).get());
        CHECK(out[2].get() == broadcast_to(s, {2, 3}).get());
    }
    SUBCASE("a cast of a broadcast becomes a broadcast of the cast (the cast runs on the small source)") {
        NodePtr c = cast(broadcast_to(x, {4, 3}), float64);
        auto out = canonicalize_views({c});
        REQUIRE(out[0]->op() == Op::BroadcastTo);
        CHECK(out[0]->shape() == Shape{4, 3});
        CHECK(out[0]->dtype() == float64);
        CHECK(out[0]->operand(0)->op() == Op::Cast);
        CHECK(out[0]->operand(0)->operand(0) == x.get());
    }
    SUBCASE("views of a broadcast of a non-scalar and plain views are kept") {
        NodePtr p = permute(broadcast_to(x, {4, 3}), {1, 0});
        NodePtr q = reshape(input(float32, {4, 3}, "m"), {12});
        auto out = canonicalize_views({p, q});
        CHECK(out[0].get() == p.get());
        CHECK(out[1].get() == q.get());
    }
}

TEST_CASE("hoist_uniform: elementwise ops on uniform operands run once on rank-0 values") {
    NodePtr s = run_scalar(0.5), t = run_scalar(3.0);
    NodePtr x = input(float32, {8}, "x");
    SUBCASE("unary of a broadcast scalar") {
        NodePtr e = unary(Op::Exp, broadcast_to(s, {8}));
        auto out = hoist_uniform({e});
        REQUIRE(out[0]->op() == Op::BroadcastTo);
        CHECK(out[0]->shape() == Shape{8});
        CHECK(out[0]->operand(0) == unary(Op::Exp, s).get());
    }
    SUBCASE("a uniform sub-expression inside a non-uniform one: x * exp(s + t)") {
        NodePtr u = unary(Op::Exp, binary(Op::Add, broadcast_to(s, {8}), broadcast_to(t, {8})));
        NodePtr root = binary(Op::Mul, x, u);
        auto out = hoist_uniform({root});
        REQUIRE(out[0]->op() == Op::Mul);
        CHECK(out[0]->operand(0) == x.get());
        const Node* b = out[0]->operand(1);
        REQUIRE(b->op() == Op::BroadcastTo);
        CHECK(b->operand(0) == unary(Op::Exp, binary(Op::Add, s, t)).get());
        CHECK(b->operand(0)->rank() == 0);
        CHECK(out[0]->dtype() == root->dtype());
        CHECK(out[0]->shape() == root->shape());
    }
    SUBCASE("non-uniform graphs are unchanged") {
        NodePtr root = binary(Op::Add, x, broadcast_to(s, {8}));
        CHECK(hoist_uniform({root})[0].get() == root.get());
    }
}

TEST_CASE("pipeline: LOOM_DUMP=ir dumps the IR only after passes that changed the graph") {
    const fs::path dir = fs::temp_directory_path() / fmt::format("loom_test_dump_{}", ::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    ScopedEnv env;
    env.set("LOOM_DUMP", "cuda,ir");
    env.set("LOOM_DUMP_DIR", dir.string());
    env.set("LOOM_VERIFY", "1");
    NodePtr s = run_scalar(2.0);
    NodePtr x = input(float32, {12}, "x");

    SUBCASE("nothing changes: no files") {
        NodePtr root = binary(Op::Add, x, x);
        CHECK(run_pipeline({root}, standard_passes())[0].get() == root.get());
        CHECK(files_in(dir).empty());
    }
    SUBCASE("only canonicalize_views changes the graph") {
        NodePtr root = binary(Op::Add, x, reshape(broadcast_to(s, {4, 3}), {12}));
        auto out = run_pipeline({root}, standard_passes());
        CHECK(out[0].get() == binary(Op::Add, x, broadcast_to(s, {12})).get());
        CHECK(files_in(dir) ==
              std::set<std::string>{"ir_2_canonicalize_views.txt"});  // pass 1: lower_factories
        const std::string text = read(dir / "ir_2_canonicalize_views.txt");
        CHECK(text == "// IR after pass 2 (canonicalize_views)\n" + print(out));
    }
    SUBCASE("only hoist_uniform changes the graph") {
        NodePtr root = unary(Op::Exp, broadcast_to(s, {12}));
        auto out = run_pipeline({root}, standard_passes());
        CHECK(out[0]->op() == Op::BroadcastTo);
        CHECK(files_in(dir) == std::set<std::string>{"ir_3_hoist_uniform.txt"});
        CHECK(read(dir / "ir_3_hoist_uniform.txt").rfind("// IR after pass 3 (hoist_uniform)\n", 0) == 0);
    }
    SUBCASE("without LOOM_DUMP nothing is written") {
        env.set("LOOM_DUMP", "cuda,plans");
        NodePtr root = unary(Op::Exp, broadcast_to(s, {12}));
        CHECK(run_pipeline({root}, standard_passes())[0]->op() == Op::BroadcastTo);
        CHECK(files_in(dir).empty());
    }
    fs::remove_all(dir);
}

TEST_CASE("pipeline: passes run in the listed order on the previous pass's output") {
    std::vector<std::string> seen;
    NodePtr x = input(float32, {4}, "x");
    NodePtr y = unary(Op::Sqrt, x);
    std::vector<Pass> passes = {
        {"first",
         [&](const std::vector<NodePtr>& r) {
             seen.push_back("first");
             return std::vector<NodePtr>{unary(Op::Exp, r[0])};
         }},
        {"second",
         [&](const std::vector<NodePtr>& r) {
             seen.push_back("second");
             CHECK(r[0]->op() == Op::Exp);
             return r;
         }},
    };
    auto out = run_pipeline({y}, passes);
    CHECK(seen == std::vector<std::string>{"first", "second"});
    CHECK(out[0].get() == unary(Op::Exp, y).get());
    CHECK(standard_passes().size() == 3);
    CHECK(standard_passes()[0].name == "lower_factories");
    CHECK(standard_passes()[1].name == "canonicalize_views");
    CHECK(standard_passes()[2].name == "hoist_uniform");
}

TEST_CASE("lower_factories: a fill becomes a broadcast run-time scalar, an iota stays") {
    NodePtr f =
        fill(make_scalar_value(2.5, float32, "full", Loc::current()), float32, {3, 4}, kHostDeviceCode);
    NodePtr i = iota({3, 4}, 1, kHostDeviceCode);
    const auto out = lower_factories({f, i});
    CHECK(out[0]->op() == Op::BroadcastTo);
    CHECK(out[0]->operand(0)->op() == Op::Scalar);
    CHECK(out[0]->operand(0)->value().as_double() == 2.5);
    CHECK(out[1].get() == i.get());
    CHECK(factory_device(*i) == kHostDeviceCode);
    CHECK_THROWS_AS((void)iota({3}, 1, kHostDeviceCode), loom::Error);
    CHECK_THROWS_AS((void)iota({}, 0, kHostDeviceCode), loom::Error);
}

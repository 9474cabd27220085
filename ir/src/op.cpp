// The op table of ops.def as an array of OpInfo.
#include "loom/ir/op.hpp"

#include <array>

namespace loom::ir {
namespace {

constexpr OpInfo kInfos[] = {
#define LOOM_LEAF(Id, name) {name, -1, OpKind::Leaf, Rule::None, ""},
#define LOOM_UNARY(Id, name, R, cuda) {name, 1, OpKind::Unary, Rule::R, cuda},
#define LOOM_BINARY(Id, name, R, cuda) {name, 2, OpKind::Binary, Rule::R, cuda},
#define LOOM_TERNARY(Id, name, R, cuda) {name, 3, OpKind::Ternary, Rule::R, cuda},
#define LOOM_VIEW(Id, name) {name, 1, OpKind::View, Rule::None, ""},
#define LOOM_REDUCE(Id, name, R) {name, 1, OpKind::Reduce, Rule::R, ""},
#include "loom/ir/ops.def"
};

}  // namespace

const OpInfo& info(Op op) { return kInfos[static_cast<int>(op)]; }
int num_ops() { return static_cast<int>(std::size(kInfos)); }

}  // namespace loom::ir

// evaluate_partition: the kernels of a partition, one after another, on the CPU reference.
#include "loom/runtime/reference_plan.hpp"

#include <fmt/format.h>

#include <optional>

#include "loom/ir/error.hpp"
#include "loom/runtime/reference.hpp"

namespace loom::reference {

std::vector<Tensor> evaluate_partition(const codegen::Partition& partition,
                                       const std::vector<ir::NodePtr>& roots) {
    using codegen::Slot;
    std::vector<std::optional<Tensor>> temps(partition.temps.size()), results(roots.size());
    for (std::size_t k = 0; k < partition.kernels.size(); ++k) {
        const codegen::FusedKernel& kernel = partition.kernels[k];
        Overrides bind;
        for (std::size_t t = 0; t < temps.size(); ++t)
            if (temps[t]) bind.emplace(partition.temps[t].placeholder->input_id(), *temps[t]);
        const std::vector<ir::NodePtr> outputs = kernel.written();
        if (outputs.size() != kernel.writes.size())
            throw InternalError(
                fmt::format("evaluate_partition(): kernel {} ({}) has {} outputs and {} destinations", k,
                            kernel.name, outputs.size(), kernel.writes.size()));
        std::vector<Tensor> values;
        try {
            values = evaluate(outputs, bind);
        } catch (const Error& e) {  // a placeholder without a tensor: no earlier kernel wrote that temporary
            throw InternalError(
                fmt::format("evaluate_partition(): kernel {} ({}): {}", k, kernel.name, e.what()));
        }
        for (std::size_t j = 0; j < values.size(); ++j) {
            const Slot& w = kernel.writes[j];
            const auto i = static_cast<std::size_t>(w.index);
            if (w.kind == Slot::Kind::Temp) {
                const ir::Node& ph = *partition.temps.at(i).placeholder;
                if (values[j].dtype() != ph.dtype() || values[j].shape() != ph.shape())
                    throw InternalError(fmt::format(
                        "evaluate_partition(): kernel {} writes {} {} into temporary t{} of {} {}", k,
                        name(values[j].dtype()), to_string(values[j].shape()), i, name(ph.dtype()),
                        to_string(ph.shape())));
                temps[i] = values[j];
            } else if (w.kind == Slot::Kind::Root) {
                results.at(i) = values[j];
            } else {
                throw InternalError(fmt::format("evaluate_partition(): kernel {} writes a source", k));
            }
        }
    }
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (!results[i])
            throw InternalError(fmt::format("evaluate_partition(): no kernel writes root {}", i));
        if (results[i]->dtype() != roots[i]->dtype() || results[i]->shape() != roots[i]->shape())
            throw InternalError(fmt::format("evaluate_partition(): root {} is {} {}, written as {} {}", i,
                                            name(roots[i]->dtype()), to_string(roots[i]->shape()),
                                            name(results[i]->dtype()), to_string(results[i]->shape())));
        out.push_back(*results[i]);
    }
    return out;
}

}  // namespace loom::reference

// ---- Loom scatter kernel scatter_add (from "scatter_add") ----
// scatter_add of float32 at int64 indices (checked), accumulated in float32
// path: sorted: ranks from a bitonic sort per tile of 256 positions, targets' runs in ascending position, a thread per chunk of 256, the pairwise tree over chunk partials, x added once
// block: 256 threads per column (the coordinates off the axis), columns blockIdx.x + k gridDim.x
// entry point: scatter_add (index_add (test_scatter_golden.cpp:34))

extern "C" __global__ void __launch_bounds__(256) scatter_add(const lm::ScatterParams p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::launch_dependent_grids();                                        // the next kernel may be scheduled
    lm::scatter::scatter_kernel<1, float, float, long long, true>(p);    // sorted: path, element, accumulator, index, checked
}

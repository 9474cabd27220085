// ---- Loom scan kernel cumsum (from "cumsum") ----
// cumsum of float32 -> float32, accumulated in float32
// path: chunks of tiles, a block per chunk in launch order (a counter): its tiles' aggregates and the chunk's nodes of the pairwise tree, published (the last of 32 chunks to publish builds their node, and so on up), the nodes before it from earlier chunks (release / acquire), then their scans with their carries, from registers (at most 4 tiles a chunk); 3 blocks per multiprocessor
// block: 256 threads of 8 elements (a tile of 2048): thread totals, Kogge-Stone over lanes (shuffles) and over warps (shared memory), the thread prefixes, the outputs
// entry point: cumsum (loads and stores in whole 16-byte pieces or by elements: the parameters `vector_in`, `vector_out`)

extern "C" __global__ void __launch_bounds__(256, 3) cumsum(const lm::ScanParams p) {
    lm::await_prior_grids();                                             // the stream's previous kernel complete
    lm::scan::scan_kernel<lm::scan::Sum, float, float, float, false, true, 8, 4>(p); // combine, in, accumulator, out, exclusive, tree, warps, chunk tiles
}

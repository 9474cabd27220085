// Helpers of the GPU tests that capture Loom's calls into CUDA graphs: a graph destroyed with its scope, and
// a capture of some work on a stream, instantiated.
#pragma once

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstddef>

#include "loom/runtime/capture.hpp"

#ifndef CUDA_OK
#define CUDA_OK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)
#endif

namespace graphtest {

/// An instantiated graph, destroyed at the end of the scope.
struct Graph {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    Graph() = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph() {
        if (exec) (void)cudaGraphExecDestroy(exec);
        if (graph) (void)cudaGraphDestroy(graph);
    }
    std::size_t nodes() const {
        std::size_t n = 0;
        (void)cudaGraphGetNodes(graph, nullptr, &n);
        return n;
    }
};

/// Captures `work` on `s` (the current stream) into `g` and instantiates it.
template <class F>
void capture(cudaStream_t s, Graph& g, F&& work) {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(loom::is_capturing(s));
    work();
    CUDA_OK(cudaStreamEndCapture(s, &g.graph));
    CHECK_FALSE(loom::is_capturing(s));
    CUDA_OK(cudaGraphInstantiate(&g.exec, g.graph, 0));
}

}  // namespace graphtest

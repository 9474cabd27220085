// Loom: array math as C++ expressions, fused into CUDA kernels at run time. The one header users include.
#pragma once

#include "loom/dsl/array.hpp"
#include "loom/dsl/evaluation.hpp"
#include "loom/dsl/function.hpp"
#include "loom/dsl/ops.hpp"
#include "loom/ir/dtype.hpp"
#include "loom/ir/error.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/device.hpp"
#include "loom/runtime/errors.hpp"
#include "loom/runtime/executor.hpp"
#include "loom/runtime/nvrtc.hpp"
#include "loom/runtime/pinned.hpp"
#include "loom/runtime/random.hpp"
#include "loom/runtime/stream.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/timing.hpp"

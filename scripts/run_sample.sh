#!/usr/bin/env bash
# Builds (configuring first if needed) and runs Loom's sample `scale_bias_activation`
# (samples/scale_bias_activation.cpp): the README's main job, gelu(x * scale + bias) as one fused kernel,
# checked against the CPU reference (without a GPU: its IR, CUDA and NVRTC compile, and the reference).
# Arguments go to the sample.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_BUILD_DIR:-build}
jobs=${LOOM_JOBS:-2}
[[ -f "$build/CMakeCache.txt" ]] || scripts/configure.sh
cmake --build "$build" -j "$jobs" --target scale_bias_activation
exec "$build/samples/scale_bias_activation" "$@"

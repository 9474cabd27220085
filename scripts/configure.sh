#!/usr/bin/env bash
# Configures Loom's build directory (default `build`, or $LOOM_BUILD_DIR) with Ninja, optimized with
# debug info and with assertions on (RelWithDebInfo without NDEBUG), against the CUDA toolkit at
# $CUDA_HOME (default /usr/local/cuda). Extra arguments go to cmake. Used by test.sh and run_sample.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_BUILD_DIR:-build}
exec cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" \
    "$@"

#!/usr/bin/env bash
# Configures Loom's build directory (default `build`, or $LOOM_BUILD_DIR) with Ninja, optimized with
# assertions on (RelWithDebInfo without NDEBUG) and line tables (-g1: file:line in backtraces, profiles and
# sanitizer reports; full debug info made the build about 1.7 times as long on the 2-core machine), against
# the CUDA toolkit at $CUDA_HOME (default /usr/local/cuda). Extra arguments go to cmake, and come last, so
# `scripts/configure.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g"` gives a build for a debugger. Used by
# test.sh and run_sample.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_BUILD_DIR:-build}
exec cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
    -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" \
    "$@"

#!/usr/bin/env bash
# Builds Loom and runs every test: unit and golden tests (no GPU needed), the installed-package consumer
# test, and the GPU tests (label `gpu`), which report as skipped on a machine without a GPU.
#
#   scripts/test.sh            # build dir `build` ($LOOM_BUILD_DIR), 2 parallel jobs ($LOOM_JOBS)
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit` or `scripts/test.sh -R install`.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_BUILD_DIR:-build}
jobs=${LOOM_JOBS:-2}
scripts/configure.sh
cmake --build "$build" -j "$jobs"
exec ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"

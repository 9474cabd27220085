#!/usr/bin/env bash
# ThreadSanitizer over the host side of Loom: builds only what the threads test needs (loom_ir, loom_codegen,
# loom_runtime, loom_dsl and tests/threads/threads_host.cpp) with -fsanitize=thread into its own build
# directory (default build-tsan, or $LOOM_TSAN_BUILD_DIR), then runs the test: 8 threads evaluating host
# tensors, calling one traced function, and building kernels through the disk and in-memory caches with
# NVRTC (compile-only; no GPU). Any data race, lock-order inversion or thread leak TSan reports fails the run
# (exit status 66). Host tensors run on the LLVM back end when its module is built (below), else on the
# reference. Used by .ci/run; docs/reliability.md says what TSan cannot see (the GPU, and the inside of
# the CUDA runtime, NVRTC, libLLVM, generated code and other libraries built without TSan).
#
#   scripts/tsan.sh            # LOOM_JOBS (default 2) parallel compile jobs; CUDA_HOME the toolkit
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_TSAN_BUILD_DIR:-build-tsan}
jobs=${LOOM_JOBS:-2}
start=$(date +%s)
mkdir -p "$build"
# -O1: TSan's recommended level (fast enough to run, quick to compile); -g for the reports' stacks.
# --as-needed: the sanitizer's link options turn it off, and the test must not need libcuda (no driver here).
cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread -Wl,--as-needed" \
    -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
# The host back end's module too, when LLVM 19 is there: the threads then evaluate host tensors through the
# LLVM back end (the thread pool, the kernel caches and the JIT's entry points instrumented; libLLVM and the
# generated kernels are not, so TSan sees the pool's synchronization but not the kernels' own loads and
# stores; docs/llvm-backend.md). Without it they run on the CPU reference.
targets=(loom_threads_host)
if ninja -C "$build" -t targets all 2>/dev/null | grep '^loom_llvm:' >/dev/null; then targets+=(loom_llvm); fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
built=$(date +%s)
# halt_on_error: the first report fails the run; the exit code tells a report (66) from a failed check (1).
# tests/threads/tsan.supp: only NVRTC's inside (a library built without TSan), not Loom's code.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/tests/threads/tsan.supp ${TSAN_OPTIONS:-}"
set +e
LOOM_CPU_BACKEND=llvm "$build/tests/loom_threads_host"
rc=$?
set -e
echo "tsan: built in $((built - start)) s, ran in $(($(date +%s) - built)) s, exit $rc"
if [[ $rc -eq 66 ]]; then echo "tsan: ThreadSanitizer reported a problem (above)"; fi
exit $rc

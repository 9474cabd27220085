#!/usr/bin/env bash
# The host-only build (LOOM_CUDA=OFF; docs/building.md), as CI checks it: configures Loom in its own build
# directory (default build-host, or $LOOM_HOST_BUILD_DIR) with the CUDA toolkit hidden from CMake, so that
# LOOM_CUDA's default must come out OFF; builds the library, the host back end's module and
# samples/host_quickstart; fails when any compile command names a CUDA include directory or any object
# depends on a CUDA header, when anything links cudart or NVRTC, or when the libraries call a function of
# Loom that no file of this build defines; runs the sample; then installs the library into a scratch prefix
# and builds and runs tests/install/consumer against it (tests/install/run_consumer.cmake), also with the
# toolkit hidden. The tests themselves are not built here
# (`ctest -LE gpu` of a host-only build runs them; CI keeps to this subset for time).
#
#   scripts/host_only.sh       # LOOM_JOBS (default 2) parallel compile jobs
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOOM_HOST_BUILD_DIR:-build-host}
jobs=${LOOM_JOBS:-2}
start=$(date +%s)
mkdir -p "$build"
# -O0 without debug information: this build only has to show that the host-only library compiles, links and
# runs (the kernels are LLVM's own optimized code either way), and so takes little of CI's time.
cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCH=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
if ! grep -q '^LOOM_CUDA:BOOL=OFF$' "$build/CMakeCache.txt"; then
    echo "host-only: with the CUDA toolkit hidden, LOOM_CUDA did not default to OFF ($build/CMakeCache.txt)" >&2
    exit 1
fi
targets=(loom_dsl host_quickstart)
# (grep reads the whole list: with -q it would stop early, and pipefail would count ninja's broken pipe.)
if ninja -C "$build" -t targets all 2>/dev/null | grep '^loom_llvm:' >/dev/null; then targets+=(loom_llvm); fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
built=$(date +%s)

# Nothing of the toolkit: no include directory on a compile command, no CUDA header among the headers any
# object was compiled from (ninja's dependency log), no CUDA library on a link command.
toolkit='/usr/local/cuda|/cuda-[0-9]|/targets/x86_64-linux'
if grep -E -- "-(I|isystem) ?[^ ]*($toolkit)" "$build/compile_commands.json"; then
    echo "host-only: a compile command names a CUDA include directory (above)" >&2
    exit 1
fi
if ninja -C "$build" -t deps | grep -E "$toolkit|/(cuda|cuda_runtime|cuda_runtime_api|driver_types|vector_types|nvrtc)\.h\$"; then
    echo "host-only: an object depends on a CUDA header (above)" >&2
    exit 1
fi
if ninja -C "$build" -t commands host_quickstart | grep -E 'cudart|nvrtc|libcuda'; then
    echo "host-only: the sample links a CUDA library (above)" >&2
    exit 1
fi
# Every function of Loom that its libraries call is defined in them: runtime/src/gpu_stubs.cpp stands in for
# each one the CUDA build defines in a file that a host-only build leaves out.
libs=("$build"/ir/libloom_ir.a "$build"/codegen/libloom_codegen.a "$build"/runtime/libloom_runtime.a
      "$build"/dsl/libloom_dsl.a)
missing=$(comm -23 <(nm -P --undefined-only "${libs[@]}" 2>/dev/null | awk '$2 == "U" {print $1}' | sort -u) \
                   <(nm -P --defined-only "${libs[@]}" 2>/dev/null | awk 'NF >= 2 && $2 != "U" {print $1}' | sort -u) |
          c++filt | grep '^loom::' || true)
if [[ -n $missing ]]; then
    echo "$missing"
    echo "host-only: Loom's libraries call these, and no file of the host-only build defines them (add them to" >&2
    echo "host-only: runtime/src/gpu_stubs.cpp)" >&2
    exit 1
fi

"$build/samples/host_quickstart"

# The installed package and a project built against it, with the toolkit hidden from that project too.
build_abs=$(cd "$build" && pwd)
cmake -DLOOM_BUILD_DIR="$build_abs" -DCONSUMER_SOURCE_DIR="$PWD/tests/install/consumer" \
    -DWORK_DIR="$build_abs/install-test" -DCONSUMER_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON" \
    -P tests/install/run_consumer.cmake
echo "host-only: built in $((built - start)) s, checked, ran and installed in $(($(date +%s) - built)) s"

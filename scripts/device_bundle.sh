#!/usr/bin/env bash
# Builds Loom in Release (build-release, -j2, every target that builds) and collects what the GPU machine
# needs into .bundle/ (git-ignored): the stripped executables, scripts/device_run.sh, peer_baselines.py and
# bench/peers_attention.py, the golden expected files, the commit and the build's source path. Carry .bundle
# to the GPU machine and run `bash .bundle/device_run.sh [--only E1,E2]` there from the repository root.
set -euo pipefail

root=$(git rev-parse --show-toplevel)
cd "$root"
build=${LOOM_BUNDLE_BUILD_DIR:-build-release}  # an existing optimized build folder may be named instead
bundle=.bundle
limit_mib=64  # the device carries at most 64 MiB; LOOM_RUN_STEPS runs can carry a subset of bin/

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [[ -f $build/CMakeCache.txt ]]; then generator=(); fi  # keep the generator the folder was made with
if [[ -f $build/CMakeCache.txt ]]; then
    cmake -S . -B "$build" >/dev/null   # keep the folder's build type (Release or RelWithDebInfo)
else
    cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi

# Build everything that builds: a target that fails (someone's work in progress) does not stop the others.
# LOOM_BUNDLE_TARGETS (space-separated) builds those targets only, for a quick run of a few binaries; the
# bundle then also holds the other executables as the folder last built them.
build_rc=0
targets=()
for t in ${LOOM_BUNDLE_TARGETS:-}; do targets+=(--target "$t"); done
if grep -q 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
    cmake --build "$build" -j2 "${targets[@]}" -- -k 0 || build_rc=$?
else
    cmake --build "$build" -j2 "${targets[@]}" -- -k || build_rc=$?
fi
if [[ $build_rc -ne 0 ]]; then echo "device_bundle: some targets failed to build (exit $build_rc); bundling what was built" >&2; fi

rm -rf "$bundle"
mkdir -p "$bundle/bin"
# Every ELF executable of the build tree except CMake's probes and the install test's scratch project, and
# (unless LOOM_BUNDLE_HOST_TESTS=1, for device_run.sh's `unit` step) the tests that need no GPU, which CI runs:
# each executable carries the static CUDA runtime, and the bundle must stay under the carry limit.
host_only='^(loom_unit_tests|loom_golden_tests|loom_threads_host)$'
[[ ${LOOM_BUNDLE_HOST_TESTS:-0} == 1 ]] && host_only='^$'
while IFS= read -r -d '' f; do
    [[ $(basename "$f") =~ $host_only ]] && continue
    if [[ $(head -c 4 "$f" | od -An -c | tr -d ' \n') == '177ELF' ]] && ! [[ $f == *.so* || $f == *.a ]]; then
        cp "$f" "$bundle/bin/"
        strip --strip-unneeded "$bundle/bin/$(basename "$f")"
    fi
done < <(find "$build" -type f -perm -u+x -not -path '*/CMakeFiles/*' -not -path '*/tests/install/*' -print0)

# No binary may need libcuda directly (only its stub exists here; such a binary cannot start without a
# driver). FindCUDAToolkit's CUDA::nvrtc names the stub, and the linker's --as-needed drops it unless some
# object really calls the driver API.
for f in "$bundle"/bin/*; do
    if readelf -d "$f" | grep 'NEEDED.*libcuda\.so' >/dev/null; then
        echo "device_bundle: $(basename "$f") links libcuda directly; only cudart_static may load the driver" >&2
        exit 1
    fi
done

# Debian's shared libraries that the GPU machine's image lacks (libfmt): into lib/, which device_run.sh puts
# on LD_LIBRARY_PATH.
mkdir -p "$bundle/lib"
for f in "$bundle"/bin/*; do
    ldd "$f" 2>/dev/null | awk '$1 ~ /^libfmt\./ && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do cp -L "$lib" "$bundle/lib/"; done

cp scripts/device_run.sh scripts/plot_performance.py bench/peers_attention.py "$bundle/"
# The DLPack round trip with PyTorch (tests/dlpack): the ctypes shim and the script that loads it.
if [[ -f $build/tests/libloom_dlpack_shim.so ]]; then
    mkdir -p "$bundle/dlpack"
    cp "$build/tests/libloom_dlpack_shim.so" tests/dlpack/torch_roundtrip.py "$bundle/dlpack/"
    strip --strip-unneeded "$bundle/dlpack/libloom_dlpack_shim.so"
fi
peers="$root/../shared/bench/peer_baselines.py"
if [[ -f $peers ]]; then cp "$peers" "$bundle/"; else echo "device_bundle: $peers not found" >&2; fi
if [[ -d tests/golden/expected ]]; then
    mkdir -p "$bundle/golden"
    cp -r tests/golden/expected "$bundle/golden/"
fi
{
    echo "commit: $(git rev-parse HEAD)"
    echo "uncommitted files: $(git status --porcelain | wc -l)"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "build exit code: $build_rc"
} >"$bundle/COMMIT"
echo "$root" >"$bundle/SOURCE_DIR"  # the absolute source path compiled into test binaries

size=$(du -sb "$bundle" | cut -f1)
echo "device_bundle: $(ls "$bundle/bin" | wc -l) executables, $((size / 1024 / 1024)) MiB in $bundle"
ls -l "$bundle/bin"
if ((size > limit_mib * 1024 * 1024)); then
    echo "device_bundle: bundle is larger than $limit_mib MiB" >&2
    exit 1
fi
exit $build_rc

#!/usr/bin/env bash
# On a GPU machine with Nsight Systems: Loom's NVTX ranges (LOOM_NVTX=1; docs/options.md) as nsys records
# them, and what the ranges cost the host path of a cached call (O1).
#
#   scripts/nsys_ranges.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, nsys_ranges)
#
# 1. Runs samples/scale_bias_activation twice under `nsys profile --trace=cuda,nvtx` with LOOM_NVTX=1 and a
#    fresh kernel cache directory: the first run compiles (NVRTC ranges), the second loads its kernels from
#    the disk cache (disk cache load ranges); prints `nsys stats --report nvtx_sum` of each. The reports
#    stay in OUT_DIR (open them in the Nsight Systems GUI).
# 2. Runs `loom_bench --only O1` three times with LOOM_NVTX=0 and with LOOM_NVTX=1 (no profiler attached),
#    interleaved, and prints the O1 rows of each: the cost of the ranges when nobody records them.
# Needs: the build's samples and bench (cmake --build BUILD_DIR --target scale_bias_activation loom_bench),
# nsys on PATH (or NSYS=/path/to/nsys), a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-nsys_ranges}
nsys=${NSYS:-nsys}
sample=$build/samples/scale_bias_activation
bench=$build/bench/loom_bench
for f in "$sample" "$bench"; do
    [[ -x $f ]] || { echo "nsys_ranges: $f is not built" >&2; exit 1; }
done
command -v "$nsys" >/dev/null || { echo "nsys_ranges: nsys not found (set NSYS)" >&2; exit 1; }
mkdir -p "$out"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

# An nsys that ships without its importer's libraries (the one inside Nsight Compute's host directory) leaves
# the raw .qdstrm behind: QdstrmImporter, beside it, makes the .nsys-rep; it needs elfutils' libdw.so.1
# (Debian's libdw1), which LD_LIBRARY_PATH can supply.
import_report() {
    local base=$1
    [[ -f $base.nsys-rep || ! -f $base.qdstrm ]] && return 0
    local importer=${QDSTRM_IMPORTER:-}
    if [[ -z $importer ]]; then
        importer=$(find "$(dirname "$(readlink -f "$(command -v "$nsys")")")/.." -name QdstrmImporter -type f 2>/dev/null | head -1)
    fi
    [[ -n $importer ]] || { echo "nsys_ranges: $base.qdstrm left unimported: no QdstrmImporter (set QDSTRM_IMPORTER)" >&2; exit 1; }
    "$importer" -i "$base.qdstrm" >"$base.import.log" 2>&1 || {
        echo "nsys_ranges: $importer failed (a missing libdw.so.1 is elfutils' libdw1):" >&2
        tail -3 "$base.import.log" >&2
        exit 1
    }
}

for run in compile disk_cache; do
    echo "== nvtx_sum: scale_bias_activation, run '$run' (LOOM_NVTX=1, LOOM_CACHE_DIR=$cache)"
    LOOM_NVTX=1 LOOM_CACHE_DIR=$cache "$nsys" profile --trace=cuda,nvtx --force-overwrite=true \
        --output="$out/scale_bias_activation_$run" "$sample" >"$out/scale_bias_activation_$run.log" 2>&1
    import_report "$out/scale_bias_activation_$run"
    "$nsys" stats --report nvtx_sum --format table "$out/scale_bias_activation_$run.nsys-rep"
done

echo "== O1 (host microseconds per cached call), LOOM_NVTX off and on, no profiler attached"
for i in 1 2 3; do
    for flag in 0 1; do
        echo "-- round $i, LOOM_NVTX=$flag"
        LOOM_NVTX=$flag "$bench" --only O1 | grep '^O1_overhead'
    done
done

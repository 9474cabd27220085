#!/usr/bin/env bash
# The host workloads beside the CPU peers, as docs/performance.md reports them: `loom_bench --only
# CE1,CR1,CR3,CF1,CM1` (Loom's LLVM back end and its reference interpreter) and ../shared/bench/cpu_peers.py
# (NumPy, numexpr, Dr.Jit, and the COPY_cpu ceiling), interleaved (Loom, peers, Loom, peers, ...) in one job
# on the same machine. Each run prints its rows; the first line names the machine and its load, which other
# jobs on a shared machine raise (the figures are only comparable when it is low).
#
#   scripts/host_bench.sh [build dir (default build-rel, a Release build)] [runs (default 3)]
#                         [workloads (default CE1,CR1,CR3,CF1,CM1)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-rel}
runs=${2:-3}
ids=${3:-CE1,CR1,CR3,CF1,CM1}
peers=../shared/bench/cpu_peers.py
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git rev-parse --short HEAD): $(nproc) cores, $model; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
  echo "## run $r: loom_bench (load $(cut -d' ' -f1 /proc/loadavg))"
  "$build/bench/loom_bench" --only "$ids"
  echo "## run $r: cpu_peers.py (load $(cut -d' ' -f1 /proc/loadavg))"
  python3 "$peers" --only "$ids"
done

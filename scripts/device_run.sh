#!/usr/bin/env bash
# Runs Loom's checks ON THE GPU MACHINE, from the repository root, with $OUT set: nvidia-smi, the GPU tests,
# compute-sanitizer over a small-shape subset (step sanitizer), the unit and golden tests, then the benchmark
# and peer_baselines.py interleaved three times (WORKLOADS.md), with bench/peers_attention.py (the peers of the
# attention rows without a mask, A2nc, A3nc and A4) after peer_baselines.py in each round where the bundle has it.
# Arguments pass through to the benchmark and to the peer scripts, e.g. `device_run.sh --only E1,E2,E4` or
# `--only R1,R2,R3,F1,F2` (both use the WORKLOADS.md ids; a workload the GPU path cannot run yet is
# reported as NOT RUN in bench.log and fails the bench step, and the other workloads still run).
# Logs go to $OUT (at most 8 files come back: nvidia-smi, gpu_tests, unit_tests, golden_tests, bench,
# peers logs and gpu_status.md; sanitizer.log too, and the sanitizer counts are in gpu_status.md whatever
# comes back); gpu_status.md is rewritten after every step, so a run cut short still reports. The script writes those files itself: send its own stdout to another name (a redirect to
# $OUT/bench.log would overwrite the file it appends to). Exit code: 0 when every step passed, else 1.
set -u

root=$(pwd)
bundle=${LOOM_BUNDLE:-$root/.bundle}
[[ -d $bundle/bin ]] || bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # run as .bundle/device_run.sh
OUT=${OUT:-$root/device_out}
mkdir -p "$OUT"
bin=$bundle/bin
status=$OUT/gpu_status.md
failed=0
results=()
sanitizer_rows=()
sanitizer_note=""

export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Tests built elsewhere may name their source tree by its absolute path: point it here.
if [[ -f $bundle/SOURCE_DIR ]]; then
    src=$(cat "$bundle/SOURCE_DIR")
    if [[ -n $src && ! -e $src ]]; then mkdir -p "$(dirname "$src")" 2>/dev/null && ln -s "$root" "$src" 2>/dev/null; fi
fi
[[ -d $bundle/golden/expected ]] && export LOOM_GOLDEN_DIR="$bundle/golden/expected"
export LOOM_SOURCE_DIR="$root"

# Libraries the binaries need (libnvrtc.so.13): when the toolkit folder lacks one, look for
# it elsewhere (other CUDA folders, Python's nvidia-* wheels).
if [[ -x $bin/loom_gpu_tests ]] && ldd "$bin/loom_gpu_tests" | grep -q 'not found'; then
    for lib in $(ldd "$bin/loom_gpu_tests" | awk '/not found/ {print $1}'); do
        hit=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
        [[ -n $hit ]] && export LD_LIBRARY_PATH="$(dirname "$hit"):$LD_LIBRARY_PATH" && echo "using $hit"
    done
fi

write_status() {
    {
        echo "# Loom GPU run"
        echo
        echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
        [[ -f $bundle/COMMIT ]] && sed 's/^/- /' "$bundle/COMMIT"
        echo "- arguments: ${*:-none}"
        echo
        echo "| step | exit | test cases passed / failed / skipped | assertions passed / failed |"
        echo "|---|---|---|---|"
        for r in "${results[@]}"; do echo "$r"; done
        if [[ ${#sanitizer_rows[@]} -gt 0 ]]; then
            echo
            echo "## compute-sanitizer (step sanitizer)"
            echo
            echo "| run | tool | exit | errors | hazards | time box |"
            echo "|---|---|---|---|---|---|"
            for r in "${sanitizer_rows[@]}"; do echo "$r"; done
            [[ -n $sanitizer_note ]] && echo && echo "$sanitizer_note"
        fi
        if [[ -s $OUT/bench.log ]]; then
            echo
            echo "## Benchmark rows (every run, in order)"
            echo '```'
            grep -a -E '^[[:space:]]*(COPY|E[0-9]|R[0-9]|F[0-9]|T[0-9]|S[0-9]|M[0-9]|O[0-9]|C[0-9]|===)' "$OUT/bench.log" | tail -n 200
            echo '```'
        fi
        if [[ -s $OUT/peers.log ]]; then
            echo
            echo "## Peer rows (every run, in order)"
            echo '```'
            grep -a -E '^(COPY|E[0-9]|R[0-9]|F[0-9]|T[0-9]|S[0-9]|M[0-9]|O[0-9]|C[0-9]|===)' "$OUT/peers.log" | tail -n 300
            echo '```'
        fi
    } >"$status"
}

# doctest summary lines, summed over every run in a log (the GPU tests print two: main and sticky cases).
doctest_counts() {
    awk -F'|' '/\[doctest\] test cases:/ { split($1, a, ":"); tp += $2 + 0; tf += $3 + 0; ts += $4 + 0 }
               /\[doctest\] assertions:/ { ap += $2 + 0; af += $3 + 0 }
               END { printf "%d / %d / %d | %d / %d", tp, tf, ts, ap, af }' "$1"
}

# run_step NAME LOG MODE COMMAND...: MODE "new" starts the log, "append" adds to it.
run_step() {
    local name=$1 log=$2 mode=$3
    shift 3
    echo "=== $name: $*" | { if [[ $mode == new ]]; then tee "$log"; else tee -a "$log"; fi; }
    "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc" | tee -a "$log"
    [[ $rc -ne 0 ]] && failed=$((failed + 1))
    local counts="— | —"
    grep -q '\[doctest\] test cases:' "$log" && counts=$(doctest_counts "$log")
    results+=("| $name | $rc | $counts |")
    write_status "${args[@]}"
    return 0
}

# fold_json FROM INTO: appends FROM's records (a JSON list) to INTO's, making INTO where it is absent, and
# removes FROM: plot_performance.py --merge takes round files named .bench_N.json and .peers_N.json alone.
fold_json() {
    [[ -f $1 ]] || return 0
    python3 - "$1" "$2" <<'EOF'
import json, os, sys
src, dst = sys.argv[1:3]
rows = []
if os.path.exists(dst):
    with open(dst) as f:
        rows = json.load(f)
with open(src) as f:
    rows += json.load(f)
with open(dst, "w") as f:
    json.dump(rows, f, indent=1)
os.remove(src)
EOF
}

args=("$@")
# LOOM_RUN_STEPS picks the steps (default all): gpu_tests, sanitizer, fuzz, samples, unit (unit and golden
# tests: CI runs them too; bundled only with LOOM_BUNDLE_HOST_TESTS=1), bench. LOOM_GPU_TEST_JOBS (default 6) shards the GPU tests over processes;
# LOOM_SANITIZER_SECONDS (default 150) boxes each compute-sanitizer run; LOOM_FUZZ_SECONDS (default 120)
# boxes the fuzzer and LOOM_FUZZ_JOBS (default 8) runs that many fuzzer processes (then the view-write
# fuzzer: LOOM_FUZZ_VIEWS_SECONDS, LOOM_FUZZ_VIEWS_JOBS); LOOM_BENCH_ROUNDS
# (default 3) sets the interleaved benchmark/peer rounds.
steps=${LOOM_RUN_STEPS:-gpu_tests,sanitizer,fuzz,samples,bench}
want() { [[ ",$steps," == *",$1,"* ]]; }
nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.log"
write_status "${args[@]}"

# run_parallel NAME LOG JOBS COMMAND...: runs COMMAND JOBS times at once, the k-th with SHARD=k (0-based) in
# its environment, each into a log of its own; the logs are concatenated into LOG and the step fails when any
# process failed. The GPU machine has 16 cores and NVRTC is CPU-bound, so shards run side by side on the GPU.
run_parallel() {
    local name=$1 log=$2 jobs=$3
    shift 3
    echo "=== $name: $jobs processes of: $*" | tee "$log"
    local pids=() k rc=0
    for ((k = 0; k < jobs; k++)); do
        SHARD=$k bash -c "$*" >"$log.$k" 2>&1 &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" || rc=1
        { echo "--- $name process $k"; cat "$log.$k"; } >>"$log"
        rm -f "$log.$k"
    done
    echo "=== $name: exit $rc" | tee -a "$log"
    [[ $rc -ne 0 ]] && failed=$((failed + 1))
    local counts="— | —"
    grep -q '\[doctest\] test cases:' "$log" && counts=$(doctest_counts "$log")
    results+=("| $name | $rc | $counts |")
    write_status "${args[@]}"
    return 0
}

if want gpu_tests; then
    if [[ -x $bin/loom_gpu_tests ]]; then
        # LOOM_GPU_TEST_JOBS shards (default 6): test cases [k n / J + 1, (k + 1) n / J] of the n that pass the
        # filters, in doctest's file order; the sticky cases run once, in shard 0's child process.
        # The cases that take the device's memory to its limit on purpose (out of memory) or move gigabytes run
        # afterwards in one process alone: beside other processes they would make those run out of memory.
        jobs=${LOOM_GPU_TEST_JOBS:-6}
        export LOOM_GPU_TESTS_ALONE='*out of memory*,pointwise large*,*more than 256 groups*'
        n=$("$bin/loom_gpu_tests" --count --test-case-exclude="*sticky*,$LOOM_GPU_TESTS_ALONE" | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
        if [[ -n $n && $jobs -gt 1 ]]; then
            export LOOM_GPU_TESTS_BIN=$bin/loom_gpu_tests LOOM_GPU_TESTS_N=$n LOOM_GPU_TESTS_J=$jobs
            run_parallel gpu_tests "$OUT/gpu_tests.log" "$jobs" \
                '"$LOOM_GPU_TESTS_BIN" --test-case-exclude="$LOOM_GPU_TESTS_ALONE" --first=$((SHARD * LOOM_GPU_TESTS_N / LOOM_GPU_TESTS_J + 1)) --last=$(((SHARD + 1) * LOOM_GPU_TESTS_N / LOOM_GPU_TESTS_J))'
            run_step gpu_tests_alone "$OUT/gpu_tests.log" append "$bin/loom_gpu_tests" --test-case="$LOOM_GPU_TESTS_ALONE"
        else
            run_step gpu_tests "$OUT/gpu_tests.log" new "$bin/loom_gpu_tests"
        fi
    else
        results+=("| gpu_tests | missing | — | — |"); failed=$((failed + 1))
    fi
fi
if want gpu_tests && [[ -x $bin/loom_disk_cache_stress ]]; then
    # Eight processes on one empty disk-cache directory, compiling, running and checking 50 kernels, 3 rounds.
    run_step disk_cache_run "$OUT/gpu_tests.log" append "$bin/loom_disk_cache_stress" --dir "$(mktemp -d)" \
        --processes 8 --rounds 3 --kernels 50 --run
fi
if want gpu_tests && [[ -f $bundle/dlpack/torch_roundtrip.py ]]; then
    # PyTorch CUDA tensors to Loom and back through DLPack (tests/dlpack): the same pointer, Loom's values.
    # The script exits 77 when torch is not importable or sees no GPU: reported as skipped, not failed.
    run_step dlpack_torch "$OUT/gpu_tests.log" append bash -c \
        'python3 "$0" "$1"; rc=$?; if [[ $rc -eq 77 ]]; then echo "dlpack_torch: skipped"; rc=0; fi; exit $rc' \
        "$bundle/dlpack/torch_roundtrip.py" "$bundle/dlpack/libloom_dlpack_shim.so"
fi
if want sanitizer; then
    # compute-sanitizer as a routine step: memcheck over a small-shape subset of the GPU tests
    # (LOOM_TEST_SMALL=1; the cases that fault, run out of memory or fail CUDA calls on purpose, and the
    # multi-gigabyte ones, left out), over the API fuzzer on device tensors and over the samples at small
    # sizes; racecheck, synccheck and initcheck over the kernel-family test cases (reductions, tiled
    # transposes and stencils; matrix-product cases join through LOOM_SANITIZER_KERNEL_CASES). Every run is time boxed
    # (LOOM_SANITIZER_SECONDS, default 150 s; the memcheck shards run side by side, then the three other
    # tools side by side), so the step takes about 5 minutes. The target is 0 errors and 0 hazards: any
    # error or hazard, or a run that fails, fails the step; a run cut short by its box is marked, not failed.
    slog=$OUT/sanitizer.log
    : >"$slog"
    cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
    for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [[ -z $cs && -x $c ]] && cs=$c
    done
    [[ -z $cs ]] && cs=$(find /usr/local /opt -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -1)
    box=${LOOM_SANITIZER_SECONDS:-150}
    kernel_cases=${LOOM_SANITIZER_KERNEL_CASES:-reduce:*,traced reductions:*,tiled*,stencils:*,tile hints:*,matmul:*,tensor cores:*,wgmma:*,tf32:*}
    # Fault on purpose, fail CUDA calls on purpose (out of memory, bad launches, missing kernels), or move
    # gigabytes: not for memcheck's error count.
    exclude='*sticky*,*asynchronous fault*,*LOOM_SYNC*,error model child*,*out of memory*,*not sticky*,module errors*,pointwise large*,*more than 256 groups*,*10,000*'
    san_failed=0
    # sanitize NAME SECONDS TOOL COMMAND...: one time-boxed compute-sanitizer run, its output appended to the
    # log; records a row with its errors (ERROR SUMMARY) and hazards (RACECHECK SUMMARY).
    sanitize() {
        local name=$1 secs=$2 tool=$3
        shift 3
        local out=$OUT/.sanitizer.$name.log
        timeout --kill-after=20 "$secs" "$cs" --tool "$tool" --error-exitcode 1 "$@" >"$out" 2>&1
        local rc=$?
        local errors hazards cut=no
        # "ERROR SUMMARY: N errors" only: its companion "ERROR SUMMARY: M errors were not printed" counts some of them again.
        errors=$(awk '/ERROR SUMMARY: [0-9]+ errors?$/ { s += $4 } END { print s + 0 }' "$out")
        hazards=$(awk '/RACECHECK SUMMARY: [0-9]+ hazard/ { s += $4 } END { print s + 0 }' "$out")
        [[ $rc -eq 124 || $rc -eq 137 ]] && cut="reached (${secs} s)"
        { echo "=== sanitizer $name: $tool: $*"; cat "$out"; echo "=== sanitizer $name: exit $rc, $errors errors, $hazards hazards, time box $cut"; } >>"$slog"
        rm -f "$out"
        sanitizer_rows+=("| $name | $tool | $rc | $errors | $hazards | $cut |")
        if [[ $errors -gt 0 || $hazards -gt 0 ]] || [[ $rc -ne 0 && $cut == no ]]; then san_failed=1; fi
    }
    if [[ -z $cs ]]; then
        results+=("| sanitizer | missing (no compute-sanitizer) | — | — |"); failed=$((failed + 1))
    elif [[ ! -x $bin/loom_gpu_tests ]]; then
        results+=("| sanitizer | missing (no loom_gpu_tests) | — | — |"); failed=$((failed + 1))
    else
        echo "=== sanitizer: $cs ($("$cs" --version 2>&1 | tail -1))" | tee -a "$slog"
        sanitize probe 120 memcheck "$bin/loom_gpu_tests" --test-case='device discovery*'
        if grep -qiE 'device not supported|not supported on this|error 999' "$slog"; then
            sanitizer_note="compute-sanitizer cannot instrument this machine's GPU (see sanitizer.log): not run."
            results+=("| sanitizer | unsupported here | — | — |")
        else
            export LOOM_TEST_SMALL=1
            # --test-case='*' makes the runs filtered (tests/gpu/main.cpp): no child process for the sticky cases.
            n=$("$bin/loom_gpu_tests" --count --test-case='*' --test-case-exclude="$exclude" | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
            jobs=${LOOM_SANITIZER_JOBS:-4}
            pids=()
            # The shards and the samples run side by side, as background jobs whose rows come back through files.
            for ((k = 0; k < jobs; k++)); do
                ( sanitizer_rows=(); san_failed=0; slog=$OUT/.sanitizer.part.$k
                  sanitize "memcheck_gpu_tests_$k" "$box" memcheck "$bin/loom_gpu_tests" --test-case='*' --test-case-exclude="$exclude" \
                      --first=$((k * n / jobs + 1)) --last=$(((k + 1) * n / jobs))
                  printf '%s\n' "${sanitizer_rows[@]}" >"$OUT/.sanitizer.row.$k"; exit $san_failed ) &
                pids+=($!)
            done
            ( sanitizer_rows=(); san_failed=0; slog=$OUT/.sanitizer.part.samples
              [[ -x $bin/loom_fuzz_api ]] && sanitize memcheck_fuzz_api "$box" memcheck "$bin/loom_fuzz_api" --gpu --count 1500 --seed 7
              for s in "scale_bias_activation 256 256" "print_cuda" "black_scholes 4096" "softmax 64 1024" \
                       "layernorm 64 1024" "rmsnorm 64 1024" "pipeline 4 65536" "transpose 300 257" "jacobi 258 4" "adam 100000 5"; do
                  set -- $s
                  [[ -x $bin/$1 ]] && sanitize "memcheck_sample_$1" 90 memcheck "$bin/$@"
              done
              printf '%s\n' "${sanitizer_rows[@]}" >"$OUT/.sanitizer.row.samples"; exit $san_failed ) &
            pids+=($!)
            for p in "${pids[@]}"; do wait "$p" || san_failed=1; done
            pids=()
            for tool in racecheck synccheck initcheck; do
                ( sanitizer_rows=(); san_failed=0; slog=$OUT/.sanitizer.part.$tool
                  sanitize "${tool}_kernels" "$box" "$tool" "$bin/loom_gpu_tests" --test-case="$kernel_cases" \
                      --test-case-exclude="$exclude"
                  printf '%s\n' "${sanitizer_rows[@]}" >"$OUT/.sanitizer.row.$tool"; exit $san_failed ) &
                pids+=($!)
            done
            for p in "${pids[@]}"; do wait "$p" || san_failed=1; done
            for f in "$OUT"/.sanitizer.part.*; do  # each background run's log, in one file
                [[ -f $f ]] && cat "$f" >>"$slog" && rm -f "$f"
            done
            for f in "$OUT"/.sanitizer.row.*; do
                [[ -f $f ]] || continue
                while IFS= read -r row; do [[ -n $row ]] && sanitizer_rows+=("$row"); done <"$f"
                rm -f "$f"
            done
            unset LOOM_TEST_SMALL
            totals=$(printf '%s\n' "${sanitizer_rows[@]}" | awk -F'|' '{ e += $5; h += $6 } END { printf "%d errors, %d hazards", e, h }')
            sanitizer_note="Totals: $totals over ${#sanitizer_rows[@]} runs (the probe included)."
            echo "=== sanitizer: $totals; exit $san_failed" | tee -a "$slog"
            results+=("| sanitizer | $san_failed | $totals | — |")
            [[ $san_failed -ne 0 ]] && failed=$((failed + 1))
        fi
    fi
    write_status "${args[@]}"
fi
if want fuzz && [[ -x $bin/loom_fuzz ]]; then
    # LOOM_FUZZ_JOBS processes (default 8), each with seeds of its own, for LOOM_FUZZ_SECONDS (default 120).
    export LOOM_FUZZ_BIN=$bin/loom_fuzz LOOM_FUZZ_SEED=$(date +%s) LOOM_FUZZ_T=${LOOM_FUZZ_SECONDS:-120}
    run_parallel fuzz "$OUT/fuzz.log" "${LOOM_FUZZ_JOBS:-8}" \
        '"$LOOM_FUZZ_BIN" --seconds "$LOOM_FUZZ_T" --seed $((LOOM_FUZZ_SEED + SHARD * 1000000))'
    awk '/^fuzz: / { g += $2; f += $4 } END { printf "fuzz (all processes): %d graphs, %d failures\n", g, f }' \
        "$OUT/fuzz.log" | tee -a "$OUT/fuzz.log"
fi
if want fuzz && [[ -x $bin/loom_fuzz_views ]]; then
    # Writes into strided views (tests/fuzz/fuzz_views.cpp): LOOM_FUZZ_VIEWS_JOBS processes (default 4) for
    # LOOM_FUZZ_VIEWS_SECONDS (default 60), seeds of their own.
    export LOOM_FUZZ_VIEWS_BIN=$bin/loom_fuzz_views LOOM_FUZZ_SEED=${LOOM_FUZZ_SEED:-$(date +%s)} LOOM_FUZZ_VT=${LOOM_FUZZ_VIEWS_SECONDS:-60}
    run_parallel fuzz_views "$OUT/fuzz.log.views" "${LOOM_FUZZ_VIEWS_JOBS:-4}" \
        '"$LOOM_FUZZ_VIEWS_BIN" --seconds "$LOOM_FUZZ_VT" --seed $((LOOM_FUZZ_SEED + 500000 + SHARD * 1000000))'
    awk '/^fuzz: / { g += $2; f += $4 } END { printf "fuzz_views (all processes): %d graphs, %d failures\n", g, f }' \
        "$OUT/fuzz.log.views" | tee -a "$OUT/fuzz.log.views"
    cat "$OUT/fuzz.log.views" >>"$OUT/fuzz.log" && rm -f "$OUT/fuzz.log.views"
fi
if want samples; then
    : >"$OUT/samples.log"
    for s in scale_bias_activation print_cuda black_scholes softmax layernorm rmsnorm pipeline transpose jacobi matmul_bias_gelu adam; do
        [[ -x $bin/$s ]] && run_step "sample_$s" "$OUT/samples.log" append "$bin/$s"
    done
fi
if want unit; then
    for t in loom_unit_tests loom_golden_tests; do
        [[ -x $bin/$t ]] && run_step "${t#loom_}" "$OUT/${t#loom_}.log" new "$bin/$t"
    done
fi

bench=""
if [[ -x $bin/loom_bench ]]; then bench=$bin/loom_bench
else bench=$(find "$bin" -maxdepth 1 -type f -name '*bench*' -perm -u+x 2>/dev/null | head -1); fi
if want bench && [[ -n $bench ]]; then
    : >"$OUT/bench.log"
    : >"$OUT/peers.log"
    for i in $(seq 1 "${LOOM_BENCH_ROUNDS:-3}"); do
        check=(); [[ $i -gt 1 ]] && check=(--no-check)   # results are checked against the reference once
        run_step "bench_$i" "$OUT/bench.log" append "$bench" "${check[@]}" --json "$OUT/.bench_$i.json" "${args[@]}"
        if [[ -f $bundle/peer_baselines.py ]]; then
            run_step "peers_$i" "$OUT/peers.log" append python3 "$bundle/peer_baselines.py" --json "$OUT/.peers_$i.json" "${args[@]}"
        fi
        if [[ -f $bundle/peers_attention.py ]]; then
            # Its records join the round's peer records (.peers_N.json), which the merge below takes.
            run_step "peers_attention_$i" "$OUT/peers.log" append python3 "$bundle/peers_attention.py" --json "$OUT/.attention_$i.json" "${args[@]}"
            fold_json "$OUT/.attention_$i.json" "$OUT/.peers_$i.json" || echo "device_run: the records of peers_attention.py round $i were not merged"
        fi
    done
    # Every round's records in one bench.json (few files come back), and the picture of docs/performance.md
    # drawn from it where matplotlib is installed.
    plot=$bundle/plot_performance.py
    [[ -f $plot ]] || plot=$root/scripts/plot_performance.py
    shopt -s nullglob
    rounds=("$OUT"/.bench_*.json "$OUT"/.peers_*.json)
    shopt -u nullglob
    if [[ ! -f $plot ]]; then
        echo "device_run: no plot_performance.py: the rounds' JSON stay apart"
    elif ((${#rounds[@]})) && python3 "$plot" --merge "$OUT/bench.json" "${rounds[@]}" &&
        python3 -c 'import matplotlib' 2>/dev/null; then
        python3 "$plot" --out "$OUT/performance.png" "$OUT/bench.json" || echo "device_run: plot_performance.py failed"
    fi
elif want bench; then
    echo "no benchmark binary in $bin: benchmark skipped"
fi

write_status "${args[@]}"
echo
cat "$status"
[[ $failed -eq 0 ]] && exit 0 || exit 1

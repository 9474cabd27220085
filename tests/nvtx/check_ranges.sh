#!/usr/bin/env bash
# Runs a program with LOOM_NVTX=1 under the recording injection library (tests/nvtx/nvtx_recorder.cpp) and
# checks the ranges it pushed: every PATTERN (an extended regular expression) must match one "[nvtx]" line;
# a pattern written !PATTERN must match none.
#
#   check_ranges.sh RECORDER_LIBRARY PROGRAM [ARGS...] -- PATTERN...
set -uo pipefail
recorder=$1
shift
cmd=()
while [[ $# -gt 0 && $1 != -- ]]; do
    cmd+=("$1")
    shift
done
shift
log=$(LOOM_NVTX=1 NVTX_INJECTION64_PATH=$recorder "${cmd[@]}" 2>&1 >/dev/null)
status=$?
ranges=$(grep -a '^\[nvtx\]' <<<"$log")
if [[ $status -ne 0 ]]; then
    echo "check_ranges: ${cmd[*]} exited with $status:" >&2
    tail -20 <<<"$log" >&2
    exit 1
fi
failed=0
for p in "$@"; do
    if [[ $p == '!'* ]]; then
        if grep -Eq -- "${p#!}" <<<"$ranges"; then
            echo "check_ranges: a range matches ${p#!}:" >&2
            grep -E -- "${p#!}" <<<"$ranges" | head -5 >&2
            failed=1
        fi
    elif ! grep -Eq -- "$p" <<<"$ranges"; then
        echo "check_ranges: no range matches $p" >&2
        failed=1
    fi
done
if [[ $failed -ne 0 ]]; then
    echo "check_ranges: the ranges were:" >&2
    head -60 <<<"$ranges" >&2
    exit 1
fi
echo "check_ranges: $(wc -l <<<"$ranges") ranges; every pattern as expected"

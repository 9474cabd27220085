#!/usr/bin/env bash
# Formats Loom's C++ sources with clang-format (.clang-format: Google style, 110 columns), or with --check
# fails, listing them, when any file is not formatted (CI runs the check). The files: every tracked .cpp,
# .hpp, .h and .cuh, except the golden tests' expected kernels and the device prelude, which are kernel text
# (their bytes enter generated sources and the tests compare them as they are).
set -euo pipefail
cd "$(dirname "$0")/.."
format=${CLANG_FORMAT:-clang-format}
files=$(git ls-files '*.cpp' '*.hpp' '*.h' '*.cuh' | grep -v -e '^tests/golden/expected/' -e '^codegen/src/cuda/prelude\.cuh$')
if [[ ${1:-} == --check ]]; then
    bad=()
    for f in $files; do "$format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f"); done
    if ((${#bad[@]})); then
        echo "format: ${#bad[@]} file(s) not formatted ($("$format" --version)); run scripts/format.sh:" >&2
        printf 'format:   %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format: $(wc -w <<<"$files") files formatted"
else
    # shellcheck disable=SC2086
    "$format" -i $files
fi

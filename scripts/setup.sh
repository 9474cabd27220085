#!/usr/bin/env bash
# Installs what Loom's build needs on a Debian 12 machine (idempotent) and checks the CUDA toolkit.
#
# Debian packages: cmake, ninja-build, g++, libfmt-dev, doctest-dev, nettle-dev (SHA-256 of the disk
# kernel cache, linked statically), libdlpack-dev (the DLPack header dlpack/dlpack.h, 0.6: from_dlpack and
# Tensor::to_dlpack), python3, llvm-19-dev (the host back end's module loom_llvm: ORC JIT from
# LLVM 19; without it the build skips the module and host tensors run on the CPU reference), clang-format
# (Debian 12's, version 14: scripts/format.sh, which CI runs) (only the missing ones are installed; `apt-get
# update` runs only when something is missing). Runs as root, or through sudo.
# The CUDA toolkit (13.x, at /usr/local/cuda or $CUDA_HOME) is checked, not installed: it does not come
# from Debian's archive; install it from NVIDIA (https://developer.nvidia.com/cuda-downloads).
set -euo pipefail

packages=(cmake ninja-build g++ libfmt-dev doctest-dev nettle-dev libdlpack-dev python3 llvm-19-dev clang-format)

installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    if [[ $(id -u) -eq 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup: error: packages ${missing[*]} are missing and this user is not root and has no sudo;" >&2
        echo "setup:        install them as root: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update
    "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
    echo "setup: Debian packages present: ${packages[*]}"
fi

# CUDA toolkit 13: NVRTC (headers and library) and the static CUDA runtime.
cuda=${CUDA_HOME:-/usr/local/cuda}
needed=(bin/nvcc include/nvrtc.h lib64/libnvrtc.so lib64/libcudart_static.a)
absent=()
for f in "${needed[@]}"; do
    [[ -e "$cuda/$f" ]] || absent+=("$cuda/$f")
done
if ((${#absent[@]})); then
    echo "setup: error: the CUDA toolkit 13 is not complete at $cuda; missing:" >&2
    printf 'setup:   %s\n' "${absent[@]}" >&2
    echo "setup: it cannot be installed from Debian's archive here: install CUDA toolkit 13 from NVIDIA" >&2
    echo "setup: (https://developer.nvidia.com/cuda-downloads), or set CUDA_HOME to where it is installed." >&2
    exit 1
fi
version=$("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1.\2/p')
if [[ "${version%%.*}" != 13 ]]; then
    echo "setup: error: $cuda has CUDA ${version:-of unknown version}; Loom needs CUDA toolkit 13" >&2
    echo "setup: (install it from NVIDIA, or set CUDA_HOME to a CUDA 13 installation)." >&2
    exit 1
fi
echo "setup: CUDA toolkit $version at $cuda (nvcc, NVRTC, cudart_static)"
echo "setup: ready"

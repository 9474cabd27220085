#!/usr/bin/env python3
"""PyTorch CUDA tensors to Loom and back through DLPack, without a copy (docs/interop.md).

Usage: torch_roundtrip.py <path of libloom_dlpack_shim.so>

Hands torch tensors (float32, bfloat16, a transposed view) to Loom's shim (torch_shim.cpp), which doubles
them in place with a Loom kernel and returns a DLPack capsule over the same memory, and takes a tensor that
Loom made. Checks the pointers (same memory, no copy) and the values. Exits 77 (CTest's skip code) when
torch is not importable or has no CUDA device.
"""
import ctypes
import sys

SKIP = 77

try:
    import torch
    import torch.utils.dlpack as tdl
except Exception as e:  # torch not installed, or broken
    print(f"torch is not importable ({e}): skipped")
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("torch sees no CUDA device: skipped")
    sys.exit(SKIP)

lib = ctypes.CDLL(sys.argv[1])
lib.loom_shim_error.restype = ctypes.c_char_p
lib.loom_shim_double.restype = ctypes.c_void_p
lib.loom_shim_double.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
lib.loom_shim_double_versioned.restype = ctypes.c_void_p
lib.loom_shim_double_versioned.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
lib.loom_shim_halves.restype = ctypes.c_void_p
lib.loom_shim_halves.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_size_t]

api = ctypes.pythonapi
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def take(capsule, name=b"dltensor"):
    """The DLManagedTensor of a "dltensor" capsule (DLManagedTensorVersioned of a "dltensor_versioned" one); the
    capsule is marked used, as a consumer must."""
    ptr = api.PyCapsule_GetPointer(capsule, name)
    api.PyCapsule_SetName(capsule, b"used_" + name)
    return ptr


def give(ptr, name=b"dltensor"):
    """A capsule over a DLManagedTensor (or DLManagedTensorVersioned) from Loom, for torch's from_dlpack."""
    if not ptr:
        raise RuntimeError(lib.loom_shim_error().decode())
    return api.PyCapsule_New(ptr, name, None)


class Versioned:
    """A producer of DLPack 1.0 capsules: torch.from_dlpack() calls its __dlpack__ with max_version."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if max_version is None or max_version[0] < 1:
            raise BufferError("only a versioned capsule here")
        return self.capsule

    def __dlpack_device__(self):
        return (2, self.device)  # kDLCUDA


def double_with_loom(x):
    stream = torch.cuda.current_stream(x.device).cuda_stream
    return tdl.from_dlpack(give(lib.loom_shim_double(take(tdl.to_dlpack(x)), stream)))


failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


for dtype in (torch.float32, torch.bfloat16):
    x = torch.arange(4096, device="cuda", dtype=torch.float32).to(dtype) - 100
    want = x * 2
    ptr = x.data_ptr()
    y = double_with_loom(x)
    check(y.data_ptr() == ptr, f"{dtype}: Loom's result is the same memory (no copy)")
    check(y.dtype == dtype and y.shape == x.shape, f"{dtype}: dtype and shape kept")
    check(torch.equal(y, want), f"{dtype}: doubled by Loom")
    check(torch.equal(x, want), f"{dtype}: the original torch tensor sees the write")

base = torch.arange(64 * 48, device="cuda", dtype=torch.float32).reshape(64, 48)
t = base.t()  # strides (1, 48): a view Loom writes at its strides
want = t * 2
y = double_with_loom(t)
check(y.data_ptr() == t.data_ptr() and y.stride() == t.stride(), "transposed view: same memory and strides")
check(torch.equal(base.t(), want), "transposed view: doubled in place")

# DLPack 1.0: torch's versioned capsule to Loom, Loom's versioned tensor back to torch.
x = torch.arange(4096, device="cuda", dtype=torch.float32) - 100
want = x * 2
try:
    # DLPack's stream argument: 1 for the legacy default stream (0 is not allowed), else the handle.
    current = torch.cuda.current_stream().cuda_stream
    capsule = x.__dlpack__(stream=current if current != 0 else 1, max_version=(1, 0))
except TypeError:
    capsule = None
if capsule is None or not api.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
    print(f"versioned: skipped (torch {torch.__version__} gives no DLPack 1.0 capsule)")
else:
    stream = torch.cuda.current_stream(x.device).cuda_stream
    back = give(lib.loom_shim_double_versioned(take(capsule, b"dltensor_versioned"), stream), b"dltensor_versioned")
    y = torch.from_dlpack(Versioned(back, x.device.index))
    check(y.data_ptr() == x.data_ptr(), "versioned: Loom's result is the same memory (no copy)")
    check(torch.equal(y, want) and torch.equal(x, want), "versioned: doubled by Loom, seen by torch")

stream = torch.cuda.current_stream().cuda_stream
h = tdl.from_dlpack(give(lib.loom_shim_halves(1000, torch.cuda.current_device(), stream)))
check(h.is_cuda and h.dtype == torch.float32, "Loom's tensor reaches torch on the GPU as float32")
check(torch.equal(h, torch.arange(1000, device="cuda", dtype=torch.float32) * 0.5), "Loom's values")
del h  # torch calls Loom's deleter
torch.cuda.synchronize()

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)

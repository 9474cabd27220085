#!/usr/bin/env python3
"""The DLPack shim (torch_shim.cpp) on host memory, from Python's ctypes alone: no torch, no GPU.

Usage: ctypes_host.py <path of libloom_dlpack_shim.so>

Builds a DLManagedTensor over a ctypes float array (kDLCPU, float32, a producer deleter that counts its
calls), hands it to loom_shim_double, and checks what comes back: the same memory, doubled by a Loom kernel,
a DLManagedTensor whose deleter releases Loom's handle, and the producer's deleter called exactly once.
"""
import ctypes
import sys


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

KDLCPU, KDLFLOAT = 1, 2

lib = ctypes.CDLL(sys.argv[1])
lib.loom_shim_error.restype = ctypes.c_char_p
lib.loom_shim_double.restype = ctypes.POINTER(DLManagedTensor)
lib.loom_shim_double.argtypes = [ctypes.POINTER(DLManagedTensor), ctypes.c_size_t]

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


n = 1000
data = (ctypes.c_float * n)(*[i - 300.0 for i in range(n)])
shape = (ctypes.c_int64 * 1)(n)
deleted = []
deleter = DELETER(lambda self: deleted.append(1))
managed = DLManagedTensor(DLTensor(ctypes.cast(data, ctypes.c_void_p), DLDevice(KDLCPU, 0), 1,
                                   DLDataType(KDLFLOAT, 32, 1), shape, None, 0), None, deleter)

out = lib.loom_shim_double(ctypes.byref(managed), 0)
check(bool(out), "loom_shim_double returned a tensor: " + lib.loom_shim_error().decode())
if out:
    t = out.contents.dl_tensor
    check(t.data == ctypes.cast(data, ctypes.c_void_p).value, "the same memory (no copy)")
    check(t.device.device_type == KDLCPU and t.ndim == 1 and t.shape[0] == n and t.strides[0] == 1,
          "kDLCPU, shape [1000], strides [1]")
    check((t.dtype.code, t.dtype.bits, t.dtype.lanes) == (KDLFLOAT, 32, 1), "float32")
    check(all(data[i] == 2.0 * (i - 300.0) for i in range(n)), "doubled in place by Loom")
    check(not deleted, "the producer's deleter waits for Loom's last handle")
    out.contents.deleter(out)  # the consumer is done: Loom's last handle goes
check(len(deleted) == 1, "the producer's deleter ran exactly once")

bad = DLManagedTensor(DLTensor(ctypes.cast(data, ctypes.c_void_p), DLDevice(4, 0), 1,
                               DLDataType(KDLFLOAT, 32, 1), shape, None, 0), None, deleter)
check(not lib.loom_shim_double(ctypes.byref(bad), 0), "an OpenCL tensor is refused")
message = lib.loom_shim_error().decode()
check(message.startswith("from_dlpack(): DLPack device kDLOpenCL (id 0) is not supported"), message)
check(len(deleted) == 1, "a refused tensor's deleter is not called")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)

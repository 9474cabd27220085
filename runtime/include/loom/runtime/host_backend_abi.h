/* The interface between Loom's runtime and its host back end module, libloom_llvm.so (llvm/src/jit.cpp),
 * which the runtime loads with dlopen when host work first needs it (runtime/src/host_backend.cpp). A C
 * interface of plain functions and buffers, so that no C++ object, exception or LLVM type crosses it and
 * loom_runtime never links LLVM (GPU binaries stay free of libLLVM).
 *
 * The module exports one symbol, loom_llvm_backend_v1, returning a table of function pointers. Errors are
 * reported as a nonzero result (or a null handle) with a message in an error buffer; the module never throws
 * or aborts across the interface. Buffers are allocated by the module and given back with free_buffer. */
#ifndef LOOM_RUNTIME_HOST_BACKEND_ABI_H
#define LOOM_RUNTIME_HOST_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this table; a module whose table says another is not used. */
#define LOOM_HOST_BACKEND_ABI 1

typedef struct loom_hb_buffer {
    char* data; /* malloc'ed by the module; NUL-terminated for text */
    size_t size;
} loom_hb_buffer;

/* A function of the runtime's scalar library that generated code may call, by name. */
typedef struct loom_hb_symbol {
    const char* name;
    const void* address;
} loom_hb_symbol;

typedef struct loom_host_backend_v1 {
    uint32_t abi; /* LOOM_HOST_BACKEND_ABI */
    /* Sets the module up: the JIT, the host target, the symbols of the runtime's scalar library. Returns 0,
     * or nonzero with the reason in `error`. Called once, before anything else. */
    int (*init)(const loom_hb_symbol* symbols, size_t count, loom_hb_buffer* error);
    /* "19.1.7" */
    const char* (*llvm_version)(void);
    /* The optimization pipeline compile() runs (it enters the disk cache key). */
    const char* (*pipeline)(void);
    /* The JIT's target: triple, CPU name and feature string (the host's, with the bfloat16 conversion
     * features removed), the widest vector registers it uses in bits, and whether it has F16C. */
    const char* (*triple)(void);
    const char* (*cpu)(void);
    const char* (*features)(void);
    int (*vector_bits)(void);
    int (*has_f16c)(void);
    /* Parses, verifies, optimizes and compiles LLVM IR text to an ELF object file for the JIT's target.
     * Returns 0 and the object in `object`, or nonzero with LLVM's diagnostics in `error`. Thread-safe. `ms`
     * (may be null) receives the parse + optimize and the code generation times in milliseconds. */
    int (*compile)(const char* ir, size_t size, const char* name, loom_hb_buffer* object,
                   loom_hb_buffer* error, double* ms);
    /* Links an object file (from compile, or from the disk cache) into the JIT; returns a handle, or null
     * with the reason in `error`. Thread-safe. */
    void* (*load)(const char* object, size_t size, const char* name, loom_hb_buffer* error);
    /* The address of function `symbol` of a loaded object, or null with the reason in `error`. */
    void* (*symbol)(void* handle, const char* symbol, loom_hb_buffer* error);
    /* Removes a loaded object from the JIT (its code is freed: no pointer from symbol may be used after). */
    void (*unload)(void* handle);
    void (*free_buffer)(loom_hb_buffer* buffer);
} loom_host_backend_v1;

/* The module's one export. */
typedef const loom_host_backend_v1* (*loom_llvm_backend_v1_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_RUNTIME_HOST_BACKEND_ABI_H */

#!/usr/bin/env python3
"""Peer baselines of Loom's attention rows without a mask: A2nc, A3nc (non-causal) and A4 (decoding).

../shared/bench/peer_baselines.py has the causal rows, A2 and A3; these are bench/loom_bench.cpp's others,
named as loom_bench names them:
    A2nc_attention_f32, A2nc_attention_bf16  q, k, v [8, 12, 1024, 64], no mask; TFLOP/s of 4 B H D T S
    A3nc_attention_bf16                      q, k, v [2, 16, 4096, 128], no mask; as A2nc
    A4_decode_f32, A4_decode_bf16            q [8, 12, 1, 64], k and v [8, 12, 8192, 64], no mask (decoding
                                             against a KV cache); GB/s of q, k, v and the output, each once
Methods: sdpa_flash, sdpa_efficient, sdpa_cudnn (each SDPA backend that runs the row), sdpa (the fastest of
them), torch.compile of the written form softmax(q kᵀ · scale) v (unless --no-compile), eager (the written
form). Prints one row per workload and method as peer_baselines.py does:
    workload  method  median_ms  GB/s (minimum bytes moved)  TFLOP/s
and with --json FILE writes the same records as its --json (workload, method, ms, gbs, tflops).

Usage: python3 bench/peers_attention.py [--only A2nc,A4] [--json FILE] [--no-compile]
--only takes row ids as loom_bench does (the part of a row's name before '_'); an id also names the rows of
its variants, the ids that add lower-case letters after its number (A2 runs A2nc's rows). --no-cupy and
--no-jax are taken and change nothing (scripts/device_run.sh passes the same arguments to both scripts).
Needs: a CUDA GPU, torch, triton (imported only when a row runs).
"""
import argparse, json, math, re, sys

ROWS = []
# workload, q's shape [B, H, T, D], the key count S, dtype tag, memory-bound (GB/s) or not (TFLOP/s)
WORKLOADS = (
    ("A2nc_attention_f32", (8, 12, 1024, 64), 1024, "f32", False),
    ("A2nc_attention_bf16", (8, 12, 1024, 64), 1024, "bf16", False),
    ("A3nc_attention_bf16", (2, 16, 4096, 128), 4096, "bf16", False),
    ("A4_decode_f32", (8, 12, 1, 64), 8192, "f32", True),
    ("A4_decode_bf16", (8, 12, 1, 64), 8192, "bf16", True),
)


def selected(only, workload):
    """As loom_bench's --only: the row's id (before '_') or its family (the id less a lower-case suffix)."""
    if not only:
        return True
    rid = workload.split("_")[0]
    return rid in only or re.sub(r"(?<=[0-9])[a-z]+$", "", rid) in only


def median_ms(fn):
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def report(workload, method, ms, nbytes=None, flops=None):
    gbs = nbytes / ms / 1e6 if nbytes else None
    tflops = flops / ms / 1e9 if flops else None
    ROWS.append(dict(workload=workload, method=method, ms=ms, gbs=gbs, tflops=tflops))
    tail = (f"{gbs:9.1f} GB/s" if gbs else "") + (f"{tflops:9.1f} TFLOP/s" if tflops else "")
    print(f"{workload:16s} {method:14s} {ms:9.4f} ms {tail}", flush=True)


def run_row(args, workload, shape, S, tag, memory_bound):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    B, H, T, D = shape
    dt = torch.float32 if tag == "f32" else torch.bfloat16
    q = torch.randn(B, H, T, D, device="cuda", dtype=dt)
    k, v = [torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(2)]
    scale = 1.0 / math.sqrt(D)

    def written(q, k, v):
        return ((q @ k.transpose(-2, -1)) * scale).softmax(-1) @ v

    # decoding: q, k, v and the output, each moved once; else the products over every (query, key) pair
    nbytes = (2 * q.numel() + k.numel() + v.numel()) * q.element_size() if memory_bound else None
    flops = None if memory_bound else 4.0 * B * H * D * T * S
    with torch.no_grad():
        report(workload, "eager", median_ms(lambda: written(q, k, v)), nbytes, flops)
        best = None
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(be):
                    F.scaled_dot_product_attention(q, k, v)
                    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v))
                report(workload, f"sdpa_{name}", ms, nbytes, flops)
                best = ms if best is None or ms < best else best
            except Exception as exc:
                print(f"{workload:16s} sdpa_{name} unavailable: {exc!r:.100}")
        if best is not None:
            report(workload, "sdpa", best, nbytes, flops)  # the fastest backend that ran
        if not args.no_compile:
            cw = torch.compile(written, dynamic=False)  # each row's shapes, never a dynamic-shape kernel
            cw(q, k, v)
            report(workload, "torch.compile", median_ms(lambda: cw(q, k, v)), nbytes, flops)
    del q, k, v
    torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated row ids, e.g. A2nc,A4 (A2 takes A2nc too)")
    p.add_argument("--json", default="")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--no-cupy", action="store_true", help="taken and ignored (peer_baselines.py's)")
    p.add_argument("--no-jax", action="store_true", help="taken and ignored (peer_baselines.py's)")
    args = p.parse_args()
    args.only = [w for w in args.only.split(",") if w]
    todo = [w for w in WORKLOADS if selected(args.only, w[0])]
    failed = False
    if todo:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        print(f"# peers_attention: torch {torch.__version__} on {torch.cuda.get_device_name()}", flush=True)
        for w in todo:
            try:
                run_row(args, *w)
            except Exception as exc:  # the other rows still run; the exit status says it
                print(f"{w[0]:16s} NOT RUN: {exc!r:.200}", flush=True)
                print(f"{w[0]}: NOT RUN: {exc!r}", file=sys.stderr)
                failed = True
    if args.json:
        with open(args.json, "w") as f:
            json.dump(ROWS, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

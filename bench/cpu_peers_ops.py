#!/usr/bin/env python3
"""NumPy on the host rows of the gathers, scans and random numbers, in cpu_peers.py's form.

The rows of `loom_bench --only CN1,CG1,CX2,CSC1,CMC1` (bench/loom_bench.cpp, bench_host_ops), the same sizes
and bytes, measured with NumPy (median of the repetitions, after one warm-up call), printed as
cpu_peers.py prints its rows: `<workload> <method> <ms> ms <GB/s> GB/s` (CMC1: ms per price).

  CN1   x + 0.1 * normal noise, 2^26 float32 (NumPy draws the normals into memory first)
  CG1   an embedding lookup, 2^14 int64 ids into a [2^18, 256] float32 table (np.take into a buffer)
  CX2   cross-entropy of [4096, 8192] float32 logits against int64 labels, the mean (a stable log-softmax)
  CSC1  the cumsum of 2^26 float32 (np.cumsum into a buffer)
  CMC1  the arithmetic-average Asian call of MC1 over 2^16 paths x 252 steps (S0 = K = 100, r = 0.05,
        sigma = 0.2, T = 1): normals, the log path by cumsum, the average, the discounted mean payoff

Usage: cpu_peers_ops.py [--only CN1,CG1,...]
"""
import argparse
import math
import time


def median_ms(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def report(w, method, ms, nbytes):
    print(f"{w:16s} {method:14s} {ms:9.4f} ms {nbytes / ms / 1e6:9.1f} GB/s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(w for w in a.only.split(",") if w)
    want = lambda w: not only or w in only
    import numpy as np

    rng = np.random.default_rng(0)
    n = 1 << 26
    if want("CN1"):
        x = rng.standard_normal(n, dtype=np.float32)
        y = np.empty_like(x)

        def noise():
            z = rng.standard_normal(n, dtype=np.float32)
            np.multiply(z, np.float32(0.1), out=z)
            np.add(x, z, out=y)

        report("CN1_add_normal_noise", "numpy", median_ms(noise), 8 * n)
        del x, y
    if want("CG1"):
        rows, cols, k = 1 << 18, 256, 1 << 14
        table = rng.standard_normal((rows, cols), dtype=np.float32)
        ids = rng.integers(0, rows, k, dtype=np.int64)
        out = np.empty((k, cols), dtype=np.float32)
        report("CG1_embedding_gather", "numpy", median_ms(lambda: np.take(table, ids, axis=0, out=out)),
               2 * 4 * k * cols + 8 * k)
        del table, out
    if want("CX2"):
        rows, classes = 4096, 8192
        logits = rng.standard_normal((rows, classes), dtype=np.float32)
        labels = rng.integers(0, classes, rows, dtype=np.int64)

        def xent():
            m = logits.max(axis=1, keepdims=True)
            lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
            return float((lse - logits[np.arange(rows), labels]).mean())

        report("CX2_cross_entropy", "numpy", median_ms(xent), 4 * rows * classes + 8 * rows)
        del logits
    if want("CSC1"):
        x = rng.standard_normal(n, dtype=np.float32)
        y = np.empty_like(x)
        report("CSC1_cumsum", "numpy", median_ms(lambda: np.cumsum(x, out=y)), 8 * n)
        del x, y
    if want("CMC1"):
        paths, steps = 1 << 16, 252
        dt, r, sigma = 1.0 / steps, 0.05, 0.2

        def asian():
            z = rng.standard_normal((paths, steps), dtype=np.float32)
            inc = np.float32((r - 0.5 * sigma * sigma) * dt) + np.float32(sigma * math.sqrt(dt)) * z
            log_s = np.float32(math.log(100.0)) + np.cumsum(inc, axis=1)
            avg = np.exp(log_s).mean(axis=1)
            return float(np.maximum(avg - 100.0, 0.0).mean() * math.exp(-r))

        ms = median_ms(asian, reps=3)
        print(f"{'CMC1_asian_mc':16s} {'numpy':14s} {ms:9.4f} ms", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws docs/performance.png from one benchmark job: a grouped bar chart of Loom and each peer per
memory-bound workload, as a fraction of the job's COPY ceiling (device-to-device copy, GB/s).

Usage: python3 scripts/plot_performance.py [--out docs/performance.png] [--title TEXT] FILE.json ...
       python3 scripts/plot_performance.py --merge OUT.json ROUND.json ...

The files are the JSON of `loom_bench --json` and `peer_baselines.py --json`, any number of rounds of each.
--merge writes the records of round files named .bench_N.json and .peers_N.json (scripts/device_run.sh's)
into one list, each record with its "round" and "source", removes the round files and draws nothing.
Every record has "workload", "method" and either "gbs" (with "ms") or "us"; records with a "tflops" value
(compute-bound products), without "gbs", or of P1 (host-device copies) are left out, because a fraction of
COPY means nothing for them. Several rounds of one (workload, method) give their median. COPY is the median
of the "COPY_ceiling" records of the peers' `copy_` (else any COPY_ceiling method). Loom's bar of a workload
is its best Loom method ("loom", "loom_*"); each peer's bar is its best method of a family (torch.compile,
jax.jit, eager, cupy, cuBLAS), as the method names say. Drawing needs matplotlib (the GPU machine has it; on
Debian: python3-matplotlib). Exit status 2 for bad input.
"""
import argparse
import json
import os
import re
import statistics
import sys
from collections import defaultdict


def family(method):
    """The bar a method belongs to: Loom's, or a peer family's."""
    m = method.lower()
    if m == "loom" or m.startswith("loom_"):
        return "Loom"
    for prefix, name in (("torch.compile", "torch.compile"), ("jax", "jax.jit"), ("cupy", "CuPy"),
                         ("cublas", "cuBLAS"), ("eager", "PyTorch eager"), ("torch", "PyTorch eager")):
        if m.startswith(prefix):
            return name
    return None  # baselines such as copy_ceiling or pipeline_copies_only are not bars


def load(paths):
    rows = []
    for p in paths:
        try:
            with open(p) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot_performance: cannot read {p}: {e}")
        if not isinstance(data, list):
            sys.exit(f"plot_performance: {p} is not a list of records")
        rows.extend(r for r in data if isinstance(r, dict) and "workload" in r and "method" in r)
    return rows


def merge(out, paths):
    """The round files' records in one file `out`, each with its round and source; the round files removed."""
    rows = []
    for p in sorted(paths):
        m = re.fullmatch(r"\.(bench|peers)_(\d+)\.json", os.path.basename(p))
        if not m:
            sys.exit(f"plot_performance: {p} is not named .bench_N.json or .peers_N.json")
        source = "loom_bench" if m.group(1) == "bench" else "peer_baselines.py"
        for r in load([p]):
            r.update(round=int(m.group(2)), source=source)
            rows.append(r)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    for p in paths:
        os.remove(p)
    print(f"plot_performance: {out}: {len(rows)} records of {len(paths)} round files")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default="docs/performance.png")
    ap.add_argument("--title", default="Loom and its peers on one H200, fraction of COPY (higher is better)")
    ap.add_argument("--merge", metavar="OUT.json", help="merge round files into OUT.json and draw nothing")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge, args.files)
    rows = load(args.files)

    samples = defaultdict(list)
    for r in rows:
        if r.get("tflops") or not isinstance(r.get("gbs"), (int, float)) or r["gbs"] <= 0:
            continue
        if r["workload"].startswith("P1"):  # host-device copies: their bound is PCIe, not COPY
            continue
        samples[(r["workload"], r["method"])].append(float(r["gbs"]))
    copy = [v for (w, m), vs in samples.items() if w == "COPY_ceiling" and m == "copy_" for v in vs]
    if not copy:
        copy = [v for (w, m), vs in samples.items() if w == "COPY_ceiling" for v in vs]
    if not copy:
        print("plot_performance: no COPY_ceiling record in the files", file=sys.stderr)
        return 2
    ceiling = statistics.median(copy)

    best = defaultdict(dict)  # workload -> family -> median GB/s of its best method
    for (w, m), vs in samples.items():
        fam = family(m)
        if fam is None or w.startswith("COPY"):
            continue
        v = statistics.median(vs)
        best[w][fam] = max(best[w].get(fam, 0.0), v)
    workloads = sorted(w for w in best if "Loom" in best[w])
    if not workloads:
        print("plot_performance: no workload with a Loom record", file=sys.stderr)
        return 2
    families = ["Loom"] + sorted({f for w in workloads for f in best[w]} - {"Loom"})

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(families)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(workloads) + 2), 4.5))
    peer_colors = ["#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#bab0ac", "#edc948"]
    for k, fam in enumerate(families):
        xs = [i + (k - (len(families) - 1) / 2) * width for i in range(len(workloads))]
        ys = [best[w].get(fam, 0.0) / ceiling for w in workloads]
        color = "#1f4e99" if fam == "Loom" else peer_colors[(k - 1) % len(peer_colors)]
        ax.bar(xs, ys, width, label=fam, color=color)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels([w.split("_")[0] for w in workloads])
    ax.set_ylabel(f"GB/s / COPY ({ceiling:.0f} GB/s)")
    ax.set_title(args.title, fontsize=10)
    ax.legend(fontsize=8, ncol=len(families))
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot_performance: {args.out}: {len(workloads)} workloads, {len(families)} bars each, COPY {ceiling:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

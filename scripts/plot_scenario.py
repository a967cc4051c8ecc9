#!/usr/bin/env python3
"""Plots a tessera_scenario CSV: throughput per model, GPUs in use and
shares, SLO violations and host CPU per interval. Writes <csv>.png.
Usage: plot_scenario.py scenario.csv [--title=...] [--out=plot.png]"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--title", default="")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    t = [float(r["t_s"]) for r in rows]
    models = [k[:-len("_ok_rps")] for k in rows[0] if k.endswith("_ok_rps")]
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax = axes[0]
    bottom = [0.0] * len(rows)
    for m in models:
        v = [float(r[m + "_ok_rps"]) for r in rows]
        ax.bar(t, v, width=t[1] - t[0] if len(t) > 1 else 1, bottom=bottom,
               align="edge", label=m)
        bottom = [b + x for b, x in zip(bottom, v)]
    ax.set_ylabel("served req/s")
    ax.legend(fontsize=7, ncol=3)
    ax = axes[1]
    ax.step(t, [float(r["gpus_mean"]) for r in rows], where="post",
            label="GPUs in use (mean)")
    ax.step(t, [float(r["share_sum_percent"]) / 100 for r in rows],
            where="post", label="sum of shares / 100%")
    ax.bar(t, [float(r["swaps"]) for r in rows], width=0.8, alpha=0.3,
           align="edge", label="swaps")
    ax.set_ylabel("GPUs")
    ax.legend(fontsize=7)
    ax = axes[2]
    ax.step(t, [float(r["violation_percent"]) for r in rows], where="post",
            label="SLO violations %")
    ax.step(t, [float(r["host_cpu_percent"]) / 100 for r in rows],
            where="post", label="host CPU (fraction)")
    ax.axhline(1.0, color="grey", lw=0.5, ls="--")
    ax.set_ylabel("%")
    ax.set_xlabel("time (s, cluster units)")
    ax.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    out = args.out or args.csv.rsplit(".", 1)[0] + ".png"
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    print("wrote", out)


if __name__ == "__main__":
    main()

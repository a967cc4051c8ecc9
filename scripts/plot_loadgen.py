#!/usr/bin/env python3
"""Plots tessera_loadgen JSON reports (--json): per model, latency p50 / p90
/ p99 against its SLO (log scale) and SLO attainment; several reports (e.g.
one per policy) side by side. Writes the PNG given by --out.
Usage: plot_loadgen.py report.json [more.json ...] [--labels=a,b]
                       [--title=...] --out=plot.png"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--labels", default="")
    ap.add_argument("--title", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    labels = args.labels.split(",") if args.labels else args.reports
    if len(labels) != len(args.reports):
        ap.error("--labels needs one label per report")
    reports = []
    for path in args.reports:
        with open(path) as f:
            reports.append({r["model"]: r for r in json.load(f)})
    models = sorted({m for r in reports for m in r})
    fig, (lat, att) = plt.subplots(2, 1, figsize=(9, 7))
    width = 0.8 / len(reports)
    for k, (label, rep) in enumerate(zip(labels, reports)):
        xs = [i + k * width for i in range(len(models))]
        for q, alpha in (("p99_ms", 0.35), ("p90_ms", 0.6), ("p50_ms", 1.0)):
            lat.bar(xs, [rep.get(m, {}).get(q, 0) for m in models], width,
                    alpha=alpha, color=f"C{k}",
                    label=f"{label} {q[:-3]}" if len(reports) > 1 or
                    q == "p50_ms" else q[:-3])
        att.bar(xs, [100 * rep.get(m, {}).get("slo_attainment", 0)
                     for m in models], width, color=f"C{k}", label=label)
    for i, m in enumerate(models):
        slo = max(r.get(m, {}).get("slo_ms", 0) for r in reports)
        if slo > 0:
            lat.hlines(slo, i - 0.1, i + 0.9, colors="red", linestyles="--",
                       label="SLO" if i == 0 else None)
    centers = [i + 0.4 - width / 2 for i in range(len(models))]
    lat.set_yscale("log")
    lat.set_ylabel("latency (ms)")
    lat.set_xticks(centers, models)
    lat.legend(fontsize=7, ncol=2)
    att.set_ylabel("SLO met (%)")
    att.set_ylim(min(90, min(100 * r.get(m, {}).get("slo_attainment", 1)
                             for r in reports for m in models) - 1), 100.5)
    att.set_xticks(centers, models)
    att.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

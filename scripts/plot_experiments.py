#!/usr/bin/python3
"""Plots the SLO-preserved max throughput table written by
`tessera_experiments --csv=FILE` as grouped bars, one panel per SLO factor.

Usage: /usr/bin/python3 scripts/plot_experiments.py FILE.csv OUT.png
"""
import csv
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    slos = sorted({float(r["slo_factor"]) for r in rows})
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    workloads = list(OrderedDict.fromkeys(r["workload"] for r in rows))
    fig, axes = plt.subplots(len(slos), 1, figsize=(12, 3.2 * len(slos)),
                             squeeze=False)
    width = 0.8 / len(policies)
    for ax, slo in zip(axes[:, 0], slos):
        for i, p in enumerate(policies):
            values = []
            for w in workloads:
                v = [float(r["max_throughput_rps"]) for r in rows
                     if float(r["slo_factor"]) == slo and r["policy"] == p
                     and r["workload"] == w]
                values.append(v[0] if v else 0)
            ax.bar([x + i * width for x in range(len(workloads))], values,
                   width, label=p)
        ax.set_title(f"SLO = {slo:g}x batch-1 latency, 4 V100s (simulated)")
        ax.set_ylabel("max throughput (req/s)")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(workloads))])
        ax.set_xticklabels(workloads, rotation=15, fontsize=8)
    axes[0, 0].legend(ncol=len(policies), fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()

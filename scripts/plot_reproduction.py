#!/usr/bin/python3
"""Plots the gpulet reproduction written by `tessera_experiments
--experiments=reproduce --reproduce_csv=FILE`: per policy and rule set, the
share of scenarios it schedules (Fig. 16) and its mean largest schedulable
scale as a fraction of ideal-layout's (Fig. 17).

Usage: /usr/bin/python3 scripts/plot_reproduction.py FILE.csv OUT.png
"""
import csv
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    rates = [k for k in rows[0] if k.endswith("_rps")]
    rules = list(OrderedDict.fromkeys(r["rules"] for r in rows))
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    # (rules, scenario) -> policy -> (schedulable, max_scale)
    table = defaultdict(dict)
    for r in rows:
        key = (r["rules"], tuple(r[k] for k in rates))
        table[key][r["policy"]] = (int(r["schedulable"]), float(r["max_scale"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.8 / len(rules)
    for j, rule in enumerate(rules):
        scenarios = [v for (rl, _), v in table.items() if rl == rule]
        share, fraction = [], []
        for p in policies:
            share.append(100.0 * sum(s[p][0] for s in scenarios) /
                         len(scenarios))
            ratios = [s[p][1] / s["ideal-layout"][1] for s in scenarios
                      if s["ideal-layout"][1] > 0]
            fraction.append(100.0 * sum(ratios) / max(1, len(ratios)))
        x = [i + (j - (len(rules) - 1) / 2) * width
             for i in range(len(policies))]
        axes[0].bar(x, share, width, label=f"{rule} rules")
        axes[1].bar(x, fraction, width, label=f"{rule} rules")
    for ax, title in zip(axes, ["scenarios schedulable (%)",
                                "max schedulable scale, % of ideal-layout"]):
        ax.set_xticks(range(len(policies)))
        ax.set_xticklabels(policies, rotation=20)
        ax.set_title(title)
        ax.legend(loc="lower right")
    axes[1].axhline(92.6, color="gray", linestyle="--", linewidth=1)
    axes[1].text(2.6, 102, "paper: gpulet at 92.6 %", fontsize=8)
    axes[1].set_ylim(0, 110)
    fig.suptitle("gpulet paper, Figs. 16-17 on the V100 models (4 GPUs, "
                 "SLO = 2 L(32, 100%))")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()

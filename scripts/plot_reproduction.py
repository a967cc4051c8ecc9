#!/usr/bin/python3
"""Plots one paper's reproduction written by `tessera_experiments
--experiments=reproduce --reproduce_out=DIR` (DIR/<paper>.csv):
 * gpulet.csv: per policy and rule set, the share of scenarios it schedules
   (Fig. 16) and its mean largest schedulable scale as a fraction of
   ideal-layout's (Fig. 17);
 * igniter.csv: per policy and rule set, the GPUs it provisions for
   W1-W12 and the workloads whose P99 misses the SLO (Fig. 14);
 * inss.csv: per policy, rule set and SLO factor, the mean throughput
   served at the fixed loads (Fig. 15) and the violations (Fig. 17);
 * las.csv: per setting and rule set, each policy's SLO-preserved max
   throughput and the paper's sum b/T, at the centre of the scale grid;
 * abacus.csv: per co-location set, each scheduler's QoS violations at the
   QoS load and its peak throughput (highest goodput over the peak loads),
   Figs. 15 and 17;
 * abacus-trace.csv: the rounds of one Abacus run, which operator ranges
   ran together (the first 400 ms).

Usage: /usr/bin/python3 scripts/plot_reproduction.py DIR/<paper>.csv OUT.png
"""
import csv
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def grouped_bars(ax, groups, series, value, title, label=str,
                 tick_rotation=20, tick_size=None, title_size=None,
                 legend=None):
    """One bar per series in each group: value(series, group)."""
    width = 0.8 / len(series)
    for j, s in enumerate(series):
        x = [i + (j - (len(series) - 1) / 2) * width
             for i in range(len(groups))]
        ax.bar(x, [value(s, g) for g in groups], width, label=label(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=tick_rotation,
                       **({"fontsize": tick_size} if tick_size else {}))
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    ax.legend(**(legend or {}))


def plot_igniter(rows, out):
    rows = [r for r in rows if r["set"] == "fig14"]
    rules = list(OrderedDict.fromkeys(r["rules"] for r in rows))
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    gpus, violating = defaultdict(dict), defaultdict(dict)
    for r in rows:
        gpus[r["rules"]][r["policy"]] = int(r["gpus"])
        violating[r["rules"]][r["policy"]] = int(r["p99_violating"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, values, title in [
            (axes[0], gpus,
             "GPUs provisioned (paper: iGniter 6, gpu-lets+ 8, FFD+ 5)"),
            (axes[1], violating, "workloads with P99 > SLO, constant-rate "
             "arrivals (paper: 0, 3, 10)")]:
        grouped_bars(ax, policies, rules,
                     lambda rule, p, v=values: v[rule].get(p, 0), title,
                     label=lambda rule: f"{rule} rules",
                     legend={"loc": "upper right"})
    fig.suptitle("iGniter paper, Fig. 14 on the V100 models (W1-W12)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_inss(rows, out):
    groups = list(OrderedDict.fromkeys(
        f"{r['rules']} rules, SLO {r['slo_factor']}x" for r in rows))
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    served, violations = defaultdict(dict), defaultdict(dict)
    for r in rows:
        g = f"{r['rules']} rules, SLO {r['slo_factor']}x"
        served[g][r["policy"]] = float(r["mean_served_rps"])
        violations[g][r["policy"]] = (float(r["late_pct"]) +
                                      float(r["dropped_pct"]))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for ax, values, title in [
            (axes[0], served, "mean served throughput at the fixed loads "
             "(req/s; paper: InSS +28.1 % over gpulet)"),
            (axes[1], violations, "violations, late + dropped (%; paper: "
             "InSS < 1 %)")]:
        grouped_bars(ax, groups, policies,
                     lambda p, g, v=values: v[g].get(p, 0), title,
                     tick_rotation=15, tick_size=8, title_size=9,
                     legend={"fontsize": 8})
    fig.suptitle("InSS paper, Figs. 15 and 17: six models on 4 V100s")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_las(rows, out):
    rows = [r for r in rows
            if float(r["slo_scale"]) == 1 and float(r["rate_scale"]) == 1]
    groups = list(OrderedDict.fromkeys(
        f"{r['setting'].split(',')[0]}\n{r['rules']} rules" for r in rows))
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    ours, paper = defaultdict(dict), defaultdict(dict)
    for r in rows:
        g = f"{r['setting'].split(',')[0]}\n{r['rules']} rules"
        ours[g][r["policy"]] = float(r["max_rps"])
        paper[g][r["policy"]] = float(r["paper_throughput"])
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    for ax, values, title in [
            (axes[0], ours, "SLO-preserved max throughput (req/s; ours)"),
            (axes[1], paper, "sum b/T at the heaviest load las and sbp "
             "both hold (the paper's metric)")]:
        grouped_bars(ax, groups, policies,
                     lambda p, g, v=values: v[g].get(p, 0), title,
                     tick_rotation=0, tick_size=7, title_size=9,
                     legend={"fontsize": 8})
    fig.suptitle("KAIST LAS paper, Fig. 7: three services on one device "
                 "(paper: LAS +15.9 % over p = 1)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_gpulet(rows, out):
    rates = [k for k in rows[0] if k.endswith("_rps")]
    rules = list(OrderedDict.fromkeys(r["rules"] for r in rows))
    policies = list(OrderedDict.fromkeys(r["policy"] for r in rows))
    # (rules, scenario) -> policy -> (schedulable, max_scale)
    table = defaultdict(dict)
    for r in rows:
        key = (r["rules"], tuple(r[k] for k in rates))
        table[key][r["policy"]] = (int(r["schedulable"]), float(r["max_scale"]))
    share, fraction = defaultdict(dict), defaultdict(dict)
    for rule in rules:
        scenarios = [v for (rl, _), v in table.items() if rl == rule]
        for p in policies:
            share[rule][p] = (100.0 * sum(s[p][0] for s in scenarios) /
                              len(scenarios))
            ratios = [s[p][1] / s["ideal-layout"][1] for s in scenarios
                      if s["ideal-layout"][1] > 0]
            fraction[rule][p] = 100.0 * sum(ratios) / max(1, len(ratios))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, values, title in [
            (axes[0], share, "scenarios schedulable (%)"),
            (axes[1], fraction, "max schedulable scale, % of ideal-layout")]:
        grouped_bars(ax, policies, rules,
                     lambda rule, p, v=values: v[rule][p], title,
                     label=lambda rule: f"{rule} rules",
                     legend={"loc": "lower right"})
    axes[1].axhline(92.6, color="gray", linestyle="--", linewidth=1)
    axes[1].text(2.6, 102, "paper: gpulet at 92.6 %", fontsize=8)
    axes[1].set_ylim(0, 110)
    fig.suptitle("gpulet paper, Figs. 16-17 on the V100 models (4 GPUs, "
                 "SLO = 2 L(32, 100%))")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_abacus(rows, out):
    sets = list(OrderedDict.fromkeys(r["set"] for r in rows))
    schedulers = list(OrderedDict.fromkeys(r["scheduler"] for r in rows))
    violations, peak = {}, defaultdict(float)
    for r in rows:
        key = (r["scheduler"], r["set"])
        if r["peak"] == "0":
            violations[key] = 100 * float(r["violation_ratio"])
        else:
            peak[key] = max(peak[key], float(r["goodput_qps"]))
    short = [s.replace("resnet", "r").replace("inception_v3", "inc")
              .replace("vgg", "v") for s in sets]
    fig, axes = plt.subplots(2, 1, figsize=(14, 8))
    grouped_bars(axes[0], short, schedulers,
                 lambda sc, g: violations.get((sc, sets[short.index(g)]), 0),
                 "QoS violations at the QoS load (%; dropped included)",
                 tick_rotation=60, tick_size=7)
    grouped_bars(axes[1], short, schedulers,
                 lambda sc, g: peak.get((sc, sets[short.index(g)]), 0),
                 "peak throughput (queries/s within QoS)",
                 tick_rotation=60, tick_size=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_abacus_trace(rows, out, span_ms=400.0):
    services = sorted(set(r["service"] for r in rows))
    fig, ax = plt.subplots(figsize=(12, 2 + 0.6 * len(services)))
    colors = ["tab:blue", "tab:orange"]
    t0 = float(rows[0]["start_ms"]) if rows else 0
    for r in rows:
        start, end = float(r["start_ms"]) - t0, float(r["end_ms"]) - t0
        if start > span_ms:
            break
        y = services.index(r["service"])
        ax.barh(y, end - start, left=start, height=0.6,
                color=colors[int(r["round"]) % 2], edgecolor="black",
                linewidth=0.5)
        ax.text(start + 0.3, y, "%s-%s" % (r["start_op"], r["end_op"]),
                va="center", fontsize=6)
    ax.set_yticks(range(len(services)))
    ax.set_yticklabels(services)
    ax.set_xlabel("ms (bars: one round's operator range per query, "
                  "colours alternate by round)")
    ax.set_title("Abacus rounds on the emulated A100: which ranges ran "
                 "together")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    if rows and "round" in rows[0]:
        plot_abacus_trace(rows, sys.argv[2])
        return
    if rows and "scheduler" in rows[0]:
        plot_abacus(rows, sys.argv[2])
        return
    if rows and "set" in rows[0]:
        plot_igniter(rows, sys.argv[2])
        return
    if rows and "mean_served_rps" in rows[0]:
        plot_inss(rows, sys.argv[2])
        return
    if rows and "paper_throughput" in rows[0]:
        plot_las(rows, sys.argv[2])
        return
    plot_gpulet(rows, sys.argv[2])

if __name__ == "__main__":
    main()

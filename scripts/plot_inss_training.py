#!/usr/bin/env python3
"""Plots tessera_inss_train's reward curve (--csv): the mean reward per step
of every training episode (thin, with a moving average) and of the
deterministic evaluations (markers), and the SLO violations of the
evaluations. Prints where the evaluation reward levels off. Writes the PNG
given by --out. Usage: plot_inss_training.py inss_training.csv --out=plot.png
[--window=25] [--baseline=round-robin=-99.0:22.2]"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def moving_average(values, window):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--window", type=int, default=25)
    ap.add_argument("--baseline", action="append", default=[],
                    help="LABEL=REWARD[:VIOLATION_PCT], a horizontal line "
                    "(e.g. round-robin's evaluation on the same seeds)")
    args = ap.parse_args()
    train, evals = [], []
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            rec = {k: float(v) for k, v in row.items()}
            (evals if rec["evaluation"] else train).append(rec)
    if not train and not evals:
        raise SystemExit("no rows in " + args.csv)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    if train:
        x = [r["episode"] for r in train]
        y = [r["mean_reward"] for r in train]
        top.plot(x, y, lw=0.5, alpha=0.4, label="training episode")
        top.plot(x, moving_average(y, args.window), lw=1.5,
                 label="training, moving average of %d" % args.window)
    if evals:
        ex = [r["episode"] for r in evals]
        top.plot(ex, [r["mean_reward"] for r in evals], "o", ms=2,
                 label="evaluation (argmax)")
        bottom.plot(ex, [r["violation_pct"] for r in evals], "o-", ms=2,
                    lw=0.8)
    for spec in args.baseline:
        label, _, value = spec.partition("=")
        reward, _, violation = value.partition(":")
        top.axhline(float(reward), ls="--", lw=1, color="gray")
        top.annotate(label, (0, float(reward)), fontsize=8, color="gray",
                     xytext=(2, 2), textcoords="offset points")
        if violation:
            bottom.axhline(float(violation), ls="--", lw=1, color="gray")
    top.set_ylabel("mean reward per step (Eq. 3)")
    top.legend(fontsize=8)
    bottom.set_ylabel("evaluation SLO violations (%)")
    bottom.set_xlabel("episode")
    fig.suptitle("InSS SAC-Discrete training")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    # Plateau: the first window whose average is within 5 % of the range of
    # the last window's average.
    if len(evals) >= 8:
        ys = [r["mean_reward"] for r in evals]
        w = max(2, len(ys) // 10)
        avg = moving_average(ys, w)
        span = max(avg) - min(avg) or 1.0
        final = avg[-1]
        for i, a in enumerate(avg):
            if abs(a - final) <= 0.05 * span and i >= w - 1:
                print("evaluation reward within 5%% of its final level (%.2f) "
                      "from episode %d" % (final, evals[i]["episode"]))
                break
    print("wrote", args.out)


if __name__ == "__main__":
    main()

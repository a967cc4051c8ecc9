#!/usr/bin/env python3
"""Plots a tessera_inss_train --teacher=search curve (--csv): per epoch, the
room of the actor's argmax over the teacher's on the validation states
(geometric mean) and on as many training states, the share of validation
states at >= 0.95, and the loss. Marks the best epoch (the shipped -best).
Writes the PNG given by --out.
Usage: plot_inss_imitation.py search.csv --out=plot.png"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = [{k: float(v) for k, v in row.items()}
                for row in csv.DictReader(f)]
    if not rows:
        raise SystemExit("no rows in " + args.csv)
    x = [r["epoch"] for r in rows]
    best = max(rows, key=lambda r: r["room_ratio"])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(x, [r["room_ratio"] for r in rows], "o-", ms=2, lw=1,
             label="validation: room over the teacher's (geometric mean)")
    top.plot(x, [r["train_room_ratio"] for r in rows], lw=1,
             label="training states: the same")
    top.plot(x, [r["at_95"] for r in rows], lw=1, ls="--",
             label="validation states at >= 0.95 of the teacher's room")
    top.axvline(best["epoch"], color="gray", lw=0.8, ls=":")
    top.annotate("best: epoch %d, %.2f" % (best["epoch"], best["room_ratio"]),
                 (best["epoch"], best["room_ratio"]), fontsize=8,
                 color="gray", xytext=(4, -12), textcoords="offset points")
    top.set_ylabel("share of the teacher's")
    top.set_ylim(0, 1)
    top.legend(fontsize=8, loc="lower right")
    bottom.plot(x, [r["loss"] for r in rows], lw=1)
    bottom.set_ylabel("cross-entropy per head (nats)")
    bottom.set_xlabel("epoch")
    fig.suptitle("InSS actor imitating the placement search")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print("best epoch %d: room %.3f of the teacher's, %.1f %% at >= 0.95"
          % (best["epoch"], best["room_ratio"], 100 * best["at_95"]))


if __name__ == "__main__":
    main()

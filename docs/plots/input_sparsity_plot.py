#!/usr/bin/env python3
"""Draws docs/plots/input_sparsity_quality.png from docs/plots/input_sparsity_quality.json
(written by scripts/sparsity-quality.py --teal): perplexity cost against the share of FFN weight
bytes a token would skip, for CATS (--sparsity S: up and down rows, 2S/3 of the bytes), TEAL on
the FFN input (--sparsity 0 --input-sparsity S: gate and up columns, 2S/3) and both at S (S),
one panel per model and text. With --table, prints the markdown table of docs/SPARSITY.md.
usage: python3 docs/plots/input_sparsity_plot.py [--table]"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Share of the FFN's bytes skipped at S, gate, up and down of one size.
SAVED = {"cats": 2 / 3, "teal": 2 / 3, "both": 1.0}
LABEL = {"cats": "CATS (up, down rows)", "teal": "TEAL on the FFN input (gate, up columns)", "both": "both"}


def table(data):
    print("| model | text | S | FFN bytes skipped | CATS | TEAL (input) | both | top-1: CATS / TEAL / both |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | --- |")
    for row in data["results"]:
        by = {(r["method"], r["sparsity"]): r for r in row["runs"]}
        for s in sorted({r["sparsity"] for r in row["runs"]}):
            c, t, b = by[("cats", s)], by[("teal", s)], by[("both", s)]
            print(f"| {row['model']} | {row['text']} | {s:g} | {2 * s / 3:.3f} / {2 * s / 3:.3f} / {s:.3f} | "
                  f"{100 * c['cost']:+.1f}% | {100 * t['cost']:+.1f}% | {100 * b['cost']:+.1f}% | "
                  f"{100 * c['top1']:.1f} / {100 * t['top1']:.1f} / {100 * b['top1']:.1f}% |")


def main():
    data = json.load(open(os.path.join(HERE, "input_sparsity_quality.json")))
    if "--table" in sys.argv:
        table(data)
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = data["results"]
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.6), sharey=True)
    for ax, row in zip(axes, rows):
        for method, color in (("cats", "#2a7ab9"), ("teal", "#d95f02"), ("both", "#7570b3")):
            runs = sorted((r for r in row["runs"] if r["method"] == method), key=lambda r: r["sparsity"])
            ax.plot([SAVED[method] * r["sparsity"] for r in runs], [100 * r["cost"] for r in runs], marker="o",
                    color=color, label=LABEL[method])
        ax.set_title(f"{row['model']} / {row['text']}", fontsize=9)
        ax.set_xlabel("FFN bytes skipped (share)", fontsize=8)
        ax.axhline(1, color="grey", linestyle=":", linewidth=0.8)
    axes[0].set_ylabel("perplexity cost vs dense (%)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "input_sparsity_quality.png"), dpi=110)


if __name__ == "__main__":
    main()

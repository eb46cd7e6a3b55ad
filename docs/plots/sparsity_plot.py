#!/usr/bin/env python3
"""Draws docs/plots/sparsity_quality.png from docs/plots/sparsity_quality.json (written by
scripts/sparsity-quality.py): perplexity cost and greedy top-1 agreement against --sparsity S,
one line per model and text; and docs/plots/input_sparsity_quality.png from
input_sparsity_quality.json (scripts/sparsity-quality.py --teal): perplexity cost against the
share of FFN weight bytes a token would skip, for CATS (--sparsity S: up and down rows, 2S/3 of
the bytes), TEAL on the FFN input (--sparsity 0 --input-sparsity S: gate and up columns, 2S/3)
and both at S (S), one panel per model and text.
With --table (or --teal-table), prints the markdown tables of docs/SPARSITY.md instead (no
matplotlib needed).
usage: python3 docs/plots/sparsity_plot.py [--table | --teal-table]"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# Share of the FFN's bytes skipped at S, gate, up and down of one size.
SAVED = {"cats": 2 / 3, "teal": 2 / 3, "both": 1.0}
LABEL = {"cats": "CATS (up, down rows)", "teal": "TEAL on the FFN input (gate, up columns)", "both": "both"}


def teal_table(data):
    print("| model | text | S | FFN bytes skipped: CATS / TEAL / both | CATS | TEAL (input) | both | top-1: CATS / TEAL / both |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | --- |")
    for row in data["results"]:
        by = {(r["method"], r["sparsity"]): r for r in row["runs"]}
        for s in sorted({r["sparsity"] for r in row["runs"]}):
            c, t, b = by[("cats", s)], by[("teal", s)], by[("both", s)]
            print(f"| {row['model']} | {row['text']} | {s:g} | {2 * s / 3:.3f} / {2 * s / 3:.3f} / {s:.3f} | "
                  f"{100 * c['cost']:+.1f}% | {100 * t['cost']:+.1f}% | {100 * b['cost']:+.1f}% | "
                  f"{100 * c['top1']:.1f} / {100 * t['top1']:.1f} / {100 * b['top1']:.1f}% |")


def tables(data):
    rows = data["results"]
    print("| model | text | S | achieved | PPL (dense) | cost | top-1 agreement |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        for r in row["runs"]:
            print(f"| {row['model']} | {row['text']} | {r['sparsity']:g} | {r['achieved']:.3f} | "
                  f"{r['ppl']:.3f} ({row['dense_ppl']:.3f}) | {100 * r['cost']:+.1f}% | {100 * r['top1']:.1f}% |")
    print()
    print("| model | text | largest S with cost <= 1% | largest S with cost <= 3% |")
    print("| --- | --- | ---: | ---: |")
    for row in rows:
        def largest(bound):
            ok = [r["sparsity"] for r in row["runs"] if r["cost"] <= bound]
            return f"{max(ok):g}" if ok else "< " + f"{min(r['sparsity'] for r in row['runs']):g}"
        print(f"| {row['model']} | {row['text']} | {largest(0.01)} | {largest(0.03)} |")


def teal_plot(plt, data):
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


def main():
    data = json.load(open(os.path.join(HERE, "sparsity_quality.json")))
    teal = json.load(open(os.path.join(HERE, "input_sparsity_quality.json")))
    if "--table" in sys.argv:
        tables(data)
        return
    if "--teal-table" in sys.argv:
        teal_table(teal)
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    teal_plot(plt, teal)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for row in data["results"]:
        s = [r["sparsity"] for r in row["runs"]]
        label = f"{row['model']} / {row['text']}"
        a.plot(s, [100 * r["cost"] for r in row["runs"]], marker="o", label=label)
        b.plot(s, [100 * r["top1"] for r in row["runs"]], marker="o", label=label)
    for y in (1, 3):
        a.axhline(y, color="grey", linestyle=":", linewidth=0.8)
    a.set_yscale("log")
    a.set_xlabel("--sparsity S (FFN neurons skipped)")
    a.set_ylabel("perplexity cost vs dense (%)")
    a.set_title("CATS thresholds: perplexity cost", fontsize=10)
    b.set_xlabel("--sparsity S")
    b.set_ylabel("greedy top-1 agreement with dense (%)")
    b.set_title("greedy agreement", fontsize=10)
    a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "sparsity_quality.png"), dpi=110)


if __name__ == "__main__":
    main()

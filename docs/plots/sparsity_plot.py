#!/usr/bin/env python3
"""Draws docs/plots/sparsity_quality.png from docs/plots/sparsity_quality.json (written by
scripts/sparsity-quality.py): perplexity cost and greedy top-1 agreement against --sparsity S,
one line per model and text.
With --table, prints the markdown tables of docs/SPARSITY.md instead (no matplotlib needed).
usage: python3 docs/plots/sparsity_plot.py [--table]"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


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


def main():
    data = json.load(open(os.path.join(HERE, "sparsity_quality.json")))
    if "--table" in sys.argv:
        tables(data)
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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

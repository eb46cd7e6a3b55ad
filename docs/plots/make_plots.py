#!/usr/bin/env python3
"""Draws the plots of docs/BENCHMARKS.md from the figures recorded there (tables in this file
mirror the document; each number was measured with the command the document gives).
usage: python3 docs/plots/make_plots.py  (needs matplotlib)"""
import os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))


def bars(path, title, ylabel, groups, series, colors):
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        b = ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name, color=colors[i])
        for x, v in zip(xs, values):
            if v is not None:
                ax.text(x, v, f"{v:g}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, path), dpi=110)
    plt.close(fig)


# Llama-2-70B synth (Q4_K_M, 38.6 GiB), H200 machine, 16 threads: decode tok/s.
bars("offload_70b_decode.png", "Llama-2-70B synth decode, H200 + 16-core Xeon (tok/s)", "tokens/s",
     ["CPU only", "6 GiB VRAM\n(rest RAM)", "6 GiB VRAM,\n24 GiB RAM, disk"],
     {"llama.cpp (peer, measuring.md)": [2.39, 2.71, 0.04], "Strata": [3.68, 3.86, 0.30]},
     ["#999999", "#2a7ab9"])

# Llama-2-7B synth, 2-core AMD EPYC dev box, 2 threads (side by side, alternating).
bars("cpu_7b_2threads.png", "Llama-2-7B synth on 2 CPU threads, quiet box (tok/s, mean of 2 alternating runs)",
     "tokens/s", ["prefill pp512", "decode tg32"],
     {"llama.cpp c392e50 (Feb 2025)": [13.9, 9.09], "Strata": [33.94, 10.17]}, ["#999999", "#2a7ab9"])

# Predicted (cost model fitted to 7 runs) vs measured decode, H200 machine.
configs = ["7B 2G", "7B 3G", "13B CPU", "13B 8G", "13B GPU", "70B 6G", "70B 6G\nbuilt-in", "70B 24G",
           "70B 6G\n16G RAM+disk"]
measured = [42.84, 53.58, 16.61, 60.44, 58.43, 3.83, 3.99, 7.11, 0.12]
predicted = [42.09, 58.67, 17.18, 92.05, 115.53, 4.21, 4.13, 8.74, 0.117]
fig, ax = plt.subplots(figsize=(8, 4))
ratios = [p / m for p, m in zip(predicted, measured)]
ax.bar(range(len(configs)), ratios, color=["#2a7ab9" if abs(r - 1) <= 0.15 else "#d9822b" for r in ratios])
ax.axhspan(0.85, 1.15, color="#cccccc", alpha=0.5, label="target ±15%")
ax.set_xticks(range(len(configs)))
ax.set_xticklabels(configs, fontsize=7)
ax.set_ylabel("predicted / measured decode tok/s")
ax.set_title("Cost model after calibration on 7 runs (H200 machine)", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(HERE, "plan_predicted_vs_measured.png"), dpi=110)
plt.close(fig)

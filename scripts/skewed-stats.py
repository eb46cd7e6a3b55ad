#!/usr/bin/env python3
"""Gives a model's activation stats the neuron skew of another model's (issue 19): the synth
model's own stats (from `strata profile` on it: its fingerprint, histograms and thresholds, so
--sparsity achieves S) with each layer's per-neuron counts replaced by the real model's count
distribution, resampled to the synth layer's width (quantile by quantile, on a fixed random
permutation of the neurons) and scaled so each layer's mean activity stays the synth model's own.

usage: skewed-stats.py SYNTH.stats REAL.stats -o OUT.stats [--seed N]"""
import argparse
import json
import random


def resample(real_counts, real_tokens, n, tokens, mean_rate, rng):
    rates = sorted((c / max(real_tokens, 1) for c in real_counts), reverse=True)
    m = len(rates)
    picked = [rates[min(m - 1, int((i + 0.5) * m / n))] for i in range(n)]
    scale = mean_rate / (sum(picked) / n) if sum(picked) > 0 else 0.0
    out = [min(tokens, round(r * scale * tokens)) for r in picked]
    rng.shuffle(out)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("synth")
    ap.add_argument("real")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    syn, real = json.load(open(a.synth)), json.load(open(a.real))
    if syn["version"] != 1 or real["version"] != 1:
        raise SystemExit(f"stats version {syn['version']} / {real['version']}: this script reads version 1")
    if syn["neuron_count_sparsity"] != real["neuron_count_sparsity"]:
        raise SystemExit("the two stats count neurons at different thresholds")
    rng = random.Random(a.seed)
    ls, lr = len(syn["layers"]), len(real["layers"])
    for il, layer in enumerate(syn["layers"]):
        src = real["layers"][round(il * (lr - 1) / max(ls - 1, 1))]
        n, tokens = layer["n_ff"], layer["neuron_tokens"]
        for g in range(len(layer["neuron_counts"])):
            mean_rate = sum(layer["neuron_counts"][g]) / (n * max(tokens, 1))
            layer["neuron_counts"][g] = resample(src["neuron_counts"][g], src["neuron_tokens"], n, tokens, mean_rate, rng)
    syn["text"] = f"{syn.get('text', '')} (neuron counts with the skew of {real['model']['name']})"
    with open(a.output, "w") as f:
        json.dump(syn, f)


if __name__ == "__main__":
    main()

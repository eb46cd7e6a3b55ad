#!/usr/bin/env python3
"""Gives a mixture-of-experts stats file (from `strata profile`) a routing skew like real models':
per layer a random order of experts with Zipf weights 1/(rank+1)^s, scaled so each token still
picks top-k experts (each expert at most once per token). Synth models route near uniformly, so
this is how the planner's hot-expert placement is exercised on them. Rewrites only the
"experts" section; the model fingerprint stays, so the file still matches its model.

usage: scripts/skew_routing.py IN.stats OUT.stats --top-k K [--s 0.5] [--seed 1]
(s 0.5 over 128 experts, top-8: the busiest expert about 38% of tokens, the idlest 3%)
"""
import argparse
import json
import random


def skewed_counts(n_expert, k, tokens, s, rng):
    order = list(range(n_expert))
    rng.shuffle(order)
    w = [0.0] * n_expert
    for rank, e in enumerate(order):
        w[e] = 1.0 / (rank + 1) ** s
    # Scale to sum k with every share <= 1 (water-filling: cap, rescale the rest).
    share = [0.0] * n_expert
    free, budget = set(range(n_expert)), float(k)
    while free:
        total = sum(w[e] for e in free)
        capped = [e for e in free if w[e] / total * budget >= 1.0]
        if not capped:
            for e in free:
                share[e] = w[e] / total * budget
            break
        for e in capped:
            share[e] = 1.0
            free.discard(e)
            budget -= 1.0
    return [min(tokens, round(x * tokens)) for x in share]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--top-k", type=int, required=True, help="experts per token (expert_used_count)")
    ap.add_argument("--s", type=float, default=0.5, help="Zipf exponent (0: uniform)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(a.input) as f:
        doc = json.load(f)
    ex = doc.get("experts")
    if not ex:
        raise SystemExit(f"{a.input}: no experts section (profile a mixture-of-experts model first)")
    rng = random.Random(a.seed)
    tokens = ex["tokens"]
    ex["counts"] = [skewed_counts(len(row), a.top_k, tokens, a.s, rng) for row in ex["counts"]]
    with open(a.output, "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()

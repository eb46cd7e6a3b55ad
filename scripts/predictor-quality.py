#!/usr/bin/env python3
"""Trained FFN predictors against CATS thresholds alone (docs/SPARSITY.md, issue 19): for each
real model, text and S, `strata profile --train-predictors` on the first half of the text (the
stats and M.pred), then `strata perplexity` on the second half dense, with --sparsity S, and with
--sparsity S --predictors: the perplexity cost of each, the achieved skipped share, and the gate
rows the predictors read (their candidates' share of the neurons). Texts and halves as
scripts/sparsity-quality.py.
usage: scripts/predictor-quality.py [--strata build/bin/strata] [--chunks 4] [--tokens 4096]
           [--models qwen2.5-coder-0.5b] [--texts genesis] [--sparsity 0.25,0.5] [--rank 64]
           [--threads 2] [--out docs/plots/predictor_quality.json]"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sparsity_quality():
    """scripts/sparsity-quality.py as a module (its name has a dash): sh() and halves()."""
    spec = importlib.util.spec_from_file_location("sparsity_quality", os.path.join(ROOT, "scripts/sparsity-quality.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SQ = _sparsity_quality()
sh, halves = _SQ.sh, _SQ.halves


def perplexity(args, model, text, extra):
    out = sh([args.strata, "perplexity", "-m", model, "-f", text, "--chunks", str(args.chunks), "-t", str(args.threads),
              "--gpu", "none"] + extra)
    r = {"ppl": float(re.search(r"PPL = ([0-9.]+)", out).group(1))}
    for key, pattern in (("achieved", r"achieved ([0-9.]+)"), ("gate_rows_read", r"gate rows read ([0-9.]+)")):
        m = re.search(pattern, out)
        if m:
            r[key] = float(m.group(1))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.path.join(ROOT, "build/bin/strata"))
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=4096, help="calibration tokens (profile and predictor samples)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rank", type=int, default=64)
    ap.add_argument("--models", default="qwen2.5-coder-0.5b")
    ap.add_argument("--texts", default="genesis")
    ap.add_argument("--sparsity", default="0.25,0.5")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/plots/predictor_quality.json"))
    args = ap.parse_args()
    models = {
        "gemma3-270m": lambda: sh([os.path.join(ROOT, "scripts/default-model.sh")]).strip(),
        "qwen2.5-coder-0.5b": lambda: sh([sys.executable, os.path.join(ROOT, "scripts/second-model.py")]).strip(),
    }
    texts = {"genesis": lambda: sh([os.path.join(ROOT, "scripts/perplexity-text.sh")]).strip(), "code": lambda: _SQ.CODE_TEXT}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mname in args.models.split(","):
            model = models[mname]()
            for tname in args.texts.split(","):
                calib, evalt = halves(texts[tname](), tmp, tname)
                dense = perplexity(args, model, evalt, [])
                for s in (float(x) for x in args.sparsity.split(",")):
                    stats = os.path.join(tmp, f"{mname}-{tname}-{s}.stats")
                    trained = sh([args.strata, "profile", "-m", model, "-f", calib, "--tokens", str(args.tokens), "-o", stats,
                                  "-t", str(args.threads), "--train-predictors", "--predictor-sparsity", str(s),
                                  "--predictor-rank", str(args.rank), "--predictor-tokens", str(args.tokens)])
                    m = re.search(r"recall ([0-9.]+) of active neurons; candidates ([0-9.]+) of neurons \(active ([0-9.]+)\)",
                                  trained)
                    row = {"model": mname, "text": tname, "sparsity": s, "dense_ppl": dense["ppl"],
                           "heldout_recall": float(m.group(1)), "heldout_candidates": float(m.group(2)),
                           "heldout_active": float(m.group(3))}
                    for name, extra in (("threshold", []), ("predictors", ["--predictors"])):
                        r = perplexity(args, model, evalt, ["--sparsity", str(s), "--stats", stats] + extra)
                        r["cost"] = r["ppl"] / dense["ppl"] - 1
                        row[name] = r
                    rows.append(row)
                    t, p = row["threshold"], row["predictors"]
                    print(f"{mname} {tname} S={s}: dense {dense['ppl']:.4f}; CATS {t['ppl']:.4f} ({100 * t['cost']:+.1f}%, "
                          f"achieved {t['achieved']:.3f}); predictors {p['ppl']:.4f} ({100 * p['cost']:+.1f}%, achieved "
                          f"{p['achieved']:.3f}, gate rows read {p.get('gate_rows_read', -1):.3f}); held-out recall "
                          f"{row['heldout_recall']:.3f}", flush=True)
    with open(args.out, "w") as f:
        json.dump({"chunks": args.chunks, "calibration_tokens": args.tokens, "rank": args.rank, "results": rows}, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()

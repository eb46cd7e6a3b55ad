#!/usr/bin/env python3
"""The quality table of docs/SPARSITY.md: perplexity and greedy (top-1) agreement with the dense
model at several --sparsity values, for the two real models on Genesis (scripts/perplexity-text.sh)
and on a source-code text (Python's Lib/_pydecimal.py from Debian's python3.11 package).
Each text is cut in two halves by lines: `strata profile` calibrates the thresholds on the first,
`strata perplexity --compare-dense` measures on the second (disjoint) half.
With --teal, each S runs three ways instead: CATS at S (up and down rows of the neurons with the
smallest |act(gate)|), TEAL on the FFN input at S (--sparsity 0 --input-sparsity S: that share of
the normed input zeroed before gate and up), and both at S; written to
docs/plots/input_sparsity_quality.json. With gate, up and down of one size, CATS at S and TEAL at S
skip the same FFN bytes (2S/3 of them); both together skip (2S + S)/3... less the overlap.
usage: scripts/sparsity-quality.py [--strata build/bin/strata] [--chunks 4] [--tokens 4096]
           [--models gemma3-270m,qwen2.5-coder-0.5b] [--sparsity 0.25,0.4,...] [--stats-dir DIR]
           [--teal] [--merge] [--out docs/plots/sparsity_quality.json]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE_TEXT = "/usr/lib/python3.11/_pydecimal.py"
SPARSITY = [0.25, 0.4, 0.5, 0.6, 0.7]
THREADS = "1"


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def halves(path, tmp, name):
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    h = len(lines) // 2
    out = []
    for part, chunk in (("calib", lines[:h]), ("eval", lines[h:])):
        p = os.path.join(tmp, f"{name}-{part}.txt")
        open(p, "w", encoding="utf-8").write("".join(chunk))
        out.append(p)
    return out


def perplexity(strata, model, text, chunks, extra):
    out = sh([strata, "perplexity", "-m", model, "-f", text, "--chunks", str(chunks), "-t", THREADS] + extra)
    r = {"ppl": float(re.search(r"PPL = ([0-9.]+)", out).group(1))}
    m = re.search(r"achieved ([0-9.]+)", out)
    if m:
        r["achieved"] = float(m.group(1))
    m = re.search(r"input sparsity: target [0-9.]+, achieved ([0-9.]+)", out)
    if m:
        r["achieved_input"] = float(m.group(1))
    m = re.search(r"top-1 agreement with dense: ([0-9.]+)", out)
    if m:
        r["top1"] = float(m.group(1))
    return r


def merge(old, new):
    """Rows of `new` added to `old`: runs of the same model and text joined, sorted by S."""
    rows = {(r["model"], r["text"]): r for r in old}
    key_of = lambda x: (x["sparsity"], x.get("method", "cats"))
    for r in new:
        key = (r["model"], r["text"])
        if key not in rows:
            rows[key] = r
            continue
        runs = {key_of(x): x for x in rows[key]["runs"]}
        runs.update({key_of(x): x for x in r["runs"]})
        rows[key]["runs"] = [runs[k] for k in sorted(runs)]
    return list(rows.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.path.join(ROOT, "build/bin/strata"))
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1, help="-t of each strata run (results do not depend on it)")
    ap.add_argument("--models", default="gemma3-270m,qwen2.5-coder-0.5b")
    ap.add_argument("--sparsity", default=",".join(str(s) for s in SPARSITY), help="comma-separated S values")
    ap.add_argument("--merge", action="store_true", help="add to the runs already in --out")
    ap.add_argument("--stats-dir", help="keep the stats files here, and reuse those already there")
    ap.add_argument("--teal", action="store_true", help="CATS, TEAL on the FFN input, and both, at each S")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.out is None:
        name = "input_sparsity_quality.json" if args.teal else "sparsity_quality.json"
        args.out = os.path.join(ROOT, "docs/plots", name)
    methods = {"cats": lambda s: ["--sparsity", str(s)]}
    if args.teal:
        methods["teal"] = lambda s: ["--sparsity", "0", "--input-sparsity", str(s)]
        methods["both"] = lambda s: ["--sparsity", str(s), "--input-sparsity", str(s)]
    global THREADS
    THREADS = str(args.threads)
    models = {
        "gemma3-270m": sh([os.path.join(ROOT, "scripts/default-model.sh")]).strip(),
        "qwen2.5-coder-0.5b": sh([sys.executable, os.path.join(ROOT, "scripts/second-model.py")]).strip(),
    }
    models = {k: v for k, v in models.items() if k in args.models.split(",")}
    texts = {"genesis": sh([os.path.join(ROOT, "scripts/perplexity-text.sh")]).strip(), "code": CODE_TEXT}
    results = []
    sparsities = [float(x) for x in args.sparsity.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        stats_dir = args.stats_dir or tmp
        os.makedirs(stats_dir, exist_ok=True)
        for mname, model in models.items():
            for tname, text in texts.items():
                calib, evalt = halves(text, tmp, tname)
                stats = os.path.join(stats_dir, f"{mname}-{tname}.stats")
                if not os.path.exists(stats):
                    sh([args.strata, "profile", "-m", model, "-f", calib, "--tokens", str(args.tokens), "-o", stats, "-t", THREADS])
                dense = perplexity(args.strata, model, evalt, args.chunks, [])
                row = {"model": mname, "text": tname, "dense_ppl": dense["ppl"], "runs": []}
                for s in sparsities:
                    for method, flags in methods.items():
                        r = perplexity(args.strata, model, evalt, args.chunks,
                                       flags(s) + ["--stats", stats, "--compare-dense"])
                        r["sparsity"] = s
                        if args.teal:
                            r["method"] = method
                        r["cost"] = r["ppl"] / dense["ppl"] - 1
                        row["runs"].append(r)
                        print(f"{mname} {tname} {method} S={s}: ppl {r['ppl']:.4f} (dense {dense['ppl']:.4f}, "
                              f"{100 * r['cost']:+.1f}%), top-1 {r['top1']:.3f}, achieved {r['achieved']:.3f}"
                              f" input {r.get('achieved_input', 0):.3f}", flush=True)
                results.append(row)
    if args.merge and os.path.exists(args.out):
        results = merge(json.load(open(args.out))["results"], results)
    meta = {"models": {r["model"]: os.path.basename(models.get(r["model"], r["model"])) for r in results}, "chunks": args.chunks, "calibration_tokens": args.tokens, "n_ctx": 512,
            "code_text": CODE_TEXT, "results": results}
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()

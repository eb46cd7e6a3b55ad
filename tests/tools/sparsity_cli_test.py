#!/usr/bin/env python3
"""`strata profile` and --sparsity end to end on tiny synthetic models: the stats file is
versioned JSON with the model's fingerprint and the model file is not modified; --sparsity runs
(perplexity, run -v, bench --json) and reports the achieved sparsity; bad input gives one clear
error line: S outside [0, 1) and missing stats name `strata profile`, stats of another model
name both files; placements keep each FFN whole; trained predictors are written beside the
stats and read by --predictors; --input-sparsity (TEAL on the FFN input) reports what it zeroed.

usage: sparsity_cli_test.py --strata BUILD/bin/strata"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

from cli_util import expect, expect_error_line, finish, strata_arg


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=600)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect_error(strata, args, *fragments):
    expect_error_line(args, run(strata, *args), *fragments)


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def main():
    strata = strata_arg()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.gguf"), os.path.join(tmp, "b.gguf")
        for path, seed in ((a, "1"), (b, "2")):
            rc, _, err = run(strata, "synth", "--preset", "tiny", "-o", path, "--seed", seed)
            expect(rc == 0, f"synth: {err}")
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            for i in range(400):
                f.write(f"In the beginning line {i} the quick brown fox {i * 7 % 13} jumps over the lazy dog.\n")
        before = sha(a)
        stats = os.path.join(tmp, "a.stats")
        rc, out, err = run(strata, "profile", "-m", a, "-f", text, "-c", "64", "--tokens", "256", "-t", "1", "-o", stats)
        expect(rc == 0, f"profile: {err}")
        expect(sha(a) == before, "profile modified the model file")
        doc = json.load(open(stats))
        expect(doc["format"] == "strata-activation-stats" and doc["version"] == 1, f"stats header {doc.get('format')}")
        expect(doc["model"]["file_bytes"] == os.path.getsize(a), "stats file_bytes is not the model's size")
        expect(len(doc["layers"]) == 4 and doc["n_tokens"] == 256, "stats layers / tokens")
        # The default path: A.stats beside the model.
        rc, out, err = run(strata, "profile", "-m", a, "-f", text, "-c", "64", "--tokens", "128", "-t", "1")
        expect(rc == 0 and os.path.exists(os.path.join(tmp, "a.stats")), f"default output: {out} {err}")

        common = ["-f", text, "-c", "64", "--chunks", "2", "-t", "1", "--gpu", "none"]
        rc, out, err = run(strata, "perplexity", "-m", a, *common, "--sparsity", "0.5", "--stats", stats, "--compare-dense")
        expect(rc == 0 and "achieved" in out and "top-1 agreement" in out, f"perplexity --sparsity: {out} {err}")
        rc, out, err = run(strata, "run", "-m", a, "-p", "In the beginning", "-n", "4", "-t", "1", "--gpu", "none",
                           "--sparsity", "0.4", "-v")  # default stats: a.stats beside the model
        expect(rc == 0 and "sparsity achieved per layer" in err, f"run -v --sparsity: {err}")
        rc, out, err = run(strata, "bench", "-m", a, "-p", "0", "-n", "4", "-r", "1", "-t", "1", "--gpu", "none",
                           "--sparsity", "0.5", "--stats", stats, "--json")
        if rc == 0:
            res = json.loads(out)["results"][0]
            expect(len(res["sparsity"]["per_layer"]) == 4 and 0.3 < res["sparsity"]["achieved"] < 0.7,
                   f"bench --json sparsity: {res.get('sparsity')}")
        else:
            expect(False, f"bench --sparsity: {err}")

        expect_error(strata, ["perplexity", "-m", a, *common, "--sparsity", "1.0", "--stats", stats], "strata profile")
        expect_error(strata, ["perplexity", "-m", a, *common, "--sparsity", "-0.2", "--stats", stats], "[0, 1)")
        expect_error(strata, ["perplexity", "-m", b, *common, "--sparsity", "0.5"], "strata profile", "b.stats")
        expect_error(strata, ["perplexity", "-m", b, *common, "--sparsity", "0.5", "--stats", stats], "a.gguf", "b.gguf")
        # FFNs on the (fake) GPU run sparse there; the counts come back from its memory.
        rc, out, err = run(strata, "bench", "-m", a, "-p", "0", "-n", "4", "-r", "1", "-t", "1", "--gpu", "fake",
                           "--gpu-mem", "1G", "--sparsity", "0.5", "--stats", stats, "--json")
        if rc == 0:
            res = json.loads(out)["results"][0]
            expect(0.3 < res["sparsity"]["achieved"] < 0.7, f"bench --gpu fake --sparsity: {res.get('sparsity')}")
        else:
            expect(False, f"bench --gpu fake --sparsity: {err}")
        check_whole_ffns(strata, a, stats)
        check_predictors(strata, a, text, stats, common)
        check_input_sparsity(strata, a, stats, common)
        check_sparse_down(strata, a, stats)
    return finish()


def check_whole_ffns(strata, a, stats):
    """--sparsity runs each FFN on one backend, so its placement never splits an FFN between the
    GPU and RAM by neuron range, at budgets where the dense placement does (the device run that
    found this failed with "layer 10's FFN is split between tiers"). The built-in placer: the
    planner's choice depends on this machine's measured profile (planner_test covers it)."""
    split = re.compile(r"GPU \d+ / RAM \d+ neurons")
    dense_splits = 0
    for kib in range(99 * 1024, 102 * 1024, 64):
        args = ["plan", "-m", a, "--gpu", "fake", "--gpu-mem", f"{kib}K", "-c", "64", "-t", "1", "--placement", "builtin"]
        rc, out, err = run(strata, *args)
        expect(rc == 0, f"plan at {kib} KiB: {err}")
        dense_splits += 1 if split.search(out) else 0
        rc, out, err = run(strata, *args, "--sparsity", "0.5", "--stats", stats)
        expect(rc == 0 and not split.search(out), f"plan --sparsity at {kib} KiB splits an FFN: {out} {err}")
    expect(dense_splits > 0, "no budget between 99 and 102 MiB splits a dense FFN: the check tests nothing")


def check_sparse_down(strata, a, stats):
    """--sparse-down: whole keeps no neuron-major copy, a type keeps one in every layer, auto
    (the default) follows the rule of offload/sparse_down.h; -v says which; bad uses are one line.
    (check_predictors runs before this and leaves the A.pred its runs read.)"""
    run_args = ["run", "-m", a, "-p", "In the beginning", "-n", "4", "-t", "1", "--gpu", "none", "--sparsity", "0.5",
                "--stats", stats, "-v"]
    copies = re.compile(r"copy in (\d+) of 4 layers")
    for flag, expected in (("whole", 0), ("q8_0", 4)):
        rc, out, err = run(strata, *run_args, "--sparse-down", flag)
        m = copies.search(err)
        expect(rc == 0 and m is not None and int(m.group(1)) == expected, f"--sparse-down {flag}: {err}")
    rc, out, err = run(strata, *run_args)
    expect(rc == 0 and copies.search(err) is not None, f"--sparse-down auto: {err}")
    expect_error(strata, [*run_args, "--sparse-down", "q9_9"], "auto", "whole")
    expect_error(strata, [*run_args, "--sparse-down", "whole", "--predictors"], "--sparse-down whole")


def check_predictors(strata, a, text, stats, common):
    """Trained predictors (issue 19): profile --train-predictors writes A.pred beside the stats;
    --sparsity S --predictors reads it and reports the gate rows read; bad uses are one line."""
    pred = stats[:-len(".stats")] + ".pred"
    rc, out, err = run(strata, "profile", "-m", a, "-f", text, "-c", "64", "--tokens", "256", "-t", "1", "-o", stats,
                       "--train-predictors", "--predictor-rank", "8", "--predictor-tokens", "200")
    expect(rc == 0 and os.path.exists(pred) and "trained 4 predictors" in out, f"profile --train-predictors: {out} {err}")
    with open(pred, "rb") as f:
        header = json.loads(f.readline())
    expect(header["format"] == "strata-predictor" and header["sparsity"] == 0.5 and len(header["layers"]) == 4
           and all(layer["rank"] == 8 for layer in header["layers"]), f"predictor header {header}")
    run_args = ["run", "-m", a, "-p", "In the beginning", "-n", "4", "-t", "1", "--gpu", "none"]
    rc, out, err = run(strata, *run_args, "--sparsity", "0.5", "--predictors", "-v")
    expect(rc == 0 and "predictors: rank 8" in err and "gate rows read" in err, f"run --predictors -v: {err}")
    rc, out, err = run(strata, "perplexity", "-m", a, *common, "--sparsity", "0.5", "--predictors")
    expect(rc == 0 and "achieved" in out, f"perplexity --predictors: {out} {err}")
    expect_error(strata, [*run_args, "--predictors"], "--sparsity")
    expect_error(strata, [*run_args, "--sparsity", "0.3", "--predictors"], "--sparsity 0.5")
    expect_error(strata, [*run_args, "--sparsity", "0.5", "--predictor-file", pred + ".missing"], "--train-predictors")
    expect_error(strata, [*run_args, "--sparsity", "0.5", "--predictors", "--hot-neurons"], "--hot-neurons")
    cut = pred + ".cut"
    with open(pred, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:-5])
    expect_error(strata, [*run_args, "--sparsity", "0.5", "--predictor-file", cut], "cut")
    expect_error(strata, ["profile", "-m", a, "-f", text, "-c", "64", "--predictor-rank", "8"], "--train-predictors")
    expect_error(strata, ["profile", "-m", a, "-f", text, "-c", "64", "--train-predictors", "--predictor-sparsity", "1.5"],
                 "[0, 1)")


def check_input_sparsity(strata, a, stats, common):
    """TEAL on the FFN input (--input-sparsity): perplexity reports the zeroed share it achieved,
    near the target; it changes the result; --input-major's copies are made and reported; bad uses
    are one line each."""
    def ppl(out):
        m = re.search(r"PPL = ([0-9.]+)", out)
        return float(m.group(1)) if m else None
    rc, out, err = run(strata, "perplexity", "-m", a, *common, "--sparsity", "0", "--stats", stats)
    expect(rc == 0, f"perplexity --sparsity 0: {err}")
    base = ppl(out)
    rc, out, err = run(strata, "perplexity", "-m", a, *common, "--sparsity", "0", "--input-sparsity", "0.5",
                       "--stats", stats)
    m = re.search(r"input sparsity: target 0.500, achieved ([0-9.]+)", out)
    expect(rc == 0 and m is not None and abs(float(m.group(1)) - 0.5) < 0.1, f"perplexity --input-sparsity: {out} {err}")
    expect(ppl(out) is not None and base is not None and ppl(out) != base, f"--input-sparsity 0.5 changed nothing: {out}")
    run_args = ["run", "-m", a, "-p", "In the beginning", "-n", "2", "-t", "1"]
    expect_error(strata, [*run_args, "--gpu", "none", "--input-sparsity", "0.3"], "--input-sparsity", "--sparsity")
    expect_error(strata, [*run_args, "--gpu", "none", "--sparsity", "0.3", "--input-sparsity", "1"], "[0, 1)")
    # --input-major: decode reads the Q4_K gate and down through exact input-major copies, which
    # -v reports; without --sparsity it is refused by name.
    rc, out, err = run(strata, *run_args, "--gpu", "none", "--sparsity", "0.5", "--input-sparsity", "0.5",
                       "--input-major", "--stats", stats, "-v")
    m = re.search(r"exact input-major copies of ([0-9]+) Q4_K matrices", err + out)
    expect(rc == 0 and m is not None and int(m.group(1)) > 0, f"run --input-major: {out} {err}")
    expect_error(strata, [*run_args, "--gpu", "none", "--input-major"], "--input-major", "--sparsity")
    expect_error(strata, [*run_args, "--gpu", "none", "--sparsity", "0.3", "--input-major", "--predictors",
                          "--stats", stats], "--input-major", "--predictors")
    # FFNs on a GPU keep no copies, and -v says so rather than staying silent.
    rc, out, err = run(strata, *run_args, "--gpu", "fake", "--gpu-mem", "1G", "--sparsity", "0.5", "--input-major",
                       "--stats", stats, "-v")
    expect(rc == 0 and "--input-major: no Q4_K" in err + out, f"run --gpu fake --input-major: {out} {err}")
    # A GPU has no input mask yet: refused by name, not run dense.
    expect_error(strata, [*run_args, "--gpu", "fake", "--gpu-mem", "1G", "--sparsity", "0.3", "--input-sparsity", "0.3",
                          "--stats", stats], "--input-sparsity", "fake")


if __name__ == "__main__":
    sys.exit(main())

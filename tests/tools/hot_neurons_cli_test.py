#!/usr/bin/env python3
"""Issue 19 end to end on a tiny synthetic model: `strata profile --skew` prints the shares the
stats' counts give (checked against sums of the largest counts computed here from the JSON);
`--hot-neurons` runs on the fake device and says its hot share with -v; `strata plan
--hot-neurons -o` writes a schema-2 placement with per-layer hot counts (none in a layer whose FFN
is on the GPU whole) that `--plan` runs, its counts as given; bad input gives one clear error
line: a schema-1 plan with --hot-neurons names the command that makes one, hot neurons in a layer
whose FFN the plan puts on the GPU name the layer, --hot-neurons without --sparsity or without a
GPU names the missing flag.

usage: hot_neurons_cli_test.py --strata BUILD/bin/strata"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from cli_util import expect, expect_error_line, finish, gpu_mem, strata_arg


def run(strata, *args):
    env = dict(os.environ, STRATA_QUICK_PROFILE="1")
    p = subprocess.run([strata, *args], capture_output=True, timeout=600, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect_error(strata, args, *fragments):
    expect_error_line(args, run(strata, *args), *fragments)


def top_shares(counts, fractions):
    c = sorted(counts, reverse=True)
    total = sum(c)
    return [100.0 * sum(c[:math.ceil(p * len(c) - 1e-9)]) / total for p in fractions]


def main():
    strata = strata_arg()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        a = os.path.join(tmp, "a.gguf")
        rc, _, err = run(strata, "synth", "--preset", "tiny", "-o", a)
        expect(rc == 0, f"synth: {err}")
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            for i in range(400):
                f.write(f"In the beginning line {i} the quick brown fox {i * 7 % 13} jumps over the lazy dog.\n")
        stats = os.path.join(tmp, "a.stats")
        rc, out, err = run(strata, "profile", "-m", a, "-f", text, "-c", "64", "--tokens", "256", "-t", "1", "-o", stats)
        expect(rc == 0, f"profile: {err}")

        rc, out, err = run(strata, "profile", "--skew", stats)
        expect(rc == 0, f"profile --skew: {err}")
        doc = json.load(open(stats))
        grid = doc["neuron_count_sparsity"]
        for s, block in zip((0.25, 0.5), out.split("S = ")[1:]):
            rows = [l.split() for l in block.splitlines() if re.match(r"\s+\d+\s", l)]
            expect(len(rows) == 4, f"--skew S = {s}: {len(rows)} layer rows")
            for row in rows:
                want = top_shares(doc["layers"][int(row[0])]["neuron_counts"][grid.index(s)], (0.1, 0.2, 0.5))
                got = [float(x.rstrip("%")) for x in row[3:6]]
                expect(all(abs(g - w) < 0.051 for g, w in zip(got, want)), f"--skew S = {s} layer {row[0]}: {got} != {want}")

        n_ff = doc["layers"][0]["n_ff"]
        gpu = ["--gpu", "fake", "--gpu-mem", gpu_mem(64), "-c", "64", "-t", "1"]
        rc, out, err = run(strata, "run", "-m", a, "-p", "In the beginning", "-n", "4", *gpu, "--sparsity", "0.5",
                           "--stats", stats, "--hot-neurons", "-v")
        expect(rc == 0 and re.search(r"hot neurons: fake [0-9.]+% of neurons", err), f"run --hot-neurons: {err}")
        plan = os.path.join(tmp, "hot.json")
        rc, out, err = run(strata, "plan", "-m", a, *gpu, "--sparsity", "0.5", "--stats", stats, "--hot-neurons", "-o", plan)
        expect(rc == 0 and "of activations hot-first" in out, f"plan --hot-neurons: {out} {err}")
        if rc == 0:
            p = json.load(open(plan))
            expect(p["schema_version"] == 2 and len(p["hot_neurons"]) == 4, f"plan file: {p.get('schema_version')}")
            gpu_ffn = {int(t["name"].split(".")[1]) for t in p["tensors"]
                       if t["name"].startswith("blk.") and ".ffn_gate." in t["name"] and t["tier"] == "gpu"}
            expect(all(p["hot_neurons"][il] == 0 for il in gpu_ffn),
                   f"hot neurons in a layer whose FFN is on the GPU whole: {p['hot_neurons']}, {sorted(gpu_ffn)}")
            rc, out, err = run(strata, "run", "-m", a, "-p", "In the beginning", "-n", "2", *gpu, "--sparsity", "0.5",
                               "--stats", stats, "--hot-neurons", "--plan", plan)
            expect(rc == 0, f"run --plan schema 2: {err}")
            # A plan's counts are used as they are (the cost model chooses only counts not given),
            # in layers whose FFN is in RAM; one on the GPU whole takes none.
            p["hot_neurons"] = [256] * 4
            for t in p["tensors"]:
                if t["name"].startswith("blk.0.ffn_"):
                    t["tier"] = "gpu"
            on_gpu = os.path.join(tmp, "hot256gpu.json")
            json.dump(p, open(on_gpu, "w"))
            expect_error(strata, ["run", "-m", a, "-p", "hi", "-n", "1", *gpu, "--sparsity", "0.5", "--stats", stats,
                                  "--hot-neurons", "--plan", on_gpu], "layer 0", "whole FFN on the GPU")
            for t in p["tensors"]:
                if t["name"].startswith("blk.") and ".ffn_" in t["name"]:
                    t["tier"] = "ram"
            forced = os.path.join(tmp, "hot256.json")
            json.dump(p, open(forced, "w"))
            rc, out, err = run(strata, "run", "-m", a, "-p", "In the beginning", "-n", "2", *gpu, "--sparsity", "0.5",
                               "--stats", stats, "--hot-neurons", "--plan", forced, "-v")
            share = re.search(r"hot neurons: fake ([0-9.]+)% of neurons", err)
            expect(rc == 0 and share and abs(float(share.group(1)) - 100.0 * 256 / n_ff) < 0.06,
                   f"run --plan with 256 hot neurons per layer of {n_ff}: {err}")
        old = os.path.join(tmp, "old.json")
        rc, out, err = run(strata, "plan", "-m", a, *gpu, "-o", old)
        expect(rc == 0 and json.load(open(old))["schema_version"] == 1, f"plan without hot neurons: {err}")
        expect_error(strata, ["run", "-m", a, "-p", "hi", "-n", "1", *gpu, "--sparsity", "0.5", "--stats", stats,
                              "--hot-neurons", "--plan", old], "schema 1", "--hot-neurons -o")
        expect_error(strata, ["run", "-m", a, "-p", "hi", "-n", "1", *gpu, "--hot-neurons"], "--sparsity")
        expect_error(strata, ["run", "-m", a, "-p", "hi", "-n", "1", "--gpu", "none", "-t", "1", "--sparsity", "0.5",
                              "--stats", stats, "--hot-neurons"], "needs a GPU")
        expect_error(strata, ["profile", "--skew", os.path.join(tmp, "none.stats")], "strata profile")
        expect_error(strata, ["profile", "-m", a], "-f/--file")
    return finish()


if __name__ == "__main__":
    sys.exit(main())

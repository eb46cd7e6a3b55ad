#!/usr/bin/env python3
"""Mixture-of-experts placement end to end on a tiny synthetic Qwen3-MoE: `strata profile` counts
each layer's routing (top-k per token) into the stats file, scripts/skew_routing.py skews it, the
planner reads it beside the model (the run says so), `strata plan -o` writes a placement whose
per-expert tiers (when it places experts one by one) put every layer's most used experts on the
GPU (the fake device), and greedy text under that plan equals the CPU's. The plan is made on a
pinned hardware profile (cli_util.pin_profile): on a measured quick profile of this tiny model the
GPU's gain is within the measurements' noise, and the planner may fairly place no layer per expert.

usage: moe_placement_cli_test.py --strata BUILD/bin/strata"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from cli_util import expect, finish, gpu_mem, pin_profile, strata_arg

HERE = os.path.dirname(os.path.abspath(__file__))
SKEW = os.path.join(HERE, "..", "..", "scripts", "skew_routing.py")
ENV = dict(os.environ)


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=300, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    strata = strata_arg()
    with tempfile.TemporaryDirectory() as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        model = os.path.join(tmp, "moe.gguf")
        stats = os.path.join(tmp, "moe.stats")  # the default path beside the model
        rc, _, err = run(strata, "synth", "--preset", "tiny-qwen3moe", "-o", model)
        expect(rc == 0, f"synth: {err}")
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write(" ".join(f"word{i % 97} and thing{i % 31}" for i in range(400)))
        rc, out, err = run(strata, "profile", "-m", model, "-f", text, "-c", "32", "--tokens", "256", "-o", stats + ".raw")
        expect(rc == 0 and "experts of layer 0: busiest" in out, f"profile: rc {rc} {out} {err}")
        raw = json.load(open(stats + ".raw"))
        tokens = raw["experts"]["tokens"]
        for i, row in enumerate(raw["experts"]["counts"]):
            expect(len(row) == 8 and sum(row) == 2 * tokens, f"layer {i}: counts {row} for {tokens} tokens, top-2")
        # The routing of random token ids (the workload bench's tg decodes): same counts, and the
        # flag is exclusive with -f and needs --tokens.
        rc, out, err = run(strata, "profile", "-m", model, "--random-tokens", "-c", "32", "--tokens", "128", "-o", stats + ".rnd")
        expect(rc == 0 and "random tokens" in out, f"profile --random-tokens: rc {rc} {out} {err}")
        rnd = json.load(open(stats + ".rnd"))["experts"]
        expect(rnd["tokens"] == 128 and all(sum(r) == 2 * 128 for r in rnd["counts"]), f"random-token counts {rnd}")
        expect(rnd["counts"] != raw["experts"]["counts"], "random tokens routed exactly as the text")
        for bad in (["--random-tokens", "-c", "32"], ["--random-tokens", "-f", text, "--tokens", "8"]):
            rc, _, err = run(strata, "profile", "-m", model, *bad, "-o", stats + ".bad")
            expect(rc != 0 and "--random-tokens" in err, f"profile {bad}: rc {rc} {err}")
        rc = subprocess.run([sys.executable, SKEW, stats + ".raw", stats, "--top-k", "2", "--s", "1.0"]).returncode
        expect(rc == 0, "skew_routing.py failed")
        use = json.load(open(stats))["experts"]["counts"]

        plan = os.path.join(tmp, "moe.plan.json")
        rc, _, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(5), "-c", "64", "-t", "2")
        profile = os.path.join(ENV["XDG_CACHE_HOME"], "strata", "hardware.json")
        expect(rc == 0 and os.path.exists(profile), f"plan (measuring the profile): rc {rc} {err}")
        pin_profile(profile)
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(5), "-c", "64", "-o", plan, "-t", "2")
        expect(rc == 0, f"plan: rc {rc} {err}")
        expect("routing: expert use per layer measured in" in err + out, f"plan did not read {stats}: {err}")
        p = json.load(open(plan))
        print(f"plan: {len(p.get('expert_tiers', []))} layers placed per expert; {p['bytes']}")
        expect(len(p.get("expert_tiers", [])) > 0, "at 5M (a 4.4 MiB model) no layer was placed per expert")
        for x in p.get("expert_tiers", []):
            counts = use[x["layer"]]
            gpu = [counts[e] for e, t in enumerate(x["tiers"]) if t == "gpu"]
            off = [counts[e] for e, t in enumerate(x["tiers"]) if t != "gpu"]
            expect(not gpu or not off or min(gpu) >= max(off), f"layer {x['layer']}: GPU experts {gpu} not the busiest of {counts}")

        gen = ["run", "-m", model, "-p", "word1 and thing2", "-n", "12", "--temp", "0", "-c", "64", "-t", "2", "--ignore-eos"]
        rc, cpu_text, err = run(strata, *gen, "--gpu", "none")
        expect(rc == 0, f"run on the CPU: {err}")
        rc, plan_text, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(5), "--plan", plan)
        expect(rc == 0, f"run --plan: {err}")
        expect(plan_text == cpu_text, f"text under the plan differs: {plan_text!r} vs {cpu_text!r}")

        # Stats named by --stats (not beside the model) reach the planner without --sparsity, in
        # `plan` and in a run; a named file that is missing is an error; a dense model's --stats
        # still needs --sparsity.
        other = os.path.join(tmp, "elsewhere.stats")
        shutil.move(stats, other)
        placing = ["--gpu", "fake", "--gpu-mem", gpu_mem(5), "-c", "64", "-t", "2"]
        rc, out, err = run(strata, "plan", "-m", model, *placing, "--stats", other)
        expect(rc == 0 and f"measured in {other}" in err + out, f"plan --stats {other}: rc {rc} {out} {err}")
        rc, named_text, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(5), "--stats", other)
        expect(rc == 0 and named_text == cpu_text, f"run --stats: rc {rc} {named_text!r} {err}")
        # bench -v says what ran: the placement per run of layers (per-expert tiers included).
        rc, out, err = run(strata, "bench", "-m", model, *placing, "--stats", other, "-p", "0", "-n", "4", "-r", "1", "-v")
        expect(rc == 0 and "feed-forward (FFN)" in err and "experts" in err, f"bench -v: rc {rc} {err[-2000:]}")
        # ... and where its tokens' expert selections ran, against what the estimates' routing
        # expects: the stats file's when given (the plan put its busiest experts on the GPU, so
        # more than uniform routing would), which the bench's prediction then also uses.
        shares, predicted = {}, {}
        for name, extra in (("stats", ["--stats", other]), ("uniform", [])):
            rc, out, err = run(strata, "bench", "-m", model, *placing, "--plan", plan, *extra, "-p", "0", "-n", "4", "-r", "1", "-v")
            m = re.search(r"expert selections in decode: ([0-9.]+)% ran on the GPU \((\d+) of (\d+)\); the estimates' routing \(([^)]*)\) expects ([0-9.]+)%", err)
            expect(rc == 0 and m is not None, f"bench --plan {extra} -v: rc {rc} {err[-2000:]}")
            if m is None:
                continue
            expect(m.group(4) == ("the stats file's" if extra else "uniform"), f"{name}: routing named {m.group(4)}")
            expect(int(m.group(3)) > 0 and 0 < float(m.group(1)) < 100, f"{name}: a mixed placement ran {m.group(0)}")
            shares[name] = float(m.group(5))
            predicted[name] = float([c for c in out.splitlines() if "| tg4 |" in c][0].split("|")[-2])
        if len(shares) == 2:
            expect(shares["stats"] > shares["uniform"], f"expected GPU shares {shares}: the busiest experts are on the GPU")
            expect(predicted["stats"] != predicted["uniform"], f"bench's prediction ignores --stats: {predicted}")
        missing = os.path.join(tmp, "missing.stats")
        rc, _, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", gpu_mem(5), "--stats", missing)
        expect(rc != 0 and f"{missing}: no such file" in err, f"run --stats {missing}: rc {rc} {err}")
        dense = os.path.join(tmp, "dense.gguf")
        rc, _, err = run(strata, "synth", "--preset", "tiny", "-o", dense)
        expect(rc == 0, f"synth tiny: {err}")
        rc, _, err = run(strata, "run", "-m", dense, "-p", "hi", "-n", "1", "-t", "2", "--stats", other)
        expect(rc != 0 and "--stats was given without --sparsity" in err, f"dense run --stats: rc {rc} {err}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())

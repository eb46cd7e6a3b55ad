#!/usr/bin/env python3
"""Backends by name, end to end on a synthetic model: a GPU backend this binary lacks or that
cannot run here (--gpu cuda without a device or without CUDA) gives one error line listing the
backends the binary has; `strata perplexity` runs on the same runtime as `strata run`, so --gpu
fake, --ctk, --gpu-mem and --plan apply to it, and its result on the fake device equals the CPU's
(the fake computes with the CPU's kernels) for each KV type.

usage: backends_cli_test.py --strata BUILD/bin/strata"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

from cli_util import FAILURES, expect, gpu_mem, strata_arg

ENV = dict(os.environ)


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=300, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect_one_error(strata, args, *fragments):
    rc, _, err = run(strata, *args)
    lines = err.strip().splitlines()
    expect(rc != 0 and rc < 128, f"{args}: exit {rc}, stderr {err!r}")
    expect(len(lines) == 1 and lines[0].startswith("strata: error: "), f"{args}: not one error line: {err!r}")
    for f in fragments:
        expect(f in err, f"{args}: {f!r} not in {err!r}")
    return err


def ppl(out):
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
    return float(m.group(1)) if m else None


def gpu_visible():
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def main():
    strata = strata_arg()
    with tempfile.TemporaryDirectory() as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        model = os.path.join(tmp, "tiny.gguf")
        rc, _, err = run(strata, "synth", "--preset", "tiny", "--seed", "11", "-o", model)
        expect(rc == 0, f"synth: {err}")
        rng = random.Random(5)
        words = ["the", "fox", "jumps", "over", "lazy", "dog", "and", "runs", "far", "away", "in", "light"]
        text = os.path.join(tmp, "text.txt")
        open(text, "w").write(" ".join(rng.choice(words) for _ in range(3000)))
        gen = ["run", "-m", model, "-p", "the fox", "-n", "2", "-t", "2", "-c", "64"]

        # Backends this binary lacks, or cannot run here: one line naming the ones it has.
        err = expect_one_error(strata, [*gen, "--gpu", "vulkan"], "--gpu vulkan", "fake")
        if not gpu_visible():
            err = expect_one_error(strata, [*gen, "--gpu", "cuda"], "--gpu cuda", "fake")
            expect("no CUDA device" in err or "no GPU backend 'cuda'" in err, f"--gpu cuda: why not said: {err!r}")
            expect_one_error(strata, ["perplexity", "-m", model, "-f", text, "--gpu", "cuda"], "--gpu cuda", "fake")

        # perplexity on the runtime: CPU and the fake device agree for each KV type, and the KV
        # type changes the result (so --ctk reaches the cache).
        common = ["perplexity", "-m", model, "-f", text, "-c", "32", "--chunks", "3", "-t", "2"]
        results = {}
        for kv in ("f16", "q8_0"):
            rc, cpu_out, err = run(strata, *common, "--gpu", "none", "--ctk", kv)
            expect(rc == 0 and ppl(cpu_out) is not None, f"cpu perplexity --ctk {kv}: {rc} {err}")
            rc, fake_out, err = run(strata, *common, "--gpu", "fake", "--gpu-mem", gpu_mem(64), "--ctk", kv, "-v")
            expect(rc == 0 and ppl(fake_out) is not None, f"fake perplexity --ctk {kv}: {rc} {err}")
            weights = next((l for l in err.splitlines() if l.startswith("weights:")), "")
            expect("gpu 0 B" not in weights and "vram (fake" in err, f"perplexity --gpu fake ran no weights there: {err}")
            expect(ppl(cpu_out) == ppl(fake_out), f"--ctk {kv}: fake PPL {ppl(fake_out)} != cpu {ppl(cpu_out)}")
            results[kv] = ppl(cpu_out)
        if None not in results.values():
            expect(results["f16"] != results["q8_0"], f"--ctk q8_0 changed nothing: {results}")
            expect(abs(results["f16"] - results["q8_0"]) < 0.05 * results["f16"], f"q8_0 KV far from f16: {results}")

        # --plan: a placement made by strata plan for the fake device is used by perplexity.
        plan = os.path.join(tmp, "tiny.plan.json")
        rc, _, err = run(strata, "plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(3), "-c", "32", "-o", plan)
        expect(rc == 0, f"plan: {err}")
        rc, out, err = run(strata, *common, "--gpu", "fake", "--gpu-mem", gpu_mem(64), "--plan", plan, "-v")
        expect(rc == 0 and ppl(out) == results.get("f16"), f"perplexity --plan: {ppl(out)} vs {results} ({err})")
        expect(f"placement: plan {plan}" in err, f"perplexity --plan: the plan is not used: {err}")
        expect_one_error(strata, [*common, "--gpu", "none", "--gpu-mem", "1G"], "--gpu none")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("backends CLI: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

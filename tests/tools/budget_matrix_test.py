#!/usr/bin/env python3
"""Placement that never fails mid-run: prefill on the fake device (which holds the CUDA backend's
matmul scratch) for every combination of GPU budget, physical batch (-b) and prompt length, with
the planner's placement. Every run must finish, and the device's peak must stay within the
budget. The budgets are the issue's {minimum feasible, minimum + a step, three larger ones},
scaled to a synthetic model of a few MiB; the prompt lengths straddle the batch sizes, the
GEMV/GEMM switch and the prefill-shipping threshold (64), up to the context less one.
With --gpu cuda (the GPU machine) the same matrix runs on the CUDA backend, whose minimum also
holds the context and cuBLAS: what the process holds (context, library state and the
allocations' peak) must stay within the budget.

usage: budget_matrix_test.py --strata BUILD/bin/strata [--gpu fake|cuda]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from cli_util import FAILURES, OP_SCRATCH_BYTES, expect

ENV = dict(os.environ)


def bench(strata, gpu, model, budget, batch, prompts, ctx):
    cmd = [strata, "bench", "-m", model, "--gpu", gpu, "--gpu-mem", f"{budget}B", "-b", str(batch), "-c", str(ctx),
           "-n", "0", "-r", "1", "-t", "2", "-v", "-p", *map(str, prompts)]
    p = subprocess.run(cmd, capture_output=True, timeout=600, env=ENV)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def parse_bytes(text):
    value, unit = re.match(r"([\d.]+) (B|KiB|MiB|GiB)", text).groups()
    return float(value) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--gpu", choices=("fake", "cuda"), default="fake")
    args = ap.parse_args()
    strata, gpu = args.strata, args.gpu
    with tempfile.TemporaryDirectory() as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        model = os.path.join(tmp, "m.gguf")
        subprocess.run([strata, "synth", "--preset", "tiny", "-o", model], check=True, capture_output=True, env=ENV)
        ctx = 2048  # the tiny preset's training context
        # The minimum feasible budget: bisected on the smallest prompt.
        # (CUDA: its context and cuBLAS come first, up to a few hundred MiB.)
        base = OP_SCRATCH_BYTES if gpu == "fake" else 0
        lo, hi = base + (1 << 10), base + ((64 << 20) if gpu == "fake" else (4 << 30))
        while hi - lo > (4 << 10 if gpu == "fake" else 1 << 20):
            mid = (lo + hi) // 2
            rc, _, _ = bench(strata, gpu, model, mid, 1, [1], ctx)
            lo, hi = (lo, mid) if rc == 0 else (mid, hi)
        base = base if gpu == "fake" else hi
        budgets = [hi, hi + (256 << 10), *(base + (m << 20) for m in (16, 64, 128))]
        all_prompts = [1, 31, 32, 33, 63, 64, 65, 255, 256, 257, 511, 512, 513, 2048, ctx - 1]
        on_gpu = 0
        for budget in budgets:
            for batch in (1, 32, 256, 512, 2048):
                # -b 1 runs every prompt token as its own step, so lengths past the shipping
                # threshold (64) add no new case, only time: it stops at 257 (1,057 steps, not 6,688).
                prompts = [p for p in all_prompts if p <= 257] if batch == 1 else all_prompts
                rc, out, err = bench(strata, gpu, model, budget, batch, prompts, ctx)
                tag = f"--gpu-mem {budget} -b {batch}"
                if not expect(rc == 0, f"{tag}: exit {rc}: {err.strip().splitlines()[-1:]}"):
                    continue
                # "vram (fake: NAME): budget X | ... | allocations Y (in use U, peak P) | ..."
                # "vram (NAME: DEVICE): budget X | context and others C | library state L |
                #  allocations Y (in use U, peak P) | ..."
                vram = re.search(r"vram \(" + gpu + r"[^)]*\): budget [^|]+\| context and others ([^|]+)\| "
                                 r"library state ([^|]+)\|.*?, peak ([^)|]+)\)", err)
                if expect(vram is not None, f"{tag}: no device accounting"):
                    held = sum(parse_bytes(vram.group(i)) for i in (1, 2, 3))
                    expect(held <= budget, f"{tag}: context {vram.group(1)}+ library {vram.group(2)}+ peak "
                                           f"{vram.group(3)} over the budget")
                weights = re.search(r"weights: gpu ([^|]+) \|", err)
                on_gpu += weights is not None and parse_bytes(weights.group(1)) > 0
                expect(len([l for l in out.splitlines() if "| pp" in l]) == len(prompts), f"{tag}: missing rows: {out}")
        print(f"{gpu}: minimum feasible budget {hi} bytes; runs with weights on the GPU: {on_gpu} of 25")
        expect(on_gpu >= 10, "the matrix hardly put weights on the GPU: the budgets test nothing")
    print(f"budget matrix: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

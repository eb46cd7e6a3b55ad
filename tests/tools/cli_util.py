"""Shared by the strata CLI tests of this folder: the failure list and expect(), the exit code
ctest reads as skipped, and the closing verdict. A test imports what it uses
(`from cli_util import FAILURES, expect, finish`) and returns finish() from main."""

import argparse
import json
import os

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
FAILURES = []
# The op scratch a GPU backend reserves beyond the activations, the fake device's as CUDA's
# (engine/core/device_scratch.h kDeviceOpScratchBytes).
OP_SCRATCH_BYTES = 96 << 20


def gpu_mem(mib):
    """A --gpu-mem that leaves about `mib` MiB beyond the device's op scratch."""
    return f"{mib + (OP_SCRATCH_BYTES >> 20)}M"


def pin_profile(path, gpu_speedup=20.0, gpu_op_speedup=10.0):
    """Replaces the rates of the cached hardware profile at `path` (measured by an earlier run,
    CPU name and GPU name kept) with fixed ones: a CPU like this 2-core machine's and a GPU
    `gpu_speedup` times its bandwidth with ops `gpu_op_speedup` times cheaper. A quick profile
    measured on a loaded machine varies by 10x from run to run, and the planner's choices with
    it; a test that asserts what the planner chose plans on these instead."""
    p = json.load(open(path))

    def pin_cpu(c):
        c.update(host_read_gbs=8.0, cpu_op_us=1.3, cpu_gemv_floor_us=0.0, cpu_gemv_tiny_floor_us=0.0,
                 cpu_prefill_gflops=80.0, cpu_prefill_wide_gflops=80.0, cpu_prefill_small_gflops=80.0,
                 cpu_prefill_small_wide_gflops=80.0)
        c["cpu_prefill_type_gflops"] = {t: 80.0 for t in c.get("cpu_prefill_type_gflops", {})}
        c["cpu_gemv_gbs"] = {t: {"f16": 1.0, "q5_K": 21.0, "q6_K": 23.0, "q8_0": 28.0}.get(t, 17.0)
                             for t in c.get("cpu_gemv_gbs", {})}
        c["cpu_attention_us"] = {k: 3.0 for k in c.get("cpu_attention_us", {})}
        c["cpu_attention_long_us"] = {k: 25.0 for k in c.get("cpu_attention_long_us", {})}

    pin_cpu(p)
    for rates in p.get("cpu_at_threads", {}).values():
        pin_cpu(rates)
    if p.get("gpu_name"):
        p.update(gpu_read_gbs=8.0 * gpu_speedup, gpu_op_us=1.3 / gpu_op_speedup,
                 gpu_graph_node_us=1.3 / gpu_op_speedup, gpu_gemv_floor_us=0.0, gpu_gemv_tiny_floor_us=0.0,
                 gpu_prefill_gflops=80.0 * gpu_speedup, h2d_gbs=4.0, d2h_gbs=4.0, transfer_latency_us=5.0)
        p["gpu_gemv_gbs"] = {t: g * gpu_speedup for t, g in p["cpu_gemv_gbs"].items()}
        p["gpu_attention_us"] = {k: 3.0 / gpu_op_speedup for k in p.get("gpu_attention_us", {})}
        p["gpu_attention_long_us"] = {k: 25.0 / gpu_op_speedup for k in p.get("gpu_attention_long_us", {})}
    with open(path, "w") as f:
        json.dump(p, f)


def strata_arg():
    """The --strata BUILD/bin/strata argument of a test that takes no other."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    return ap.parse_args().strata


def default_model():
    """$STRATA_DEFAULT_MODEL, or None after saying the test is skipped (return SKIP then)."""
    model = os.environ.get("STRATA_DEFAULT_MODEL")
    if not model:
        print("skipping: STRATA_DEFAULT_MODEL is not set")
    return model or None


def expect(cond, what):
    """Records and prints `what` as a failure when cond is false; returns cond."""
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}")
    return cond


def expect_error_line(args, result, *fragments):
    """A refused command line: a non-zero exit that is no crash, stderr ending in one
    "strata: error: " line, and each fragment in it (case-insensitive). result: (rc, out, err)."""
    rc, _, err = result
    lines = err.strip().splitlines()
    expect(rc != 0 and rc < 128, f"{args}: exit {rc} (crash or success), stderr {err!r}")
    expect(len(lines) >= 1 and lines[-1].startswith("strata: error: "), f"{args}: no error line: {err!r}")
    for f in fragments:
        expect(f.lower() in err.lower(), f"{args}: {f!r} not in {err!r}")


def finish():
    """The exit code: 1 after printing the failure count when any, else 0 after "ok"."""
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0

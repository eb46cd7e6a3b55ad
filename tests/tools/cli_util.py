"""Shared by the strata CLI tests of this folder: the failure list and expect(), the exit code
ctest reads as skipped, and the closing verdict. A test imports what it uses
(`from cli_util import FAILURES, expect, finish`) and returns finish() from main."""

import argparse
import os

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
FAILURES = []
# The op scratch a GPU backend reserves beyond the activations, the fake device's as CUDA's
# (engine/core/device_scratch.h kDeviceOpScratchBytes).
OP_SCRATCH_BYTES = 96 << 20


def gpu_mem(mib):
    """A --gpu-mem that leaves about `mib` MiB beyond the device's op scratch."""
    return f"{mib + (OP_SCRATCH_BYTES >> 20)}M"


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

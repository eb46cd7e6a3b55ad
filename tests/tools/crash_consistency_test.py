#!/usr/bin/env python3
"""Crash consistency: kill -9 at random moments while `plan -o`, `synth -o`, chat `/save` and
`bench --fit` write their files. After every kill the target is either the file it was before
or a complete new one (valid JSON with every run kept, or a GGUF file byte-identical to a complete
write), and the next run removes the temporary files the killed processes left.

usage: crash_consistency_test.py --strata BUILD/bin/strata [--kills N]"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from cli_util import FAILURES, expect

ENV = dict(os.environ)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def timed(cmd, input=None):
    start = time.monotonic()
    p = subprocess.run(cmd, input=input, capture_output=True, timeout=300, env=ENV)
    expect(p.returncode == 0, f"{cmd}: {p.stderr.decode()[-300:]}")
    return time.monotonic() - start


def kill_at_random(cmd, seconds, rng, input=None):
    """Starts `cmd`, kills it with SIGKILL after a random part of its usual run time: half of the
    kills anywhere, half near the end, where the files are written."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    if input:
        try:
            p.stdin.write(input)
            p.stdin.close()
        except BrokenPipeError:
            pass
    time.sleep(rng.uniform(0, seconds * 1.1) if rng.random() < 0.5 else rng.uniform(0.75 * seconds, 1.05 * seconds))
    p.kill()
    p.wait(timeout=60)


def temp_files(folder):
    return [n for n in os.listdir(folder) if ".strata-tmp." in n]


DURING_WRITE = {}  # case -> kills that hit a write in progress (a temporary file was left)


def count_write_kill(case, folder):
    DURING_WRITE[case] = DURING_WRITE.get(case, 0) + (1 if temp_files(folder) else 0)


def valid_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def synth_case(strata, tmp, kills, rng):
    target = os.path.join(tmp, "synth.gguf")
    complete = set()
    for seed in ("1", "2"):  # the complete files each seed writes
        ref = os.path.join(tmp, f"ref{seed}.gguf")
        seconds = timed([strata, "synth", "--preset", "tiny", "--seed", seed, "-o", ref])
        complete.add(digest(ref))
    timed([strata, "synth", "--preset", "tiny", "--seed", "1", "-o", target])
    for i in range(kills):
        kill_at_random([strata, "synth", "--preset", "tiny", "--seed", str(1 + i % 2), "-o", target], seconds, rng)
        count_write_kill("synth", tmp)
        if not expect(digest(target) in complete, f"synth: kill {i} left a file that is neither old nor complete"):
            break
    return target


def plan_case(strata, tmp, kills, rng, model):
    target = os.path.join(tmp, "p.plan.json")
    base = [strata, "plan", "-m", model, "--gpu", "none", "-o", target]
    seconds = timed([*base, "-c", "64"])
    for i in range(kills):
        kill_at_random([*base, "-c", str(64 + 64 * (i % 3))], seconds, rng)
        count_write_kill("plan", tmp)
        plan = valid_json(target)
        if not expect(plan is not None and plan.get("tensors"), f"plan: kill {i} left an incomplete plan"):
            break


def save_case(strata, tmp, kills, rng, model):
    target = os.path.join(tmp, "conv.json")
    saves = "".join(f"message {i}\n/save {target}\n" for i in range(6)).encode()
    cmd = [strata, "chat", "-m", model, "--gpu", "none", "-n", "2", "--temp", "0"]
    seconds = timed(cmd, input=saves)
    for i in range(kills):
        kill_at_random(cmd, seconds, rng, input=saves)
        count_write_kill("/save", tmp)
        conv = valid_json(target)
        if not expect(conv is not None and conv.get("messages"), f"/save: kill {i} left an incomplete save"):
            break


def fit_case(strata, tmp, kills, rng, model):
    cal = os.path.join(ENV["XDG_CACHE_HOME"], "strata", "calibration.json")
    cmd = [strata, "bench", "-m", model, "--gpu", "none", "-c", "64", "-p", "0", "-n", "2", "-r", "1", "--fit"]
    seconds = timed(cmd)
    runs = len(valid_json(cal)["runs"])
    for i in range(kills):
        kill_at_random(cmd, seconds, rng)
        count_write_kill("bench --fit", os.path.dirname(cal))
        now = valid_json(cal)
        if not expect(now is not None and len(now["runs"]) >= runs, f"bench --fit: kill {i} lost recorded runs"):
            break
        runs = len(now["runs"])
    return os.path.dirname(cal)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--kills", type=int, default=50)
    args = ap.parse_args()
    rng = random.Random(20261125)
    with tempfile.TemporaryDirectory(dir=os.environ.get("STRATA_TEST_DISK_DIR", "/var/tmp")) as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        model = os.path.join(tmp, "model.gguf")
        timed([args.strata, "synth", "--preset", "tiny", "--layers", "2", "-o", model])
        synth_target = synth_case(args.strata, tmp, args.kills, rng)
        plan_case(args.strata, tmp, args.kills, rng, model)
        save_case(args.strata, tmp, args.kills, rng, model)
        cache = fit_case(args.strata, tmp, args.kills, rng, model)
        # kill -9 cannot be caught: the next write to the same target removes what was left.
        left = temp_files(tmp) + temp_files(cache)
        print(f"kills during a write (a temporary file left): {DURING_WRITE}; left now: {len(left)}")
        timed([args.strata, "synth", "--preset", "tiny", "--seed", "1", "-o", synth_target])
        timed([args.strata, "plan", "-m", model, "--gpu", "none", "-c", "64", "-o", os.path.join(tmp, "p.plan.json")])
        timed([args.strata, "chat", "-m", model, "--gpu", "none", "-n", "1"], input=f"hi\n/save {tmp}/conv.json\n".encode())
        timed([args.strata, "bench", "-m", model, "--gpu", "none", "-c", "64", "-p", "0", "-n", "2", "-r", "1", "--fit"])
        left = temp_files(tmp) + temp_files(cache)
        expect(not left, f"temporary files still there after the next writes: {left}")
    print(f"crash consistency: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Hostile input against every command family: each case must end with a clear message, a
non-zero exit where the command failed, no crash (no signal death), and every file the user had
unchanged. Families: writing files (plan, synth, bench --fit, calibration), reading files (plans,
profiles, texts, models), numbers on the command line, and chat (/save, /load, /set, a full
context, a model that shrinks under it). Runs on `strata synth` models; every wait is bounded.

usage: adversary_test.py --strata BUILD/bin/strata [--family NAME]"""
import argparse
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

from cli_util import FAILURES, expect

ENV = dict(os.environ)
STRATA = None


def run(*args, input=None, timeout=120, prefix=()):
    p = subprocess.run([*prefix, STRATA, *args], input=input, capture_output=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def expect_refused(args, fragment, code=None, **kw):
    """A failed command: exit 1 or 2 (never a signal), one error line naming `fragment`."""
    rc, out, err = run(*args, **kw)
    lines = [l for l in err.splitlines() if l.startswith("strata: error: ")]
    ok = expect(rc in (1, 2) if code is None else rc == code, f"{args}: exit {rc}, stderr {err!r}")
    ok &= expect(len(lines) == 1, f"{args}: expected one error line, stderr {err!r}")
    ok &= expect(fragment.lower() in err.lower(), f"{args}: {fragment!r} not in {err!r}")
    return ok


def no_temp_files(folder, what):
    left = [n for n in os.listdir(folder) if ".strata-tmp." in n]
    expect(not left, f"{what}: temporary files left in {folder}: {left}")


# ---- writing files: the target is the old file or the complete new one, never an input ----

def family_writes(tmp, model):
    before = digest(model)
    # plan -o onto its own model, through a symbolic link too.
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "64", "-o", model], "refusing to write")
    link = os.path.join(tmp, "link.gguf")
    os.symlink(model, link)
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "64", "-o", link], "refusing to write")
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "64", "-o", tmp], "folder")
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "64", "-o", "/dev/null"], "not a regular file")
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "64", "-o", os.path.join(tmp, "no/such/dir/p.json")],
                   "does not exist")
    expect(digest(model) == before, "plan -o: the model changed")

    # synth -o onto a file another process has open: that process keeps reading the old bytes.
    target = os.path.join(tmp, "served.gguf")
    rc, _, err = run("synth", "--preset", "tiny", "--seed", "5", "-o", target)
    expect(rc == 0, f"synth: {err}")
    old = digest(target)
    with open(target, "rb") as held:
        rc, _, err = run("synth", "--preset", "tiny", "--seed", "6", "-o", target)
        expect(rc == 0, f"synth over an open file: {err}")
        expect(hashlib.sha256(held.read()).hexdigest() == old, "synth -o truncated a file another process had open")
    expect(digest(target) != old, "synth -o did not replace the file")
    no_temp_files(tmp, "synth")

    # A write that fails midway (file size limit) leaves the old file, exit non-zero.
    kept = digest(target)
    expect_refused(["synth", "--preset", "tiny", "--seed", "9", "-o", target], "fail",
                   prefix=("prlimit", "--fsize=200000"))
    expect(digest(target) == kept, "synth under a file size limit changed the old file")
    no_temp_files(tmp, "synth under a file size limit")
    plan = os.path.join(tmp, "kept.plan.json")
    rc, _, err = run("plan", "-m", model, "--gpu", "none", "-c", "64", "-o", plan)
    expect(rc == 0, f"plan: {err}")
    kept = digest(plan)
    expect_refused(["plan", "-m", model, "--gpu", "none", "-c", "128", "-o", plan], "fail",
                   prefix=("prlimit", "--fsize=100"))
    expect(digest(plan) == kept, "plan under a file size limit changed the old plan")
    no_temp_files(tmp, "plan under a file size limit")

    # Standard output that cannot be written is a failure.
    with open("/dev/full", "w") as full:
        p = subprocess.run([STRATA, "inspect", "-m", model], stdout=full, stderr=subprocess.PIPE, timeout=60, env=ENV)
    expect(p.returncode == 1 and b"cannot write the output" in p.stderr, f"inspect > /dev/full: {p.returncode} {p.stderr!r}")
    with open("/dev/full", "w") as full:
        p = subprocess.run([STRATA, "run", "-m", model, "-p", "hi", "-n", "4", "--gpu", "none", "-c", "64"],
                           stdout=full, stderr=subprocess.PIPE, timeout=60, env=ENV)
    expect(p.returncode == 1, f"run > /dev/full: exit {p.returncode}")


def calibration_path():
    return os.path.join(ENV["XDG_CACHE_HOME"], "strata", "calibration.json")


def family_calibration(tmp, model):
    cal = calibration_path()
    bench = ["bench", "-m", model, "--gpu", "none", "-c", "64", "-p", "0", "-n", "4", "-r", "1", "--fit"]
    rc, _, err = run(*bench)
    expect(rc == 0 and os.path.exists(cal), f"bench --fit: {err}")
    # A damaged file and a file of another machine are kept aside, never discarded.
    for damage in ("{\"version\": 4, \"machine\": ", json.dumps({"version": 4, "machine": "elsewhere", "runs": [
            {"gpu_s": 0, "cpu_s": 0.01, "disk_s": 0, "transfer_s": 0, "measured_s": 0.02, "gpu_fixed_s": 0,
             "cpu_fixed_s": 0, "graph": False}]})):
        with open(cal, "w") as f:
            f.write(damage)
        for n in os.listdir(os.path.dirname(cal)):
            if ".old-" in n:
                os.remove(os.path.join(os.path.dirname(cal), n))
        rc, _, err = run(*bench)
        expect(rc == 0 and "kept as" in err, f"bench --fit over a damaged calibration: {rc} {err!r}")
        kept = [n for n in os.listdir(os.path.dirname(cal)) if ".old-" in n]
        expect(len(kept) == 1 and open(os.path.join(os.path.dirname(cal), kept[0])).read() == damage,
               f"the old calibration was not kept: {kept}")
        expect(len(json.load(open(cal))["runs"]) == 1, "the new calibration does not hold the new run")
    # Degenerate runs (no terms): the fit is refused, the plan keeps finite predictions.
    good = json.load(open(cal))
    good["runs"] = [{**good["runs"][0], "gpu_s": 0, "cpu_s": 0, "disk_s": 0, "transfer_s": 0, "gpu_fixed_s": 0,
                     "cpu_fixed_s": 0} for _ in range(3)]
    with open(cal, "w") as f:
        json.dump(good, f)
    plan = os.path.join(tmp, "degenerate.plan.json")
    rc, _, err = run("plan", "-m", model, "--gpu", "none", "-c", "64", "-o", plan)
    expect(rc == 0, f"plan with a degenerate calibration: {err}")
    if rc == 0:
        text = open(plan).read()
        predicted = json.loads(text)["predicted"]
        expect("null" not in text and predicted["decode_tok_s"] > 0, f"degenerate calibration: {predicted}")
    # Many runs: the report stays fast (a fit costs O(runs); it was quadratic per fit).
    good["runs"] = [{**json.load(open(plan and cal))["runs"][0], "cpu_s": 0.01 + i * 1e-5, "measured_s": 0.02 + i * 1e-5}
                    for i in range(2000)]
    with open(cal, "w") as f:
        json.dump(good, f)
    start = time.monotonic()
    rc, out, err = run("calibration", timeout=300)
    expect(rc == 0 and "2000 run(s)" in out, f"calibration of 2000 runs: {rc} {err!r}")
    print(f"calibration of 2000 runs: {time.monotonic() - start:.1f} s")
    os.remove(cal)


# ---- reading files: regular files only, bounded size and nesting ----

def family_reads(tmp, model):
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    deep = os.path.join(tmp, "deep.json")
    with open(deep, "w") as f:
        f.write("[" * 100000)
    gen = ["run", "-m", model, "-p", "hi", "-n", "2", "--gpu", "none", "-c", "64"]
    expect_refused(["run", "-m", fifo, "-p", "hi"], "fifo", timeout=20)
    expect_refused(["inspect", "-m", fifo], "fifo", timeout=20)
    expect_refused(["run", "-m", tmp, "-p", "hi"], "folder", timeout=20)
    expect_refused(["run", "-m", "/dev/zero", "-p", "hi"], "device", timeout=20)
    expect_refused([*gen, "--plan", fifo], "fifo", timeout=20)
    expect_refused([*gen, "--plan", "/dev/zero"], "device", timeout=20)
    expect_refused([*gen, "--plan", deep], "deeper than", timeout=20)
    expect_refused([*gen, "--plan", ""], "empty", timeout=20)
    expect_refused(["run", "-m", model, "-f", "/dev/zero", "--gpu", "none"], "device", timeout=20)
    expect_refused(["run", "-m", model, "-f", fifo, "--gpu", "none"], "fifo", timeout=20)
    expect_refused(["perplexity", "-m", model, "-f", "/dev/zero"], "device", timeout=20)
    big = os.path.join(tmp, "big.txt")
    with open(big, "wb") as f:
        f.truncate(600 << 20)  # sparse: over the text cap without using the disk
    expect_refused(["run", "-m", model, "-f", big, "--gpu", "none"], "more than", timeout=20)
    os.remove(big)

    # The hardware profile cache: hostile or impossible contents are measured again, with a note,
    # and the command works (and the next one too).
    profile = os.path.join(ENV["XDG_CACHE_HOME"], "strata", "hardware.json")
    rc, _, err = run(*gen)
    expect(rc == 0 and os.path.exists(profile), f"run: {err}")
    good = json.load(open(profile))
    for content, why in (("[" * 100000, "deeper than"), (json.dumps({**good, "disk_read_gbs": 0}), "disk_read_gbs"),
                         (json.dumps({**good, "host_read_gbs": -3}), "host_read_gbs")):
        with open(profile, "w") as f:
            f.write(content)
        rc, _, err = run(*gen)
        expect(rc == 0 and why in err, f"hardware.json {why}: exit {rc}, {err!r}")
        rc, _, err = run(*gen)
        expect(rc == 0 and "measuring" not in err, f"hardware.json {why}: not repaired: {err!r}")
    os.remove(profile)
    os.symlink("/dev/zero", profile)
    rc, _, err = run(*gen, timeout=60)
    expect(rc == 0, f"hardware.json -> /dev/zero: exit {rc}, {err!r}")
    if os.path.islink(profile):
        os.remove(profile)

    # The disk measurement's probe file: removed on SIGTERM, and a stale one (killed process) on
    # the next start.
    probe_dir = os.path.join(tmp, "probe")
    os.mkdir(probe_dir)
    small = os.path.join(probe_dir, "m.gguf")
    rc, _, err = run("synth", "--preset", "tiny", "--layers", "1", "-o", small)
    expect(rc == 0, f"synth: {err}")
    stale = os.path.join(probe_dir, ".strata-disk-probe.strata-tmp.4194303")  # above any pid_max default
    open(stale, "wb").write(b"x" * 4096)
    env = dict(ENV, STRATA_QUICK_PROFILE="0")
    p = subprocess.Popen([STRATA, "plan", "-m", small, "--gpu", "none", "-c", "64", "--reprofile",
                          "-o", os.path.join(tmp, "probe.plan.json")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = False
    deadline = time.monotonic() + 300  # the CPU is measured first: slow on a loaded machine
    while time.monotonic() < deadline and p.poll() is None:
        live = [n for n in os.listdir(probe_dir) if n.startswith(".strata-disk-probe") and n != os.path.basename(stale)]
        if live:
            seen = True
            p.send_signal(signal.SIGTERM)
            break
        time.sleep(0.005)
    p.wait(timeout=120)
    expect(seen, "the disk probe file was never seen (the measurement may read the model itself)")
    expect(not os.path.exists(stale), "a stale disk probe file was not removed")
    left = [n for n in os.listdir(probe_dir) if n.startswith(".strata-disk-probe")]
    expect(not left, f"SIGTERM during the disk measurement left {left}")


# ---- numbers on the command line ----

def family_numbers(tmp, model):
    gen = ["run", "-m", model, "-p", "hi", "-n", "2", "--gpu", "none", "-c", "64"]
    for flag, value, fragment in (("-t", "3.9", "not an integer"), ("-t", "1e3", "not an integer"),
                                  ("-t", "100000", "out of range"), ("-t", "-2", "out of range"),
                                  ("-c", "1e7", "not an integer"), ("-c", "-1", "out of range"),
                                  ("-b", "0", "out of range"), ("-n", "-5", "out of range"),
                                  ("--top-k", "3.9", "not an integer"), ("--top-p", "1.5", "out of range"),
                                  ("--temp", "nan", "not a number"), ("--seed", "-2", "out of range"),
                                  ("--seed", "0x10", "not an integer")):
        args = list(gen)
        if flag in args:
            i = args.index(flag)
            args[i + 1] = value
        else:
            args += [flag, value]
        expect_refused(args, fragment, code=2)
    rc, out, err = run(*gen, "-t", "1000")
    expect(rc == 0 and "using" in err and "threads" in err, f"-t 1000: {rc} {err!r}")
    rc, _, err = run(*gen[:-2], "-c", "10000000")
    expect(rc == 0 and "training context" in err, f"-c 10000000 not announced: {rc} {err!r}")
    rc, _, err = run(*gen, "-s", "-1")
    expect(rc == 0, f"-s -1 (random, as llama.cpp): {err!r}")
    expect_refused(["bench", "-m", model, "--gpu", "none", "-p", "-5", "-n", "0"], "out of range", code=2)
    expect_refused(["bench", "-m", model, "--gpu", "none", "-p", "1e9", "-n", "0"], "not an integer", code=2)
    expect_refused(["bench", "-m", model, "--gpu", "none", "-p", "1000000", "-n", "0", "-r", "1"], "does not fit")
    expect_refused(["bench", "-m", model, "--gpu", "none", "-r", "0"], "out of range", code=2)
    expect_refused(["bench", "-m", model, "--gpu", "none", "-d", "-5", "-n", "2"], "out of range", code=2)
    expect_refused(["bench", "-m", model, "--gpu", "none", "-d", "1000000", "-p", "0", "-n", "2", "-r", "1"], "does not fit")
    text = os.path.join(tmp, "text.txt")
    with open(text, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 200)
    for chunks in ("0", "-5", "2.5"):
        expect_refused(["perplexity", "-m", model, "-f", text, "--chunks", chunks], "--chunks", code=2)
    rc, out, err = run("perplexity", "-m", model, "-f", text, "-c", "100000", "--chunks", "1", timeout=300)
    expect("training context" in err, f"perplexity -c beyond the training context not announced: {rc} {err!r}")
    expect_refused(["synth", "--preset", "tiny", "--layers", "0", "-o", os.path.join(tmp, "x.gguf")], "out of range", code=2)
    expect_refused(["calibration", "--tolerance", "-1"], "out of range", code=2)


# ---- chat ----

def chat(model, lines, *extra, timeout=300):
    p = subprocess.run([STRATA, "chat", "-m", model, "--gpu", "none", "-n", "4", "--temp", "0", *extra],
                       input=lines, capture_output=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def family_chat(tmp, model):
    before = digest(model)
    save = os.path.join(tmp, "conv.json")
    rc, out, err = chat(model, f"hello\n/save {model}\n/save {save}\n".encode())
    expect(rc == 0 and "refusing to write" in err, f"/save onto the model: {rc} {err!r}")
    expect(digest(model) == before, "/save replaced the model")
    expect(json.load(open(save))["messages"][0]["content"] == "hello", "/save did not write the conversation")

    # Invalid UTF-8 typed into the chat: the save is complete JSON, the chat goes on.
    bad = os.path.join(tmp, "bad.json")
    rc, out, err = chat(model, b"caf\xe9 \xff\xfe\n/save " + bad.encode() + b"\nhello again\n")
    expect(rc == 0, f"invalid UTF-8 then /save: exit {rc}, {err!r}")
    saved = json.load(open(bad)) if os.path.exists(bad) else {}
    expect(len(saved.get("messages", [])) == 2 and saved["messages"][0]["content"].startswith("caf"),
           f"invalid UTF-8: the save is not the conversation: {saved}")

    # /load of what is not a conversation file: an error line, the chat lives.
    deep = os.path.join(tmp, "deep.json")
    open(deep, "w").write("[" * 100000)
    for target in (tmp, "/dev/zero", deep, os.path.join(tmp, "missing.json")):
        rc, out, err = chat(model, f"/load {target}\nhello\n".encode())
        expect(rc == 0 and "error:" in err and out.strip(), f"/load {target}: exit {rc}, {err!r}")

    # /save under a file size limit: the old file stays, the chat says so.
    kept = digest(save)
    big = os.path.join(tmp, "big-conv.json")
    with open(big, "w") as f:
        json.dump({"messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": "word " * 100}
                                for i in range(40)]}, f)
    p = subprocess.run(["prlimit", "--fsize=4000", STRATA, "chat", "-m", model, "--gpu", "none", "-n", "1", "--temp", "0"],
                       input=f"/load {big}\n/save {save}\n".encode(), capture_output=True, timeout=300, env=ENV)
    expect(p.returncode == 0 and b"error:" in p.stderr and b"saved" not in p.stdout and digest(save) == kept,
           f"/save over a file size limit: exit {p.returncode}, {p.stderr[-300:]!r}")
    no_temp_files(tmp, "/save over a file size limit")

    # /set: strict numbers, ranges named; /set alone shows the values.
    rc, out, err = chat(model, b"/set top-k 3.9\n/set top-k 3\n/set temp abc\n/set seed -1\n/set\n")
    expect(rc == 0 and "not an integer" in err and "top-k = 3" in out and "not a number" in err, f"/set: {out!r} {err!r}")
    expect("top-p = " in out and "seed = random" in out, f"/set alone: {out!r}")

    # A full context: old turns are dropped with a notice, every line answered, exit 0; a line
    # that cannot fit at all makes the piped chat fail.
    lines = "".join(f"tell me about the number {i}\n" for i in range(12)).encode()
    rc, out, err = chat(model, lines, "-c", "256")
    expect(rc == 0 and "context full" in err and "error" not in err, f"piped chat past the context: {rc} {err!r}")
    rc, out, err = chat(model, ("word " * 200 + "\nhello\n").encode(), "-c", "256")
    expect(rc == 1 and "does not fit" in err and "could not be answered" in err, f"a line over the context: {rc} {err!r}")

    # The model file shrinks under a running chat: a clear error, exit 1, no core dump.
    copy = os.path.join(tmp, "shrinking.gguf")
    with open(model, "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read())
    p = subprocess.Popen([STRATA, "chat", "-m", copy, "--gpu", "none", "--disk-io", "mmap", "-n", "4", "--temp", "0"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    p.stdin.write(b"hello\n")
    p.stdin.flush()
    p.stdout.readline()
    os.truncate(copy, 4096)
    try:
        _, err = p.communicate(b"hello again\nand again\n", timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    err = err.decode("utf-8", "replace")
    expect(p.returncode == 1 and "became shorter" in err, f"model truncated under chat: exit {p.returncode}, {err[-400:]!r}")


FAMILIES = {"writes": family_writes, "calibration": family_calibration, "reads": family_reads,
            "numbers": family_numbers, "chat": family_chat}


def main():
    global STRATA
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--family", choices=sorted(FAMILIES), action="append")
    args = ap.parse_args()
    STRATA = args.strata
    with tempfile.TemporaryDirectory(dir=os.environ.get("STRATA_TEST_DISK_DIR", "/var/tmp")) as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        model = os.path.join(tmp, "tiny.gguf")
        rc, _, err = run("synth", "--preset", "tiny", "-o", model)
        if not expect(rc == 0, f"synth: {err}"):
            return 1
        for name in args.family or sorted(FAMILIES):
            print(f"== {name}", flush=True)
            work = os.path.join(tmp, name)
            os.mkdir(work)
            FAMILIES[name](work, model)
    print(f"adversary: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""llama.cpp users' command lines run with strata after only the program name changes
(llama-cli -> strata run, llama-bench -> strata bench, llama-perplexity -> strata perplexity,
llama-server -> strata serve), on tiny synthetic models so that it is fast; then each flag
Strata maps is checked for its effect, not just accepted: -ngl and -ot in the placement,
-ctk/-ctv in the KV type, -ub in the batch, -r/--stop in the text, -st/-sys/-cnv in the
prompt, --no-mmap/--mlock in the residency, special tokens against the GGUF's own vocabulary
(read by gguf-py), and the errors: unknown flags with a suggestion, -hf, bare sizes in MiB.

usage: llama_habits_test.py --strata BUILD/bin/strata"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from cli_util import FAILURES, expect, gpu_mem

try:
    import gguf
except ImportError as e:  # pragma: no cover
    print(f"skipping: {e}")
    sys.exit(77)

STRATA = None


def run(args, stdin="", timeout=300):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, input=stdin, timeout=timeout,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr


# As llama.cpp's users type them; {M} is the model, {T} a text file. The first word is the
# llama.cpp program, replaced by the strata subcommand and nothing else.
LINES = [
    'llama-cli -m {M} -p "Hello" -n 8',
    'llama-cli -m {M} -p "Hello" -n 8 -ngl 99',
    'llama-cli -m {M} -p "Hello" -n 8 -ngl 0 -t 2',
    'llama-cli -m {M} -fa -p "Hello" -n 8',
    'llama-cli -m {M} -p "Hello" -n 8 -fa on',
    'llama-cli -m {M} -p "Hello" -n 8 -ctk q8_0 -ctv q8_0',
    'llama-cli -m {M} -p "Hello" -n 8 -c 512 -b 128 -ub 64',
    'llama-cli -m {M} -p "Hello" -n 8 --temp 0.7 --top-k 40 --top-p 0.9 --repeat-penalty 1.1 -s 42',
    'llama-cli -m {M} -p "Hello" -n 8 --min-p 0.05 --seed -1',
    'llama-cli -m {M} -p "Hello" -n 8 --no-mmap',
    'llama-cli -m {M} -p "Hello" -n 8 --mlock',
    'llama-cli -m {M} -p "Hello" -n 8 -ot "ffn_.*=CPU"',
    'llama-cli -m {M} -p "Hello" -n 8 -ngl 99 -ot "blk\\.[0-9]+\\.ffn_.*=CUDA0"',
    'llama-cli -m {M} -p "Hello" -n 8 -no-cnv',
    'llama-cli -m {M} -p "Hello" -n 8 -st',
    'llama-cli -m {M} -sys "You are brief." -p "Hello" -n 8 -st',
    'llama-cli -m {M} -cnv -p "Hello" -n 8',
    'llama-cli -m {M} -p "Hello" -n 8 -r "User:"',
    'llama-cli -m {M} -p "Hello" -n 8 --verbose-prompt',
    'llama-cli -m {M} -p "Hello\\nWorld" -n 8 -e',
    'llama-cli -m {M} -p "Hello" -n 8 --color',
    'llama-cli -m {M} -p "Hello" -n 8 --jinja -st',
    'llama-cli -m {M} -f {T} -n 8',
    'llama-cli -m {M} -p "Hello" --n-predict 8 --n-gpu-layers 99 --ctx-size 256 --threads 2 --batch-size 64',
    'llama-cli -m {M} -p "Hello" -n 8 --flash-attn auto --cache-type-k f16 --cache-type-v f16',
    'llama-cli -m {M} -p "Hello" -n 8 -i',
    'llama-cli -m {M} -p "Hello" -n 8 --stop "." --special',
    'llama-cli -m {M} -p "Hello" -n 8 --ignore-eos --temp 0',
    'llama-bench -m {M} -p 16 -n 4 -r 1',
    'llama-bench -m {M} -p 8,16 -n 4 -r 1 -t 1,2',
    'llama-bench -m {M} -p 16 -n 4 -r 1 -o json',
    'llama-bench -m {M} -p 16 -n 4 -r 1 -o csv',
    'llama-bench -m {M} -p 16 -n 4 -r 1 -o jsonl -ngl 0,99 -fa 1',
    'llama-bench -m {M} -p 16 -n 4 -r 1 -o md -ctk f16,q8_0 -mmp 0',
    'llama-bench -m {M} -p 16 -n 4 -r 1 -b 8 -ub 8 -fa 0,1',
    'llama-perplexity -m {M} -f {T} -c 128 -b 128 --chunks 2 -t 2',
    'llama-perplexity -m {M} -f {T} -c 128 --chunks 1',
]
PROGRAMS = {"llama-cli": "run", "llama-bench": "bench", "llama-perplexity": "perplexity",
            "llama-server": "serve"}
SERVER_LINES = [
    'llama-server -m {M} --port 0 -c 256 -np 2 -ngl 99 -fa on --jinja -a mymodel --host 127.0.0.1',
    'llama-server -m {M} --port 0 -cb --metrics -t 2 -ctk q8_0 -ctv q8_0',
]


def as_strata(line, model, text):
    words = shlex.split(line.replace("{M}", model).replace("{T}", text))
    return [PROGRAMS[words[0]], *words[1:]]


def user_lines(model, text):
    for line in LINES:
        args = as_strata(line, model, text)
        rc, out, err = run(args, stdin="")
        expect(rc == 0, f"`{line}`: exit {rc}: {err[-400:]!r}")
    for line in SERVER_LINES:
        args = as_strata(line, model, text)
        p = subprocess.Popen([STRATA, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = p.stdout.readline().strip().rsplit(" ", 1)[-1].rstrip("/")
            ok = expect(url.startswith("http://"), f"`{line}`: no URL, stderr {p.stderr.read()[-300:] if p.poll() is not None else ''!r}")
            if ok:
                models = json.load(urllib.request.urlopen(url + "/v1/models", timeout=30))
                if "-a mymodel" in line:
                    expect(models["data"][0]["id"] == "mymodel", f"`{line}`: -a gave {models}")
        finally:
            p.send_signal(signal.SIGTERM)
            expect(p.wait(timeout=60) == 0, f"`{line}`: serve exit {p.returncode}")
    print(f"{len(LINES) + len(SERVER_LINES)} llama.cpp command lines run")


def plan_json(model, *flags):
    rc, out, err = run(["plan", "-m", model, "--gpu", "fake", "--placement", "builtin", "-c", "256", "--json", *flags])
    expect(rc == 0, f"plan {flags}: exit {rc} {err!r}")
    return json.loads(out) if rc == 0 else None


def placement_effects(model):
    free = plan_json(model, "--gpu-mem", "512M")
    ngl = plan_json(model, "--gpu-mem", "512M", "-ngl", "2")
    if free and ngl:
        expect(all(r["attention"] == "GPU" for r in free["layers"] if r["layers"] != "output"),
               f"without -ngl every layer is on the GPU: {free['layers']}")
        for r in ngl["layers"]:
            if r["layers"] == "output":
                expect("GPU" not in r["ffn"], f"-ngl 2: the output on the GPU: {r}")
                continue
            on_gpu = r["last"] < 2
            expect((r["attention"] == "GPU") == on_gpu and (r["kv"] == "GPU") == on_gpu and
                   (r["ffn"] == "GPU") == on_gpu, f"-ngl 2: layers {r['layers']} placed {r}")
        expect(ngl["weights"]["gpu_bytes"] < free["weights"]["gpu_bytes"], "-ngl 2 keeps fewer bytes on the GPU")
    ot = plan_json(model, "--gpu-mem", "512M", "-ot", "ffn_(gate|up|down)=CPU")
    if ot:
        for r in ot["layers"]:
            if r["layers"] != "output":
                expect(r["ffn"] == "RAM" and r["attention"] == "GPU", f"-ot ffn=CPU: layers {r}")
    pinned = plan_json(model, "--gpu-mem", "512M", "-ngl", "0", "-ot", "blk\\.1\\.ffn_up=CUDA0")
    if pinned:
        gpu_rows = [r for r in pinned["layers"] if r.get("ffn") == "GPU"]
        expect([r["layers"] for r in gpu_rows] == ["1"], f"-ngl 0 -ot blk.1.ffn_up=CUDA0: {pinned['layers']}")
    # Sizes without a unit are MiB, said once.
    rc, out, err = run(["plan", "-m", model, "--gpu", "fake", "--placement", "builtin", "--gpu-mem", "300", "--json"])
    expect(rc == 0 and json.loads(out)["budgets"]["gpu_bytes"] == 300 << 20, f"--gpu-mem 300: {out[:200]!r}")
    expect(err.count("read as 300 MiB") == 1, f"--gpu-mem 300: no note: {err!r}")
    # KV type from -ctk/-ctv; mismatch refused.
    q8 = plan_json(model, "--gpu-mem", "512M", "-ctk", "q8_0", "-ctv", "q8_0")
    expect(q8 and q8["kv_type"] == "q8_0", f"-ctk q8_0: {q8 and q8['kv_type']}")
    # Plan output for people: headers, "layers 6" not "6-6", -o optional.
    rc, out, err = run(["plan", "-m", model, "--gpu", "fake", "--gpu-mem", gpu_mem(6), "--placement", "builtin", "-c", "256"])
    expect(rc == 0 and "layers" in out and "token time" in out and "KV cache" in out, f"plan table: {out!r} {err!r}")
    for line in out.splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and parts[0][0].isdigit():
            a, b = parts[0].split("-")
            expect(a != b, f"plan prints a one-layer run as a range: {line!r}")
    expect("-0." not in out and "saves -" not in out, f"plan prints a negative saving: {out!r}")


def text_effects(model, chat_model):
    gen = ["--temp", "0", "-n", "16"]
    base = ["-m", model, *gen]
    rc, plain, err = run(["run", *base, "-p", "Hello"])
    expect(rc == 0 and plain.strip(), f"run: {rc} {err!r}")
    text = plain.rstrip("\n")
    # --json: the same text, token counts and timings.
    rc, out, err = run(["run", *base, "-p", "Hello", "--json"])
    if expect(rc == 0, f"run --json: {err!r}"):
        j = json.loads(out)
        expect(j["text"] == text, f"run --json text {j['text']!r} != {text!r}")
        expect(0 < j["tokens"]["generated"] <= 16 and j["tokens"]["prompt"] > 0, f"run --json tokens {j['tokens']}")
        expect(j["timings"]["decode_tokens_per_s"] > 0, f"run --json timings {j['timings']}")
    # --ignore-eos: exactly -n tokens.
    rc, out, err = run(["run", "-m", model, "--temp", "0", "-n", "24", "-p", "Hello", "--json", "--ignore-eos"])
    expect(rc == 0 and json.loads(out)["tokens"]["generated"] == 24, f"--ignore-eos: {out[:200]!r} {err!r}")
    # -r / --stop: the text ends before the stop string, which is not printed.
    if len(text) > 6:
        stop = text[3:6]
        rc, out, err = run(["run", *base, "-p", "Hello", "-r", stop])
        expect(rc == 0 and out.rstrip("\n") == text[:text.index(stop)], f"-r {stop!r}: {out!r} from {text!r}")
        expect("stop: stop string" in err, f"-r: stop reason {err!r}")
    # -st / -sys / -cnv: the prompt goes through the chat template, so the answer differs.
    rc, chat, err = run(["run", "-m", chat_model, *gen, "-p", "Hello", "-st"])
    rc2, plain2, _ = run(["run", "-m", chat_model, *gen, "-p", "Hello"])
    expect(rc == 0 and rc2 == 0 and chat != plain2, f"-st answers as the plain completion: {chat!r}")
    rc, sys_chat, _ = run(["run", "-m", chat_model, *gen, "-p", "Hello", "-st", "-sys", "Answer in French."])
    expect(rc == 0 and sys_chat != chat, f"-sys changes nothing: {sys_chat!r}")
    rc, cnv, _ = run(["run", "-m", chat_model, *gen, "-cnv", "-p", "Hello"], stdin="")
    expect(rc == 0 and cnv == chat, f"-cnv with no more input answers as -st: {cnv!r} vs {chat!r}")
    # -e is the default: "\n" in -p is a newline; --no-escape keeps it.
    rc, _, err = run(["run", "-m", model, "-n", "0", "-p", "a\\nb", "--verbose-prompt"])
    expect("prompt: 'a\nb'" in err, f"escapes: {err!r}")
    rc, _, err = run(["run", "-m", model, "-n", "0", "-p", "a\\nb", "--verbose-prompt", "--no-escape"])
    expect("prompt: 'a\\nb'" in err, f"--no-escape: {err!r}")


def token_effects(model):
    vocab = [bytes(p).decode("utf-8", "replace") for p in
             (gguf.GGUFReader(model).fields["tokenizer.ggml.tokens"].parts[i] for i in
              gguf.GGUFReader(model).fields["tokenizer.ggml.tokens"].data)]
    special = "<|im_start|>"
    if special not in vocab:
        expect(False, f"{model} has no {special} token")
        return
    sid = vocab.index(special)
    rc, out, err = run(["tokenize", "-m", model, "-p", special + "user", "--json"])
    j = json.loads(out) if rc == 0 else {"ids": [], "pieces": []}
    expect(sid in j["ids"], f"tokenize parses {special} as id {sid}: {j}")
    expect("".join(j["pieces"]).endswith(special + "user"), f"tokenize pieces {j['pieces']}")
    expect(all(vocab[i] == p or vocab[i].replace("\u0120", " ") == p or len(p) <= 4 for i, p in zip(j["ids"], j["pieces"])),
           f"pieces against the vocabulary: {j}")
    rc, out, _ = run(["tokenize", "-m", model, "-p", special + "user", "--json", "--no-parse-special"])
    expect(rc == 0 and sid not in json.loads(out)["ids"], f"--no-parse-special still parses {special}")
    rc, out, _ = run(["tokenize", "-m", model, "-p", special + "user", "--ids"])
    expect(rc == 0 and json.loads(out) == j["ids"], f"--ids {out!r} vs {j['ids']}")
    # run parses special tokens by default; --no-special turns it off.
    rc, _, err = run(["run", "-m", model, "-n", "0", "-p", special, "--verbose-prompt"])
    expect(f"{sid:6d} -> '{special}'" in err, f"run does not parse {special} by default: {err!r}")
    rc, _, err = run(["run", "-m", model, "-n", "0", "-p", special, "--verbose-prompt", "--no-special"])
    expect(f"{sid:6d} -> " not in err, f"run --no-special still parses {special}: {err!r}")


def residency_effects(model):
    rc, _, err = run(["run", "-m", model, "-n", "2", "-p", "Hi", "-v", "--no-mmap"])
    expect(rc == 0 and "copied out of the file mapping" in err, f"--no-mmap: {err!r}")
    rc, _, err = run(["run", "-m", model, "-n", "2", "-p", "Hi", "-v", "--mlock"])
    expect(rc == 0 and "locked in memory" in err, f"--mlock: {err!r}")


def bench_effects(model):
    b = ["bench", "-m", model, "-n", "2", "-r", "1"]
    rc, out, err = run([*b, "-p", "8,16", "-t", "1,2", "-o", "json"])
    if expect(rc == 0, f"bench lists: {err!r}"):
        rows = json.loads(out)
        got = sorted((r["n_threads"], r["test"]) for r in rows)
        expect(got == sorted((t, n) for t in (1, 2) for n in ("pp8", "pp16", "tg2")), f"bench -p 8,16 -t 1,2: {got}")
    rc, out, err = run([*b, "-p", "16", "-o", "csv"])
    lines = out.strip().splitlines()
    expect(rc == 0 and lines[0].startswith("model_filename,") and len(lines) == 3, f"bench -o csv: {out!r}")
    rc, out, err = run([*b, "-p", "16", "-o", "jsonl", "-ctk", "f16,q8_0"])
    rows = [json.loads(l) for l in out.strip().splitlines()] if rc == 0 else []
    expect(sorted(r["type_k"] for r in rows) == ["f16", "f16", "q8_0", "q8_0"], f"bench -ctk list: {out!r}")
    rc, out, err = run([*b, "-p", "16", "-o", "json", "-ub", "8"])
    expect(rc == 0 and all(r["n_batch"] == 8 for r in json.loads(out)), f"bench -ub 8: {out[:300]!r}")
    # -d: each test after that many tokens in the context, named as llama-bench names it; the
    # context grows to hold the deepest test (no -c given).
    rc, out, err = run([*b, "-p", "8", "-d", "0,40", "-o", "json"])
    if expect(rc == 0, f"bench -d 0,40: {err!r}"):
        got = [(r["test"], r["n_depth"]) for r in json.loads(out)]
        expect(got == [("pp8", 0), ("tg2", 0), ("pp8 @ d40", 40), ("tg2 @ d40", 40)], f"bench -d 0,40: {got}")
    # Past the training context (2048 here), as llama-bench runs -d 8192 on a 4096-context model:
    # the test runs, with a note that says so.
    rc, out, err = run([*b, "-p", "0", "-d", "2100", "-o", "json"])
    if expect(rc == 0, f"bench -d 2100 past the training context: {err!r}"):
        got = [(r["test"], r["n_depth"]) for r in json.loads(out)]
        expect(got == [("tg2 @ d2100", 2100)] and "training context (2048)" in err, f"bench -d 2100: {got} {err!r}")


def calibration_json(model, tmp):
    """bench --fit records runs in a cache of its own; calibration --json reads them back."""
    cache = os.path.join(tmp, "cache")
    os.makedirs(os.path.join(cache, "strata"), exist_ok=True)
    shared = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "strata", "hardware.json")
    if os.path.exists(shared):
        with open(shared) as src, open(os.path.join(cache, "strata", "hardware.json"), "w") as dst:
            dst.write(src.read())
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    for n in ("2", "4"):
        p = subprocess.run([STRATA, "bench", "-m", model, "-p", "0", "-n", n, "-r", "1", "--fit", "--gpu", "none"],
                           capture_output=True, text=True, env=env, timeout=300)
        expect(p.returncode == 0, f"bench --fit: {p.stderr!r}")
    p = subprocess.run([STRATA, "calibration", "--json"], capture_output=True, text=True, env=env, timeout=60)
    if expect(p.returncode == 0, f"calibration --json: {p.stderr!r}"):
        j = json.loads(p.stdout)
        expect(len(j["runs"]) == 2 and all(r["measured_ts"] > 0 and r["fitted_to_others_ts"] > 0 for r in j["runs"]),
               f"calibration --json runs: {j}")


def error_effects(model):
    def refused(args, fragment):
        rc, out, err = run(args)
        expect(rc != 0 and rc < 128 and fragment in err and len(err.strip().splitlines()) == 1,
               f"{args}: exit {rc}, {err!r} lacks {fragment!r}")
    refused(["run", "-m", model, "-p", "Hi", "--temp2", "0.5"], "did you mean --temp?")
    refused(["run", "-m", model, "-p", "Hi", "-ngll", "3"], "did you mean -ngl?")
    refused(["bench", "-m", model, "--n-promt", "16"], "did you mean --n-prompt?")
    refused(["run", "-m", model, "-hf", "Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", "-p", "Hi"], "not both")
    refused(["run", "-m", model, "-p", "Hi", "-ctk", "q8_0", "-ctv", "f16"], "-ctv")
    refused(["run", "-m", model, "-p", "Hi", "-fa", "maybe"], "-fa")
    refused(["run", "-m", model, "-p", "Hi", "-ot", "ffn=TPU"], "unknown device")
    refused(["run", "-m", model, "-p", "Hi", "-ngl", "x"], "-ngl")
    refused(["run", "-m", model, "-c", "512", "-p", "Hi", "--plan", "/nonexistent.json", "-ngl", "2"], "-ngl")
    refused(["run", "-m", model, "-p", "Hi", "--rope-scaling", "longrope"], "--rope-scaling")
    refused(["run", "-m", model, "-p", "Hi", "--rope-scale", "0"], "--rope-scale")
    refused(["run", "-m", model, "-p", "Hi", "--rope-freq-base", "x"], "--rope-freq-base")
    refused(["run", "-m", model, "-p", "Hi", "--yarn-orig-ctx", "1024"], "--rope-scaling yarn")
    refused(["run", "-m", model, "-p", "Hi", "--rope-scale", "2", "--rope-freq-scale", "0.5"], "give one")
    refused(["run", "-m", model, "-p", "Hi", "--rope-freq-scale", "-1"], "--rope-freq-scale")
    yarn = ["run", "-m", model, "-p", "Hi", "--rope-scaling", "yarn", "--rope-scale", "2"]
    refused(yarn + ["--yarn-orig-ctx", "0"], "--yarn-orig-ctx")
    refused(yarn + ["--yarn-ext-factor", "x"], "--yarn-ext-factor")
    refused(yarn + ["--yarn-attn-factor", "0"], "--yarn-attn-factor")
    refused(yarn + ["--yarn-beta-fast", "-3"], "--yarn-beta-fast")
    refused(yarn + ["--yarn-beta-slow", "0"], "--yarn-beta-slow")


def rope_effects(model):
    """--rope-scaling/--rope-scale as llama.cpp takes them: the context the scaling covers is
    kept (the tiny model's training context is 2048); past it -c is lowered, with a note."""
    base = ["run", "-m", model, "-p", "Hi", "-n", "4", "--temp", "0", "--gpu", "none"]
    rc, _, err = run(base + ["-c", "4096"])
    expect(rc == 0 and "using 2048" in err, f"-c 4096 without scaling: exit {rc}, {err!r}")
    rc, _, err = run(base + ["-c", "4096", "--rope-scaling", "yarn", "--rope-scale", "2"])
    expect(rc == 0 and "training context" not in err, f"-c 4096 with yarn x2: exit {rc}, {err!r}")
    expect("RoPE from the command line: yarn x2 over 2048 positions" in err and "covers 4096 positions" in err,
           f"yarn x2: no note of the RoPE: {err!r}")
    rc, _, err = run(base + ["-c", "10000", "--rope-scale", "4", "--rope-freq-base", "20000"])
    expect(rc == 0 and "8192 with its RoPE scaling" in err and "using 8192" in err,
           f"-c 10000 with linear x4: exit {rc}, {err!r}")
    expect("RoPE from the command line: linear x4, base 20000; it covers 8192 positions" in err,
           f"linear x4: no note of the RoPE: {err!r}")


def main():
    global STRATA
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    STRATA = ap.parse_args().strata
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        chat_model = os.path.join(tmp, "tiny-qwen2.gguf")
        text = os.path.join(tmp, "text.txt")
        for preset, path in (("tiny", model), ("tiny-qwen2", chat_model)):
            rc, _, err = run(["synth", "--preset", preset, "-o", path, "--seed", "7"])
            if not expect(rc == 0, f"synth {preset}: {err}"):
                return 1
        with open(text, "w") as f:
            f.write("The quick brown fox jumps over the lazy dog. " * 16)
        run(["run", "-m", model, "-n", "1", "-p", "Hi"])  # the hardware profile, once
        user_lines(model, text)
        placement_effects(model)
        text_effects(model, chat_model)
        token_effects(chat_model)
        residency_effects(model)
        bench_effects(model)
        calibration_json(model, tmp)
        error_effects(model)
        rope_effects(model)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

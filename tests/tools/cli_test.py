#!/usr/bin/env python3
"""Integration test of the `strata` binary. `inspect` is checked against what gguf-py's
GGUFReader says about the same file (an independent reader); every error must be exactly one
line on stderr, prefixed "strata: error: ", with exit code 2 for usage errors and 1 otherwise.

usage: cli_test.py --strata BUILD/bin/strata --suite basic|default
The default suite inspects $STRATA_DEFAULT_MODEL (exit 77 = skipped when unset)."""
import argparse
import json
import os
import pty
import shutil
import subprocess
import sys
import tempfile

from cli_util import FAILURES, expect

try:
    import numpy as np
    import gguf
except ImportError as e:  # pragma: no cover
    print(f"skipping: {e}")
    sys.exit(77)

STRATA = None


def run(*args):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expect_error(args, code, fragment):
    rc, out, err = run(*args)
    lines = err.splitlines()
    expect(rc == code, f"{args}: exit {rc}, expected {code} (stderr: {err!r})")
    expect(len(lines) == 1, f"{args}: stderr has {len(lines)} lines: {err!r}")
    expect(err.startswith("strata: error: "), f"{args}: stderr {err!r}")
    expect(fragment.lower() in err.lower(), f"{args}: {fragment!r} not in {err!r}")


def reader_facts(path):
    """What gguf-py reads from the file: the oracle for inspect."""
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    get = lambda k, d=None: r.fields[k].contents() if k in r.fields else d
    tensors = [(t.name, t.tensor_type.name.lower(), [int(x) for x in t.shape], int(t.n_bytes))
               for t in r.tensors]
    return {
        "arch": arch,
        "n_layer": get(f"{arch}.block_count"),
        "n_embd": get(f"{arch}.embedding_length"),
        "n_ff": get(f"{arch}.feed_forward_length"),
        "n_head": get(f"{arch}.attention.head_count"),
        "n_head_kv": get(f"{arch}.attention.head_count_kv"),
        "n_ctx": get(f"{arch}.context_length"),
        "n_vocab": len(r.fields["tokenizer.ggml.tokens"].data),
        "bos": get("tokenizer.ggml.bos_token_id"),
        "eos": get("tokenizer.ggml.eos_token_id"),
        "file_type": get("general.file_type"),
        "chat_template": "tokenizer.chat_template" in r.fields,
        "tensors": tensors,
        "n_params": sum(int(np.prod(s)) for _, _, s, _ in tensors),
        "n_bytes": sum(b for _, _, _, b in tensors),
    }


def check_inspect(path):
    facts = reader_facts(path)
    rc, out, err = run("inspect", "-m", path)
    expect(rc == 0 and err == "", f"inspect {path}: rc {rc}, stderr {err!r}")
    for name, type_name, shape, _ in facts["tensors"]:
        line = next((l for l in out.splitlines() if l.split()[:1] == [name]), "")
        expect(type_name in line.lower().split(), f"text: {name} type {type_name} not in {line!r}")
        expect("[" + ", ".join(map(str, shape)) + "]" in line, f"text: {name} shape in {line!r}")
    expect(f"n_layer          {facts['n_layer']}" in out, "text: n_layer")
    expect(f"{facts['n_params']}" in out, "text: total params")

    rc, out, err = run("inspect", "-m", path, "--json")
    expect(rc == 0, f"inspect --json: rc {rc}")
    j = json.loads(out)
    h = j["hparams"]
    expect(j["general"]["architecture"] == facts["arch"], "json: arch")
    expect(j["general"]["file_type"] == facts["file_type"], "json: file_type")
    expect(h["n_layer"] == facts["n_layer"], "json: n_layer")
    expect(h["n_embd"] == facts["n_embd"], "json: n_embd")
    expect(h["n_ctx_train"] == facts["n_ctx"], "json: n_ctx_train")
    expect(h["n_vocab"] == facts["n_vocab"], "json: n_vocab")
    expect(h["n_ff"] == [facts["n_ff"]] * facts["n_layer"], "json: n_ff")
    expect(h["n_head"] == [facts["n_head"]] * facts["n_layer"], "json: n_head")
    expect(h["n_head_kv"] == [facts["n_head_kv"]] * facts["n_layer"], "json: n_head_kv")
    expect(j["tokenizer"]["special"]["bos"]["id"] == facts["bos"], "json: bos")
    expect(j["tokenizer"]["special"]["eos"]["id"] == facts["eos"], "json: eos")
    expect(j["tokenizer"]["has_chat_template"] == facts["chat_template"], "json: chat template")
    got = [(t["name"], t["type"].lower(), t["shape"], t["bytes"]) for t in j["tensors"]]
    expect(got == facts["tensors"], "json: tensor table differs from gguf-py's")
    expect(j["totals"]["n_params"] == facts["n_params"], "json: n_params")
    expect(j["totals"]["bytes"] == facts["n_bytes"], "json: bytes")
    expect(sum(t["bytes"] for t in j["types"]) == facts["n_bytes"], "json: bytes per type")
    return j


def check_moe_inspect(path, arch):
    """inspect's experts section against gguf-py's keys and tensor bytes."""
    j = check_inspect(path)
    r = gguf.GGUFReader(path)
    n_expert = r.fields[f"{arch}.expert_count"].contents()
    n_used = r.fields[f"{arch}.expert_used_count"].contents()
    n_layer = r.fields[f"{arch}.block_count"].contents()
    exps = sum(int(t.n_bytes) for t in r.tensors if t.name.endswith("_exps.weight"))
    e = j.get("experts", {})
    expect(e.get("n_expert") == n_expert and e.get("n_expert_used") == n_used, f"json experts: {e}")
    expect(e.get("expert_bytes") == exps, f"json expert bytes {e.get('expert_bytes')} != {exps}")
    expect(e.get("bytes_per_expert") == exps // (n_layer * n_expert), f"json bytes per expert: {e}")
    total = sum(int(t.n_bytes) for t in r.tensors)
    expect(e.get("active_bytes") == total - exps + exps // n_expert * n_used, f"json active bytes: {e}")
    rc, out, _ = run("inspect", "-m", path)
    expect(f"{n_expert} per layer, {n_used} active per token" in out, f"text: experts line in {out[:2000]!r}")


def basic_suite(tmp):
    rc, out, _ = run("--version")
    expect(rc == 0 and out.startswith("strata "), f"--version: {rc} {out!r}")
    rc, out, _ = run("synth", "--help")
    expect(rc == 0 and "llama2-70b" in out and "gemma3-1b" in out, "synth --help lists presets")

    tiny = os.path.join(tmp, "tiny.gguf")
    rc, out, err = run("synth", "--preset", "tiny", "-o", tiny, "--seed", "7")
    expect(rc == 0 and "wrote" in out, f"synth tiny: {rc} {out!r} {err!r}")
    expect(err == "", f"synth without a terminal draws no bar: {err!r}")
    check_inspect(tiny)
    for preset in ("tiny-qwen2", "tiny-qwen3", "tiny-gemma3"):
        path = os.path.join(tmp, preset + ".gguf")
        rc, _, err = run("synth", "--preset", preset, "-o", path, "--type", "q8_0")
        expect(rc == 0, f"synth {preset}: {err!r}")
        check_inspect(path)
    for preset, arch in (("tiny-qwen3moe", "qwen3moe"), ("tiny-mixtral", "llama")):  # mixtures of experts
        path = os.path.join(tmp, preset + ".gguf")
        rc, _, err = run("synth", "--preset", preset, "-o", path)
        expect(rc == 0, f"synth {preset}: {err!r}")
        check_moe_inspect(path, arch)
    for ftype in ("iq2_xs", "iq1_m", "tq2_0"):  # the low-bit types show in inspect as gguf-py reads them
        path = os.path.join(tmp, f"tiny-{ftype}.gguf")
        rc, _, err = run("synth", "--preset", "tiny", "-o", path, "--type", ftype)
        expect(rc == 0, f"synth tiny --type {ftype}: {err!r}")
        j = check_inspect(path)
        expect(ftype in [t["type"].lower() for t in j["types"]], f"inspect --json: {ftype} among the types")

    # Usage errors: exit 2.
    expect_error(["synth", "--preset", "llama9-1t", "-o", os.path.join(tmp, "x.gguf")], 2,
                 "unknown preset 'llama9-1t'")
    expect(not os.path.exists(os.path.join(tmp, "x.gguf")), "no file left by a failed synth")
    expect_error(["synth", "--preset", "tiny", "--type", "q3_k", "-o", os.path.join(tmp, "x.gguf")],
                 2, "q3_k")
    expect_error(["synth", "--preset", "tiny", "--layers", "0x", "-o", tiny], 2, "layers")
    expect_error(["inspect"], 2, "--model")
    expect_error([], 2, "subcommand")
    expect_error(["frobnicate"], 2, "frobnicate")
    # Other errors: exit 1.
    expect_error(["inspect", "-m", os.path.join(tmp, "missing.gguf")], 1, "missing.gguf")
    text = os.path.join(tmp, "notes.gguf")
    with open(text, "w") as f:
        f.write("these are not the weights you are looking for\n" * 10)
    expect_error(["inspect", "-m", text], 1, "notes.gguf")
    truncated = os.path.join(tmp, "truncated.gguf")
    with open(tiny, "rb") as f:
        data = f.read()
    for cut in (len(data) // 2, 2000, 10):
        with open(truncated, "wb") as f:
            f.write(data[:cut])
        expect_error(["inspect", "-m", truncated], 1, "truncated.gguf")
    mamba = os.path.join(tmp, "mamba.gguf")
    w = gguf.GGUFWriter(mamba, "mamba")
    w.add_block_count(2)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    expect_error(["inspect", "-m", mamba], 1, "architecture 'mamba' is not supported")

    # On a terminal, synth draws a progress bar on stderr.
    master, slave = pty.openpty()
    p = subprocess.Popen([STRATA, "synth", "--preset", "tiny", "-o", tiny], stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    bar = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        bar += chunk
    p.wait()
    os.close(master)
    expect(p.returncode == 0 and b"100.0%" in bar and b"synth [" in bar, f"progress bar: {bar[-200:]!r}")


def default_suite():
    path = os.environ.get("STRATA_DEFAULT_MODEL")
    if not path:
        print("skipping: STRATA_DEFAULT_MODEL is not set")
        sys.exit(77)
    j = check_inspect(path)
    h = j["hparams"]
    expect(j["general"]["architecture"] == "gemma3", "default: gemma3")
    expect(h["n_layer"] == 18 and h["n_embd"] == 640 and h["head_dim_k"] == 256, "default: shape")
    expect(h["n_head"] == [4] * 18 and h["n_head_kv"] == [1] * 18, "default: heads")
    expect(h["n_ff"] == [2048] * 18 and h["n_vocab"] == 262144, "default: n_ff, vocab")
    expect(h["sliding_window"] == 512 and h["tied_output"], "default: window, tied")
    expect(not j["tokenizer"]["has_chat_template"], "default: no chat template")
    expect(j["totals"]["n_tensors"] == 236, "default: 236 tensors")


def main():
    global STRATA
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--suite", choices=["basic", "default"], default="basic")
    args = ap.parse_args()
    STRATA = args.strata
    if args.suite == "default":
        default_suite()
    else:
        tmp = tempfile.mkdtemp(prefix="strata_cli_")
        try:
            basic_suite(tmp)
        finally:
            shutil.rmtree(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()

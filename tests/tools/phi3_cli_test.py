#!/usr/bin/env python3
"""Phi-3 end to end on a tiny synthetic `phi3` file (fused attn_qkv, gate/up in ffn_up): `strata
inspect` reads it (tensor table equal to gguf-py's reader, NEOX RoPE, the window on every layer),
`strata plan` places the fused tensors whole (no FFN split, DISK used under a small RAM budget),
and greedy text under that plan, and on the fake GPU, equals the CPU's.

usage: phi3_cli_test.py --strata BUILD/bin/strata"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import gguf

FAILURES = []
ENV = dict(os.environ)


def expect(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}")


def run(strata, *args):
    p = subprocess.run([strata, *args], capture_output=True, timeout=300, env=ENV)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_inspect(strata, model):
    rc, out, err = run(strata, "inspect", "-m", model, "--json")
    expect(rc == 0, f"inspect: {err}")
    if rc != 0:
        return
    j = json.loads(out)
    h = j["hparams"]
    expect(j["general"]["architecture"] == "phi3", f"architecture {j['general']}")
    expect(h["rope"]["style"] == "neox" and h["activation"] == "silu", f"rope/activation {h['rope']} {h['activation']}")
    expect(h["sliding_window"] == 64 and h["is_swa"] == [True] * 4, f"window {h['sliding_window']} {h['is_swa']}")
    ours = {t["name"]: (t["type"].lower(), list(t["shape"])) for t in j["tensors"]}
    theirs = {t.name: (t.tensor_type.name.lower(), [int(d) for d in t.shape])
              for t in gguf.GGUFReader(model).tensors}
    expect(ours == theirs, f"tensor table differs from gguf-py's: {sorted(set(ours.items()) ^ set(theirs.items()))[:6]}")
    expect(ours.get("blk.0.attn_qkv.weight") == ("q5_k", [256, 512]), f"attn_qkv {ours.get('blk.0.attn_qkv.weight')}")
    expect(ours.get("blk.0.ffn_up.weight", ("", []))[1] == [256, 1536], f"ffn_up {ours.get('blk.0.ffn_up.weight')}")
    expect(not any(".attn_q.weight" in n or "ffn_gate.weight" in n for n in ours), "unfused tensors in a phi3 file")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    strata = ap.parse_args().strata
    with tempfile.TemporaryDirectory() as tmp:
        ENV["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        ENV["STRATA_QUICK_PROFILE"] = "1"
        rc, out, _ = run(strata, "synth", "--help")
        expect(rc == 0 and "phi3-mini" in out and "tiny-phi3" in out, "synth --help lists the phi3 presets")
        model = os.path.join(tmp, "phi3.gguf")
        rc, _, err = run(strata, "synth", "--preset", "tiny-phi3", "-o", model)
        expect(rc == 0, f"synth: {err}")
        check_inspect(strata, model)

        gen = ["run", "-m", model, "-p", "the and of", "-n", "12", "--temp", "0", "-c", "128", "-t", "2", "--ignore-eos"]
        rc, reference, err = run(strata, *gen, "--gpu", "none")
        expect(rc == 0 and reference.strip(), f"run on the CPU: {err}")

        plan = os.path.join(tmp, "phi3.plan.json")
        rc, out, err = run(strata, "plan", "-m", model, "--gpu", "none", "--ram-mem", "1200K", "-c", "128", "-o", plan)
        expect(rc == 0 and "DISK" in out, f"plan: rc {rc} {out!r} {err!r}")
        if rc == 0:
            p = json.load(open(plan))
            names = {t["name"] for t in p["tensors"]}
            expect("blk.0.attn_qkv.weight" in names and "blk.0.ffn_up.weight" in names, f"fused tensors not placed: {names}")
            expect(not p.get("ffn_splits"), f"phi3's FFN was split: {p.get('ffn_splits')}")
            expect(p["bytes"]["disk"] > 0, f"nothing on disk: {p['bytes']}")
            rc, out, err = run(strata, *gen, "--gpu", "none", "--ram-mem", "1200K", "--plan", plan)
            expect(rc == 0 and out == reference, f"text under the DISK plan differs: {out!r} vs {reference!r} ({err})")
        for budget in ("512M", "1M"):
            rc, out, err = run(strata, *gen, "--gpu", "fake", "--gpu-mem", budget)
            expect(rc == 0 and out == reference, f"fake GPU {budget}: {out!r} vs {reference!r} ({err})")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

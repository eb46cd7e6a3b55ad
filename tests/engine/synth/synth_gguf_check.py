#!/usr/bin/env python3
"""Independent check of `strata synth` files with the `gguf` Python package (gguf-py):
the reader accepts them, metadata and tensor types follow the Q4_K_M / Q8_0 / F16 rules of
docs/FORMATS.md §2.6 (re-derived here) and the i-quant / ternary rule of type_rules.h (every matrix
of the type, the output matrix Q6_K), and gguf.quants.dequantize gives finite values with the
documented magnitudes (synth_model.h): matrices std 1/sqrt(fan_in), norms mean 1 std 0.02.

usage: synth_gguf_check.py --strata BUILD/bin/strata [--workdir DIR]
Exit 77 (ctest: skipped) when numpy or gguf is missing."""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import gguf
except ImportError as e:  # pragma: no cover
    print(f"skipping: {e}")
    sys.exit(77)

T = gguf.GGMLQuantizationType


# --type name -> (tensor type, general.file_type) of the single-type low-bit files.
LOW_BIT = {"iq2_xxs": (T.IQ2_XXS, 19), "iq2_xs": (T.IQ2_XS, 20), "iq2_s": (T.IQ2_S, 28),
           "iq3_xxs": (T.IQ3_XXS, 23), "iq3_s": (T.IQ3_S, 26), "iq1_s": (T.IQ1_S, 24),
           "iq1_m": (T.IQ1_M, 31), "tq1_0": (T.TQ1_0, 36), "tq2_0": (T.TQ2_0, 37)}
FILE_TYPES = {"q4_k_m": 15, "q8_0": 7, "f16": 1, **{k: v[1] for k, v in LOW_BIT.items()}}


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def expected_type(name, shape, n_layer, tied, arch, ftype):
    if len(shape) < 2:
        return T.F32
    if ftype == "f16":
        return T.F16
    if ftype == "q8_0":
        return T.Q8_0
    layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        t = T.Q6_K
    elif ftype in LOW_BIT:
        t = LOW_BIT[ftype][0]
    elif ".attn_v." in name:
        t = T.Q6_K if use_more_bits(layer, n_layer) else T.Q4_K
        if t == T.Q4_K and n_layer == 80 and arch in ("llama", "qwen2"):
            t = T.Q5_K
    elif ".ffn_down." in name:
        t = T.Q6_K if use_more_bits(layer, n_layer) else T.Q4_K
    else:
        t = T.Q4_K
    if shape[0] % 256 != 0:
        t = {T.Q6_K: T.Q8_0, T.Q5_K: T.Q5_1}.get(t, T.Q5_0)
    return t


def field(reader, key):
    f = reader.fields[key]
    return f.contents()


def check(strata, workdir, preset, ftype, layers=None, vocab=None):
    path = os.path.join(workdir, f"{preset}-{ftype}.gguf")
    cmd = [strata, "synth", "--preset", preset, "--type", ftype, "-o", path]
    if layers:
        cmd += ["--layers", str(layers)]
    if vocab:
        cmd += ["--vocab", str(vocab)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    r = gguf.GGUFReader(path)
    arch = field(r, "general.architecture")
    n_layer = field(r, f"{arch}.block_count")
    n_embd = field(r, f"{arch}.embedding_length")
    n_vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    if layers:
        assert n_layer == layers, (n_layer, layers)
    assert field(r, "general.file_type") == FILE_TYPES[ftype]
    assert field(r, "general.quantization_version") == 2
    assert len(r.fields["tokenizer.ggml.token_type"].data) == n_vocab
    names = {t.name for t in r.tensors}
    tied = "output.weight" not in names
    embd = next(t for t in r.tensors if t.name == "token_embd.weight")
    assert [int(x) for x in embd.shape] == [n_embd, n_vocab], embd.shape
    for t in r.tensors:
        shape = [int(x) for x in t.shape]
        want = expected_type(t.name, shape, n_layer, tied, arch, ftype)
        assert t.tensor_type == want, f"{preset} {ftype} {t.name}: {t.tensor_type.name} != {want.name}"
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        assert values.size == int(np.prod(shape)), t.name
        assert np.isfinite(values).all(), f"{t.name}: non-finite values"
        if "norm" in t.name:
            assert abs(values.mean() - 1.0) < 0.01 and abs(values.std() - 0.02) < 0.006, t.name
            continue
        if len(shape) < 2:  # biases
            assert abs(values.std() - 0.02) < 0.006, t.name
            continue
        fan_in = n_embd if t.name in ("token_embd.weight", "output.weight") else shape[0]
        want_std = 1.0 / np.sqrt(fan_in)
        assert abs(values.std() / want_std - 1.0) < 0.05, f"{t.name}: std {values.std()} vs {want_std}"
        assert abs(values.mean()) < 0.05 * want_std, f"{t.name}: mean {values.mean()}"
    os.remove(path)
    print(f"ok {preset} {ftype}: {len(r.tensors)} tensors, {n_layer} layers, vocab {n_vocab}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        for preset in ("tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"):
            check(args.strata, workdir, preset, "q4_k_m")
        check(args.strata, workdir, "tiny", "q8_0")
        check(args.strata, workdir, "tiny-gemma3", "f16")
        for ftype in LOW_BIT:
            check(args.strata, workdir, "tiny" if ftype != "iq2_xs" else "tiny-gemma3", ftype)
        check(args.strata, workdir, "tiny", "q4_k_m", layers=26)
        check(args.strata, workdir, "gemma3-1b", "q4_k_m", layers=2, vocab=1024)
        check(args.strata, workdir, "llama3-8b", "q4_k_m", layers=1, vocab=1024)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Oracle test: Strata's reference (de)quantizers (piped through quant_dequant_tool) against the
Python gguf package (gguf.quants, v0.19), compared bit for bit on float32 (NaN-safe).

  oracle_test.py random --tool PATH            random blocks of every type gguf can dequantize,
                                               plus the quantizers gguf also has, plus the traits
  oracle_test.py model --tool PATH [--model F] every tensor of a GGUF file (default: the path in
                                               $STRATA_DEFAULT_MODEL; skipped, exit 77, if unset)

The oracle is never our own code, except for Q8_1 and Q8_K, which gguf cannot dequantize: those
are checked against the small numpy reference below, written from the block definitions.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGML_QUANT_SIZES

SKIP = 77
CHUNK_BYTES = 32 << 20  # model tensors go through the tool in pieces of about this size

# Byte offsets of the f16 scale fields in one block (docs/FORMATS.md §2.1). Random bytes there could
# be inf/NaN, so they are replaced by finite halves.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ2_S: [0], T.IQ3_XXS: [0], T.IQ3_S: [0], T.IQ1_S: [0],
    T.TQ1_0: [52], T.TQ2_0: [64],
}
# IQ1_M spreads its f16 d over the top nibbles of its four scale words (bytes 48..55).
IQ1_M_SCALE_WORDS = 48
# Halves that scale fields must also survive: ±0, subnormals, negative, largest finite.
SPECIAL_HALVES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0xBC00, 0xC500, 0x7BFF, 0xFBFF]

# Q8_1's real (ggml) block is 36 bytes: half d, half s, int8 qs[32]. gguf-py says 40.
Q8_1_TYPE_SIZE = 36


def tool_run(tool, args, data=b""):
    p = subprocess.run([tool, *args], input=data, capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)} failed ({p.returncode}): {p.stderr.decode().strip()}")
    return p.stdout


def tool_dequantize(tool, qtype, raw):
    return np.frombuffer(tool_run(tool, ["dequantize", qtype.name], raw.tobytes()), dtype=np.float32)


def first_mismatch(ours, theirs):
    """Index of the first float32 whose bits differ (NaN == NaN), or None."""
    ours = np.asarray(ours, dtype=np.float32).reshape(-1)
    theirs = np.asarray(theirs, dtype=np.float32).reshape(-1)
    if ours.size != theirs.size:
        return f"size {ours.size} != {theirs.size}"
    same = (ours.view(np.uint32) == theirs.view(np.uint32)) | (np.isnan(ours) & np.isnan(theirs))
    bad = np.flatnonzero(~same)
    return None if bad.size == 0 else int(bad[0])


def describe(ours, theirs, i):
    if isinstance(i, str):
        return i
    o, t = np.float32(ours.reshape(-1)[i]), np.float32(theirs.reshape(-1)[i])
    return f"element {i}: ours {o!r} (0x{o.view(np.uint32):08x}) vs oracle {t!r} (0x{t.view(np.uint32):08x})"


# ---- independent numpy references for the two activation formats gguf cannot dequantize
def ref_dequantize_q8_1(raw):
    blocks = raw.reshape(-1, Q8_1_TYPE_SIZE)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)  # s at 2:4 is not a value
    qs = blocks[:, 4:].copy().view(np.int8).astype(np.float32)
    return (d * qs).reshape(-1)


def ref_dequantize_q8_k(raw):
    blocks = raw.reshape(-1, GGML_QUANT_SIZES[T.Q8_K][1])
    d = blocks[:, 0:4].copy().view(np.float32)  # float32 d, then int8 qs[256], int16 bsums[16]
    qs = blocks[:, 4:260].copy().view(np.int8).astype(np.float32)
    return (d * qs).reshape(-1)


def oracle_dequantize(qtype, raw):
    with np.errstate(all="ignore"):  # huge random scales overflow to inf on both sides: expected
        return _oracle_dequantize(qtype, raw)


def _oracle_dequantize(qtype, raw):
    if qtype == T.Q8_1:
        return ref_dequantize_q8_1(raw)
    if qtype == T.Q8_K:
        return ref_dequantize_q8_k(raw)
    return gguf.quants.dequantize(raw, qtype).reshape(-1)


# ---- random mode
def random_scales(rng, n):
    """Realistic finite halves of both signs over many decades, a few of them special."""
    mag = 10.0 ** rng.uniform(-7, 2, n)
    h = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float16).view(np.uint16)
    idx = rng.choice(n, size=min(n, 4 * len(SPECIAL_HALVES)), replace=False)
    h[idx] = np.resize(np.array(SPECIAL_HALVES, dtype=np.uint16), idx.size)
    return h


def random_blocks(rng, qtype, n_blocks):
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    if qtype == T.Q8_1:
        type_size = Q8_1_TYPE_SIZE
    if qtype in (T.F16, T.BF16):  # every 16-bit pattern (NaN, inf, subnormals), then random ones
        return np.concatenate([np.arange(65536, dtype=np.uint16),
                               rng.integers(0, 65536, n_blocks, dtype=np.uint16)]).view(np.uint8)
    blocks = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    for off in F16_FIELDS.get(qtype, []):
        blocks[:, off:off + 2] = random_scales(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    if qtype == T.IQ1_M:
        words = blocks[:, IQ1_M_SCALE_WORDS:].copy().view(np.uint16)  # [n_blocks, 4]
        d = random_scales(rng, n_blocks)
        for w in range(4):
            words[:, w] = (words[:, w] & 0x0FFF) | (((d >> (4 * w)) & 0xF) << 12)
        blocks[:, IQ1_M_SCALE_WORDS:] = words.view(np.uint8)
    if qtype == T.Q8_K:
        d = (10.0 ** rng.uniform(-8, 2, n_blocks) * rng.choice([-1.0, 1.0], n_blocks)).astype(np.float32)
        d[:4] = [0.0, -0.0, 1e-40, -3e-39]  # zeros and float32 subnormals
        blocks[:, 0:4] = d.view(np.uint8).reshape(n_blocks, 4)
    return blocks.reshape(-1)


DEQUANT_TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
                 T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.IQ4_NL, T.IQ4_XS, T.MXFP4,
                 T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M, T.TQ1_0, T.TQ2_0]
# Quantizers gguf also implements (bit-identical to ggml's reference in both).
QUANT_TYPES = [T.F16, T.BF16, T.Q4_0, T.Q5_0, T.Q8_0, T.TQ1_0, T.TQ2_0]
# Quantizers of Strata's own (gguf has none): their blocks must dequantize in gguf to our values,
# with an NMSE on Gaussian rows below these bounds (measured 0.107, 0.082, 0.057, 0.032, 0.017,
# 0.199, 0.172 at 64 blocks; the Gaussian rate-distortion floors at 2.06 / 2.31 / 2.5 / 3.06 /
# 3.44 / 1.56 / 1.75 bits are 0.057, 0.041, 0.031, 0.014, 0.009, 0.115, 0.088).
IQ_QUANT_NMSE = {T.IQ2_XXS: 0.12, T.IQ2_XS: 0.095, T.IQ2_S: 0.067, T.IQ3_XXS: 0.04, T.IQ3_S: 0.021,
                 T.IQ1_S: 0.22, T.IQ1_M: 0.19}


def random_floats(rng, n_rows, row):
    """Rows of float32 blocks of 32: Gaussians at many scales, constants, outliers, tiny, zeros."""
    x = rng.standard_normal((n_rows * row // 32, 32)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-4, 3, (x.shape[0], 1))).astype(np.float32)
    x[0::7] = np.float32(rng.uniform(-5, 5))          # constant blocks
    x[1::7, 5] = np.float32(3e4)                      # a huge outlier
    x[2::7, 9] = np.float32(-3e4)
    x[3::7] *= np.float32(1e-6)                       # f16-subnormal scales
    x[4::11] = 0.0                                    # all-zero blocks
    return x.reshape(n_rows, row)


def check_traits(tool):
    """Our traits table against gguf's GGML_QUANT_SIZES and type enum."""
    ours = {}
    for line in tool_run(tool, ["types"]).decode().split("\n"):
        if line:
            id_, name, block, size, _, _ = line.split()
            ours[int(id_)] = (name, int(block), int(size))
    errors = []
    for qtype in T:
        want = GGML_QUANT_SIZES[qtype]
        if qtype == T.Q8_1:
            want = (want[0], Q8_1_TYPE_SIZE)  # gguf-py's 40 is wrong; ggml's block is 36 bytes
        got = ours.get(int(qtype))
        if got is None or got[0].upper() != qtype.name or got[1:] != want:
            errors.append(f"{qtype.name} (id {int(qtype)}): ours {got}, gguf {want}")
    extra = sorted(set(ours) - {int(q) for q in T})
    if extra:
        errors.append(f"ids unknown to gguf: {extra}")
    print(f"traits: {len(ours)} ids checked against gguf.GGML_QUANT_SIZES")
    return errors


def run_random(tool):
    rng = np.random.default_rng(20240607)
    errors = check_traits(tool)
    for qtype in DEQUANT_TYPES:
        block_size = GGML_QUANT_SIZES[qtype][0]
        raw = random_blocks(rng, qtype, 4099 if block_size == 32 else 1031 if block_size == 256 else 8191)
        ours = tool_dequantize(tool, qtype, raw)
        theirs = oracle_dequantize(qtype, raw)
        bad = first_mismatch(ours, theirs)
        oracle = "numpy ref" if qtype in (T.Q8_1, T.Q8_K) else "gguf"
        print(f"dequantize {qtype.name:7s} {ours.size:8d} values vs {oracle}: {'ok' if bad is None else 'MISMATCH'}")
        if bad is not None:
            errors.append(f"dequantize {qtype.name}: {describe(ours, theirs, bad)}")
    for qtype in QUANT_TYPES:
        if qtype in (T.F16, T.BF16):  # every float32 range: random bits, NaN and inf included
            x = rng.integers(0, 2**32, (97, 256), dtype=np.uint32).view(np.float32)
        else:
            x = random_floats(rng, 97, 256)
        ours = np.frombuffer(tool_run(tool, ["quantize", qtype.name], x.tobytes()), dtype=np.uint8)
        with np.errstate(all="ignore"):  # random float32 bits overflow f16: expected
            theirs = gguf.quants.quantize(x, qtype).view(np.uint8).reshape(-1)
        if qtype == T.F16:  # half NaN payloads may differ between numpy builds: NaN-ness only
            o, t = ours.view(np.uint16), theirs.view(np.uint16)
            nan = lambda h: ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
            same = (o == t) | (nan(o) & nan(t))
        else:
            same = ours == theirs if ours.size == theirs.size else np.array([False])
        ok = bool(np.all(same))
        print(f"quantize   {qtype.name:7s} {x.size:8d} values vs gguf: {'ok' if ok else 'MISMATCH'}")
        if not ok:
            i = int(np.flatnonzero(~same)[0]) if same.size > 1 else "size"
            errors.append(f"quantize {qtype.name}: first differing byte/half {i}")
    errors += check_iq_quantizers(tool, rng)
    return errors


def check_iq_quantizers(tool, rng):
    errors = []
    x = rng.standard_normal((24, 256)).astype(np.float32)
    x[1] *= np.float32(1e-3)   # small and large scales
    x[2] *= np.float32(300.0)
    x[3, :128] = 0.0           # a block with one all-zero half, then an all-zero block
    x[4] = 0.0
    for qtype, bound in IQ_QUANT_NMSE.items():
        raw = np.frombuffer(tool_run(tool, ["quantize", qtype.name], x.tobytes()), dtype=np.uint8)
        ours = tool_dequantize(tool, qtype, raw)
        theirs = oracle_dequantize(qtype, raw.reshape(x.shape[0], -1))
        bad = first_mismatch(ours, theirs)
        rows = [r for r in range(x.shape[0]) if r != 4]
        err = (x - ours.reshape(x.shape))[rows]
        nmse = float(np.sum(err.astype(np.float64) ** 2) / np.sum(x[rows].astype(np.float64) ** 2))
        zero_ok = not np.any(ours.reshape(x.shape)[4])
        ok = bad is None and nmse < bound and zero_ok
        print(f"quantize   {qtype.name:7s} {x.size:8d} values, gguf dequantizes them to ours: "
              f"{'yes' if bad is None else 'NO'}, nmse {nmse:.4f} (bound {bound}){'' if zero_ok else ', zero row not zero'}")
        if not ok:
            errors.append(f"quantize {qtype.name}: " + (describe(ours, theirs, bad) if bad is not None else
                                                         f"nmse {nmse:.4f} >= {bound} or zero row not zero"))
    return errors


# ---- model mode
def run_model(tool, path):
    t0 = time.time()
    reader = gguf.GGUFReader(path)
    t_open = time.time() - t0
    errors, per_type = [], {}
    for tensor in reader.tensors:
        qtype = T(tensor.tensor_type)
        rows = tensor.data.view(np.uint8)
        rows = rows.reshape(-1, rows.shape[-1])  # [n_rows, bytes per row]
        step = max(1, CHUNK_BYTES // rows.shape[1])
        for r0 in range(0, rows.shape[0], step):
            chunk = np.ascontiguousarray(rows[r0:r0 + step])
            ours = tool_dequantize(tool, qtype, chunk)
            theirs = oracle_dequantize(qtype, chunk)
            bad = first_mismatch(ours, theirs)
            if bad is not None:
                errors.append(f"{tensor.name} ({qtype.name}) rows {r0}..: {describe(ours, theirs, bad)}")
                break
        n, c = per_type.get(qtype.name, (0, 0))
        per_type[qtype.name] = (n + int(tensor.n_elements), c + 1)
    summary = ", ".join(f"{k} {c} tensors/{n} values" for k, (n, c) in sorted(per_type.items()))
    print(f"model {path}: {len(reader.tensors)} tensors ({summary})")
    print(f"open {t_open:.1f}s, total {time.time() - t0:.1f}s")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["random", "model"])
    ap.add_argument("--tool", required=True, help="path of quant_dequant_tool")
    ap.add_argument("--model", help="GGUF file (model mode; default: $STRATA_DEFAULT_MODEL)")
    args = ap.parse_args()
    if args.mode == "random":
        errors = run_random(args.tool)
    else:
        path = args.model or os.environ.get("STRATA_DEFAULT_MODEL")
        if not path:
            print("SKIP: STRATA_DEFAULT_MODEL is not set (scripts/default-model.sh prints the path)")
            return SKIP
        if not os.path.isfile(path):
            print(f"FAIL: model file '{path}' does not exist")
            return 1
        errors = run_model(args.tool, path)
    for e in errors:
        print("FAIL:", e)
    print("oracle:", "FAILED" if errors else "all bit-identical")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

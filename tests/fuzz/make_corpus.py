#!/usr/bin/env python3
# Writes the seed corpus of gguf_fuzz into tests/fuzz/corpus/ (or the folder given): a handful
# of tiny valid GGUF files, each under 4 KiB, made by gguf-py so the seeds do not come from the
# code under test. Deterministic: running it again gives the same bytes.
import os
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as VT, GGMLQuantizationType as QT


def write(path, build, alignment=None):
    w = gguf.GGUFWriter(path, "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = os.path.getsize(path)
    assert size < 4096, f"{path} is {size} bytes"


def ramp(n, dtype):
    return (np.arange(n) % 251).astype(dtype)


def minimal(w):
    w.add_tensor("output_norm.weight", np.linspace(-1, 1, 4, dtype=np.float32))


def kv_types(w):
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 65000)
    w.add_int16("t.i16", -300)
    w.add_uint32("t.u32", 18)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 1e-6)
    w.add_uint64("t.u64", 2**40)
    w.add_int64("t.i64", -(2**40))
    w.add_float64("t.f64", 10000.0)
    w.add_bool("t.bool", True)
    w.add_string("t.string", "gemma3")
    w.add_array("t.bools", [True, False])
    w.add_key_value("t.u16s", [1, 2, 3], VT.ARRAY, sub_type=VT.UINT16)
    w.add_key_value("t.f64s", [0.5], VT.ARRAY, sub_type=VT.FLOAT64)


def quant_tensors(w):
    w.add_tensor("blk.0.attn_q.weight", ramp(2 * 18, np.uint8).reshape(2, 18), raw_dtype=QT.Q4_0)
    w.add_tensor("blk.0.attn_k.weight", ramp(34, np.uint8).reshape(1, 34), raw_dtype=QT.Q8_0)
    w.add_tensor("blk.0.ffn_up.weight", ramp(144, np.uint8).reshape(1, 144), raw_dtype=QT.Q4_K)
    w.add_tensor("blk.0.ffn_down.weight", ramp(210, np.uint8).reshape(1, 210), raw_dtype=QT.Q6_K)
    w.add_tensor("blk.0.attn_norm.weight", np.ones((2, 8), dtype=np.float16))


def aligned64(w):
    w.add_uint32("llama.block_count", 1)
    w.add_tensor("a", ramp(5, np.float32))
    w.add_tensor("b", ramp(3 * 2 * 2, np.int32).reshape(3, 2, 2))


def tokenizer(w):
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"\u2581t{i}" for i in range(16)]
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", [float(-i) for i in range(len(tokens))])
    w.add_array("tokenizer.ggml.token_type", [3, 3, 3, 2] + [1] * 16)
    w.add_uint32("tokenizer.ggml.bos_token_id", 2)
    w.add_tensor("token_embd.weight", ramp(32 * len(tokens), np.float16).reshape(len(tokens), 32))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "minimal.gguf"), minimal)
    write(os.path.join(out, "kv_types.gguf"), kv_types)
    write(os.path.join(out, "quant_tensors.gguf"), quant_tensors)
    write(os.path.join(out, "aligned64.gguf"), aligned64, alignment=64)
    write(os.path.join(out, "tokenizer.gguf"), tokenizer)
    # A v2 file: the same layout as v3 for little-endian files, only the version differs.
    with open(os.path.join(out, "minimal.gguf"), "rb") as f:
        data = bytearray(f.read())
    data[4:8] = (2).to_bytes(4, "little")
    with open(os.path.join(out, "minimal_v2.gguf"), "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()

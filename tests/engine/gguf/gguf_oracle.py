#!/usr/bin/env python3
# Cross-checks Strata's GGUF reader and writer against an independent implementation, the
# `gguf` Python package (gguf-py): gguf_dump (C++) prints what Strata reads or wrote, and
# gguf.GGUFReader must see exactly the same keys, types, values and tensor table.
#   gguf_oracle.py python-writes DUMP WORKDIR   gguf-py writes (single, aligned, split); we read
#   gguf_oracle.py strata-writes DUMP WORKDIR   GgufWriter writes; gguf-py reads
#   gguf_oracle.py default-model DUMP           $STRATA_DEFAULT_MODEL (exit 77 = skip if unset)
import json
import os
import subprocess
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as VT, GGMLQuantizationType as QT

SKIP = 77
TYPE_NAMES = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16",
              VT.UINT32: "u32", VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool",
              VT.STRING: "string", VT.ARRAY: "array", VT.UINT64: "u64", VT.INT64: "i64",
              VT.FLOAT64: "f64"}


def fnv1a(data: bytes) -> int:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def run_dump(dump, *args):
    out = subprocess.run([dump, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def compare_shard(ours, errors, with_offsets=True):
    path = ours["path"]
    r = gguf.GGUFReader(path)
    where = os.path.basename(path)

    def check(cond, what):
        if not cond:
            errors.append(f"{where}: {what}")

    check(int(r.fields["GGUF.version"].parts[0][0]) == ours["version"], "version differs")
    check(int(r.alignment) == ours["alignment"], f"alignment {r.alignment} vs {ours['alignment']}")
    if with_offsets and ours["tensors"]:
        check(r.data_offset == ours["data_offset"],
              f"data offset {r.data_offset} vs ours {ours['data_offset']}")

    fields = [f for name, f in r.fields.items() if not name.startswith("GGUF.")]
    check(len(fields) == len(ours["kv"]), f"{len(fields)} keys vs ours {len(ours['kv'])}")
    for f, kv in zip(fields, ours["kv"]):
        key = kv["key"]
        check(f.name == key, f"key {f.name!r} vs ours {key!r}")
        check(TYPE_NAMES[f.types[0]] == kv["type"], f"{key}: type {f.types[0]} vs {kv['type']}")
        if f.types[0] == VT.ARRAY:
            elem = TYPE_NAMES[f.types[-1]] if len(f.types) > 1 else None
            check(elem == kv["elem_type"], f"{key}: element type {elem} vs {kv['elem_type']}")
            theirs = f.contents() if len(f.data) else []
        else:
            theirs = f.contents()
        check(theirs == kv["value"], f"{key}: value {str(theirs)[:200]} vs ours "
                                     f"{str(kv['value'])[:200]}")

    check(len(r.tensors) == len(ours["tensors"]),
          f"{len(r.tensors)} tensors vs ours {len(ours['tensors'])}")
    for t, ot in zip(r.tensors, ours["tensors"]):
        name = ot["name"]
        check(t.name == name, f"tensor {t.name!r} vs ours {name!r}")
        check(int(t.tensor_type) == ot["type"], f"{name}: type {int(t.tensor_type)} vs {ot['type']}")
        check([int(n) for n in t.shape] == ot["ne"], f"{name}: shape {list(t.shape)} vs {ot['ne']}")
        check(int(t.n_bytes) == ot["n_bytes"], f"{name}: {t.n_bytes} bytes vs {ot['n_bytes']}")
        if with_offsets:
            rel = int(t.data_offset) - int(r.data_offset)
            check(rel == ot["offset"], f"{name}: offset {rel} vs ours {ot['offset']}")
        if "fnv1a" in ot:
            raw = bytes(r.data[t.data_offset:t.data_offset + t.n_bytes])
            check(fnv1a(raw) == ot["fnv1a"], f"{name}: data bytes differ")
    return len(fields), len(r.tensors)


def python_file(path, alignment=None, split_max_tensors=0):
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(path, "llama", split_max_tensors=split_max_tensors)
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_name("oracle \u2581 test")
    w.add_uint8("t.u8", 255)
    w.add_int8("t.i8", -128)
    w.add_uint16("t.u16", 65535)
    w.add_int16("t.i16", -32768)
    w.add_uint32("t.u32", 4294967295)
    w.add_int32("t.i32", -7)
    w.add_float32("t.f32", 0.1)
    w.add_uint64("t.u64", 2**64 - 1)
    w.add_int64("t.i64", -(2**63))
    w.add_float64("t.f64", 1e-300)
    w.add_bool("t.bool", True)
    w.add_string("t.empty", "")
    w.add_array("tokenizer.ggml.tokens", ["<pad>", "<eos>", "\u2581the", ""])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25])
    w.add_array("tokenizer.ggml.token_type", [1, 3, 6])
    w.add_array("t.bools", [True, False, True])
    w.add_key_value("t.u16s", [1, 65535], VT.ARRAY, sub_type=VT.UINT16)
    w.add_key_value("t.i64s", [-(2**63), 5], VT.ARRAY, sub_type=VT.INT64)
    w.add_key_value("t.f64s", [0.5, -3.0], VT.ARRAY, sub_type=VT.FLOAT64)
    w.add_key_value("t.u8s", [0, 200], VT.ARRAY, sub_type=VT.UINT8)
    w.add_tensor("token_embd.weight", rng.integers(0, 256, (3, 144), dtype=np.uint8),
                 raw_dtype=QT.Q4_K)  # 144 bytes a row = one 256-block: ne = [256, 3]
    w.add_tensor("blk.0.attn_q.weight", rng.integers(0, 256, (2, 34), dtype=np.uint8),
                 raw_dtype=QT.Q8_0)
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(7).astype(np.float32))
    w.add_tensor("blk.0.ffn_up.weight", rng.standard_normal((2, 64)).astype(np.float16))
    w.add_tensor("blk.0.four_d", rng.standard_normal((2, 1, 3, 4)).astype(np.float32))
    w.add_tensor("rope_ids", rng.integers(-9, 9, 5).astype(np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def python_writes(dump, workdir, errors):
    os.makedirs(workdir, exist_ok=True)
    for name, kwargs in [("py32.gguf", {}), ("py64.gguf", {"alignment": 64})]:
        path = os.path.join(workdir, name)
        python_file(path, **kwargs)
        for shard in run_dump(dump, path, "--hash"):
            compare_shard(shard, errors)
    split = os.path.join(workdir, "pysplit.gguf")
    python_file(split, split_max_tensors=2)  # 6 tensors -> 3 shards
    shards = run_dump(dump, os.path.join(workdir, "pysplit-00002-of-00003.gguf"), "--hash")
    if len(shards) != 3:
        errors.append(f"split model: ModelFile opened {len(shards)} shards, expected 3")
    for shard in shards:
        compare_shard(shard, errors)


def strata_writes(dump, workdir, errors):
    os.makedirs(workdir, exist_ok=True)
    for alignment in (32, 64, 128):
        path = os.path.join(workdir, f"strata{alignment}.gguf")
        for shard in run_dump(dump, "--write-sample", path, str(alignment)):
            compare_shard(shard, errors, with_offsets=False)
        # And what we read back matches what gguf-py reads, offsets included.
        for shard in run_dump(dump, path, "--hash"):
            compare_shard(shard, errors)


def default_model(dump, errors):
    path = os.environ.get("STRATA_DEFAULT_MODEL", "")
    if not path:
        print("STRATA_DEFAULT_MODEL is not set: skipped")
        sys.exit(SKIP)
    shards = run_dump(dump, path)
    for shard in shards:
        n_kv, n_tensors = compare_shard(shard, errors)
        print(f"{os.path.basename(shard['path'])}: v{shard['version']}, {n_kv} keys, "
              f"{n_tensors} tensors agree with gguf-py")


def main():
    mode, dump = sys.argv[1], sys.argv[2]
    errors = []
    if mode == "python-writes":
        python_writes(dump, sys.argv[3], errors)
    elif mode == "strata-writes":
        strata_writes(dump, sys.argv[3], errors)
    elif mode == "default-model":
        default_model(dump, errors)
    else:
        sys.exit(f"unknown mode {mode}")
    for e in errors:
        print("MISMATCH", e)
    if errors:
        sys.exit(1)
    print(f"{mode}: OK")


if __name__ == "__main__":
    main()

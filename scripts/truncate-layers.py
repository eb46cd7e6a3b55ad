#!/usr/bin/env python3
"""Writes the first N blocks of a GGUF model (with its embeddings, final norm and output matrix
and all of its metadata, block_count set to N) to a new file: a draft model with exactly the
target's vocabulary, for measuring speculative decoding (`strata run -md`) where no smaller
model of the same family exists. No training: the truncated model is a weak draft. Uses the
`gguf` package (reader and writer), not Strata.

usage: truncate-layers.py SRC.gguf DST.gguf N"""
import re
import sys

from gguf import GGUFReader, GGUFValueType, GGUFWriter


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reader = GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    blocks = reader.fields[f"{arch}.block_count"].contents()
    if not 1 <= n <= blocks:
        print(f"truncate-layers: N must be in 1..{blocks} (the blocks of {src}), got {n}", file=sys.stderr)
        return 2
    writer = GGUFWriter(dst, arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in ("general.architecture", "general.alignment"):
            continue
        if field.name == f"{arch}.block_count":
            writer.add_uint32(field.name, n)
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    kept = []
    for t in reader.tensors:
        m = re.match(r"blk\.(\d+)\.", t.name)
        if m and int(m.group(1)) >= n:
            continue
        kept.append(t)
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in kept:
        writer.write_tensor_data(t.data)
    writer.close()
    print(f"{dst}: {n} of {blocks} blocks, {len(kept)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())

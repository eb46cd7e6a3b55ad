"""Makes the logits oracle fixture for a GGUF model with Hugging Face transformers.

transformers reads the GGUF (dequantizing every tensor through the `gguf` package and undoing
the converter's changes), and runs an fp32 forward pass on the CPU. For each prompt we store
the token ids, the top-20 logits at every position, and a 64-token greedy continuation (decoded
with transformers' own KV cache, no EOS stop), so the C++ test can check top-1
agreement, logit error and the continuation without any of our code in the reference.

For synthetic models (`strata synth`, random weights and vocabulary) pass --random-ids: the
prompts are then 8 fixed pseudo-random id sequences of 64 tokens instead of the texts below.

Usage (not run by CI; the fixture is committed):
  python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch transformers accelerate \
      gguf==0.19.0 sentencepiece protobuf
  /tmp/hfenv/bin/python make_logits_fixture.py MODEL.gguf fixtures/NAME.json [--random-ids]
"""
import hashlib
import json
import os
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    "The history of the printing press begins in the fifteenth century, in the German city of "
    "Mainz, when the goldsmith Johannes Gutenberg "
    "combined movable metal type, oil-based ink and a screw press adapted from wine making. Within "
    "fifty years presses were running in more than two hundred European cities, and the price of "
    "books fell so quickly that",
    "import heapq\nfrom typing import List\n\n\ndef merge_sorted(a: List[int], b: List[int]) -> List[int]:\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n"
    "    result = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n"
    "            result.append(a[i])\n            i += 1\n        else:\n",
    "Almost all life on Earth depends on it. Photosynthesis is the process by which green plants, algae and some bacteria convert light "
    "energy into chemical energy. In the light-dependent reactions, water molecules are split, "
    "releasing oxygen, while the energy captured by chlorophyll is stored in ATP and NADPH. These "
    "molecules then power the Calvin cycle, where",
    "Subject: Application for the junior data analyst role\n\nDear hiring committee,\n\nI am writing to apply for the position of junior data analyst that "
    "was advertised on your website last week. Over the past two years I have worked with "
    "spreadsheets, SQL databases and Python scripts to clean, summarise and visualise sales data "
    "for a small retail company. What I enjoy most is",
    "This is the soup my grandmother made every autumn, and it takes about forty minutes. "
    "Recipe for a simple tomato soup: heat two tablespoons of olive oil in a large pot, add one "
    "chopped onion and two cloves of garlic, and cook until soft. Stir in a kilogram of ripe "
    "tomatoes, a pinch of salt, a teaspoon of sugar and half a litre of vegetable stock. Let it "
    "simmer for twenty minutes, then",
    "On 16 July 1969 a Saturn V rocket lifted off from Florida. The Apollo 11 mission carried Neil Armstrong, Buzz Aldrin and Michael Collins to the "
    "Moon. While Collins remained in lunar orbit aboard the command module Columbia, Armstrong "
    "and Aldrin descended in the lunar module Eagle and landed in the Sea of Tranquility. The "
    "first words spoken from the surface were",
    "Number theory is one of the oldest branches of mathematics. A prime number is a natural number greater than one that has no positive divisors other "
    "than one and itself. The first few primes are 2, 3, 5, 7, 11, 13, 17, 19, 23 and 29. Euclid "
    "proved more than two thousand years ago that there are infinitely many primes, using an "
    "argument that goes like this:",
    "LOCAL NEWS. The city council met on Tuesday evening in the town hall, which was full, to discuss the new cycling lanes planned for the "
    "old town. Shop owners worried that fewer parking spaces would keep customers away, while "
    "parents argued that safer streets would let their children ride to school. After three "
    "hours of debate, the mayor announced that",
]
TOP_K = 20
N_GREEDY = 64


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def random_prompts(n_vocab):
    gen = torch.Generator().manual_seed(1234)
    return [(None, torch.randint(0, n_vocab, (64,), generator=gen).tolist()) for _ in range(8)]


def main():
    path, out_path = sys.argv[1], sys.argv[2]
    random_ids = "--random-ids" in sys.argv[3:]
    folder, name = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    text_config = getattr(config, "text_config", config)
    if text_config.model_type.startswith("gemma3") and text_config.num_hidden_layers != 62:
        # GGUF has no key for it: transformers' converter defaults query_pre_attn_scalar to 256,
        # while the file format means 1/sqrt(head_dim) (docs/FORMATS.md §3.2; 27B = 62 layers
        # differs). Real checkpoints other than 27B have head_dim 256, so only synthetic shapes
        # are affected.
        text_config.query_pre_attn_scalar = text_config.head_dim
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, config=config,
                                                 dtype=torch.float32)
    model.eval()
    if random_ids:
        tok = None
        inputs = random_prompts(model.get_input_embeddings().weight.shape[0])
    else:
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        inputs = [(text, tok(text).input_ids) for text in PROMPTS]
    prompts = []
    with torch.no_grad():
        for text, ids in inputs:
            assert len(ids) >= 64, (len(ids), text[:40])
            out = model(torch.tensor([ids]), use_cache=True)
            logits = out.logits[0].float()
            top = torch.topk(logits, TOP_K, dim=-1)
            seq = list(ids)
            past, step = out.past_key_values, logits[-1]
            for _ in range(N_GREEDY):
                seq.append(int(torch.argmax(step)))
                out = model(torch.tensor([[seq[-1]]]), past_key_values=past, use_cache=True)
                past, step = out.past_key_values, out.logits[0, -1]
            prompts.append({
                "text": text,
                "ids": ids,
                "top_ids": top.indices.tolist(),
                "top_logits": [[round(v, 5) for v in row] for row in top.values.tolist()],
                "greedy": seq[len(ids):],
            })
            if tok:
                print(f"{len(ids)} tokens: ...{tok.decode(seq[len(ids):])!r}", file=sys.stderr)
    fixture = {
        "model": name,
        "sha256": sha256(path),
        "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, fp32, CPU",
        "top_k": TOP_K,
        "prompts": prompts,
    }
    with open(out_path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))


if __name__ == "__main__":
    main()

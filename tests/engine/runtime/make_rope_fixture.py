"""Makes the long-context RoPE oracle fixture: transformers' forward pass over a tiny GGUF.

Reads MODEL.gguf (made by make_tiny_rope.py) with the `gguf` package, undoes the conversion
(un-permutes llama's Q/K), loads the weights into LlamaForCausalLM or Qwen2ForCausalLM configured
with the case's RoPE scaling (strict=True), and stores the logits of a 4x-the-original-context
prompt (fp32, CPU) at every 8th position and the last 8, and how far the same model without
the scaling lands from them past the original context (unscaled_diff: max |Δlogit|). The rope_freqs tensor of the llama3
case is not read: transformers computes Llama 3.1's scaling from its config. No Strata code is
involved.

Usage (not run by CI; the fixtures are committed):
  python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch transformers gguf==0.19.0
  python3 make_tiny_rope.py yarn /tmp/r.gguf
  /tmp/hfenv/bin/python make_rope_fixture.py yarn /tmp/r.gguf fixtures/rope_tiny_yarn.json
"""
import hashlib
import json
import sys

import numpy as np
import torch
import transformers

import make_tiny_rope as tiny
from make_moe_fixture import read_gguf, unpermute_qk


def hf_state_dict(case, g):
    llama = tiny.CASES[case]["arch"] == "llama"
    sd = {"model.embed_tokens.weight": g["token_embd.weight"], "model.norm.weight": g["output_norm.weight"],
          "lm_head.weight": g["output.weight"]}
    for i in range(tiny.N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        sd[p + "input_layernorm.weight"] = g[b + "attn_norm.weight"]
        q, k = g[b + "attn_q.weight"], g[b + "attn_k.weight"]
        sd[p + "self_attn.q_proj.weight"] = unpermute_qk(q, tiny.N_HEAD) if llama else q
        sd[p + "self_attn.k_proj.weight"] = unpermute_qk(k, tiny.N_HEAD_KV) if llama else k
        sd[p + "self_attn.v_proj.weight"] = g[b + "attn_v.weight"]
        sd[p + "self_attn.o_proj.weight"] = g[b + "attn_output.weight"]
        if not llama:
            for name in ("q", "k", "v"):
                sd[p + f"self_attn.{name}_proj.bias"] = g[b + f"attn_{name}.bias"]
        sd[p + "post_attention_layernorm.weight"] = g[b + "ffn_norm.weight"]
        sd[p + "mlp.gate_proj.weight"] = g[b + "ffn_gate.weight"]
        sd[p + "mlp.up_proj.weight"] = g[b + "ffn_up.weight"]
        sd[p + "mlp.down_proj.weight"] = g[b + "ffn_down.weight"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


def hf_config(case, scaled=True):
    c = tiny.CASES[case]
    kw = dict(vocab_size=tiny.N_VOCAB, hidden_size=tiny.HIDDEN, num_hidden_layers=tiny.N_LAYER,
              num_attention_heads=tiny.N_HEAD, num_key_value_heads=tiny.N_HEAD_KV, head_dim=tiny.HEAD_DIM,
              intermediate_size=tiny.FF, max_position_embeddings=tiny.ctx(case), rms_norm_eps=1e-6,
              tie_word_embeddings=False, attention_dropout=0.0)
    rope = tiny.rope_parameters(case) if scaled else {"rope_type": "default"}
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = dict(rope, rope_theta=c["theta"])
    else:
        kw["rope_scaling"] = rope if scaled else None
        kw["rope_theta"] = c["theta"]
    if c["arch"] == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(use_sliding_window=False, **kw))


def main():
    case, path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    weights = hf_state_dict(case, read_gguf(path))
    model, unscaled = hf_config(case), hf_config(case, scaled=False)
    model.load_state_dict(weights, strict=True)
    unscaled.load_state_dict(weights, strict=True)
    model.eval().float()
    unscaled.eval().float()
    n = tiny.ctx(case)
    gen = torch.Generator().manual_seed(77)
    ids = torch.randint(3, tiny.N_VOCAB, (n,), generator=gen)
    rows = sorted(set(range(0, n, 8)) | set(range(n - 8, n)))
    with torch.no_grad():
        logits = model(ids[None, :]).logits[0]
        plain = unscaled(ids[None, :]).logits[0]
    unscaled_diff = float((logits[tiny.ORIG_CTX:] - plain[tiny.ORIG_CTX:]).abs().max())
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    fixture = {"model": path.rsplit("/", 1)[-1], "sha256": digest, "case": case,
               "rope": tiny.rope_parameters(case), "original_context": tiny.ORIG_CTX,
               "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, fp32, CPU",
               "unscaled_diff": round(unscaled_diff, 5), "ids": ids.tolist(), "rows": rows,
               "logits": [[round(float(v), 5) for v in logits[r]] for r in rows]}
    with open(out_path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()

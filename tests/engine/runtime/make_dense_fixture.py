"""Makes the dense logits oracle fixture: transformers' forward pass over a tiny GGUF.

Reads MODEL.gguf (made by make_tiny_dense.py) with the `gguf` package, dequantizes every tensor,
undoes the conversion (un-permutes llama's Q/K, subtracts the 1 the Gemma converter adds to
norms), loads the weights into MistralForCausalLM (nemo), LlamaForCausalLM (llama32, Llama 3
RoPE scaling), Qwen3ForCausalLM or Gemma2ForCausalLM (eager attention: soft-capping) with
strict=True, and stores the logits of every position of a few pseudo-random prompts (fp32, CPU).
No Strata code is involved.

Usage (not run by CI; the fixtures are committed):
  python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch transformers gguf==0.19.0
  python3 make_tiny_dense.py gemma2 f32 /tmp/m.gguf
  /tmp/hfenv/bin/python make_dense_fixture.py gemma2 /tmp/m.gguf fixtures/dense_tiny_gemma2_f32.json
"""
import sys

import numpy as np
import torch
import transformers

import make_moe_fixture as mf
import make_tiny_dense as tiny

N_TOKENS = 16  # longer than the Gemma 2 window (4), so the local layers mask
MODELS = {"nemo": ("MistralForCausalLM", "MistralConfig"), "llama32": ("LlamaForCausalLM", "LlamaConfig"),
          "qwen3": ("Qwen3ForCausalLM", "Qwen3Config"), "gemma2": ("Gemma2ForCausalLM", "Gemma2Config")}


def hf_state_dict(arch, g):
    llama = tiny.ARCHS[arch] == "llama"
    gemma = arch == "gemma2"
    one = np.float32(1.0 if gemma else 0.0)
    sd = {"model.embed_tokens.weight": g["token_embd.weight"], "model.norm.weight": g["output_norm.weight"] - one}
    if "output.weight" in g:
        sd["lm_head.weight"] = g["output.weight"]
    for i in range(tiny.N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        sd[p + "input_layernorm.weight"] = g[b + "attn_norm.weight"] - one
        q, k = g[b + "attn_q.weight"], g[b + "attn_k.weight"]
        sd[p + "self_attn.q_proj.weight"] = mf.unpermute_qk(q, tiny.N_HEAD) if llama else q
        sd[p + "self_attn.k_proj.weight"] = mf.unpermute_qk(k, tiny.N_HEAD_KV) if llama else k
        sd[p + "self_attn.v_proj.weight"] = g[b + "attn_v.weight"]
        sd[p + "self_attn.o_proj.weight"] = g[b + "attn_output.weight"]
        if arch == "qwen3":
            sd[p + "self_attn.q_norm.weight"] = g[b + "attn_q_norm.weight"]
            sd[p + "self_attn.k_norm.weight"] = g[b + "attn_k_norm.weight"]
        if gemma:
            sd[p + "post_attention_layernorm.weight"] = g[b + "post_attention_norm.weight"] - one
            sd[p + "pre_feedforward_layernorm.weight"] = g[b + "ffn_norm.weight"] - one
            sd[p + "post_feedforward_layernorm.weight"] = g[b + "post_ffw_norm.weight"] - one
        else:
            sd[p + "post_attention_layernorm.weight"] = g[b + "ffn_norm.weight"]
        sd[p + "mlp.gate_proj.weight"] = g[b + "ffn_gate.weight"]
        sd[p + "mlp.up_proj.weight"] = g[b + "ffn_up.weight"]
        sd[p + "mlp.down_proj.weight"] = g[b + "ffn_down.weight"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


def main():
    arch, path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    model_cls, config_cls = (getattr(transformers, n) for n in MODELS[arch])
    config = config_cls(**tiny.hf_config(arch))
    config._attn_implementation = "eager"
    model = model_cls(config)
    missing, unexpected = model.load_state_dict(hf_state_dict(arch, mf.read_gguf(path)), strict=False)
    # A tied lm_head is the embedding itself (the only key allowed to be absent).
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    if config.tie_word_embeddings:
        model.tie_weights()
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    mf.write_fixture(model, path, out_path, seed=2468, n_tokens=N_TOKENS)

if __name__ == "__main__":
    main()

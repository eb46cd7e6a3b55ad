"""Makes the phi3 logits oracle fixture: transformers' Phi3ForCausalLM over a tiny GGUF.

Reads MODEL.gguf (made by make_tiny_phi3.py) with the `gguf` package, dequantizes every tensor,
loads attn_qkv as qkv_proj and ffn_up as gate_up_proj (the fused layouts are the same in both
formats) into Phi3ForCausalLM with eager attention and every key matched, and stores the logits of
every position of a few pseudo-random prompts (fp32, CPU), longer than the model's sliding window.
No Strata code is involved.

Usage (not run by CI; the fixtures are committed):
  pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install transformers
  python3 make_tiny_phi3.py phi3 f32 /tmp/m.gguf
  python3 make_phi3_fixture.py /tmp/m.gguf fixtures/phi3_tiny_f32.json
"""
import sys

import numpy as np
import torch
import transformers

import make_moe_fixture as mf
import make_tiny_phi3 as tiny

N_TOKENS = 16  # more than 3 windows (5)


def hf_state_dict(g):
    sd = {"model.embed_tokens.weight": g["token_embd.weight"], "model.norm.weight": g["output_norm.weight"],
          "lm_head.weight": g["output.weight"]}
    for i in range(tiny.N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        sd[p + "input_layernorm.weight"] = g[b + "attn_norm.weight"]
        sd[p + "self_attn.qkv_proj.weight"] = g[b + "attn_qkv.weight"]
        sd[p + "self_attn.o_proj.weight"] = g[b + "attn_output.weight"]
        sd[p + "post_attention_layernorm.weight"] = g[b + "ffn_norm.weight"]
        sd[p + "mlp.gate_up_proj.weight"] = g[b + "ffn_up.weight"]
        sd[p + "mlp.down_proj.weight"] = g[b + "ffn_down.weight"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


def main():
    path, out_path = sys.argv[1], sys.argv[2]
    config = transformers.Phi3Config(**tiny.hf_config())
    config._attn_implementation = "eager"
    model = transformers.Phi3ForCausalLM(config)
    model.load_state_dict(hf_state_dict(mf.read_gguf(path)), strict=True)
    mf.write_fixture(model, path, out_path, seed=1357, n_tokens=N_TOKENS)


if __name__ == "__main__":
    main()

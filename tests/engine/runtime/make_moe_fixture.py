"""Makes the MoE logits oracle fixture: transformers' forward pass over a tiny MoE GGUF.

Reads MODEL.gguf (made by make_tiny_moe.py) with the `gguf` package, dequantizes every tensor,
undoes the conversion (unstacks nothing: transformers 5 keeps experts fused as
gate_up_proj [E, 2*ff, hidden] and down_proj [E, hidden, ff]; un-permutes llama's Q/K), loads the
weights into Qwen3MoeForCausalLM, Qwen2MoeForCausalLM or MixtralForCausalLM (strict=True), and
stores the logits of every position of a few pseudo-random prompts (fp32, CPU). No Strata code is involved.

Usage (not run by CI; the fixtures are committed):
  python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch transformers gguf==0.19.0
  python3 make_tiny_moe.py qwen3moe f32 /tmp/m.gguf
  /tmp/hfenv/bin/python make_moe_fixture.py qwen3moe /tmp/m.gguf fixtures/moe_tiny_qwen3moe_f32.json
"""
import hashlib
import json
import sys

import gguf
import numpy as np
import torch
import transformers

import make_tiny_moe as tiny

N_PROMPTS = 3
N_TOKENS = 12


def unpermute_qk(w, n_head):
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def read_gguf(path):
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        shape = [int(d) for d in reversed(t.shape)]
        out[t.name] = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape)
    return out


def hf_state_dict(arch, g):
    llama = arch == "mixtral"
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
        if arch == "qwen2moe":
            for name in ("q", "k", "v"):
                sd[p + f"self_attn.{name}_proj.bias"] = g[b + f"attn_{name}.bias"]
            sd[p + "mlp.shared_expert_gate.weight"] = g[b + "ffn_gate_inp_shexp.weight"].reshape(1, -1)
            for gname, hname in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
                sd[p + f"mlp.shared_expert.{hname}.weight"] = g[b + f"ffn_{gname}_shexp.weight"]
        if arch == "qwen3moe":
            sd[p + "self_attn.q_norm.weight"] = g[b + "attn_q_norm.weight"]
            sd[p + "self_attn.k_norm.weight"] = g[b + "attn_k_norm.weight"]
        sd[p + "post_attention_layernorm.weight"] = g[b + "ffn_norm.weight"]
        sd[p + "mlp.gate.weight"] = g[b + "ffn_gate_inp.weight"]
        sd[p + "mlp.experts.gate_up_proj"] = np.concatenate(
            [g[b + "ffn_gate_exps.weight"], g[b + "ffn_up_exps.weight"]], axis=1)
        sd[p + "mlp.experts.down_proj"] = g[b + "ffn_down_exps.weight"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


def main():
    arch, path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    if arch == "qwen3moe":
        model = transformers.Qwen3MoeForCausalLM(transformers.Qwen3MoeConfig(**tiny.hf_config(arch)))
    elif arch == "qwen2moe":
        model = transformers.Qwen2MoeForCausalLM(transformers.Qwen2MoeConfig(**tiny.hf_config(arch)))
    else:
        model = transformers.MixtralForCausalLM(transformers.MixtralConfig(**tiny.hf_config(arch)))
    model.load_state_dict(hf_state_dict(arch, read_gguf(path)), strict=True)
    write_fixture(model, path, out_path)


def write_fixture(model, path, out_path, seed=4321, n_tokens=N_TOKENS):
    """Stores the model's logits at every position of N_PROMPTS pseudo-random prompts, with the
    sha256 of the GGUF the weights came from (make_dense_fixture.py uses it too)."""
    model.eval().float()
    gen = torch.Generator().manual_seed(seed)
    prompts = []
    with torch.no_grad():
        for _ in range(N_PROMPTS):
            ids = torch.randint(3, tiny.N_VOCAB, (n_tokens,), generator=gen)
            logits = model(ids[None, :]).logits[0]
            prompts.append({"ids": ids.tolist(), "logits": [[round(float(v), 5) for v in row] for row in logits]})
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    fixture = {"model": path.rsplit("/", 1)[-1], "sha256": digest,
               "oracle": f"transformers {transformers.__version__}, torch {torch.__version__}, fp32, CPU",
               "prompts": prompts}
    with open(out_path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")

if __name__ == "__main__":
    main()

"""Tiny dense models with RoPE scaling for the long-context RoPE oracle, written to GGUF.

Makes deterministic random weights in the Hugging Face layout of a 2-layer LlamaForCausalLM or
Qwen2ForCausalLM whose original context is 32 positions, with the RoPE scaling the test names:
  llama3  Llama 3.1's frequency rescaling (factor 8, low/high freq factors 1/4), stored as
          llama.cpp's convert_hf_to_gguf.py stores it: the rope_freqs.weight tensor of per-pair
          divisors, no scaling keys;
  linear  linear position interpolation (factor 4): rope.scaling.type "linear" + factor;
  yarn    YaRN on Qwen2 (Qwen2.5's long-context recipe, factor 4): rope.scaling.type "yarn",
          factor, original_context_length (beta_fast/slow left at their defaults 32/1).
The conversion follows llama.cpp's: llama's Q/K rows permuted for its NORM-style RoPE, 1-D
weights F32. Needs only numpy and gguf (make_rope_fixture.py runs transformers on the same
weights); the printed sha256 lets the test check that the two agree. The tokenizer is
make_tiny_moe.py's.

With --plain the file has the same weights without any RoPE scaling key and its context is the
original 32 positions: the scaling is then given on the command line (--rope-scaling,
--rope-scale; RopeOverrides), as a user would for a file that lacks it.

Usage: make_tiny_rope.py {llama3,linear,yarn} OUT.gguf [--plain]
"""
import math
import sys

import numpy as np
import gguf

import make_tiny_moe as tiny

N_VOCAB = tiny.N_VOCAB
HIDDEN = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 16
FF = 128
ORIG_CTX = 32  # the "pretrained" context: the test runs positions up to 4x past it
CASES = {
    "llama3": dict(arch="llama", factor=8.0, theta=10000.0),
    "linear": dict(arch="llama", factor=4.0, theta=10000.0),
    "yarn": dict(arch="qwen2", factor=4.0, theta=10000.0),
}


def ctx(case):
    return int(ORIG_CTX * CASES[case]["factor"])


def rope_parameters(case):
    """The rope_scaling / rope_parameters dict of the HF config."""
    c = CASES[case]
    if case == "llama3":
        return {"rope_type": "llama3", "factor": c["factor"], "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": ORIG_CTX}
    if case == "linear":
        return {"rope_type": "linear", "factor": c["factor"]}
    return {"rope_type": "yarn", "factor": c["factor"], "original_max_position_embeddings": ORIG_CTX}


def hf_weights(case, seed=4321):
    rng = np.random.default_rng(seed)

    def mat(out_dim, in_dim, gain=1.0):
        return (rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    qwen2 = CASES[case]["arch"] == "qwen2"
    w = {"model.embed_tokens.weight": rng.standard_normal((N_VOCAB, HIDDEN)).astype(np.float32)}
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(HIDDEN)
        # Larger Q/K gains: sharp attention, so the logits depend on the rotation angles.
        w[p + "self_attn.q_proj.weight"] = mat(N_HEAD * HEAD_DIM, HIDDEN, gain=2.0)
        w[p + "self_attn.k_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, HIDDEN, gain=2.0)
        w[p + "self_attn.v_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = mat(HIDDEN, N_HEAD * HEAD_DIM)
        if qwen2:
            for name, width in (("q", N_HEAD), ("k", N_HEAD_KV), ("v", N_HEAD_KV)):
                w[p + f"self_attn.{name}_proj.bias"] = (0.2 * rng.standard_normal(width * HEAD_DIM)).astype(np.float32)
        w[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        w[p + "mlp.gate_proj.weight"] = mat(FF, HIDDEN)
        w[p + "mlp.up_proj.weight"] = mat(FF, HIDDEN)
        w[p + "mlp.down_proj.weight"] = mat(HIDDEN, FF)
    w["model.norm.weight"] = norm(HIDDEN)
    w["lm_head.weight"] = mat(N_VOCAB, HIDDEN, gain=2.0)
    return w


def llama3_rope_freqs(case):
    """llama.cpp's rope_freqs for Llama 3.1 scaling: per pair, the divisor of its frequency."""
    rp = rope_parameters(case)
    theta = CASES[case]["theta"]
    freqs = 1.0 / (theta ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / HEAD_DIM))
    low_wavelen = ORIG_CTX / rp["low_freq_factor"]
    high_wavelen = ORIG_CTX / rp["high_freq_factor"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(rp["factor"])
        else:
            smooth = (ORIG_CTX / wavelen - rp["low_freq_factor"]) / (rp["high_freq_factor"] - rp["low_freq_factor"])
            factors.append(1.0 / ((1 - smooth) / rp["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def gguf_tensors(case, w):
    llama = CASES[case]["arch"] == "llama"
    out = {"token_embd.weight": w["model.embed_tokens.weight"]}
    if case == "llama3":
        out["rope_freqs.weight"] = llama3_rope_freqs(case)
    for i in range(N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out[b + "attn_norm.weight"] = w[p + "input_layernorm.weight"]
        q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
        out[b + "attn_q.weight"] = tiny.permute_qk(q, N_HEAD) if llama else q
        out[b + "attn_k.weight"] = tiny.permute_qk(k, N_HEAD_KV) if llama else k
        out[b + "attn_v.weight"] = w[p + "self_attn.v_proj.weight"]
        out[b + "attn_output.weight"] = w[p + "self_attn.o_proj.weight"]
        if not llama:
            for name in ("q", "k", "v"):
                out[b + f"attn_{name}.bias"] = w[p + f"self_attn.{name}_proj.bias"]
        out[b + "ffn_norm.weight"] = w[p + "post_attention_layernorm.weight"]
        out[b + "ffn_gate.weight"] = w[p + "mlp.gate_proj.weight"]
        out[b + "ffn_up.weight"] = w[p + "mlp.up_proj.weight"]
        out[b + "ffn_down.weight"] = w[p + "mlp.down_proj.weight"]
    out["output_norm.weight"] = w["model.norm.weight"]
    out["output.weight"] = w["lm_head.weight"]
    return out


def write_gguf(case, path, plain=False):
    c = CASES[case]
    wr = gguf.GGUFWriter(path, c["arch"])
    wr.add_name(f"tiny-rope-{case}")
    wr.add_context_length(ORIG_CTX if plain else ctx(case))
    wr.add_embedding_length(HIDDEN)
    wr.add_block_count(N_LAYER)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_feed_forward_length(FF)
    wr.add_layer_norm_rms_eps(1e-6)
    wr.add_rope_freq_base(c["theta"])
    wr.add_rope_dimension_count(HEAD_DIM)
    if plain:
        pass
    elif case == "linear":
        wr.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        wr.add_rope_scaling_factor(c["factor"])
    elif case == "yarn":
        wr.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        wr.add_rope_scaling_factor(c["factor"])
        wr.add_rope_scaling_orig_ctx_len(ORIG_CTX)
    tiny.add_vocab(wr)
    for name, data in gguf_tensors(case, hf_weights(case)).items():
        wr.add_tensor(name, data.astype(np.float32))
    return tiny.finish(wr, path)


def main():
    plain = sys.argv[3:] == ["--plain"]
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in CASES or (len(sys.argv) == 4 and not plain):
        sys.exit(f"usage: make_tiny_rope.py {{{','.join(CASES)}}} OUT.gguf [--plain]")
    print(write_gguf(sys.argv[1], sys.argv[2], plain))


if __name__ == "__main__":
    main()

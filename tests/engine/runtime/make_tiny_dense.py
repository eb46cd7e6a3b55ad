"""Tiny dense models of the architectures beside the default ones, written to GGUF.

Deterministic random weights in the Hugging Face layout, converted as llama.cpp's
convert_hf_to_gguf.py does, for the dense logits oracle (dense_oracle_test.cpp; the fixture
comes from make_dense_fixture.py, which runs transformers on the weights dequantized from this
same file). Models:
  nemo     Mistral-Nemo shape: GGUF "llama", head_dim 32 with hidden 64 and 4 heads (q width
           128 != n_embd, attention.key_length written), Q/K permuted for NORM RoPE.
  llama32  Llama 3.2 shape: "llama", tied output (no output.weight), Llama 3 RoPE frequency
           factors (rope_freqs.weight as the converter computes them).
  qwen3    Qwen3 dense: head_dim 32 != hidden / heads, q/k RMSNorm, tied output.
  gemma2   Gemma 2: post-norms, norms stored as 1 + w, sqrt(n_embd) embedding scale, attention
           and final logit soft-capping (small caps, so they bite), window 4 on even layers.
Needs only numpy and gguf (CI runs it); make_tiny_moe.py supplies the shared pieces.

Usage: make_tiny_dense.py {nemo,llama32,qwen3,gemma2} {f32,q8_0} OUT.gguf   (prints the sha256)
"""
import math
import sys

import numpy as np
import gguf

import make_tiny_moe as moe

N_VOCAB = moe.N_VOCAB
HIDDEN = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
FF = 96
CTX = 256
HEAD_DIM = {"nemo": 32, "llama32": 16, "qwen3": 32, "gemma2": 16}
ARCHS = {"nemo": "llama", "llama32": "llama", "qwen3": "qwen3", "gemma2": "gemma2"}
LLAMA3_ROPE = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=64)
GEMMA2_CAPS = dict(attn_logit_softcapping=2.0, final_logit_softcapping=3.0)
GEMMA2_WINDOW = 4


def hf_config(arch):
    """The transformers config (keyword arguments) of the tiny model."""
    hd = HEAD_DIM[arch]
    common = dict(vocab_size=N_VOCAB, hidden_size=HIDDEN, intermediate_size=FF, num_hidden_layers=N_LAYER,
                  num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, head_dim=hd,
                  max_position_embeddings=CTX, attention_dropout=0.0)
    if arch == "nemo":
        return dict(common, rms_norm_eps=1e-5, rope_theta=1e6, sliding_window=None, tie_word_embeddings=False)
    if arch == "llama32":
        return dict(common, rms_norm_eps=1e-5, rope_theta=5e5, rope_scaling=dict(LLAMA3_ROPE),
                    tie_word_embeddings=True, attention_bias=False, mlp_bias=False)
    if arch == "qwen3":
        return dict(common, rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True, attention_bias=False,
                    use_sliding_window=False)
    return dict(common, rms_norm_eps=1e-6, rope_theta=1e4, tie_word_embeddings=True, query_pre_attn_scalar=hd,
                sliding_window=GEMMA2_WINDOW, hidden_activation="gelu_pytorch_tanh", **GEMMA2_CAPS)


def hf_weights(arch, seed=4321):
    """name -> float32 array in Hugging Face's names and [out, in] shapes."""
    rng = np.random.default_rng(seed)
    hd = HEAD_DIM[arch]

    def mat(out_dim, in_dim, gain=1.0):
        return (rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):  # Gemma's HF weights are w with the norm scaling by 1 + w
        centre = 0.0 if arch == "gemma2" else 1.0
        return (centre + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((N_VOCAB, HIDDEN)).astype(np.float32)}
    if arch == "gemma2":
        # Forward scales it by sqrt(hidden); tied logits stay a few units wide, so the final cap bites.
        w["model.embed_tokens.weight"] /= np.float32(HIDDEN ** 0.25)
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(HIDDEN)
        w[p + "self_attn.q_proj.weight"] = mat(N_HEAD * hd, HIDDEN, gain=2.0)
        w[p + "self_attn.k_proj.weight"] = mat(N_HEAD_KV * hd, HIDDEN, gain=2.0)
        w[p + "self_attn.v_proj.weight"] = mat(N_HEAD_KV * hd, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = mat(HIDDEN, N_HEAD * hd)
        if arch == "qwen3":
            w[p + "self_attn.q_norm.weight"] = norm(hd)
            w[p + "self_attn.k_norm.weight"] = norm(hd)
        w[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        if arch == "gemma2":
            w[p + "pre_feedforward_layernorm.weight"] = norm(HIDDEN)
            w[p + "post_feedforward_layernorm.weight"] = norm(HIDDEN)
        w[p + "mlp.gate_proj.weight"] = mat(FF, HIDDEN)
        w[p + "mlp.up_proj.weight"] = mat(FF, HIDDEN)
        w[p + "mlp.down_proj.weight"] = mat(HIDDEN, FF)
    w["model.norm.weight"] = norm(HIDDEN)
    if not hf_config(arch)["tie_word_embeddings"]:
        w["lm_head.weight"] = mat(N_VOCAB, HIDDEN, gain=2.0)
    return w


def llama3_rope_factors(head_dim, theta):
    """convert_hf_to_gguf.py's LlamaModel rope_freqs for rope_type llama3."""
    r = LLAMA3_ROPE
    low_wavelen = r["original_max_position_embeddings"] / r["low_freq_factor"]
    high_wavelen = r["original_max_position_embeddings"] / r["high_freq_factor"]
    factors = []
    for freq in 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim)):
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(r["factor"])
        else:
            smooth = (r["original_max_position_embeddings"] / wavelen - r["low_freq_factor"]) / (
                r["high_freq_factor"] - r["low_freq_factor"])
            factors.append(1 / ((1 - smooth) / r["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def gguf_tensors(arch, w):
    """GGUF name -> array (numpy order: the GGUF ne reversed)."""
    out = {"token_embd.weight": w["model.embed_tokens.weight"]}
    llama = ARCHS[arch] == "llama"
    gemma = arch == "gemma2"
    one = np.float32(1.0 if gemma else 0.0)  # the gemma converter stores 1 + w
    if arch == "llama32":
        out["rope_freqs.weight"] = llama3_rope_factors(HEAD_DIM[arch], hf_config(arch)["rope_theta"])
    for i in range(N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out[b + "attn_norm.weight"] = w[p + "input_layernorm.weight"] + one
        q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
        out[b + "attn_q.weight"] = moe.permute_qk(q, N_HEAD) if llama else q
        out[b + "attn_k.weight"] = moe.permute_qk(k, N_HEAD_KV) if llama else k
        out[b + "attn_v.weight"] = w[p + "self_attn.v_proj.weight"]
        out[b + "attn_output.weight"] = w[p + "self_attn.o_proj.weight"]
        if arch == "qwen3":
            out[b + "attn_q_norm.weight"] = w[p + "self_attn.q_norm.weight"]
            out[b + "attn_k_norm.weight"] = w[p + "self_attn.k_norm.weight"]
        if gemma:
            out[b + "post_attention_norm.weight"] = w[p + "post_attention_layernorm.weight"] + one
            out[b + "ffn_norm.weight"] = w[p + "pre_feedforward_layernorm.weight"] + one
        else:
            out[b + "ffn_norm.weight"] = w[p + "post_attention_layernorm.weight"]
        out[b + "ffn_gate.weight"] = w[p + "mlp.gate_proj.weight"]
        out[b + "ffn_up.weight"] = w[p + "mlp.up_proj.weight"]
        out[b + "ffn_down.weight"] = w[p + "mlp.down_proj.weight"]
        if gemma:
            out[b + "post_ffw_norm.weight"] = w[p + "post_feedforward_layernorm.weight"] + one
    out["output_norm.weight"] = w["model.norm.weight"] + one
    if "lm_head.weight" in w:
        out["output.weight"] = w["lm_head.weight"]
    return out


def write_gguf(arch, ftype, path):
    cfg = hf_config(arch)
    hd = HEAD_DIM[arch]
    wr = gguf.GGUFWriter(path, ARCHS[arch])
    wr.add_name(f"tiny-{arch}")
    wr.add_context_length(CTX)
    wr.add_embedding_length(HIDDEN)
    wr.add_block_count(N_LAYER)
    wr.add_feed_forward_length(FF)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    wr.add_rope_freq_base(cfg["rope_theta"])
    wr.add_rope_dimension_count(hd)
    if hd * N_HEAD != HIDDEN or arch == "qwen3":
        wr.add_key_length(hd)
        wr.add_value_length(hd)
    if arch == "gemma2":
        wr.add_sliding_window(GEMMA2_WINDOW)
        wr.add_attn_logit_softcapping(GEMMA2_CAPS["attn_logit_softcapping"])
        wr.add_final_logit_softcapping(GEMMA2_CAPS["final_logit_softcapping"])
    moe.add_vocab(wr)
    return moe.write_tensors(wr, gguf_tensors(arch, hf_weights(arch)), ftype, path)

def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ARCHS or sys.argv[2] not in ("f32", "q8_0"):
        sys.exit(__doc__)
    print(write_gguf(sys.argv[1], sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()

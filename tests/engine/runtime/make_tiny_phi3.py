"""A tiny random Phi-3 model written to GGUF as llama.cpp's convert_hf_to_gguf.py does.

Deterministic random weights in the Hugging Face Phi3ForCausalLM layout (fused qkv_proj and
gate_up_proj), stored under the GGUF "phi3" names: attn_qkv = qkv_proj (rows Q, K, V), ffn_up =
gate_up_proj (rows gate, then up), no Q/K permutation (NEOX RoPE). GQA 4/2 heads of 16, untied
output, sliding window 5 on every layer (the oracle's prompts are longer, so the window masks).
For the phi3 logits oracle (phi3_oracle_test.cpp); make_phi3_fixture.py runs transformers on the
weights dequantized from this same file. Needs only numpy and gguf (CI runs it).

Usage: make_tiny_phi3.py phi3 {f32,q8_0} OUT.gguf   (prints the sha256)
"""
import sys

import numpy as np
import gguf

import make_tiny_moe as moe

N_VOCAB = moe.N_VOCAB
HIDDEN = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = HIDDEN // N_HEAD
FF = 96
CTX = 256
WINDOW = 5


def hf_config():
    """The transformers Phi3Config keyword arguments of the tiny model."""
    return dict(vocab_size=N_VOCAB, hidden_size=HIDDEN, intermediate_size=FF, num_hidden_layers=N_LAYER,
                num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, max_position_embeddings=CTX,
                original_max_position_embeddings=CTX, rms_norm_eps=1e-5, rope_theta=1e4, rope_scaling=None,
                sliding_window=WINDOW, tie_word_embeddings=False, attention_dropout=0.0, resid_pdrop=0.0,
                embd_pdrop=0.0, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def hf_weights(seed=8642):
    """name -> float32 array in Hugging Face's names and [out, in] shapes."""
    rng = np.random.default_rng(seed)

    def mat(out_dim, in_dim, gain=1.0):
        return (rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    n_qkv = (N_HEAD + 2 * N_HEAD_KV) * HEAD_DIM
    w = {"model.embed_tokens.weight": rng.standard_normal((N_VOCAB, HIDDEN)).astype(np.float32)}
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(HIDDEN)
        # Q and K rows at twice the gain, so the attention pattern is far from uniform.
        qkv = mat(n_qkv, HIDDEN)
        qkv[:(N_HEAD + N_HEAD_KV) * HEAD_DIM] *= 2.0
        w[p + "self_attn.qkv_proj.weight"] = qkv
        w[p + "self_attn.o_proj.weight"] = mat(HIDDEN, N_HEAD * HEAD_DIM)
        w[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        w[p + "mlp.gate_up_proj.weight"] = mat(2 * FF, HIDDEN)
        w[p + "mlp.down_proj.weight"] = mat(HIDDEN, FF)
    w["model.norm.weight"] = norm(HIDDEN)
    w["lm_head.weight"] = mat(N_VOCAB, HIDDEN, gain=2.0)
    return w


def gguf_tensors(w):
    """GGUF name -> array (numpy order: the GGUF ne reversed), as the converter maps Phi3."""
    out = {"token_embd.weight": w["model.embed_tokens.weight"]}
    for i in range(N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out[b + "attn_norm.weight"] = w[p + "input_layernorm.weight"]
        out[b + "attn_qkv.weight"] = w[p + "self_attn.qkv_proj.weight"]
        out[b + "attn_output.weight"] = w[p + "self_attn.o_proj.weight"]
        out[b + "ffn_norm.weight"] = w[p + "post_attention_layernorm.weight"]
        out[b + "ffn_up.weight"] = w[p + "mlp.gate_up_proj.weight"]
        out[b + "ffn_down.weight"] = w[p + "mlp.down_proj.weight"]
    out["output_norm.weight"] = w["model.norm.weight"]
    out["output.weight"] = w["lm_head.weight"]
    return out


def write_gguf(ftype, path):
    cfg = hf_config()
    wr = gguf.GGUFWriter(path, "phi3")
    wr.add_name("tiny-phi3")
    wr.add_context_length(CTX)
    wr.add_rope_scaling_orig_ctx_len(CTX)
    wr.add_embedding_length(HIDDEN)
    wr.add_feed_forward_length(FF)
    wr.add_block_count(N_LAYER)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    wr.add_rope_dimension_count(HEAD_DIM)
    wr.add_rope_freq_base(cfg["rope_theta"])
    wr.add_sliding_window(WINDOW)
    moe.add_vocab(wr)
    return moe.write_tensors(wr, gguf_tensors(hf_weights()), ftype, path)


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "phi3" or sys.argv[2] not in ("f32", "q8_0"):
        sys.exit(__doc__)
    print(write_gguf(sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()

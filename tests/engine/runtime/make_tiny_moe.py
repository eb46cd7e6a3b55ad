"""Tiny mixture-of-experts models for the MoE logits oracle, written to GGUF.

Makes deterministic random weights in the Hugging Face layout of Qwen3MoeForCausalLM
("qwen3moe"), Qwen2MoeForCausalLM ("qwen2moe": q/k/v biases, a shared expert with a sigmoid
gate) or MixtralForCausalLM ("mixtral": GGUF architecture llama with experts) and
converts them as llama.cpp's convert_hf_to_gguf.py does: per-expert matrices stacked into 3-D
ffn_{gate,up,down}_exps tensors (expert index outermost), Mixtral's w1/w3/w2 as gate/up/down,
llama's Q/K rows permuted for its NORM-style RoPE, the router (ffn_gate_inp) and 1-D weights
kept F32. Needs only numpy and gguf, so CI regenerates the file the committed fixture was
made from (make_moe_fixture.py runs transformers on the same weights); the printed sha256
lets the test check that the two agree.

Usage: make_tiny_moe.py {qwen3moe,qwen2moe,mixtral} {f32,f16,q8_0} OUT.gguf
"""
import hashlib
import sys

import numpy as np
import gguf

N_VOCAB = 288  # 3 control tokens, 256 byte tokens, 29 pieces
HIDDEN = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 16
N_EXPERT = 4
N_USED = 2
FF_EXPERT = 64
FF_SHARED = 96
CTX = 256
ARCHS = {"qwen3moe": "qwen3moe", "qwen2moe": "qwen2moe", "mixtral": "llama"}  # -> GGUF architecture


def hf_config(arch):
    """The transformers config (as keyword arguments) of the tiny model."""
    common = dict(vocab_size=N_VOCAB, hidden_size=HIDDEN, num_hidden_layers=N_LAYER,
                  num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, head_dim=HEAD_DIM,
                  max_position_embeddings=CTX, tie_word_embeddings=False, num_experts_per_tok=N_USED,
                  attention_dropout=0.0)
    if arch == "qwen3moe":
        return dict(common, intermediate_size=2 * FF_EXPERT, moe_intermediate_size=FF_EXPERT,
                    num_experts=N_EXPERT, norm_topk_prob=True, rms_norm_eps=1e-6, rope_theta=1e6,
                    decoder_sparse_step=1, mlp_only_layers=[], attention_bias=False,
                    use_sliding_window=False)
    if arch == "qwen2moe":
        return dict(common, intermediate_size=2 * FF_EXPERT, moe_intermediate_size=FF_EXPERT,
                    shared_expert_intermediate_size=FF_SHARED, num_experts=N_EXPERT, norm_topk_prob=False,
                    rms_norm_eps=1e-6, rope_theta=1e6, decoder_sparse_step=1, mlp_only_layers=[],
                    qkv_bias=True, use_sliding_window=False)
    return dict(common, intermediate_size=FF_EXPERT, num_local_experts=N_EXPERT, rms_norm_eps=1e-5,
                rope_theta=1e4, sliding_window=None)


def hf_weights(arch, seed=1234):
    """name -> float32 array in Hugging Face's names and [out, in] shapes (per-expert names as
    the published checkpoints have them)."""
    rng = np.random.default_rng(seed)

    def mat(out_dim, in_dim, gain=1.0):
        return (rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((N_VOCAB, HIDDEN)).astype(np.float32)}
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(HIDDEN)
        w[p + "self_attn.q_proj.weight"] = mat(N_HEAD * HEAD_DIM, HIDDEN)
        w[p + "self_attn.k_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, HIDDEN)
        w[p + "self_attn.v_proj.weight"] = mat(N_HEAD_KV * HEAD_DIM, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = mat(HIDDEN, N_HEAD * HEAD_DIM)
        if arch == "qwen2moe":
            for name, width in (("q", N_HEAD), ("k", N_HEAD_KV), ("v", N_HEAD_KV)):
                w[p + f"self_attn.{name}_proj.bias"] = (0.2 * rng.standard_normal(width * HEAD_DIM)).astype(np.float32)
        if arch == "qwen3moe":
            w[p + "self_attn.q_norm.weight"] = norm(HEAD_DIM)
            w[p + "self_attn.k_norm.weight"] = norm(HEAD_DIM)
        w[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        # A decisive router: logits a few units apart, so top-k is stable under rounding.
        moe = p + ("block_sparse_moe." if arch == "mixtral" else "mlp.")
        w[moe + "gate.weight"] = mat(N_EXPERT, HIDDEN, gain=4.0)
        names = ("w1", "w3", "w2") if arch == "mixtral" else ("gate_proj", "up_proj", "down_proj")
        if arch == "qwen2moe":
            w[moe + "shared_expert.gate_proj.weight"] = mat(FF_SHARED, HIDDEN)
            w[moe + "shared_expert.up_proj.weight"] = mat(FF_SHARED, HIDDEN)
            w[moe + "shared_expert.down_proj.weight"] = mat(HIDDEN, FF_SHARED)
            w[moe + "shared_expert_gate.weight"] = mat(1, HIDDEN, gain=2.0)
        for e in range(N_EXPERT):
            w[f"{moe}experts.{e}.{names[0]}.weight"] = mat(FF_EXPERT, HIDDEN)
            w[f"{moe}experts.{e}.{names[1]}.weight"] = mat(FF_EXPERT, HIDDEN)
            w[f"{moe}experts.{e}.{names[2]}.weight"] = mat(HIDDEN, FF_EXPERT)
    w["model.norm.weight"] = norm(HIDDEN)
    w["lm_head.weight"] = mat(N_VOCAB, HIDDEN, gain=2.0)
    return w


def permute_qk(w, n_head):
    """llama.cpp's LlamaModel.permute: HF's rotate-half rows to interleaved pairs."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_tensors(arch, w):
    """GGUF name -> array (numpy order: the GGUF ne reversed)."""
    out = {"token_embd.weight": w["model.embed_tokens.weight"]}
    llama = arch == "mixtral"
    for i in range(N_LAYER):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out[b + "attn_norm.weight"] = w[p + "input_layernorm.weight"]
        q, k = w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"]
        out[b + "attn_q.weight"] = permute_qk(q, N_HEAD) if llama else q
        out[b + "attn_k.weight"] = permute_qk(k, N_HEAD_KV) if llama else k
        out[b + "attn_v.weight"] = w[p + "self_attn.v_proj.weight"]
        out[b + "attn_output.weight"] = w[p + "self_attn.o_proj.weight"]
        if arch == "qwen2moe":
            for name in ("q", "k", "v"):
                out[b + f"attn_{name}.bias"] = w[p + f"self_attn.{name}_proj.bias"]
        if arch == "qwen3moe":
            out[b + "attn_q_norm.weight"] = w[p + "self_attn.q_norm.weight"]
            out[b + "attn_k_norm.weight"] = w[p + "self_attn.k_norm.weight"]
        out[b + "ffn_norm.weight"] = w[p + "post_attention_layernorm.weight"]
        moe = p + ("block_sparse_moe." if llama else "mlp.")
        out[b + "ffn_gate_inp.weight"] = w[moe + "gate.weight"]
        names = ("w1", "w3", "w2") if llama else ("gate_proj", "up_proj", "down_proj")
        for gname, hname in zip(("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"), names):
            out[b + gname + ".weight"] = np.stack(
                [w[f"{moe}experts.{e}.{hname}.weight"] for e in range(N_EXPERT)])
        if arch == "qwen2moe":
            out[b + "ffn_gate_inp_shexp.weight"] = w[moe + "shared_expert_gate.weight"].reshape(HIDDEN)
            for gname, hname in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
                out[b + f"ffn_{gname}_shexp.weight"] = w[moe + f"shared_expert.{hname}.weight"]
    out["output_norm.weight"] = w["model.norm.weight"]
    out["output.weight"] = w["lm_head.weight"]
    return out


def tensor_type(name, data, ftype):
    if data.ndim < 2 or name.endswith("_norm.weight") or "ffn_gate_inp" in name or ftype == "f32":
        return gguf.GGMLQuantizationType.F32
    return gguf.GGMLQuantizationType.F16 if ftype == "f16" else gguf.GGMLQuantizationType.Q8_0


def add_vocab(wr):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += ["\u2581" + chr(ord("a") + i) for i in range(26)] + ["\u2581the", "\u2581and", "\u2581of"]
    assert len(tokens) == N_VOCAB
    types = [2, 3, 3] + [6] * 256 + [1] * (N_VOCAB - 259)
    wr.add_tokenizer_model("llama")
    wr.add_token_list(tokens)
    wr.add_token_scores([0.0] * 259 + [-float(i) for i in range(N_VOCAB - 259)])
    wr.add_token_types(types)
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)


def write_gguf(arch, ftype, path):
    gguf_arch = ARCHS[arch]
    wr = gguf.GGUFWriter(path, gguf_arch)
    wr.add_name(f"tiny-{arch}")
    wr.add_context_length(CTX)
    wr.add_embedding_length(HIDDEN)
    wr.add_block_count(N_LAYER)
    wr.add_head_count(N_HEAD)
    wr.add_head_count_kv(N_HEAD_KV)
    wr.add_expert_count(N_EXPERT)
    wr.add_expert_used_count(N_USED)
    cfg = hf_config(arch)
    wr.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    wr.add_rope_freq_base(cfg["rope_theta"])
    wr.add_rope_dimension_count(HEAD_DIM)
    if arch == "qwen3moe":
        wr.add_feed_forward_length(cfg["intermediate_size"])
        wr.add_expert_feed_forward_length(FF_EXPERT)
        wr.add_key_length(HEAD_DIM)
        wr.add_value_length(HEAD_DIM)
    elif arch == "qwen2moe":
        wr.add_feed_forward_length(cfg["intermediate_size"])
        wr.add_expert_feed_forward_length(FF_EXPERT)
        wr.add_expert_shared_feed_forward_length(FF_SHARED)
    else:
        wr.add_feed_forward_length(FF_EXPERT)
    add_vocab(wr)
    return write_tensors(wr, gguf_tensors(arch, hf_weights(arch)), ftype, path)


def write_tensors(wr, tensors, ftype, path):
    """Adds the tensors in the types tensor_type picks, writes and closes the file; returns its
    sha256 (make_tiny_dense.py uses it too)."""
    for name, data in tensors.items():
        qtype = tensor_type(name, data, ftype)
        if qtype == gguf.GGMLQuantizationType.F32:
            wr.add_tensor(name, data.astype(np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            wr.add_tensor(name, data.astype(np.float16))
        else:
            wr.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    return finish(wr, path)


def finish(wr, path):
    """Writes the file and returns its sha256 (hex)."""
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ARCHS or sys.argv[2] not in ("f32", "f16", "q8_0"):
        sys.exit(__doc__)
    print(write_gguf(sys.argv[1], sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()

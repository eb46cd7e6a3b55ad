// The shared forward pass (layer_program.h). Shape comments use [ne0, ne1] (ggml order).
#include "engine/runtime/layer_program.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/model_weights.h"

namespace strata {

LayerProgram::LayerProgram(const ModelConfig& config, const ModelWeights& weights,
                           Backend& backend)
    : config_(config), weights_(weights), backend_(backend) {}

int64_t LayerProgram::n_embd() const { return config_.n_embd; }
int64_t LayerProgram::n_vocab() const { return weights_.output.ne[1]; }

Tensor LayerProgram::act(std::vector<float>& buf, int64_t ne0, int64_t n) {
    const size_t need = static_cast<size_t>(ne0 * n);
    if (buf.size() < need) buf.resize(need);
    return Tensor::contiguous(GgmlType::F32, buf.data(), {ne0, n});
}

void LayerProgram::forward(std::span<const int32_t> tokens, KvCache& kv,
                           std::span<const int32_t> output_rows, std::vector<float>& hidden) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw ArgumentError("forward() needs at least one token");
    const int64_t pos0 = kv.n_used();
    if (pos0 + n > kv.n_ctx()) {
        throw ArgumentError(cat("context full: ", pos0, " positions used + ", n, " new tokens > ",
                                kv.n_ctx(), " cells (raise -c)"));
    }
    for (int32_t t : tokens) {
        if (t < 0 || t >= weights_.token_embd.ne[1]) {
            throw ArgumentError(cat("token id ", t, " is outside the vocabulary of ",
                                    weights_.token_embd.ne[1]));
        }
    }
    positions_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions_[static_cast<size_t>(i)] = static_cast<int32_t>(pos0 + i);

    Tensor x = act(x_, config_.n_embd, n);  // [n_embd, n]
    backend_.get_rows(weights_.token_embd, tokens.data(), n, x);
    if (config_.embd_scale != 1.0) backend_.scale(x, static_cast<float>(config_.embd_scale));

    for (int il = 0; il < config_.n_layer; ++il) {
        attention_block(il, n, kv, pos0);
        ffn_block(il, n);
    }
    kv.set_used(pos0 + n);

    // Final norm on the requested rows only.
    const int64_t m = static_cast<int64_t>(output_rows.size());
    hidden.resize(static_cast<size_t>(config_.n_embd * m));
    for (int64_t j = 0; j < m; ++j) {
        const int32_t r = output_rows[static_cast<size_t>(j)];
        if (r < 0 || r >= n) throw ArgumentError(cat("output row ", r, " outside a batch of ", n));
        Tensor src = x.row(r);
        Tensor dst = Tensor::contiguous(GgmlType::F32, hidden.data() + j * config_.n_embd,
                                        {config_.n_embd, 1});
        backend_.rms_norm(src, &weights_.output_norm, static_cast<float>(config_.rms_eps), dst);
    }
}

void LayerProgram::attention_block(int il, int64_t n, KvCache& kv, int64_t pos0) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(il)];
    const float eps = static_cast<float>(config_.rms_eps);
    const int64_t n_head = config_.n_head[static_cast<size_t>(il)];
    const int64_t n_head_kv = config_.n_head_kv[static_cast<size_t>(il)];
    const int64_t hd_k = config_.head_dim_k, hd_v = config_.head_dim_v;
    const bool swa = config_.is_swa[static_cast<size_t>(il)];

    Tensor x = act(x_, config_.n_embd, n);
    Tensor cur = act(cur_, config_.n_embd, n);  // [n_embd, n]
    backend_.rms_norm(x, &w.attn_norm, eps, cur);

    Tensor q = act(q_, n_head * hd_k, n);     // [n_head*hd_k, n]
    Tensor k = act(k_, n_head_kv * hd_k, n);  // [n_head_kv*hd_k, n]
    Tensor v = act(v_, n_head_kv * hd_v, n);  // [n_head_kv*hd_v, n]
    backend_.matmul(w.attn_q, cur, q);
    backend_.matmul(w.attn_k, cur, k);
    backend_.matmul(w.attn_v, cur, v);
    if (present(w.attn_q_bias)) backend_.add(q, w.attn_q_bias, q);
    if (present(w.attn_k_bias)) backend_.add(k, w.attn_k_bias, k);
    if (present(w.attn_v_bias)) backend_.add(v, w.attn_v_bias, v);

    // Per-head views [hd, heads*n] for q/k norms, [hd, heads, n] for RoPE and attention.
    Tensor q_heads = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head, n});
    Tensor k_heads = Tensor::contiguous(GgmlType::F32, k.data, {hd_k, n_head_kv, n});
    if (present(w.attn_q_norm)) {
        Tensor qf = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head * n});
        Tensor kf = Tensor::contiguous(GgmlType::F32, k.data, {hd_k, n_head_kv * n});
        backend_.rms_norm(qf, &w.attn_q_norm, eps, qf);
        backend_.rms_norm(kf, &w.attn_k_norm, eps, kf);
    }

    RopeParams rope;
    rope.n_rot = static_cast<int>(config_.rope.n_rot);
    rope.style = config_.rope.style;
    // Sliding-window layers run unscaled with their own base (gemma3).
    rope.freq_base = static_cast<float>(swa ? config_.rope.freq_base_swa : config_.rope.freq_base);
    rope.freq_scale = (!swa && config_.rope.scaling == RopeScaling::Linear)
                          ? static_cast<float>(1.0 / config_.rope.scaling_factor)
                          : 1.0f;
    if (present(weights_.rope_freqs)) rope.freq_factors = weights_.rope_freqs.as<const float>();
    backend_.rope(q_heads, positions_.data(), rope);
    backend_.rope(k_heads, positions_.data(), rope);

    backend_.kv_store(k, kv.k(il), pos0);
    backend_.kv_store(v, kv.v(il), pos0);

    AttentionParams ap;
    ap.n_head = static_cast<int>(n_head);
    ap.n_head_kv = static_cast<int>(n_head_kv);
    ap.head_dim_k = static_cast<int>(hd_k);
    ap.head_dim_v = static_cast<int>(hd_v);
    ap.scale = config_.kq_scale > 0 ? static_cast<float>(config_.kq_scale)
                                    : 1.0f / std::sqrt(static_cast<float>(hd_k));
    ap.window = swa ? static_cast<int32_t>(config_.sliding_window) : 0;
    ap.softcap = static_cast<float>(config_.attn_logit_softcap);
    Tensor attn = act(attn_, n_head * hd_v, n);  // [n_head*hd_v, n]
    Tensor attn_heads = Tensor::contiguous(GgmlType::F32, attn.data, {hd_v, n_head, n});
    backend_.attention(q_heads, kv.k(il), kv.v(il), pos0 + n, positions_.data(), ap, attn_heads);

    Tensor proj = act(proj_, config_.n_embd, n);  // [n_embd, n]
    backend_.matmul(w.attn_output, attn, proj);
    if (present(w.post_attention_norm)) backend_.rms_norm(proj, &w.post_attention_norm, eps, proj);
    backend_.add(x, proj, x);
}

void LayerProgram::ffn_block(int il, int64_t n) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(il)];
    const float eps = static_cast<float>(config_.rms_eps);
    const int64_t n_ff = config_.n_ff[static_cast<size_t>(il)];

    Tensor x = act(x_, config_.n_embd, n);
    Tensor cur = act(cur_, config_.n_embd, n);
    backend_.rms_norm(x, &w.ffn_norm, eps, cur);
    Tensor gate = act(gate_, n_ff, n);  // [n_ff, n]
    Tensor up = act(up_, n_ff, n);      // [n_ff, n]
    backend_.matmul(w.ffn_gate, cur, gate);
    backend_.matmul(w.ffn_up, cur, up);
    backend_.gated_activation(gate, up, config_.activation, gate);
    Tensor proj = act(proj_, config_.n_embd, n);
    backend_.matmul(w.ffn_down, gate, proj);
    if (present(w.post_ffw_norm)) backend_.rms_norm(proj, &w.post_ffw_norm, eps, proj);
    backend_.add(x, proj, x);
}

void LayerProgram::logits(const float* hidden, int64_t n, float* logits) {
    Tensor h = Tensor::contiguous(GgmlType::F32, const_cast<float*>(hidden), {config_.n_embd, n});
    Tensor out = Tensor::contiguous(GgmlType::F32, logits, {n_vocab(), n});
    backend_.matmul(weights_.output, h, out);
    if (config_.final_logit_softcap > 0) {
        backend_.softcap(out, static_cast<float>(config_.final_logit_softcap));
    }
}

}  // namespace strata

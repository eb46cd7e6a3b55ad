// The shared forward pass and its executor (layer_program.h). Shape comments use [ne0, ne1]
// (ggml order).
#include "engine/runtime/layer_program.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/timing.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program_moe.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {

constexpr int64_t kLogitRows = 32;  // logits computed this many rows at a time (bounds scratch)

bool is_host(const Backend& b) { return b.memory_kind() != MemoryKind::Device; }

// RoPE of one layer as the file states it. Sliding-window layers run unscaled with their own
// base (gemma3); the others scale linearly or by YaRN (freq_scale = 1/factor either way).
RopeParams rope_params(const RopeConfig& r, bool swa, const float* freq_factors) {
    RopeParams p;
    p.n_rot = static_cast<int>(r.n_rot);
    p.style = r.style;
    p.freq_base = static_cast<float>(swa ? r.freq_base_swa : r.freq_base);
    p.freq_factors = freq_factors;
    if (swa || r.scaling == RopeScaling::None) return p;
    p.freq_scale = static_cast<float>(1.0 / r.scaling_factor);
    if (r.scaling == RopeScaling::Yarn) {
        p.ext_factor = static_cast<float>(r.yarn_ext_factor);
        p.attn_factor = static_cast<float>(r.yarn_attn_factor);
        p.beta_fast = static_cast<float>(r.yarn_beta_fast);
        p.beta_slow = static_cast<float>(r.yarn_beta_slow);
        p.n_ctx_orig = static_cast<int>(r.n_ctx_orig);
    }
    return p;
}

}  // namespace

LayerProgram::LayerProgram(const PlacedModel& model, int64_t gpu_prefill_min_tokens, uint64_t gpu_staging_limit)
    : model_(model),
      config_(model.model().config()),
      gpu_prefill_min_tokens_(gpu_prefill_min_tokens),
      gpu_staging_limit_(gpu_staging_limit),
      moe_(std::make_unique<MoeScratch>()) {
    if (static_cast<int>(model.backends().size()) > kMaxBackends) {
        throw UnsupportedError(cat("the executor runs on at most ", kMaxBackends, " backends"));
    }
    for (size_t i = 0; i < model.backends().size(); ++i)
        if (!is_host(*model.backends()[i])) gpu_ = static_cast<int>(i);
    if (gpu_ >= 0) {
        const Backend* g = model.backends()[static_cast<size_t>(gpu_)];
        auto on_gpu = [&](const PlacedWeight& w) { return !w.present() || (w.backend == g && w.stream_id < 0); };
        all_on_gpu_ = on_gpu(model.token_embd()) && on_gpu(model.output());
        for (int il = 0; il < model.n_layer() && all_on_gpu_; ++il) {
            const PlacedLayer& l = model.layer(il);
            all_on_gpu_ = l.attn_home == g && on_gpu(l.attn_q) && on_gpu(l.attn_k) && on_gpu(l.attn_v) &&
                          on_gpu(l.attn_output);
            for (const FfnPart& p : l.ffn) all_on_gpu_ = all_on_gpu_ && on_gpu(p.gate) && on_gpu(p.up) && on_gpu(p.down);
            all_on_gpu_ = all_on_gpu_ && l.moe.experts.empty();  // MoE routing reads logits on the host
        }
    }
}

namespace {
uint64_t weight_bytes(const PlacedWeight& w) { return w.tensor.row_bytes() * static_cast<uint64_t>(w.tensor.n_rows()); }
}  // namespace

int LayerProgram::compute_backend(const PlacedWeight& w, int64_t n) const {
    if (gpu_ >= 0 && shipping_ok_ && gpu_prefill_min_tokens_ > 0 && n >= gpu_prefill_min_tokens_ &&
        is_host(*w.backend) && weight_bytes(w) <= ship_.size()) {
        return gpu_;
    }
    return index_of(w.backend);
}

int LayerProgram::part_backend(const FfnPart& p, int64_t n) const {
    // A part runs where all three of its matrices can: one too large to ship keeps it home.
    const int b = compute_backend(p.gate, n);
    if (b == gpu_ && (compute_backend(p.up, n) != gpu_ || compute_backend(p.down, n) != gpu_)) {
        return index_of(p.gate.backend);
    }
    return b;
}

LayerProgram::~LayerProgram() = default;

int64_t LayerProgram::n_embd() const { return config_.n_embd; }
int64_t LayerProgram::n_vocab() const { return model_.output().tensor.ne[1]; }

Backend& LayerProgram::backend(int bi) const { return *model_.backends()[static_cast<size_t>(bi)]; }

int LayerProgram::index_of(const Backend* b) const {
    const int i = model_.backend_index(b);
    STRATA_INVARIANT(i >= 0);
    return i;
}

uint64_t LayerProgram::activation_bytes(const Backend* b) const {
    const int bi = model_.backend_index(b);
    if (bi < 0) return 0;
    uint64_t total = 0;
    for (const Buffer& buf : scratch_[static_cast<size_t>(bi)]) total += buf.size();
    return total;
}

Tensor LayerProgram::act(int bi, Slot slot, int64_t ne0, int64_t n) {
    Buffer& buf = scratch_[static_cast<size_t>(bi)][slot];
    const uint64_t need = static_cast<uint64_t>(ne0 * n) * sizeof(float);
    if (buf.size() < need) {
        buf.reset();  // first, so the old block's bytes count toward the new one
        buf = backend(bi).allocate(need, "activations");
        ++act_epoch_;
    }
    return buf.tensor(GgmlType::F32, {ne0, n});
}

void LayerProgram::transfer(int from, const Tensor& src, int to, Tensor& dst) {
    STRATA_INVARIANT(from != to);
    Backend& a = backend(from);
    Backend& b = backend(to);
    if (is_host(a)) {
        b.copy_in(src, dst);
    } else if (is_host(b)) {
        a.copy_out(src, dst);
    } else {
        bounce_.resize(static_cast<size_t>(src.n_elements()));
        Tensor host = Tensor::contiguous(GgmlType::F32, bounce_.data(), {src.ne[0], src.ne[1], src.ne[2], src.ne[3]});
        a.copy_out(src, host);
        b.copy_in(host, dst);
    }
}

Tensor LayerProgram::residual_on(int bi, int64_t n) {
    Tensor x = act(bi, kX, config_.n_embd, n);
    if (x_home_ != bi) {
        Tensor from = act(x_home_, kX, config_.n_embd, n);
        transfer(x_home_, from, bi, x);
        x_home_ = bi;
    }
    return x;
}

void LayerProgram::matmul_local(const PlacedWeight& w, int bi, const Tensor& in, Tensor& out) {
    Backend& b = backend(bi);
    const bool shipped = index_of(w.backend) != bi;
    if (w.stream_id < 0 && !shipped) {
        b.matmul(w.tensor, in, out);
        return;
    }
    DiskStream* stream = w.stream_id >= 0 ? model_.disk_stream() : nullptr;
    Tensor t = w.tensor;
    if (stream != nullptr) {
        t.data = const_cast<void*>(stream->acquire(w.stream_id));
        t.memory = MemoryKind::Host;
    }
    try {
        if (shipped) {
            // Into the GPU staging buffer; copy_in returns once the host bytes may be reused.
            const Tensor host = t;
            const uint64_t bytes = host.row_bytes() * static_cast<uint64_t>(host.n_rows());
            STRATA_INVARIANT(ship_.size() >= bytes);
            t = Tensor::contiguous(host.type, ship_.data(), {host.ne[0], host.ne[1], host.ne[2], host.ne[3]},
                                   ship_.memory());
            const auto t0 = Clock::now();
            b.copy_in(host, t);
            ship_stats_.seconds += seconds_since(t0);
            ship_stats_.bytes += bytes;
        }
        // A shipped weight's host bytes are free once copied; otherwise the product reads them.
        if (shipped && stream != nullptr) {
            stream->release(w.stream_id);
            stream = nullptr;
        }
        b.matmul(t, in, out);
        if (stream != nullptr) {
            stream->release(w.stream_id);
            stream = nullptr;
        }
    } catch (...) {
        if (stream != nullptr) stream->release(w.stream_id);
        throw;
    }
}

void LayerProgram::matmul(const PlacedWeight& w, int home, const Tensor& in, Tensor& out) {
    const int64_t n = in.ne[1];
    const int wb = compute_backend(w, n);
    if (wb == home) {
        matmul_local(w, wb, in, out);
        return;
    }
    Tensor in_w = act(wb, kMmIn, in.ne[0], n);
    transfer(home, in, wb, in_w);
    Tensor out_w = act(wb, kMmOut, out.ne[0], n);
    matmul_local(w, wb, in_w, out_w);
    transfer(wb, out_w, home, out);
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
    const PlacedWeight& embd = model_.token_embd();
    check_batch(tokens, output_rows);
    if (n > kv.max_batch()) {
        forward_in_parts(tokens, kv, output_rows, hidden);
        return;
    }
    positions_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions_[static_cast<size_t>(i)] = static_cast<int32_t>(pos0 + i);
    seqs_.assign(1, SeqSpan{&kv, 0, n, pos0});

    // The GPU staging buffer for shipped prefill weights: sized once for the largest host
    // weight; without room for it, prefill stays on the host backends.
    if (gpu_ >= 0 && shipping_ok_ && gpu_prefill_min_tokens_ > 0 && n >= gpu_prefill_min_tokens_ && !ship_) {
        // Sized for the largest host weight that fits the limit; a larger one is computed where
        // it lives (with its FFN part: part_backend).
        uint64_t largest = 0;
        auto consider = [&](const PlacedWeight& w) {
            if (w.present() && is_host(*w.backend) && weight_bytes(w) <= gpu_staging_limit_) {
                largest = std::max(largest, weight_bytes(w));
            }
        };
        for (int il = 0; il < model_.n_layer(); ++il) {
            const PlacedLayer& l = model_.layer(il);
            for (const PlacedWeight* w : {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output}) consider(*w);
            for (const FfnPart& p : l.ffn) {
                consider(p.gate);
                consider(p.up);
                consider(p.down);
            }
            for_each_moe_weight(l.moe, consider);
        }
        if (largest == 0) {
            shipping_ok_ = false;  // nothing to ship, or no room the activations do not need
        } else {
            try {
                ship_ = backend(gpu_).allocate(largest, "prefill weight staging");
            } catch (const BudgetError&) {
                shipping_ok_ = false;
            }
        }
    }
    x_home_ = index_of(embd.backend);
    const int64_t m = static_cast<int64_t>(output_rows.size());
    // A decode step with everything on the GPU runs as one graph once scratch sizes settled:
    // the last recording replayed at this position when nothing else changed, else recorded.
    Backend* graph = all_on_gpu_ && n == 1 && m == 1 && forwards_ > 0 && backend(gpu_).capabilities().step_graphs
                         ? &backend(gpu_) : nullptr;
    if (n == 1) ++forwards_;
    const StepKey key{kv.k(0).data, kv.n_ctx(), act_epoch_};
    if (graph != nullptr && step_key_ == key && graph->replay_step(this, tokens[0], positions_[0])) {
        kv.set_used(pos0 + n);
        hidden.resize(static_cast<size_t>(config_.n_embd));
        Tensor host = Tensor::contiguous(GgmlType::F32, hidden.data(), {config_.n_embd, 1});
        backend(x_home_).copy_out(act(x_home_, kHidden, config_.n_embd, 1), host);
        return;
    }
    if (graph != nullptr) {
        step_key_ = StepKey{};
        graph->begin_step_graph(this, tokens.data(), positions_.data());
    }
    Tensor out;
    try {
        out = run_layers(tokens, output_rows);
        if (graph != nullptr) {
            graph->end_graph();
            step_key_ = StepKey{kv.k(0).data, kv.n_ctx(), act_epoch_};
        }
    } catch (...) {
        if (graph != nullptr) graph->abort_graph();
        throw;
    }
    kv.set_used(pos0 + n);
    copy_hidden_out(out, m, hidden);
}

void LayerProgram::check_batch(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) const {
    const int64_t n_vocab_in = model_.token_embd().tensor.ne[1];
    for (int32_t t : tokens) {
        if (t < 0 || t >= n_vocab_in) {
            throw ArgumentError(cat("token id ", t, " is outside the vocabulary of ", n_vocab_in));
        }
    }
    for (int32_t r : output_rows) {
        if (r < 0 || r >= static_cast<int64_t>(tokens.size())) {
            throw ArgumentError(cat("output row ", r, " outside a batch of ", tokens.size()));
        }
    }
}

Tensor LayerProgram::run_layers(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t m = static_cast<int64_t>(output_rows.size());
    const PlacedWeight& embd = model_.token_embd();
    Tensor x = act(x_home_, kX, config_.n_embd, n);  // [n_embd, n]
    backend(x_home_).get_rows(embd.tensor, tokens.data(), n, x);
    if (config_.embd_scale != 1.0) backend(x_home_).scale(x, static_cast<float>(config_.embd_scale));

    for (int il = 0; il < config_.n_layer; ++il) {
        attention_block(il, n);
        ffn_block(il, n);
    }

    // Final norm of the requested rows, where the residual stream ends.
    Tensor out;
    if (m > 0) {
        Backend& h = backend(x_home_);
        x = act(x_home_, kX, config_.n_embd, n);
        out = act(x_home_, kHidden, config_.n_embd, m);
        const float eps = static_cast<float>(config_.rms_eps);
        for (int64_t j = 0; j < m; ++j) {
            Tensor dst = out.row(j);
            h.rms_norm(x.row(output_rows[static_cast<size_t>(j)]), &model_.output_norm().on(x_home_), eps, dst);
        }
    }
    return out;
}

void LayerProgram::copy_hidden_out(const Tensor& out, int64_t m, std::vector<float>& hidden) {
    hidden.resize(static_cast<size_t>(config_.n_embd * m));
    if (m == 0) return;
    Tensor host = Tensor::contiguous(GgmlType::F32, hidden.data(), {config_.n_embd, m});
    backend(x_home_).copy_out(out, host);
}

void LayerProgram::forward_in_parts(std::span<const int32_t> tokens, KvCache& kv,
                                    std::span<const int32_t> output_rows, std::vector<float>& hidden) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t part = kv.max_batch();
    std::vector<float> all(static_cast<size_t>(config_.n_embd) * output_rows.size());
    std::vector<int32_t> rows;
    std::vector<size_t> columns;  // where each of rows' results goes in `all`
    std::vector<float> part_hidden;
    for (int64_t b = 0; b < n; b += part) {
        const int64_t count = std::min(part, n - b);
        rows.clear();
        columns.clear();
        for (size_t j = 0; j < output_rows.size(); ++j) {
            if (output_rows[j] >= b && output_rows[j] < b + count) {
                rows.push_back(static_cast<int32_t>(output_rows[j] - b));
                columns.push_back(j);
            }
        }
        forward(tokens.subspan(static_cast<size_t>(b), static_cast<size_t>(count)), kv, rows, part_hidden);
        for (size_t r = 0; r < rows.size(); ++r) {
            std::copy_n(part_hidden.data() + r * static_cast<size_t>(config_.n_embd), config_.n_embd,
                        all.data() + columns[r] * static_cast<size_t>(config_.n_embd));
        }
    }
    hidden = std::move(all);
}

void LayerProgram::attention_block(int il, int64_t n) {
    const PlacedLayer& w = model_.layer(il);
    const int hb = index_of(w.attn_home);
    Backend& b = *w.attn_home;
    const float eps = static_cast<float>(config_.rms_eps);
    const int64_t n_head = config_.n_head[static_cast<size_t>(il)];
    const int64_t n_head_kv = config_.n_head_kv[static_cast<size_t>(il)];
    const int64_t hd_k = config_.head_dim_k, hd_v = config_.head_dim_v;
    const bool swa = config_.is_swa[static_cast<size_t>(il)];

    Tensor x = residual_on(hb, n);
    Tensor cur = act(hb, kCur, config_.n_embd, n);  // [n_embd, n]
    b.rms_norm(x, &w.attn_norm.on(hb), eps, cur);
    observe(il, ActivationSite::AttnInput, cur);

    Tensor q = act(hb, kQ, n_head * hd_k, n);     // [n_head*hd_k, n]
    Tensor k = act(hb, kK, n_head_kv * hd_k, n);  // [n_head_kv*hd_k, n]
    Tensor v = act(hb, kV, n_head_kv * hd_v, n);  // [n_head_kv*hd_v, n]
    matmul(w.attn_q, hb, cur, q);
    matmul(w.attn_k, hb, cur, k);
    matmul(w.attn_v, hb, cur, v);
    if (w.attn_q_bias.present()) b.add(q, w.attn_q_bias.on(hb), q);
    if (w.attn_k_bias.present()) b.add(k, w.attn_k_bias.on(hb), k);
    if (w.attn_v_bias.present()) b.add(v, w.attn_v_bias.on(hb), v);

    // Per-head views [hd, heads*n] for q/k norms, [hd, heads, n] for RoPE and attention.
    Tensor q_heads = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head, n}, q.memory);
    Tensor k_heads = Tensor::contiguous(GgmlType::F32, k.data, {hd_k, n_head_kv, n}, k.memory);
    if (w.attn_q_norm.present()) {
        Tensor qf = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head * n}, q.memory);
        Tensor kf = Tensor::contiguous(GgmlType::F32, k.data, {hd_k, n_head_kv * n}, k.memory);
        b.rms_norm(qf, &w.attn_q_norm.on(hb), eps, qf);
        b.rms_norm(kf, &w.attn_k_norm.on(hb), eps, kf);
    }

    const RopeParams rope = rope_params(config_.rope, swa, model_.rope_freqs());
    b.rope(q_heads, positions_.data(), rope);
    b.rope(k_heads, positions_.data(), rope);

    for (const SeqSpan& s : seqs_) {
        b.kv_store(k.rows(s.row0, s.n), s.kv->k(il), s.pos0);
        b.kv_store(v.rows(s.row0, s.n), s.kv->v(il), s.pos0);
    }

    AttentionParams ap;
    ap.n_head = static_cast<int>(n_head);
    ap.n_head_kv = static_cast<int>(n_head_kv);
    ap.head_dim_k = static_cast<int>(hd_k);
    ap.head_dim_v = static_cast<int>(hd_v);
    ap.scale = config_.kq_scale > 0 ? static_cast<float>(config_.kq_scale)
                                    : 1.0f / std::sqrt(static_cast<float>(hd_k));
    ap.window = swa ? static_cast<int32_t>(config_.sliding_window) : 0;
    ap.softcap = static_cast<float>(config_.attn_logit_softcap);
    Tensor attn = act(hb, kAttn, n_head * hd_v, n);  // [n_head*hd_v, n]
    for (const SeqSpan& s : seqs_) {  // each sequence attends to its own cache
        const Tensor qs = q.rows(s.row0, s.n);
        const Tensor as = attn.rows(s.row0, s.n);
        Tensor q_s = Tensor::contiguous(GgmlType::F32, qs.data, {hd_k, n_head, s.n}, q.memory);
        Tensor attn_s = Tensor::contiguous(GgmlType::F32, as.data, {hd_v, n_head, s.n}, attn.memory);
        b.attention(q_s, s.kv->k(il), s.kv->v(il), s.pos0 + s.n, positions_.data() + s.row0, ap, attn_s);
    }

    Tensor proj = act(hb, kProj, config_.n_embd, n);  // [n_embd, n]
    observe(il, ActivationSite::AttnOutputInput, attn);
    matmul(w.attn_output, hb, attn, proj);
    if (w.post_attention_norm.present()) b.rms_norm(proj, &w.post_attention_norm.on(hb), eps, proj);
    b.add(x, proj, x);
}

void LayerProgram::ffn_block(int il, int64_t n) {
    if (!model_.layer(il).moe.experts.empty()) {
        moe_ffn_block(il, n);
        return;
    }
    if (sparse_ != nullptr) {
        if (hot_cold_ != nullptr) {
            hot_cold_ffn_block(il, n);
        } else {
            sparse_ffn_block(il, n);
        }
        return;
    }
    const PlacedLayer& w = model_.layer(il);
    const float eps = static_cast<float>(config_.rms_eps);
    const int hb = part_backend(w.ffn.front(), n);
    Backend& h = backend(hb);

    Tensor x = residual_on(hb, n);
    Tensor cur = act(hb, kCur, config_.n_embd, n);
    h.rms_norm(x, &w.ffn_norm.on(hb), eps, cur);
    observe(il, ActivationSite::FfnInput, cur);
    // Every other backend gets its copy of the normed input before any part is queued, so the
    // copies never wait behind a device part.
    std::array<bool, kMaxBackends> has_input{}, has_sum{};
    has_input[static_cast<size_t>(hb)] = true;
    for (const FfnPart& p : w.ffn) {
        const int pb = part_backend(p, n);
        if (has_input[static_cast<size_t>(pb)]) continue;
        Tensor cur_p = act(pb, kCur, config_.n_embd, n);
        transfer(hb, cur, pb, cur_p);
        has_input[static_cast<size_t>(pb)] = true;
    }
    Tensor proj = act(hb, kProj, config_.n_embd, n);
    for (const FfnPart& p : w.ffn) {
        const int pb = part_backend(p, n);
        Backend& b = backend(pb);
        const int64_t width = p.end - p.begin;
        Tensor in = pb == hb ? cur : act(pb, kCur, config_.n_embd, n);
        Tensor gate = act(pb, kGate, width, n);  // [width, n]
        Tensor up = act(pb, kUp, width, n);
        matmul_local(p.gate, pb, in, gate);
        matmul_local(p.up, pb, in, up);
        observe(il, ActivationSite::FfnGateAct, gate);
        b.gated_activation(gate, up, config_.activation, gate);
        observe(il, ActivationSite::FfnDownInput, gate);
        // Partial sums per backend: the home's in proj, others' in kPart.
        Tensor sum = pb == hb ? proj : act(pb, kPart, config_.n_embd, n);
        // phi3's gate/up (one fused tensor) and down are separate placement units: down may sit on
        // the other processor, and matmul() moves its input and output there and back.
        const bool down_apart = is_host(*p.down.backend) != is_host(b);
        if (!has_sum[static_cast<size_t>(pb)]) {
            down_apart ? matmul(p.down, pb, gate, sum) : matmul_local(p.down, pb, gate, sum);
            has_sum[static_cast<size_t>(pb)] = true;
        } else {
            Tensor tmp = act(pb, kPartTmp, config_.n_embd, n);
            down_apart ? matmul(p.down, pb, gate, tmp) : matmul_local(p.down, pb, gate, tmp);
            b.add(sum, tmp, sum);
        }
    }
    STRATA_INVARIANT(has_sum[static_cast<size_t>(hb)]);
    for (int pb = 0; pb < kMaxBackends; ++pb) {
        if (pb == hb || !has_sum[static_cast<size_t>(pb)]) continue;
        Tensor part = act(pb, kPart, config_.n_embd, n);
        Tensor tmp = act(hb, kPartTmp, config_.n_embd, n);
        transfer(pb, part, hb, tmp);
        h.add(proj, tmp, proj);
    }
    if (w.post_ffw_norm.present()) h.rms_norm(proj, &w.post_ffw_norm.on(hb), eps, proj);
    h.add(x, proj, x);
}

void LayerProgram::logits(const float* hidden, int64_t n, float* logits) {
    const PlacedWeight& out_w = model_.output();
    const int ob = index_of(out_w.backend);
    Backend& b = *out_w.backend;
    for (int64_t r0 = 0; r0 < n; r0 += kLogitRows) {
        const int64_t rows = std::min(kLogitRows, n - r0);
        Tensor h_host = Tensor::contiguous(GgmlType::F32, const_cast<float*>(hidden + r0 * config_.n_embd),
                                           {config_.n_embd, rows});
        Tensor out_host = Tensor::contiguous(GgmlType::F32, logits + r0 * n_vocab(), {n_vocab(), rows});
        if (is_host(b)) {
            matmul_local(out_w, ob, h_host, out_host);
            if (config_.final_logit_softcap > 0) b.softcap(out_host, static_cast<float>(config_.final_logit_softcap));
            continue;
        }
        Tensor h_dev = act(ob, kMmIn, config_.n_embd, rows);
        b.copy_in(h_host, h_dev);
        Tensor out_dev = act(ob, kLogits, n_vocab(), rows);
        matmul_local(out_w, ob, h_dev, out_dev);
        if (config_.final_logit_softcap > 0) b.softcap(out_dev, static_cast<float>(config_.final_logit_softcap));
        b.copy_out(out_dev, out_host);
    }
}

}  // namespace strata

// The forward pass of every supported architecture (layer_program.h): the embedding, each
// layer's attention and FFN blocks with their per-architecture options (biases, q/k norms,
// post norms, soft-caps, sliding windows), the final norm and the logits. Where each op runs is
// the executor's (layer_executor.h). Shape comments use [ne0, ne1] (ggml order).
#include "engine/runtime/layer_program.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program_moe.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {


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
      exec_(model, gpu_prefill_min_tokens, gpu_staging_limit),
      moe_(std::make_unique<MoeScratch>()) {
    routed_experts_.resize(static_cast<size_t>(config_.n_layer));
    if (exec_.gpu() < 0) return;
    const Backend& g = exec_.backend(exec_.gpu());
    for (int il = 0; il < config_.n_layer; ++il) {
        const PlacedMoe& m = model_.layer(il).moe;
        if (moe_routes_on(m, g, config_.moe.n_expert_used, config_.activation)) {
            routed_experts_[static_cast<size_t>(il)] = expert_refs(m);
        }
    }
}

LayerProgram::~LayerProgram() = default;

int64_t LayerProgram::n_embd() const { return config_.n_embd; }
int64_t LayerProgram::n_vocab() const { return model_.output().tensor.ne[1]; }
uint64_t LayerProgram::activation_bytes(const Backend* b) const { return exec_.activation_bytes(b); }

void LayerProgram::forward(std::span<const int32_t> tokens, KvCache& kv,
                           std::span<const int32_t> output_rows, std::vector<float>& hidden) {
    forward_impl(tokens, kv, output_rows, hidden, nullptr);
}

void LayerProgram::forward_logits(std::span<const int32_t> tokens, KvCache& kv, int32_t output_row,
                                  std::vector<float>& hidden, float* logits) {
    if (logits == nullptr) throw ArgumentError("forward_logits() needs a logits buffer");
    forward_impl(tokens, kv, {&output_row, 1}, hidden, logits);
}

int LayerProgram::device_logits_backend() const {
    const PlacedWeight& out_w = model_.output();
    const int ob = exec_.index_of(out_w.backend);
    if (is_host(*out_w.backend) || out_w.stream_id >= 0 || ob != exec_.x_home()) return -1;
    return ob;
}

Tensor LayerProgram::logits_on_device(int ob, const Tensor& out, int64_t m) {
    Tensor lg = exec_.act(ob, kLogits, n_vocab(), m);
    exec_.matmul_local(model_.output(), ob, out, lg);
    const double cap = config_.final_logit_softcap;
    if (cap > 0) exec_.backend(ob).softcap(lg, static_cast<float>(cap));
    return lg;
}

void LayerProgram::forward_impl(std::span<const int32_t> tokens, KvCache& kv, std::span<const int32_t> output_rows,
                                std::vector<float>& hidden, float* logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw ArgumentError("forward() needs at least one token");
    const int64_t pos0 = kv.n_used();
    if (pos0 + n > kv.n_ctx()) {
        throw ArgumentError(cat("context full: ", pos0, " positions used + ", n, " new tokens > ",
                                kv.n_ctx(), " cells (raise -c)"));
    }
    check_batch(tokens, output_rows);
    if (n > kv.max_batch()) {
        forward_in_parts(tokens, kv, output_rows, hidden);
        if (logits != nullptr) this->logits(hidden.data(), static_cast<int64_t>(output_rows.size()), logits);
        return;
    }
    positions_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions_[static_cast<size_t>(i)] = static_cast<int32_t>(pos0 + i);
    seqs_.assign(1, SeqSpan{&kv, 0, n, pos0});

    const int64_t m = static_cast<int64_t>(output_rows.size());
    exec_.begin_pass(n);
    const bool want_logits = logits != nullptr;
    const LayerExecutor::StepMode mode = exec_.begin_step(kv, tokens.data(), positions_.data(), n, m, want_logits);
    Tensor out, lg;  // lg: the logits, when they were computed on the device
    if (mode == LayerExecutor::StepMode::Replayed) {
        // The recording computed the logits too when asked for them (the step key says so).
        out = exec_.act(exec_.x_home(), kHidden, config_.n_embd, 1);
        if (want_logits) lg = exec_.act(exec_.x_home(), kLogits, n_vocab(), 1);
    } else {
        try {
            out = run_layers(tokens, output_rows);
            const int ob = want_logits ? device_logits_backend() : -1;
            if (ob >= 0) lg = logits_on_device(ob, out, m);
            exec_.end_step(mode, kv, lg.data != nullptr);
        } catch (...) {
            exec_.abort_step(mode);
            throw;
        }
    }
    kv.set_used(pos0 + n);
    results_out(lg, out, m, hidden, logits);
}

void LayerProgram::results_out(const Tensor& lg, const Tensor& out, int64_t m, std::vector<float>& hidden,
                               float* logits) {
    if (lg.data != nullptr) {
        Tensor host = Tensor::contiguous(GgmlType::F32, logits, {n_vocab(), m});
        exec_.backend(exec_.x_home()).copy_out(lg, host);
        return;
    }
    exec_.copy_hidden_out(out, m, hidden);
    if (logits != nullptr) this->logits(hidden.data(), m, logits);
}

Tensor LayerProgram::run_layers(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t m = static_cast<int64_t>(output_rows.size());
    prenormed_ = {};
    const int eb = exec_.x_home();  // the residual stream starts where the embedding is
    Tensor x = exec_.act(eb, kX, config_.n_embd, n);  // [n_embd, n]
    exec_.backend(eb).get_rows(model_.token_embd().tensor, tokens.data(), n, x);
    if (config_.embd_scale != 1.0) exec_.backend(eb).scale(x, static_cast<float>(config_.embd_scale));

    for (int il = 0; il < config_.n_layer; ++il) layer(il, n);

    // Final norm of the requested rows, where the residual stream ends.
    Tensor out;
    if (m > 0) {
        const int hb = exec_.x_home();
        Backend& h = exec_.backend(hb);
        x = exec_.act(hb, kX, config_.n_embd, n);
        out = exec_.act(hb, kHidden, config_.n_embd, m);  // [n_embd, m]
        const float eps = static_cast<float>(config_.rms_eps);
        for (int64_t j = 0; j < m; ++j) {
            Tensor dst = out.row(j);
            h.rms_norm(x.row(output_rows[static_cast<size_t>(j)]), &model_.output_norm().on(hb), eps, dst);
        }
    }
    return out;
}

void LayerProgram::layer(int il, int64_t n) {
    const GpuStretch stretch = n == 1 ? gpu_stretch(il) : GpuStretch::None;
    // The residual stream goes to the GPU before the segment: a copy cannot be recorded.
    if (stretch != GpuStretch::None) exec_.residual_on(exec_.gpu(), n);
    const LayerExecutor::StepMode mode =
        stretch == GpuStretch::None ? LayerExecutor::StepMode::Eager : exec_.begin_segment(il);
    if (mode != LayerExecutor::StepMode::Replayed) {
        try {
            attention_block(il, n);
            if (stretch == GpuStretch::Layer) ffn_block(il, n);
            if (stretch == GpuStretch::AttentionRouter) moe_router(il, n);
            exec_.end_segment(mode, il);
        } catch (...) {
            exec_.abort_step(mode);
            throw;
        }
    }
    // A decode layer routed on the GPU is all of its stretch, replayed or not: its selections ran there.
    if (stretch == GpuStretch::Layer && !model_.layer(il).moe.experts.empty()) {
        moe_times_.gpu_selections += static_cast<uint64_t>(config_.moe.n_expert_used);
    }
    if (stretch == GpuStretch::AttentionRouter) {
        moe_ffn_block(il, n, /*routed=*/true);
    } else if (stretch != GpuStretch::Layer) {
        ffn_block(il, n);
    }
}

LayerProgram::GpuStretch LayerProgram::gpu_stretch(int il) const {
    const int gb = exec_.gpu();
    if (gb < 0 || observer_ != nullptr) return GpuStretch::None;  // an observer reads activations
    const Backend* g = &exec_.backend(gb);
    const auto resident = [g](const PlacedWeight& w) { return !w.present() || (w.backend == g && w.stream_id < 0); };
    const PlacedLayer& l = model_.layer(il);
    if (l.attn_home != g || !resident(l.attn_q) || !resident(l.attn_k) || !resident(l.attn_v) ||
        !resident(l.attn_output)) {
        return GpuStretch::None;
    }
    if (!l.moe.experts.empty()) {
        if (!routed_experts_[static_cast<size_t>(il)].empty()) return GpuStretch::Layer;
        return resident(l.moe.router) ? GpuStretch::AttentionRouter : GpuStretch::Attention;
    }
    if (sparse_ != nullptr) return GpuStretch::Attention;
    for (const FfnPart& p : l.ffn)
        if (!resident(p.gate) || !resident(p.up) || !resident(p.down)) return GpuStretch::Attention;
    return GpuStretch::Layer;
}

int LayerProgram::projection_home(int il, int64_t n) const {
    const PlacedLayer& w = model_.layer(il);
    const int kb = exec_.index_of(w.attn_home);
    if (is_host(exec_.backend(kb))) return kb;
    int home = -1;
    for (const PlacedWeight* p : {&w.attn_q, &w.attn_k, &w.attn_v, &w.attn_output}) {
        if (!p->present()) continue;
        const int b = exec_.compute_backend(*p, n);
        if (!is_host(exec_.backend(b)) || (home >= 0 && b != home)) return kb;
        home = b;
    }
    return home >= 0 ? home : kb;
}

// x += [post_attention_norm](Wo · attention(q, k, v)), with
//   q = rope(q_norm(Wq·n(x) + bq)), k = rope(k_norm(Wk·n(x) + bk)), v = Wv·n(x) + bv
// on the projection home; RoPE, the KV stores and the attention on the KV cache's backend.
void LayerProgram::attention_block(int il, int64_t n) {
    const PlacedLayer& w = model_.layer(il);
    const int kb = exec_.index_of(w.attn_home);
    const int hb = projection_home(il, n);
    const int64_t n_head = config_.n_head[static_cast<size_t>(il)];
    const int64_t n_head_kv = config_.n_head_kv[static_cast<size_t>(il)];
    const int64_t hd_k = config_.head_dim_k, hd_v = config_.head_dim_v;

    Tensor x = exec_.residual_on(hb, n);                // [n_embd, n]
    Tensor cur = exec_.act(hb, kCur, config_.n_embd, n);  // [n_embd, n]
    input_norm(il, NormSite::Attention, hb, x, w.attn_norm, cur);
    observe(il, ActivationSite::AttnInput, cur);

    Tensor q = exec_.act(hb, kQ, n_head * hd_k, n);     // [n_head*hd_k, n]
    Tensor k = exec_.act(hb, kK, n_head_kv * hd_k, n);  // [n_head_kv*hd_k, n]
    Tensor v = exec_.act(hb, kV, n_head_kv * hd_v, n);  // [n_head_kv*hd_v, n]
    const PlacedWeight* qkv_w[] = {&w.attn_q, &w.attn_k, &w.attn_v};
    Tensor* qkv[] = {&q, &k, &v};
    exec_.matmul_many(qkv_w, hb, cur, qkv);

    Tensor attn = exec_.act(hb, kAttn, n_head * hd_v, n);  // [n_head*hd_v, n]
    if (kb == hb) {
        attend(il, hb, q, k, v, attn);
    } else {
        attend_away(il, hb, kb, q, k, v, attn);
    }

    Tensor proj = exec_.act(hb, kProj, config_.n_embd, n);  // [n_embd, n]
    observe(il, ActivationSite::AttnOutputInput, attn);
    exec_.matmul(w.attn_output, hb, attn, proj);
    add_residual(il, NormSite::Ffn, hb, x, proj, w.post_attention_norm);
}

void LayerProgram::attend_away(int il, int hb, int kb, Tensor& q, Tensor& k, Tensor& v, Tensor& attn) {
    const int64_t n = q.ne[1];
    Tensor qk = exec_.act(kb, kQ, q.ne[0], n);
    Tensor kk = exec_.act(kb, kK, k.ne[0], n);
    Tensor vk = exec_.act(kb, kV, v.ne[0], n);
    exec_.transfer(hb, q, kb, qk);
    exec_.transfer(hb, k, kb, kk);
    exec_.transfer(hb, v, kb, vk);
    Tensor ak = exec_.act(kb, kAttn, attn.ne[0], n);
    attend(il, kb, qk, kk, vk, ak);
    exec_.transfer(kb, ak, hb, attn);
}

void LayerProgram::attend(int il, int hb, Tensor& q, Tensor& k, Tensor& v, Tensor& attn) {
    Backend& b = exec_.backend(hb);
    const int64_t n = q.ne[1];
    const int64_t n_head = config_.n_head[static_cast<size_t>(il)];
    const int64_t n_head_kv = config_.n_head_kv[static_cast<size_t>(il)];
    const int64_t hd_k = config_.head_dim_k, hd_v = config_.head_dim_v;
    const bool swa = config_.is_swa[static_cast<size_t>(il)];

    // Biases, per-head norms [hd, heads, n], RoPE and (one sequence) the KV stores as one op.
    const PlacedLayer& w = model_.layer(il);
    const auto on_hb = [hb](const SmallWeight& t) { return t.present() ? &t.on(hb) : nullptr; };
    AttentionPrologueArgs pa;
    pa.q = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head, n}, q.memory);
    pa.k = Tensor::contiguous(GgmlType::F32, k.data, {hd_k, n_head_kv, n}, k.memory);
    pa.v = v;
    pa.q_bias = on_hb(w.attn_q_bias);
    pa.k_bias = on_hb(w.attn_k_bias);
    pa.v_bias = on_hb(w.attn_v_bias);
    pa.q_norm = on_hb(w.attn_q_norm);
    pa.k_norm = on_hb(w.attn_k_norm);
    pa.eps = static_cast<float>(config_.rms_eps);
    pa.positions = positions_.data();
    pa.rope = rope_params(config_.rope, swa, model_.rope_freqs());
    if (seqs_.size() == 1) {
        pa.k_cache = &seqs_.front().kv->k(il);
        pa.v_cache = &seqs_.front().kv->v(il);
        pa.first_cell = seqs_.front().pos0;
    }
    b.attention_prologue(pa);
    // A batched decode step (one token per sequence): the stores and the attention of every
    // sequence as one op each, which a device runs as one launch.
    bool one_each = seqs_.size() > 1;
    for (const SeqSpan& s : seqs_) one_each = one_each && s.n == 1;
    seq_kv_.clear();
    if (one_each) {
        for (const SeqSpan& s : seqs_) seq_kv_.push_back(SequenceKv{&s.kv->k(il), &s.kv->v(il), static_cast<int32_t>(s.pos0)});
        b.kv_store_rows(k, v, seq_kv_);
    } else if (seqs_.size() > 1) {
        for (const SeqSpan& s : seqs_) {
            b.kv_store(k.rows(s.row0, s.n), s.kv->k(il), s.pos0);
            b.kv_store(v.rows(s.row0, s.n), s.kv->v(il), s.pos0);
        }
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
    if (one_each) {
        const Tensor q3 = Tensor::contiguous(GgmlType::F32, q.data, {hd_k, n_head, n}, q.memory);
        Tensor attn3 = Tensor::contiguous(GgmlType::F32, attn.data, {hd_v, n_head, n}, attn.memory);
        b.attention_rows(q3, seq_kv_, ap, attn3);
        return;
    }
    for (const SeqSpan& s : seqs_) {  // each sequence attends to its own cache
        const Tensor qs = q.rows(s.row0, s.n);
        const Tensor as = attn.rows(s.row0, s.n);
        Tensor q_s = Tensor::contiguous(GgmlType::F32, qs.data, {hd_k, n_head, s.n}, q.memory);      // [hd_k, n_head, s.n]
        Tensor attn_s = Tensor::contiguous(GgmlType::F32, as.data, {hd_v, n_head, s.n}, attn.memory);  // [hd_v, n_head, s.n]
        b.attention(q_s, s.kv->k(il), s.kv->v(il), s.pos0 + s.n, positions_.data() + s.row0, ap, attn_s);
    }
}

// x += [post_ffw_norm](Σ_parts Wdown[:, part] · (act(Wgate[part]·n(x)) ⊙ Wup[part]·n(x))), on
// the home of its first part; the other parts on their own backends (the executor's).
void LayerProgram::ffn_block(int il, int64_t n) {
    if (!model_.layer(il).moe.experts.empty()) {
        moe_ffn_block(il, n);
        return;
    }
    const PlacedLayer& w = model_.layer(il);
    if (sparse_ != nullptr) {
        if (hot_cold_ != nullptr && hot_cold_->layer(il).split) {
            hot_cold_ffn_block(il, n);
        } else if (!gpu_ffn_only_ || !is_host(*w.ffn.front().gate.backend)) {
            sparse_ffn_block(il, n);
        } else {
            prenormed_ = {};  // the self-draft skips an FFN in RAM: it adds 0, x stays
        }
        return;
    }
    std::span<const FfnPart> placed_parts = w.ffn;
    if (gpu_ffn_only_) {  // the self-draft: the parts placed on the GPU
        placed_parts = gpu_parts_[static_cast<size_t>(il)];
        if (placed_parts.empty()) {
            prenormed_ = {};
            return;
        }
    }
    const int hb = exec_.part_backend(placed_parts.front(), n);

    Tensor x = exec_.residual_on(hb, n);                // [n_embd, n]
    Tensor cur = exec_.act(hb, kCur, config_.n_embd, n);  // [n_embd, n]
    input_norm(il, NormSite::Ffn, hb, x, w.ffn_norm, cur);
    observe(il, ActivationSite::FfnInput, cur);
    Tensor proj = exec_.act(hb, kProj, config_.n_embd, n);  // [n_embd, n]
    struct GatedParts final : LayerExecutor::FfnPartMath {
        LayerProgram& program;
        int il;
        GatedParts(LayerProgram& program, int il) : program(program), il(il) {}
        void operator()(const FfnPart& p, int pb, const Tensor& in, Tensor& out) override {
            program.gated_ffn(il, p, pb, in, out);
        }
    } parts(*this, il);
    exec_.run_ffn_parts(placed_parts, hb, cur, proj, n, parts);
    add_residual(il + 1, NormSite::Attention, hb, x, proj, w.post_ffw_norm);
}

void LayerProgram::gated_ffn(int il, const FfnPart& p, int pb, const Tensor& in, Tensor& out) {
    Backend& b = exec_.backend(pb);
    const int64_t n = in.ne[1];
    const int64_t width = p.end - p.begin;
    Tensor gate = exec_.act(pb, kGate, width, n);  // [width, n]
    Tensor up = exec_.act(pb, kUp, width, n);      // [width, n]
    const PlacedWeight* gate_up_w[] = {&p.gate, &p.up};
    Tensor* gate_up[] = {&gate, &up};
    exec_.matmul_many(gate_up_w, pb, in, gate_up, /*local=*/true);
    observe(il, ActivationSite::FfnGateAct, gate);
    b.gated_activation(gate, up, config_.activation, gate);
    observe(il, ActivationSite::FfnDownInput, gate);
    // phi3's gate/up (one fused tensor) and down are separate placement units: down may sit on
    // the other processor, and matmul() moves its input and output there and back.
    if (is_host(*p.down.backend) != is_host(b)) {
        exec_.matmul(p.down, pb, gate, out);
    } else {
        exec_.matmul_local(p.down, pb, gate, out);
    }
}

// logits [n_vocab, n] = softcap(output · hidden [n_embd, n]), kLogitRows rows at a time, on the
// output matrix's backend (a device gets the rows copied in and the logits copied out).
void LayerProgram::logits(const float* hidden, int64_t n, float* logits) {
    const PlacedWeight& out_w = model_.output();
    const int ob = exec_.index_of(out_w.backend);
    Backend& b = *out_w.backend;
    const double cap = config_.final_logit_softcap;
    for (int64_t r0 = 0; r0 < n; r0 += kLogitRows) {
        const int64_t rows = std::min(kLogitRows, n - r0);
        Tensor h_host = Tensor::contiguous(GgmlType::F32, const_cast<float*>(hidden + r0 * config_.n_embd),
                                           {config_.n_embd, rows});
        Tensor out_host = Tensor::contiguous(GgmlType::F32, logits + r0 * n_vocab(), {n_vocab(), rows});
        if (is_host(b)) {
            exec_.matmul_local(out_w, ob, h_host, out_host);
            if (cap > 0) b.softcap(out_host, static_cast<float>(cap));
            continue;
        }
        Tensor h_dev = exec_.act(ob, kMmIn, config_.n_embd, rows);
        b.copy_in(h_host, h_dev);
        Tensor out_dev = exec_.act(ob, kLogits, n_vocab(), rows);
        exec_.matmul_local(out_w, ob, h_dev, out_dev);
        if (cap > 0) b.softcap(out_dev, static_cast<float>(cap));
        b.copy_out(out_dev, out_host);
    }
}

}  // namespace strata

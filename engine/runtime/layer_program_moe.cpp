// The layer program's mixture-of-experts FFN (layer_program.h moe_ffn_block):
//   cur = ffn_norm(x);  logits [n_expert, n] = router · cur  -> top-k routing on the host
//   sum = [sigmoid(w_sh · cur) ⊙] shared(cur) + Σ_e Σ_{tokens t of e} p_te · down_e(act(gate_e·cur_t) ⊙ up_e·cur_t)
//   x += sum
// Only experts with tokens run: in decode the selected ones, in prefill one GEMM per expert over
// the gathered rows of its tokens. Each runs on the backend holding its weights, or in a prompt
// pass on the GPU it is shipped to once a few tokens chose it. A pass of several tokens queues
// its GPU experts without waiting: each gathers its rows from one copy of the input there and
// writes its outputs to their (token, expert) rows, which one combine_rows sums per token at
// the end; the host's experts run in between, so both work at once. In decode the device's
// experts go first as one fused op there (Backend::expert_ffn: a few launches whatever their
// number), so the host's experts run meanwhile, as one fused op too. The two sums meet at the home.
// A decode step of a layer whose router and experts all sit on the GPU routes there too
// (Backend::routed_expert_ffn, moe_routed_block): no host wait, so the layer, and with every
// layer so the whole step, is one recorded graph.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/layer_program_moe.h"

namespace strata {
namespace {

// A prompt pass ships a host expert to the GPU (layer_executor.h) once this many of its tokens
// chose it. Since the GPU's experts are queued without waits (the host's run meanwhile, the
// copies and products overlap), shipping every expert with a token paid most on the H200
// (qwen3-30b-a3b shape, pp512, 6 GiB / experts in RAM): thresholds 1, 2, 3 gave 921/800,
// 593/603, 604/478 tok/s in one call (earlier, with a wait per expert: 2, 4, 8 gave 250/243,
// 225/213, 113/205). A whole pass's batch decides whether it ships at all
// (gpu_prefill_min_tokens). On a slow link with a fast CPU, few-token experts may do better at
// home: belongs in the cost model, from the hardware profile.
constexpr int64_t kExpertShipMinTokens = 1;

// The MoE block's normed input cur [n_embd, n] and router logits [n_expert, n], one after the
// other in one scratch block of the router's backend bi, so that one copy brings both to the
// host. `whole` spans both.
struct MoeHead {
    Tensor cur, logits, whole;
};
MoeHead moe_head(LayerExecutor& exec, int bi, int64_t n_embd, int64_t n_expert, int64_t n) {
    const Tensor block = exec.act(bi, LayerExecutor::kRouter, n_embd + n_expert, n);
    auto* base = static_cast<float*>(block.data);
    return {Tensor::contiguous(GgmlType::F32, base, {n_embd, n}, block.memory),
            Tensor::contiguous(GgmlType::F32, base + n_embd * n, {n_expert, n}, block.memory),
            Tensor::contiguous(GgmlType::F32, base, {(n_embd + n_expert) * n, 1}, block.memory)};
}

// A DISK weight not used this step still takes its turn in the stream's cyclic schedule.
void skip_streamed(DiskStream* stream, const PlacedWeight& w) {
    if (stream == nullptr || w.stream_id < 0) return;
    stream->acquire(w.stream_id);
    stream->release(w.stream_id);
}

}  // namespace

void LayerProgram::run_expert(const ExpertWeights& w, int64_t e, const float* in_host, float* out_host) {
    MoeScratch& s = *moe_;
    const MoeRouting& r = s.routing;
    const int64_t n_embd = config_.n_embd;
    const int64_t c = r.n_routed(e);
    const int32_t* slots = r.by_expert.data() + r.offsets[static_cast<size_t>(e)];
    const int eb = expert_backend(w, c, r.n_tokens);
    Backend& b = exec_.backend(eb);
    const auto row_bytes = static_cast<size_t>(n_embd) * sizeof(float);

    Tensor in = exec_.act(eb, kMoeIn, n_embd, c);  // [n_embd, c]: the rows of the expert's tokens
    float* rows = is_host(b) ? in.as<float>() : (s.rows.resize(static_cast<size_t>(n_embd * c)), s.rows.data());
    for (int64_t j = 0; j < c; ++j)
        std::memcpy(rows + j * n_embd, in_host + r.token_of(slots[j]) * n_embd, row_bytes);
    if (!is_host(b)) b.copy_in(Tensor::contiguous(GgmlType::F32, rows, {n_embd, c}), in);

    Tensor out = exec_.act(eb, kMoeOut, n_embd, c);  // [n_embd, c]
    expert_gated_ffn(w, eb, in, out);

    const float* y = exec_.host_f32(eb, out, s.out);
    for (int64_t j = 0; j < c; ++j) {
        const float p = r.weight[static_cast<size_t>(slots[j])];
        float* dst = out_host + r.token_of(slots[j]) * n_embd;
        const float* src = y + j * n_embd;
        for (int64_t i = 0; i < n_embd; ++i) dst[i] += p * src[i];
    }
}

void LayerProgram::expert_gated_ffn(const ExpertWeights& w, int eb, const Tensor& in, Tensor& out) {
    const int64_t c = in.ne[1];
    const int64_t width = w.gate.tensor.ne[1];
    Tensor gate = exec_.act(eb, kGate, width, c);  // [n_ff_exp, c]
    Tensor up = exec_.act(eb, kUp, width, c);
    // Shipped: all three products on eb. Otherwise each where its matrix is (an expert's three
    // tensors may sit on different backends, e.g. `-ot ffn_up_exps=CPU`).
    const bool shipped = eb != exec_.index_of(w.gate.backend);
    auto product = [&](const PlacedWeight& pw, const Tensor& x, Tensor& y) {
        if (shipped) exec_.matmul_local(pw, eb, x, y);
        else exec_.matmul(pw, eb, x, y);
    };
    product(w.gate, in, gate);
    product(w.up, in, up);
    exec_.backend(eb).gated_activation(gate, up, config_.activation, gate);
    product(w.down, gate, out);
}

void LayerProgram::queue_device_expert(const ExpertWeights& w, int64_t e, const Tensor& cur_g, Tensor& slots_out) {
    MoeScratch& s = *moe_;
    const MoeRouting& r = s.routing;
    const int gb = exec_.gpu();
    const int64_t n_embd = config_.n_embd;
    const int64_t c = r.n_routed(e);
    const int32_t first = r.offsets[static_cast<size_t>(e)];
    s.ids.resize(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) {
        const int32_t slot = r.by_expert[static_cast<size_t>(first + j)];
        s.ids[static_cast<size_t>(j)] = static_cast<int32_t>(r.token_of(slot));
        s.device_row[static_cast<size_t>(slot)] = first + static_cast<int32_t>(j);
    }
    Tensor in = exec_.act(gb, kMoeIn, n_embd, c);  // [n_embd, c]
    exec_.backend(gb).get_rows(cur_g, s.ids.data(), c, in);
    Tensor out = slots_out.rows(first, c);
    expert_gated_ffn(w, gb, in, out);
}

void LayerProgram::combine_device_experts(const Tensor& slots_out, Tensor& sum) {
    MoeScratch& s = *moe_;
    const MoeRouting& r = s.routing;
    s.combine_offsets.assign(1, 0);
    s.combine_rows.clear();
    s.combine_weights.clear();
    for (int64_t t = 0; t < r.n_tokens; ++t) {
        for (int64_t j = 0; j < r.n_used; ++j) {
            const auto slot = static_cast<size_t>(t * r.n_used + j);
            if (s.device_row[slot] < 0) continue;
            s.combine_rows.push_back(s.device_row[slot]);
            s.combine_weights.push_back(r.weight[slot]);
        }
        s.combine_offsets.push_back(static_cast<int32_t>(s.combine_rows.size()));
    }
    const RowCombine c{s.combine_offsets.data(), s.combine_rows.data(), s.combine_weights.data()};
    exec_.backend(exec_.gpu()).combine_rows(slots_out, c, sum);
}

bool LayerProgram::on_device(const ExpertWeights& w) const {
    const int g = exec_.gpu();
    return g >= 0 && exec_.index_of(w.gate.backend) == g && exec_.index_of(w.up.backend) == g && exec_.index_of(w.down.backend) == g;
}

int LayerProgram::expert_backend(const ExpertWeights& w, int64_t c, int64_t n) const {
    const int home = exec_.index_of(w.gate.backend);
    if (c < kExpertShipMinTokens) return home;
    const int b = exec_.compute_backend(w.gate, n);
    if (b == home) return home;
    return exec_.compute_backend(w.up, n) == b && exec_.compute_backend(w.down, n) == b ? b : home;
}

int LayerProgram::fused_host_backend(const ExpertWeights& w) const {
    const Backend* b = w.gate.backend;
    if (w.up.backend != b || w.down.backend != b || !is_host(*b) || !b->capabilities().expert_ffn) return -1;
    if (w.gate.stream_id >= 0 || w.up.stream_id >= 0 || w.down.stream_id >= 0) return -1;
    const int bi = exec_.index_of(b);
    return exec_.compute_backend(w.gate, 1) == bi ? bi : -1;
}

bool LayerProgram::run_device_experts(const PlacedMoe& m, int hb, const Tensor& cur, const float* in_host) {
    MoeScratch& s = *moe_;
    const MoeRouting& r = s.routing;
    const int gb = exec_.gpu();
    Backend& g = exec_.backend(gb);
    if (!g.capabilities().expert_ffn) return false;  // each runs in the loop (run_expert)
    s.device.clear();
    for (int64_t j = 0; j < r.n_used; ++j) {
        const ExpertWeights& w = m.experts[static_cast<size_t>(r.expert[static_cast<size_t>(j)])];
        if (on_device(w)) s.device.push_back({&w.gate.tensor, &w.up.tensor, &w.down.tensor, r.weight[static_cast<size_t>(j)]});
    }
    if (s.device.empty()) return false;
    const int64_t n_embd = config_.n_embd;
    const Tensor in = input_on_gpu(hb, cur, in_host);
    Tensor sum = exec_.act(gb, kMoeSum, n_embd, 1);  // [n_embd, 1]
    s.zeros.assign(static_cast<size_t>(n_embd), 0.0f);
    g.copy_in(Tensor::contiguous(GgmlType::F32, s.zeros.data(), {n_embd, 1}), sum);
    g.expert_ffn({&in, s.device, config_.activation}, sum);
    return true;
}

void LayerProgram::shared_expert(const PlacedMoe& m, int hb, const Tensor& cur, float* sum) {
    MoeScratch& s = *moe_;
    Backend& h = exec_.backend(hb);
    const int64_t n_embd = config_.n_embd, n = cur.ne[1];
    const int64_t width = m.shared.gate.tensor.ne[1];
    s.shared_scale.assign(static_cast<size_t>(n), 1.0f);
    if (m.shared_gate.present()) {
        Tensor g = exec_.act(hb, kPartTmp, 1, n);  // [1, n]
        exec_.matmul(m.shared_gate, hb, cur, g);
        const float* gv = exec_.host_f32(hb, g, s.out);
        for (int64_t t = 0; t < n; ++t) s.shared_scale[static_cast<size_t>(t)] = 1.0f / (1.0f + std::exp(-gv[t]));
    }
    Tensor gate = exec_.act(hb, kGate, width, n);
    Tensor up = exec_.act(hb, kUp, width, n);
    exec_.matmul(m.shared.gate, hb, cur, gate);
    exec_.matmul(m.shared.up, hb, cur, up);
    h.gated_activation(gate, up, config_.activation, gate);
    Tensor out = exec_.act(hb, kPart, n_embd, n);
    exec_.matmul(m.shared.down, hb, gate, out);
    const float* y = exec_.host_f32(hb, out, s.out);
    for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < n_embd; ++i)
            sum[t * n_embd + i] += s.shared_scale[static_cast<size_t>(t)] * y[t * n_embd + i];
}

Tensor LayerProgram::input_on_gpu(int hb, const Tensor& cur, const float* in_host) {
    const int gb = exec_.gpu();
    if (hb == gb) return cur;
    Tensor in = exec_.act(gb, kCur, cur.ne[0], cur.ne[1]);
    exec_.backend(gb).copy_in(Tensor::contiguous(GgmlType::F32, const_cast<float*>(in_host), {cur.ne[0], cur.ne[1]}), in);
    return in;
}

void LayerProgram::sum_at_home(int hb, float* sum, const Tensor& device_total, Tensor& proj) {
    Backend& h = exec_.backend(hb);
    const int64_t n_embd = proj.ne[0], n = proj.ne[1];
    const bool any_device = device_total.data != nullptr;
    if (any_device && hb != exec_.gpu()) {
        const float* y = exec_.host_f32(exec_.gpu(), device_total, moe_->out);
        for (int64_t i = 0; i < n_embd * n; ++i) sum[i] += y[i];
    }
    if (!is_host(h)) h.copy_in(Tensor::contiguous(GgmlType::F32, sum, {n_embd, n}), proj);
    if (any_device && hb == exec_.gpu()) h.add(proj, device_total, proj);
}

void LayerProgram::moe_router(int il, int64_t n) {
    const PlacedLayer& w = model_.layer(il);
    const int hb = exec_.index_of(w.moe.router.backend);
    Tensor x = exec_.residual_on(hb, n);
    MoeHead head = moe_head(exec_, hb, config_.n_embd, config_.moe.n_expert, n);
    input_norm(il, NormSite::Ffn, hb, x, w.ffn_norm, head.cur);
    observe(il, ActivationSite::FfnInput, head.cur);
    exec_.matmul(w.moe.router, hb, head.cur, head.logits);
}

void LayerProgram::moe_routed_block(int il, bool routed) {
    const PlacedLayer& w = model_.layer(il);
    const MoeConfig& mc = config_.moe;
    const int gb = exec_.gpu();
    Backend& g = exec_.backend(gb);
    if (!routed) moe_router(il, 1);
    Tensor x = exec_.residual_on(gb, 1);
    const MoeHead head = moe_head(exec_, gb, config_.n_embd, mc.n_expert, 1);
    Tensor proj = exec_.act(gb, kProj, config_.n_embd, 1);  // [n_embd, 1]
    const ExpertTopK top_k{mc.n_expert_used, mc.norm_topk, static_cast<float>(mc.weights_scale)};
    g.routed_expert_ffn({&head.cur, &head.logits, routed_experts_[static_cast<size_t>(il)], top_k, config_.activation},
                        proj);
    add_residual(il + 1, NormSite::Attention, gb, x, proj, w.post_ffw_norm);
}

// The selected experts that run_device_experts did not take (device_sum): for a pass of several
// tokens the GPU's (resident or shipped) queued into slots_out, summed there after the loop,
// the input sent to the GPU once, at the first of them; for decode the experts resident on a
// host backend with a fused op as one op after the loop; the rest one by one into sum. The
// streamed weights of unselected experts are skipped in the stream.
LayerProgram::DeviceExperts LayerProgram::run_selected_experts(const PlacedMoe& m, int hb, const Tensor& cur,
                                                               const float* in_host, float* sum, int64_t n,
                                                               bool device_sum) {
    const MoeConfig& mc = config_.moe;
    MoeScratch& s = *moe_;
    const int64_t n_embd = config_.n_embd;
    // A pass of several tokens: the GPU's experts (resident or shipped) are queued in the loop
    // and summed there after it; the input goes to the GPU once, at the first of them.
    const int gb = exec_.gpu();
    const bool device_batch = n > 1 && gb >= 0;
    DeviceExperts out;
    if (device_batch) s.device_row.assign(static_cast<size_t>(n * mc.n_expert_used), -1);
    // Decode: the experts resident on a host backend with a fused op run as one op, after the
    // loop (the others, streamed ones included, keep their turn in the loop).
    s.fused.clear();
    int fused_backend = -1;
    for (int64_t e = 0; e < mc.n_expert; ++e) {
        const ExpertWeights& ew = m.experts[static_cast<size_t>(e)];
        if (s.routing.n_routed(e) > 0) {
            if (device_sum && on_device(ew)) continue;
            if (device_batch && expert_backend(ew, s.routing.n_routed(e), n) == gb) {
                if (!out.any) {
                    out.any = true;
                    out.slots_out = exec_.act(gb, kMoeOut, n_embd, n * mc.n_expert_used);
                    out.cur_g = input_on_gpu(hb, cur, in_host);
                }
                queue_device_expert(ew, e, out.cur_g, out.slots_out);
                continue;
            }
            const int fb = n == 1 ? fused_host_backend(ew) : -1;
            if (fb >= 0 && (fused_backend < 0 || fb == fused_backend)) {
                fused_backend = fb;
                const int32_t slot = s.routing.by_expert[static_cast<size_t>(s.routing.offsets[static_cast<size_t>(e)])];
                s.fused.push_back({&ew.gate.tensor, &ew.up.tensor, &ew.down.tensor, s.routing.weight[static_cast<size_t>(slot)]});
                continue;
            }
            run_expert(ew, e, in_host, sum);
            continue;
        }
        for (const PlacedWeight* pw : {&ew.gate, &ew.up, &ew.down}) skip_streamed(model_.disk_stream(), *pw);
    }
    if (!s.fused.empty()) {
        const Tensor xin = Tensor::contiguous(GgmlType::F32, const_cast<float*>(in_host), {n_embd, 1});
        Tensor host_sum = Tensor::contiguous(GgmlType::F32, sum, {n_embd, 1});
        exec_.backend(fused_backend).expert_ffn({&xin, s.fused, config_.activation}, host_sum);
    }
    return out;
}

void LayerProgram::moe_ffn_block(int il, int64_t n, bool routed) {
    if (n == 1 && observer_ == nullptr && !routed_experts_[static_cast<size_t>(il)].empty()) {
        moe_routed_block(il, routed);
        return;
    }
    const PlacedLayer& w = model_.layer(il);
    const PlacedMoe& m = w.moe;
    const MoeConfig& mc = config_.moe;
    MoeScratch& s = *moe_;
    const int64_t n_embd = config_.n_embd;
    const int hb = exec_.index_of(m.router.backend);
    Backend& h = exec_.backend(hb);

    using Clock = std::chrono::steady_clock;
    const auto since = [](Clock::time_point& t) {
        const Clock::time_point now = Clock::now();
        const double s = std::chrono::duration<double>(now - t).count();
        t = now;
        return s;
    };
    Clock::time_point t = Clock::now();
    MoeHostTimes phase;  // counted for decode steps only
    if (!routed) moe_router(il, n);
    Tensor x = exec_.residual_on(hb, n);
    const MoeHead head = moe_head(exec_, hb, n_embd, mc.n_expert, n);
    const Tensor& cur = head.cur;
    const RoutingParams params{mc.n_expert, mc.n_expert_used, mc.norm_topk, static_cast<float>(mc.weights_scale)};
    const float* in_host = exec_.host_f32(hb, head.whole, s.head);  // the input, then the logits
    const float* host_logits = in_host + n_embd * n;
    phase.wait_s = since(t);
    route_tokens(host_logits, n, params, s.routing);
    if (observer_) observer_->observe_routing(il, {host_logits, s.routing.expert.data(), n, mc.n_expert, mc.n_expert_used});

    Tensor proj = exec_.act(hb, kProj, n_embd, n);  // [n_embd, n]
    float* sum = is_host(h) ? proj.as<float>() : (s.sum.resize(static_cast<size_t>(n_embd * n)), s.sum.data());
    std::fill(sum, sum + n_embd * n, 0.0f);

    if (m.shared.gate.present()) shared_expert(m, hb, cur, sum);
    // Decode: the device's experts are queued first as one op, so they run while the host
    // computes its own; their sum is added at the home.
    phase.route_s = since(t);
    if (n == 1) {
        for (int64_t j = 0; j < mc.n_expert_used; ++j) {
            const int32_t e = s.routing.expert[static_cast<size_t>(j)];
            (on_device(m.experts[static_cast<size_t>(e)]) ? moe_times_.gpu_selections : moe_times_.host_selections) += 1;
        }
    }
    const bool device_sum = n == 1 && exec_.gpu() >= 0 && run_device_experts(m, hb, cur, in_host);
    phase.device_s = since(t);
    const DeviceExperts queued = run_selected_experts(m, hb, cur, in_host, sum, n, device_sum);
    phase.host_s = since(t);
    Tensor device_total;  // [n_embd, n] on the GPU: the sum of its experts
    if (device_sum) device_total = exec_.act(exec_.gpu(), kMoeSum, n_embd, 1);
    if (queued.any) {
        device_total = exec_.act(exec_.gpu(), kMoeSum, n_embd, n);
        combine_device_experts(queued.slots_out, device_total);
    }
    sum_at_home(hb, sum, device_total, proj);
    add_residual(il + 1, NormSite::Attention, hb, x, proj, w.post_ffw_norm);
    if (n == 1) {
        phase.sum_s = since(t);
        moe_times_.layers += 1;
        moe_times_.wait_s += phase.wait_s;
        moe_times_.route_s += phase.route_s;
        moe_times_.device_s += phase.device_s;
        moe_times_.host_s += phase.host_s;
        moe_times_.sum_s += phase.sum_s;
    }
}

}  // namespace strata

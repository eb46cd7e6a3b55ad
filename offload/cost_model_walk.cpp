// The cost model's walk through one segment (a layer, or the model's ends): each weight's decode
// and prefill terms on its tier, the copies between homes, split FFNs, experts and the sparse FFN
// (cost_model.h states the equations).
#include "offload/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/layer_ops.h"
#include "offload/sparse_down.h"

namespace strata {

namespace {

// Bytes of neurons [begin, end) of one FFN tensor: rows of gate/up, a column slice of down.
double part_bytes(const TensorEntry& t, bool is_down, int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    if (n <= 0) return 0;
    const uint64_t b = is_down ? row_bytes(t.type, n) * static_cast<uint64_t>(t.ne[1])
                               : static_cast<uint64_t>(n) * row_bytes(t.type, t.ne[0]);
    return static_cast<double>(b);
}

// Parts that run concurrently (the GPU's and the host's): only the longer decode part counts.
void add_longer_decode(CostTerms& t, const CostTerms& gpu, const CostTerms& cpu) {
    if (gpu.gpu_s + gpu.gpu_fixed_s >= cpu.cpu_s + cpu.cpu_fixed_s) {
        t.gpu_s += gpu.gpu_s;
        t.gpu_fixed_s += gpu.gpu_fixed_s;
    } else {
        t.cpu_s += cpu.cpu_s;
        t.cpu_fixed_s += cpu.cpu_fixed_s;
    }
}

// Whether a sparse run keeps ffn_down `t`'s neuron-major copy (the runtime's rule at its S:
// every layer, none, or where it pays against the tensor's own type: sparse_down.h).
bool keeps_down_copy(const CostParams& params, const TensorEntry& t) {
    if (params.ffn_down_bytes_per_weight <= 0) return false;
    if (!params.ffn_down_copy_auto) return true;
    const double weights = static_cast<double>(t.ne[0]) * static_cast<double>(t.ne[1]);
    const double source_bpw = static_cast<double>(row_bytes(t.type, t.ne[0])) * static_cast<double>(t.ne[1]) / weights;
    return neuron_major_copy_pays(params.ffn_down_bytes_per_weight, source_bpw, params.ffn_active_fraction);
}

// An FFN's GPU and host parts, run concurrently in decode and in a prompt pass: the longer of
// each counts; the disk, shipping and graph facts of both.
void add_concurrent_parts(CostTerms& t, const CostTerms& gpu, const CostTerms& cpu) {
    add_longer_decode(t, gpu, cpu);
    const double pg = gpu.pf_gpu_s + cpu.pf_gpu_s, pc = cpu.pf_cpu_s;
    (pg >= pc ? t.pf_gpu_s : t.pf_cpu_s) += std::max(pg, pc);
    t.disk_s += cpu.disk_s;
    t.pf_disk_s += cpu.pf_disk_s;
    t.pf_ship_s += gpu.pf_ship_s + cpu.pf_ship_s;
    t.gpu_kernels += gpu.gpu_kernels + cpu.gpu_kernels;
    t.host_parts += gpu.host_parts + cpu.host_parts;
}

}  // namespace

// One segment's terms as the layer program walks through it.
struct CostModel::Walk {
    const CostModel& m;
    CostTerms t;
    // Which passes copy() charges: a step that decode and prefill run differently (an attention
    // block with host projections and a GPU cache) walks each way once with the other left out.
    enum class Passes : uint8_t { Both, DecodeOnly, PrefillOnly } passes = Passes::Both;

    // The prefill home of the FFN being walked where a prompt pass runs it elsewhere than decode
    // (its host weights shipped to the GPU: ffn_prefill_home); -1: the decode home.
    int ffn_pf_home = -1;

    // One copy of `bytes` per token; `per_batch`: once per prefill batch, not per token.
    // `count`: expected copies per token (MoE: selections of the experts off the home).
    void copy(double bytes, int from, int to, bool per_batch = false, double count = 1.0) {
        copies(bytes, from, to, from, to, per_batch, count);
    }
    // The same copy where decode goes from -> to and a prompt pass pf_from -> pf_to.
    void copies(double bytes, int from, int to, int pf_from, int pf_to, bool per_batch = false, double count = 1.0) {
        if (count <= 0) return;
        if (passes != Passes::PrefillOnly && from != to) {
            const auto [lat, move] = latency_and_move(bytes, to);
            t.transfer_s += count * (lat + move);
            t.transfers += static_cast<int>(std::lround(count));
        }
        if (passes != Passes::DecodeOnly) prefill_copy(bytes, pf_from, pf_to, per_batch, count);
    }
    // Only the prefill share of such a copy (a step that copies in prompt passes, not in decode).
    void prefill_copy(double bytes, int from, int to, bool per_batch = false, double count = 1.0) {
        if (from == to || count <= 0) return;
        const auto [lat, move] = latency_and_move(bytes, to);
        const double n = static_cast<double>(m.params_.n_prompt);
        t.pf_transfer_s += count * (per_batch ? (lat + move) / n : lat / n + move);
    }
    // One copy's latency and moving time, in seconds, towards `to`.
    std::pair<double, double> latency_and_move(double bytes, int to) const {
        const HardwareProfile& p = m.profile_;
        const double gbs = to == kGpu ? p.h2d_gbs : p.d2h_gbs;
        return {p.transfer_latency_us * 1e-6, gbs > 0 ? bytes / (gbs * kGiga) : 0.0};
    }
    void run(int proc, double decode_s, double prefill_s) {
        (proc == kGpu ? t.gpu_s : t.cpu_s) += decode_s;
        (proc == kGpu ? t.pf_gpu_s : t.pf_cpu_s) += prefill_s;
    }
    // Fixed costs on `proc`: `kernels` small ops or products' floors taking `seconds`.
    void fixed(int proc, double seconds, double kernels) {
        (proc == kGpu ? t.gpu_fixed_s : t.cpu_fixed_s) += seconds;
        if (proc == kGpu) t.gpu_kernels += kernels;
    }
    // `n` small ops on `proc`.
    void ops(int proc, double n) { fixed(proc, n * m.op_s(proc), n); }
};

void CostModel::add_weight(Walk& w, int tensor, double bytes, Tier tier, int home,
                           double pf_share, double decode_share) const {
    if (bytes <= 0) return;
    const TensorInfo& ti = info_[static_cast<size_t>(tensor)];
    const TensorEntry& t = table_.tensors[static_cast<size_t>(tensor)];
    const int proc = tier == Tier::Gpu ? kGpu : kCpu;
    if (proc == kGpu && ti.gpu_rate <= 0) {
        throw ArgumentError(cat("the placement puts ", t.name,
                                " on the GPU, but the hardware profile has no GPU rates"));
    }
    const double decode = bytes * decode_share / (proc == kGpu ? ti.gpu_rate : ti.cpu_rate);
    if (proc == kGpu) {
        w.fixed(kGpu, gemv_floor_s(kGpu, bytes * decode_share), 1);
    } else {
        w.fixed(kCpu, gemv_floor_s(kCpu, bytes * decode_share), 0);
        w.t.host_parts += 1;
    }
    const double n = static_cast<double>(params_.n_prompt);
    const double flops = ti.flops * bytes / static_cast<double>(t.bytes) * pf_share;
    double pf = 0;
    int pf_proc = proc;
    if (prefill_known_) {
        const double gpu_flops = profile_.gpu_prefill_gflops * kGiga;
        // A pass reads the weight at least once: at a few tokens its bytes, not its FLOPs, bound it.
        const double rate = proc == kGpu ? ti.gpu_rate : ti.cpu_rate;
        const double pf_flops = proc == kGpu ? gpu_flops
                                             : cpu_prefill_rate(profile_.cpu_prefill_gflops, profile_.cpu_prefill_grid,
                                                                type_traits(t.type).name, t.ne[0], n);
        pf = std::max(flops / pf_flops, rate > 0 ? bytes / (rate * n) : 0.0);
        // A batch that ships host weights multiplies them on the GPU, each copied once per batch
        // (not the output matrix: a prompt pass takes the logits of its last token only).
        const double ship_gbs = tier == Tier::Ram && params_.ship_registered ? profile_.h2d_gbs : staged_h2d_gbs();
        if (proc == kCpu && tensor != output_ && ships_host_weights() && ship_gbs > 0) {
            pf = flops / gpu_flops;
            pf_proc = kGpu;
            w.t.pf_ship_s += bytes / (ship_gbs * kGiga * n);
        }
    }
    w.t.gpu_s += proc == kGpu ? decode : 0;
    w.t.cpu_s += proc == kCpu ? decode : 0;
    (pf_proc == kGpu ? w.t.pf_gpu_s : w.t.pf_cpu_s) += pf;
    if (tier == Tier::Disk) {
        const double disk = bytes / disk_bytes_per_s();
        w.t.disk_s += disk;
        w.t.pf_disk_s += disk / n;
    }
    // Its input in and its output back when it runs off its block's home (a prompt pass: where
    // it is multiplied, at the block's prefill home).
    const int pf_home = w.ffn_pf_home >= 0 ? w.ffn_pf_home : home;
    const double in = 4.0 * static_cast<double>(t.ne[0]);
    const double out = 4.0 * static_cast<double>(t.ne[1]);
    w.copies(in, home, proc, pf_home, pf_proc);
    w.copies(out, proc, home, pf_proc, pf_home);
}

void CostModel::add_ffn_split(Walk& w, int layer, const FfnSplit& s) const {
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    const int64_t n_ff = L.ffn->n_ff;
    Walk gpu{*this, {}}, cpu{*this, {}};
    for (int k = 0; k < 3; ++k) {
        const int i = L.ffn_index[k];
        const TensorEntry& t = table_.tensors[static_cast<size_t>(i)];
        const bool down = k == 2;
        add_weight(gpu, i, part_bytes(t, down, 0, s.gpu_end), Tier::Gpu, kGpu);
        add_weight(cpu, i, part_bytes(t, down, s.gpu_end, s.ram_end), Tier::Ram, kCpu);
        add_weight(cpu, i, part_bytes(t, down, s.ram_end, n_ff), Tier::Disk, kCpu);
    }
    // With GPU neurons the FFN's home is the GPU and the host part has its own small ops. The
    // parts run concurrently: only the longer one is on the critical path.
    if (s.gpu_end > 0 && s.gpu_end < n_ff) cpu.ops(kCpu, ffn_part_small_ops());
    add_concurrent_parts(w.t, gpu.t, cpu.t);
    if (s.gpu_end > 0 && s.gpu_end < n_ff) {
        w.copy(4.0 * L.ffn->gate->ne[0], kGpu, kCpu);  // the normed input
        w.copy(4.0 * L.ffn->gate->ne[0], kCpu, kGpu);  // the CPU's partial sum
    }
}

void CostModel::add_output(Walk& w, const Layout& layout) const {
    const double n = static_cast<double>(params_.n_prompt);
    const int last = home_out(layout, table_.n_layer - 1);
    // The final hidden state to the host.
    w.copies(4.0 * n_embd_, last, kCpu, prefill_home_out(layout, table_.n_layer - 1), kCpu, true);
    if (embd_ >= 0 && layout.tier[static_cast<size_t>(embd_)] != Tier::Gpu) w.t.host_parts += 1;
    if (output_ >= 0) {
        const Tier tier = layout.tier[static_cast<size_t>(output_)];
        add_weight(w, output_, static_cast<double>(table_.tensors[static_cast<size_t>(output_)].bytes),
                   tier, tier == Tier::Gpu ? kGpu : kCpu, 1.0 / n);
        if (tier == Tier::Gpu) {
            w.copy(4.0 * n_embd_, kCpu, kGpu, true);
            w.copy(4.0 * n_vocab_, kGpu, kCpu, true);
        }
    }
}

CostModel::AttentionHomes CostModel::add_attention(Walk& w, const Layout& layout, int s) const {
    const LayerInfo& L = layers_[static_cast<size_t>(s)];
    const auto tier = [&](int i) { return layout.tier[static_cast<size_t>(i)]; };
    const double n = static_cast<double>(params_.n_prompt);
    const int ah = layout.kv[static_cast<size_t>(s)] == Tier::Gpu ? kGpu : kCpu;
    if (ah == kGpu && !profile_.has_gpu()) {
        throw ArgumentError(cat("the placement puts the KV cache of layer ", s,
                                " on the GPU, but the hardware profile has no GPU rates"));
    }
    const double n_embd = n_embd_ > 0 ? n_embd_ : 0;
    // A GPU cache with every projection on the host: a decode runs the block's products on the
    // host and copies only q, k and v to the cache and the attention back (the runtime's
    // projection_home); a prompt pass ships the products to the GPU home as before.
    const bool host_projections =
        ah == kGpu && !L.attn.empty() && std::none_of(L.attn.begin(), L.attn.end(), [&](int i) { return tier(i) == Tier::Gpu; });
    const int ph = host_projections ? kCpu : ah;  // the decode's block home
    if (host_projections) {
        w.passes = Walk::Passes::DecodeOnly;
        w.copy(4.0 * n_embd, home_out(layout, s - 1), kCpu);
        for (int i : L.attn) {
            const TensorEntry& t = table_.tensors[static_cast<size_t>(i)];
            const bool output = tensor_name_info(t.name).role == TensorRole::AttnOutput;
            w.copy(4.0 * static_cast<double>(output ? t.ne[0] : t.ne[1]), output ? kGpu : kCpu, output ? kCpu : kGpu);
        }
        w.passes = Walk::Passes::PrefillOnly;
    }
    w.copies(4.0 * n_embd, home_out(layout, s - 1), ah, prefill_home_out(layout, s - 1), ah);
    // A sliding-window layer reads only its window of keys.
    const double cells = static_cast<double>(L.window > 0 ? std::min(L.window, params_.n_ctx_used) : params_.n_ctx_used);
    const std::optional<AttentionLine>& line = ah == kGpu ? gpu_attention_ : cpu_attention_;
    // Measured for this shape: the line at this context (the KV bytes included); otherwise a
    // small op plus the KV bytes at the read bandwidth.
    const double kv_read = line ? 0.0
                                : L.kv_cell_bytes * cells / ((ah == kGpu ? profile_.gpu_read_gbs : profile_.host_read_gbs) * kGiga);
    const double attn_flops = 4.0 * L.q_width * n / 2;
    const double rate = (ah == kGpu ? profile_.gpu_prefill_gflops : profile_.cpu_prefill_gflops) * kGiga;
    w.run(ah, kv_read, prefill_known_ ? attn_flops / rate : 0.0);
    // The block's small ops at its decode home: with host projections the host's (the norm and
    // add run there; the GPU's one prologue kernel is not counted apart).
    w.ops(ph, (ph == kGpu ? L.gpu_attn_ops : L.attn_ops) - 1);
    w.fixed(ah, line ? std::max(line->floor_s, line->at0_s + line->per_cell_s * cells) : op_s(ah), 1);
    if (ah == kCpu) w.t.host_parts += 1;  // the KV cache
    for (int i : L.attn) add_weight(w, i, static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes), tier(i), ah);
    return {ah, ph};
}

CostTerms CostModel::segment(const Layout& layout, int s) const {
    Walk w{*this, {}};
    if (s == table_.n_layer) {
        add_output(w, layout);
        return w.t;
    }
    const LayerInfo& L = layers_[static_cast<size_t>(s)];
    const auto tier = [&](int i) { return layout.tier[static_cast<size_t>(i)]; };
    const auto bytes = [&](int i) { return static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes); };
    const AttentionHomes attn = add_attention(w, layout, s);
    const int fh = ffn_home(layout, s);
    if (fh < 0) {
        w.passes = Walk::Passes::Both;
        return w.t;
    }
    const double n_embd = n_embd_ > 0 ? n_embd_ : 0;
    const int pfh = ffn_prefill_home(layout, s);
    w.copies(4.0 * n_embd, attn.kv, fh, attn.kv, pfh);
    if (attn.decode != attn.kv) {  // host projections: decode's residual comes from the host
        w.passes = Walk::Passes::DecodeOnly;
        w.copy(4.0 * n_embd, attn.decode, fh);
        w.passes = Walk::Passes::Both;
    }
    w.ops(fh, fh == kGpu ? L.gpu_ffn_ops : L.ffn_ops);
    if (const auto& split = layout.split[static_cast<size_t>(s)]) {
        add_ffn_split(w, s, *split);
    } else if (L.ffn && fh == kCpu && static_cast<size_t>(s) < params_.hot_cold.size()) {
        add_hot_cold_ffn(w, layout, s, params_.hot_cold[static_cast<size_t>(s)]);
    } else if (L.ffn) {
        w.ffn_pf_home = pfh;
        add_sparse_ffn(w, layout, s, fh);
        w.ffn_pf_home = -1;
    }
    const std::vector<Tier>* experts = layout.experts_of(s);
    std::vector<Tier> whole;  // a MoE layer's *_exps tensors on one tier: its experts there
    if (!experts && L.experts) {
        const Tier t0 = tier(L.expert_index[0]);
        if (tier(L.expert_index[1]) == t0 && tier(L.expert_index[2]) == t0) {
            whole.assign(static_cast<size_t>(L.experts->n_expert), t0);
            experts = &whole;
        }
    }
    const auto placed_per_expert = [&](int i) {
        return experts && std::find(std::begin(L.expert_index), std::end(L.expert_index), i) != std::end(L.expert_index);
    };
    for (int i : L.other) {
        if (!placed_per_expert(i)) add_weight(w, i, bytes(i), tier(i), fh, 1.0, info_[static_cast<size_t>(i)].decode_share);
    }
    if (experts) add_experts(w, *experts, s, fh);
    return w.t;
}

// Experts placed one by one, summed per tier: `count` experts' bytes, of which a decode step
// reads `use` experts' worth (Σ of their selections per token). As layer_program_moe.cpp runs a
// decode step: routing and the weighted sum on the host; the GPU's selected experts queued
// first as one fused op (batched products: one floor per matrix, as add_weight counts) and
// summed there (their input in when the home is the host, their sum out), running while the
// host computes its own, also as one fused op, so only the longer part counts. A layer whose
// router and experts all sit on the GPU (and no shared expert) routes there instead: the
// routing kernel, the products and the sum, no host part and no copy (moe_routes_on). Prefill
// runs them one after the other, each GPU expert's rows in and out.
void CostModel::add_experts(Walk& w, const std::vector<Tier>& tiers, int layer, int home) const {
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    if (!L.experts || tiers.size() != L.expert_use.size()) {
        throw FormatError(cat("layer ", layer, " has ", L.experts ? L.experts->n_expert : 0, " experts; the placement gives ",
                              tiers.size(), " expert tiers"));
    }
    std::array<double, 3> use{}, count{};
    for (size_t e = 0; e < tiers.size(); ++e) {
        const auto t = static_cast<size_t>(tiers[e]);
        use[t] += L.expert_use[e];
        count[t] += 1;
    }
    const double n_expert = static_cast<double>(L.experts->n_expert);
    Walk gpu{*this, {}}, cpu{*this, {}};
    for (const Tier tier : {Tier::Gpu, Tier::Ram, Tier::Disk}) {
        const auto t = static_cast<size_t>(tier);
        if (count[t] == 0) continue;
        const int proc = tier == Tier::Gpu ? kGpu : kCpu;
        Walk& part = proc == kGpu ? gpu : cpu;
        const double share = use[t] / count[t];
        for (const int i : L.expert_index) {
            const double one = static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes) / n_expert;
            add_weight(part, i, one * count[t], tier, proc, share, share);
        }
    }
    if (routes_on_gpu(L, count, home)) {  // the routing kernel, the activation and the sum
        gpu.ops(kGpu, 3);
        w.t += gpu.t;
        // Prefill still routes on the host: the logits and the input out, the sum back.
        w.prefill_copy(4.0 * (n_expert + n_embd_), kGpu, kCpu);
        w.prefill_copy(4.0 * n_embd_, kCpu, kGpu);
        return;
    }
    add_longer_decode(w.t, gpu.t, cpu.t);
    for (const Walk* p : {&gpu, &cpu}) {
        w.t.pf_gpu_s += p->t.pf_gpu_s;
        w.t.pf_cpu_s += p->t.pf_cpu_s;
        w.t.disk_s += p->t.disk_s;
        w.t.pf_disk_s += p->t.pf_disk_s;
        w.t.pf_ship_s += p->t.pf_ship_s;
        w.t.gpu_kernels += p->t.gpu_kernels;
        w.t.host_parts += p->t.host_parts;
    }
    const double ug = use[static_cast<size_t>(Tier::Gpu)];
    if (ug > 0) {  // decode: the input in (from a host home) and the sum out, when a GPU expert is chosen
        const double any = std::min(1.0, ug);
        const double before = w.t.pf_transfer_s;
        if (home == kCpu) w.copy(4.0 * n_embd_, kCpu, kGpu, false, any);
        w.copy(4.0 * n_embd_, kGpu, kCpu, false, any);
        // Prefill: each GPU expert's rows in and out instead.
        const HardwareProfile& p = profile_;
        const double n = static_cast<double>(params_.n_prompt);
        const double move = 4.0 * n_embd_ / (std::max(1e-9, p.h2d_gbs) * kGiga);
        w.t.pf_transfer_s = before + 2 * ug * (p.transfer_latency_us * 1e-6 / n + move);
    }
    if (home == kGpu) {  // the router's logits and the normed input to the host, the sum back
        w.copy(4.0 * n_expert, kGpu, kCpu);
        w.copy(4.0 * n_embd_, kGpu, kCpu);
        w.copy(4.0 * n_embd_, kCpu, kGpu);
    }
    w.t.host_parts += 1;  // routing runs on the host
}

bool CostModel::routes_on_gpu(const LayerInfo& L, const std::array<double, 3>& count, int home) const {
    if (home != kGpu || count[static_cast<size_t>(Tier::Gpu)] < static_cast<double>(L.experts->n_expert)) return false;
    return std::none_of(L.other.begin(), L.other.end(), [&](int i) {
        return table_.tensors[static_cast<size_t>(i)].name.find("_shexp") != std::string::npos;
    });
}

// An unsplit FFN: dense, or with activation sparsity the gate dense and up and down read at the
// active fraction (params_.ffn_active_fraction) in decode, at the row kernels' share of the GEMV
// rate on the CPU (sparse_down.h), ffn_down from its copy or whole; prefill (dense) unchanged.
void CostModel::add_sparse_ffn(Walk& w, const Layout& layout, int layer, int home) const {
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    const auto tier = [&](int i) { return layout.tier[static_cast<size_t>(i)]; };
    const auto bytes = [&](int i) { return static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes); };
    const double f = params_.ffn_active_fraction;
    for (int k = 0; k < 3; ++k) {
        const int i = L.ffn_index[k];
        if (k == 0 || f >= 1.0) {
            add_weight(w, i, bytes(i), tier(i), home);
            continue;
        }
        const TensorEntry& t = table_.tensors[static_cast<size_t>(i)];
        double read = bytes(i);
        // The row kernels on the CPU keep a share of the GEMV's rate per byte (sparse_down.h).
        const bool cpu = tier(i) != Tier::Gpu;
        double share = f / (cpu ? row_rate_share(k == 1 ? kGatherRateShare : kAccumulateRateShare, f) : 1.0);
        if (k == 2 && keeps_down_copy(params_, t)) {
            read = params_.ffn_down_bytes_per_weight * static_cast<double>(t.ne[0]) * static_cast<double>(t.ne[1]);
        } else if (k == 2) {
            share = 1.0;  // no copy (--sparse-down whole, or one that would not pay): read whole
        }
        add_weight(w, i, bytes(i), tier(i), home, 1.0, read * share / bytes(i));
    }
}

// Hot neurons (CostParams::hot_cold): the GPU's hot range dense (its ffn_down columns as the
// hot copy's bytes), the CPU's cold gate rows dense and its up and neuron-major down rows at the
// cold neurons' active fraction, at the row kernels' shares; the parts concurrent, the normed
// input in and the partial sum out. A prompt pass multiplies the hot range on the GPU and the
// cold gate rows and the whole ffn_up and ffn_down (masked) on the host.
void CostModel::add_hot_cold_ffn(Walk& w, const Layout& layout, int layer, const HotColdCost& hc) const {
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    const int64_t n_ff = L.ffn->n_ff;
    const int64_t hot = std::clamp<int64_t>(hc.hot, 0, n_ff);
    const double f = std::clamp(hc.cold_active, 0.0, 1.0);
    const double n_embd = static_cast<double>(L.ffn->gate->ne[0]);
    const double cold_weights = static_cast<double>(n_ff - hot) * n_embd;
    Walk gpu{*this, {}}, cpu{*this, {}};
    for (int k = 0; k < 3; ++k) {
        const int i = L.ffn_index[k];
        const TensorEntry& t = table_.tensors[static_cast<size_t>(i)];
        const Tier tier = layout.tier[static_cast<size_t>(i)] == Tier::Disk ? Tier::Disk : Tier::Ram;
        const bool down = k == 2;
        const double hot_part = part_bytes(t, down, 0, hot);
        const double hot_copy = down ? params_.hot_down_bytes_per_weight * static_cast<double>(hot) * n_embd : hot_part;
        if (hot_part > 0) add_weight(gpu, i, hot_part, Tier::Gpu, kGpu, 1.0, hot_copy / hot_part);
        if (hot == n_ff) continue;  // no cold part
        if (k == 0) {  // the cold gate rows, every token
            add_weight(cpu, i, part_bytes(t, false, hot, n_ff), tier, kCpu);
            continue;
        }
        // The active cold rows: ffn_up's own, ffn_down's from the neuron-major copy; without the
        // copy ffn_down is read whole.
        const double whole = static_cast<double>(t.bytes);
        if (down && !keeps_down_copy(params_, t)) {
            add_weight(cpu, i, whole, tier, kCpu);
            continue;
        }
        const double rows = down ? params_.ffn_down_bytes_per_weight * cold_weights : part_bytes(t, false, hot, n_ff);
        const double read = rows * f / row_rate_share(down ? kAccumulateRateShare : kGatherRateShare, f);
        add_weight(cpu, i, whole, tier, kCpu, 1.0, read / whole);
    }
    const bool split = hot > 0 && hot < n_ff;
    if (split) gpu.ops(kGpu, ffn_part_small_ops());
    add_concurrent_parts(w.t, gpu.t, cpu.t);
    if (hot > 0) {
        w.copy(4.0 * n_embd, kCpu, kGpu);  // the normed input
        w.copy(4.0 * n_embd, kGpu, kCpu);  // the hot range's partial sum
    }
}

}  // namespace strata

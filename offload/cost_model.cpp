// The cost model (cost_model.h states the equations): the model's layers and tensors indexed and
// rated, the fixed costs, and the terms combined into an estimate. A segment's walk through
// its weights is in cost_model_walk.cpp, the fit in cost_fit.cpp.
#include "offload/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/layer_ops.h"
#include "engine/core/tensor_role.h"

namespace strata {

namespace {

constexpr double kUnknownTypeShare = 0.7;  // of the read bandwidth, for types not measured

// Small ops (kernels on the GPU, parallel regions on the CPU) the layer program runs per block
// beside its matrix products: those its block descriptions list (engine/core/layer_ops.h), the
// optional ones only where the layer has their tensor. The attention itself is costed apart
// (the profile's attention_us); attn_ops counts it as one.
// A layer's tensors by role: table index, or -1 where the layer has none.
using LayerRoles = std::array<int, kTensorRoleCount>;

// fused: as the GPU's fused ops run them (a block's input norm counts with the previous
// block's end even where that ran elsewhere).
int small_ops_of(std::span<const LayerOp> ops, const LayerRoles& roles, bool fused = false) {
    return block_small_ops(ops, [&](TensorRole w) { return roles[static_cast<size_t>(w)] >= 0; }, fused);
}

double rate_of(const std::map<std::string, double>& gemv, GgmlType type, double read_gbs) {
    const auto it = gemv.find(std::string(type_traits(type).name));
    const double gbs = it != gemv.end() && it->second > 0 ? it->second : read_gbs * kUnknownTypeShare;
    return gbs * CostModel::kGiga;
}

}  // namespace

namespace {
// Every summed member of CostTerms but `transfers` (an int), for += and -=.
constexpr std::array<double CostTerms::*, 13> kSummed{
    &CostTerms::gpu_s,       &CostTerms::cpu_s,         &CostTerms::disk_s,      &CostTerms::transfer_s,
    &CostTerms::pf_gpu_s,    &CostTerms::pf_cpu_s,      &CostTerms::pf_disk_s,   &CostTerms::pf_transfer_s,
    &CostTerms::pf_ship_s,   &CostTerms::gpu_fixed_s,   &CostTerms::cpu_fixed_s, &CostTerms::gpu_kernels,
    &CostTerms::host_parts};
}  // namespace

CostTerms& CostTerms::operator+=(const CostTerms& o) {
    for (double CostTerms::*m : kSummed) this->*m += o.*m;
    transfers += o.transfers;
    return *this;
}

CostTerms& CostTerms::operator-=(const CostTerms& o) {
    for (double CostTerms::*m : kSummed) this->*m -= o.*m;
    transfers -= o.transfers;
    return *this;
}

CostModel::CostModel(const TensorTable& table, const HardwareProfile& profile,
                     const CostParams& params, GgmlType kv_type)
    : table_(table), profile_(profile), params_(params) {
    if (!(profile.host_read_gbs > 0)) {
        throw ArgumentError("the hardware profile has no host_read_gbs: measure the machine first");
    }
    if (params.n_prompt <= 0 || params.n_ctx_used < 0) {
        throw ArgumentError(cat("cost model: n_prompt must be positive and n_ctx_used >= 0, got ",
                                params.n_prompt, " and ", params.n_ctx_used));
    }
    // The attention of this model's shape as measured (0: unmeasured, costed as a small op).
    const std::string shape = attention_key({table.n_head, table.n_head_kv, table.head_dim});
    const auto measured = [&](const std::map<std::string, double>& short_us,
                              const std::map<std::string, double>& long_us) -> std::optional<AttentionLine> {
        const auto a = short_us.find(shape), b = long_us.find(shape);
        if (a == short_us.end() || b == long_us.end()) return std::nullopt;
        // Through the two measured points; never below the short context's cost.
        const double slope = std::max(0.0, (b->second - a->second) / (kAttentionLongCells - kAttentionShortCells));
        return AttentionLine{(a->second - slope * kAttentionShortCells) * 1e-6, slope * 1e-6, a->second * 1e-6};
    };
    cpu_attention_ = measured(profile.cpu_attention_us, profile.cpu_attention_long_us);
    gpu_attention_ = measured(profile.gpu_attention_us, profile.gpu_attention_long_us);
    prefill_known_ = profile.cpu_prefill_gflops > 0 &&
                     (!profile.has_gpu() || profile.gpu_prefill_gflops > 0);
    index_layers(kv_type);
    rate_tensors();
}

void CostModel::index_layers(GgmlType kv_type) {
    const TensorTable& table = table_;
    const int n_layer = std::max(table.n_layer, 0);
    layers_.resize(static_cast<size_t>(n_layer));
    std::vector<LayerRoles> roles(static_cast<size_t>(n_layer));
    for (LayerRoles& r : roles) r.fill(-1);
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const auto [role, layer] = tensor_name_info(table.tensors[i].name);
        if (layer >= 0 && layer < n_layer) roles[static_cast<size_t>(layer)][static_cast<size_t>(role)] = static_cast<int>(i);
    }
    for (int l = 0; l < n_layer; ++l) {
        const LayerRoles& has = roles[static_cast<size_t>(l)];
        const auto index_of = [&](TensorRole r) { return has[static_cast<size_t>(r)]; };
        LayerInfo& L = layers_[static_cast<size_t>(l)];
        L.ffn = find_ffn_tensors(table, l);
        if (L.ffn) {
            const TensorEntry* parts[3] = {L.ffn->gate, L.ffn->up, L.ffn->down};
            for (int k = 0; k < 3; ++k) L.ffn_index[k] = static_cast<int>(parts[k] - table.tensors.data());
        }
        const int q = index_of(TensorRole::AttnQ);
        if (kv_row_widths(table, l)) {  // attn_k/attn_v, or a fused attn_qkv (phi3)
            L.kv_cell_bytes = static_cast<double>(kv_bytes_per_layer(table, l, 1, kv_type));
        }
        if (static_cast<size_t>(l) < table.attn_window.size()) L.window = table.attn_window[static_cast<size_t>(l)];
        L.router = index_of(TensorRole::FfnGateInp);  // -1: a dense layer
        L.experts = find_expert_tensors(table, l);
        if (L.experts) {
            const TensorEntry* parts[3] = {L.experts->gate, L.experts->up, L.experts->down};
            for (int j = 0; j < 3; ++j) L.expert_index[j] = static_cast<int>(parts[j] - table.tensors.data());
            L.expert_use = expert_use_of(table, l, L.experts->n_expert);
        }
        if (q >= 0) L.q_width = static_cast<double>(table.tensors[static_cast<size_t>(q)].ne[1]);
        if (q < 0 && index_of(TensorRole::AttnQkv) >= 0) {
            L.q_width = static_cast<double>(table.n_head) * table.head_dim;  // phi3: Q rows of the fused tensor
        }
        L.attn_ops = small_ops_of(attention_block_ops(), has) + 1;  // + the attention
        L.ffn_ops = small_ops_of(ffn_block_ops(), has);
        L.gpu_attn_ops = small_ops_of(attention_block_ops(), has, /*fused=*/true) + 1;
        L.gpu_ffn_ops = small_ops_of(ffn_block_ops(), has, /*fused=*/true);
    }
}

void CostModel::rate_tensors() {
    const TensorTable& table = table_;
    const HardwareProfile& profile = profile_;
    const TensorClasses classes = classify_tensors(table);
    output_ = classes.output_matrix();
    embd_ = classes.token_embd;
    if (output_ >= 0) n_vocab_ = static_cast<double>(table.tensors[static_cast<size_t>(output_)].ne[1]);
    if (embd_ >= 0) n_embd_ = static_cast<double>(table.tensors[static_cast<size_t>(embd_)].ne[0]);
    info_.resize(table.tensors.size());
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        const TensorEntry& t = table.tensors[i];
        TensorInfo& ti = info_[i];
        ti.role = classes.of[i];
        ti.layer = classes.layer[i];
        ti.flops = 2.0 * static_cast<double>(t.ne[0]) * static_cast<double>(t.ne[1]) *
                   static_cast<double>(t.ne[2]) * static_cast<double>(t.ne[3]);
        ti.cpu_rate = rate_of(profile.cpu_gemv_gbs, t.type, profile.host_read_gbs);
        ti.gpu_rate = profile.has_gpu() ? rate_of(profile.gpu_gemv_gbs, t.type, profile.gpu_read_gbs) : 0;
        if (ti.role == TensorClass::Attn) {
            layers_[static_cast<size_t>(ti.layer)].attn.push_back(static_cast<int>(i));
        } else if (ti.role == TensorClass::LayerOther) {
            layers_[static_cast<size_t>(ti.layer)].other.push_back(static_cast<int>(i));
            // A 3-D expert tensor: each token reads the matrices of the experts it is routed to
            // (uniform routing; prefill batches read them all).
            if (table.n_expert_used > 0 && t.ne[2] > 1) {
                ti.decode_share = std::min(1.0, static_cast<double>(table.n_expert_used) / static_cast<double>(t.ne[2]));
            }
        }
    }
}

double CostModel::disk_bytes_per_s() const {
    // An unmeasured disk counts as a very slow one: DISK only where nothing else fits.
    return std::max(profile_.disk_read_gbs, 1e-3) * kGiga;
}

double CostModel::op_s(int proc) const {
    return (proc == kGpu ? profile_.gpu_op_us : profile_.cpu_op_us) * 1e-6;
}

double CostModel::gemv_floor_s(int proc, double bytes) const {
    const bool gpu = proc == kGpu;
    const double tiny = gpu ? profile_.gpu_gemv_tiny_floor_us : profile_.cpu_gemv_tiny_floor_us;
    const double small = gpu ? profile_.gpu_gemv_floor_us : profile_.cpu_gemv_floor_us;
    // Measured at two sizes; in between, linear in bytes; outside, the nearer one.
    const double f = std::clamp((bytes - kGemvTinyFloorBytes) / (kGemvFloorBytes - kGemvTinyFloorBytes), 0.0, 1.0);
    return (tiny + f * (small - tiny)) * 1e-6;
}

bool CostModel::is_graph(const CostTerms& t) { return t.host_parts <= 0 && t.gpu_kernels > 0; }

// A replayed graph launches each kernel for gpu_graph_node_us where the fixed costs counted an
// eager launch's gpu_op_us per kernel (a small op, or inside a product's floor). A cheaper node
// lowers them, but never below the nodes themselves.
double CostModel::gpu_fixed_unit_s(const CostTerms& t) const {
    if (!is_graph(t)) return t.gpu_fixed_s;
    const double node = profile_.gpu_graph_node_us * 1e-6, op = profile_.gpu_op_us * 1e-6;
    const double replayed = t.gpu_fixed_s + t.gpu_kernels * (node - op);
    return node >= op ? replayed : std::max(t.gpu_kernels * node, replayed);
}

int CostModel::segment_of(int tensor) const {
    const int layer = info_[static_cast<size_t>(tensor)].layer;
    return layer >= 0 ? layer : table_.n_layer;
}

int CostModel::ffn_home(const Layout& layout, int layer) const {
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    const auto proc = [](Tier t) { return t == Tier::Gpu ? kGpu : kCpu; };
    if (const auto& s = layout.split[static_cast<size_t>(layer)]) return s->gpu_end > 0 ? kGpu : kCpu;
    if (L.ffn) return proc(layout.tier[static_cast<size_t>(L.ffn_index[0])]);
    if (L.router >= 0) return proc(layout.tier[static_cast<size_t>(L.router)]);
    if (!L.other.empty()) return proc(layout.tier[static_cast<size_t>(L.other.front())]);
    return -1;
}

bool CostModel::ships_host_weights() const {
    return prefill_known_ && profile_.has_gpu() && profile_.gpu_prefill_gflops > 0 && profile_.h2d_gbs > 0 &&
           params_.ship_slots > 0 && params_.n_prompt >= params_.ship_min_tokens;
}

int CostModel::ffn_prefill_home(const Layout& layout, int layer) const {
    const int fh = ffn_home(layout, layer);
    const LayerInfo& L = layers_[static_cast<size_t>(layer)];
    if (fh != kCpu || !ships_host_weights() || !L.ffn || L.experts || layout.split[static_cast<size_t>(layer)]) return fh;
    return kGpu;  // a dense FFN all on the host: the pass multiplies its three matrices on the GPU
}

int CostModel::prefill_home_out(const Layout& layout, int layer) const {
    if (layer < 0) return home_out(layout, layer);
    const int fh = ffn_prefill_home(layout, layer);
    return fh >= 0 ? fh : home_out(layout, layer);
}

int CostModel::home_out(const Layout& layout, int layer) const {
    if (layer < 0) {
        return embd_ >= 0 && layout.tier[static_cast<size_t>(embd_)] == Tier::Gpu ? kGpu : kCpu;
    }
    const int fh = ffn_home(layout, layer);
    if (fh >= 0) return fh;
    return layout.kv[static_cast<size_t>(layer)] == Tier::Gpu ? kGpu : kCpu;
}

CostTerms CostModel::terms(const Layout& layout) const {
    CostTerms total;
    for (int s = 0; s < n_segments(); ++s) total += segment(layout, s);
    return total;
}

CostEstimate CostModel::combine(const CostTerms& t) const {
    CostEstimate e;
    const double gpu_fixed = params_.gpu_fixed_scale * gpu_fixed_unit_s(t);
    const double cpu_fixed = params_.cpu_fixed_scale * t.cpu_fixed_s;
    e.gpu_s = params_.gpu_scale * t.gpu_s + gpu_fixed;
    e.cpu_s = params_.cpu_scale * t.cpu_s + cpu_fixed;
    e.fixed_s = gpu_fixed + cpu_fixed;
    e.disk_s = t.disk_s;
    e.transfer_s = params_.transfer_scale * t.transfer_s;
    e.transfers = t.transfers;
    e.overhead_s = is_graph(t) ? params_.graph_overhead_s : params_.overhead_s;
    // The disk reads ahead while the processors work: only what compute does not cover costs.
    e.disk_exposed_s = std::max(0.0, params_.disk_scale * t.disk_s - e.gpu_s - e.cpu_s);
    e.decode_s_per_token = e.overhead_s + e.transfer_s + e.gpu_s + e.cpu_s + e.disk_exposed_s;
    if (prefill_known_) {
        // Two staging slots: a weight crosses PCIe while the previous one is multiplied, which
        // hides part of the shorter side.
        const double shorter = std::min(t.pf_gpu_s, t.pf_ship_s);
        const double gpu_side = t.pf_gpu_s + t.pf_ship_s - (params_.ship_slots >= 2 ? params_.ship_hidden * shorter : 0.0);
        e.prefill_s_per_token = params_.overhead_s / static_cast<double>(params_.n_prompt) +
                                t.pf_transfer_s + gpu_side + t.pf_cpu_s + t.pf_disk_s;
    }
    return e;
}

}  // namespace strata

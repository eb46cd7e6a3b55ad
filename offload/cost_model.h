// Cost model: the seconds per token a placement should take on a machine (HardwareProfile), as
// the layer program runs it, and the fit of its constants to measured runs. The planner
// (planner.h) searches placements with it.
//
// Decode, per token (one forward pass of one token), at unit scale:
//   G, C  GPU and CPU seconds of bytes on the critical path. The layer program is
//         sequential, so each weight adds bytes / gemv rate of its type on the processor of
//         its tier (GPU tier: gpu_gemv_gbs; RAM and DISK: cpu_gemv_gbs, else host_read_gbs ×
//         0.7; GPU unknown type: gpu_read_gbs × 0.7).
//   Gf, Cf  fixed GPU and CPU seconds: each product's floor (gpu_gemv_floor_us..., by its
//         size), each block's small ops (norms, RoPE, KV stores, quantizations, activations,
//         adds as the blocks' op lists in engine/core/layer_ops.h give them: 8 per attention
//         and 5 per FFN, plus the optional ones a layer has) × the measured op cost,
//         each attention's cost at n_ctx_used cells on the line through its two measured
//         points for the model's shape (cpu_attention_us..., KV bytes included; when not
//         measured: a small op, and the KV bytes at the read bandwidth in G or C); when nothing is on the host the
//         step is a CUDA graph and every GPU kernel costs gpu_graph_node_us - gpu_op_us more.
//         A split FFN adds only its longer part (its parts run concurrently).
//   D     DISK bytes / disk_read_gbs. The disk stream reads ahead while the CPU and GPU work,
//         so only the part of the scaled D that the scaled compute does not hide costs time.
//   T     transfers: every copy costs transfer_latency_us + bytes / h2d_gbs (or d2h_gbs):
//         the residual stream when the next block's home differs (attention's home is its
//         KV's tier, an FFN's the tier of its first part), a weight off its block's home (its
//         input there, its output back), a split FFN's input and partial sum, and the hidden
//         state and logits at the end when the output matrix or the last block is on the GPU.
//   decode = overhead + transfer_scale·T + max(gpu_scale·G + cpu_scale·C +
//                                 gpu_fixed_scale·Gf + cpu_fixed_scale·Cf, disk_scale·D)
// where overhead is graph_overhead_s for a step run as one CUDA graph (nothing on the host)
// and overhead_s for the others.
// With unit scales this is overhead + T + max(G + Gf + C + Cf, D): the roofline of
// docs/measuring.md made sequential, plus the measured fixed costs and transfers.
//
// Prefill, per token of a batch of n_prompt: each weight costs 2·params FLOP per token / prefill
// GFLOP/s of its processor, at least its bytes / (its one-token rate · n_prompt) (a pass of a
// few tokens reads the weight once: bandwidth-bound); attention costs 4·n_embd_q·n_prompt/2 FLOP
// per token. A RAM or DISK weight is multiplied on the GPU instead when the batch ships weights
// (n_prompt >= ship_min_tokens, ship_slots > 0: the runtime's rule), its bytes copied once per
// batch (S: bytes / n_prompt at h2d_gbs when registered, else h2d_staged_gbs; DISK weights are
// always staged). With two staging slots the copies run beside the GPU's products, so the GPU
// side takes max(G_p, S) + (1 - ship_hidden)·min(G_p, S), with one G_p + S. DISK bytes are read
// once per batch; the stream reads ahead only its ring (two matrices), so in a prompt pass the
// reads overlap the DISK layers' own work, not the other layers' (70B, 6 GiB, --ram-mem 24G on
// the H200 machine: a pp512 pass took 9.05 s against 7.07 s of reads alone):
//   prefill = overhead_s / n_prompt + transfers + GPU side + C_p + D / n_prompt
// The scales are fitted on decode and not applied to prefill. Prefill is 0 (not predicted)
// when the profile lacks cpu_prefill_gflops, or gpu_prefill_gflops on a machine with a GPU.
//
// Mixture of experts: experts placed one by one (Layout::experts), or whole *_exps tensors on
// one tier (as if each expert were there; tensors on different tiers: n_expert_used / n_expert
// of each read per token), cost each expert's bytes times its expected
// selections per token (TensorTable::expert_use, else uniform) on its tier's processor, one
// product floor per selected matrix, and for each selected expert off the router's processor
// its input row there and its output back (the MoE step sums on the host); DISK experts are all
// read every step (the stream's schedule is fixed).
//
// Not modelled: the disk's queueing (DISK reads are taken at full rate).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "offload/hardware_profile.h"
#include "offload/placement.h"
#include "offload/tensor_class.h"

namespace strata {

// One layer's FFN with hot neurons (--hot-neurons, engine/runtime/hot_cold_ffn.h), as the cost
// model prices it: its first `hot` neurons (hot-first order) on the GPU, computed densely there;
// the cold rest on the CPU, which reads their gate rows densely and their up rows and
// neuron-major down rows for the expected active share of them, `cold_active`.
struct HotColdCost {
    int64_t hot = 0;
    double cold_active = 1.0;  // the cold neurons' expected active fraction per token
};

struct CostParams {
    int64_t n_ctx_used = 1024;  // KV cells a decode step attends to
    int64_t n_prompt = 512;     // prefill batch
    // Fitted by fit(); defaults: the profile's rates are reached, 1 ms of per-token overhead
    // (op launches, synchronisation, sampling).
    double overhead_s = 1e-3;
    double gpu_scale = 1.0;  // seconds per predicted second (1 / efficiency)
    double cpu_scale = 1.0;
    double disk_scale = 1.0;
    // Seconds per predicted second of fixed costs (small ops, products' floors, attention at
    // a short context), apart from the per-byte scales: the profile measures them on matrices
    // and ops out of the caches, runs may do better or worse.
    double gpu_fixed_scale = 1.0;
    double cpu_fixed_scale = 1.0;
    // Seconds per predicted second of transfers: a copy in the executor also waits for the
    // GPU to drain and wakes the host threads, which the isolated copy latency does not see.
    double transfer_scale = 1.0;
    // The per-token overhead of a step recorded and launched as one CUDA graph (every weight
    // and KV cache on the GPU): recording and updating a graph of the whole step costs a
    // per-step amount that the profile's small graphs do not show (fitted 0.25-1.4 ms on the
    // H200 machine, where the eager steps' overhead_s fitted 0).
    double graph_overhead_s = 1e-3;
    // Activation sparsity (engine/runtime/sparse_ffn.h): decode reads the gate of a whole
    // (unsplit) FFN densely and its up and down rows at this expected active fraction (1 - S),
    // on the CPU at the row kernels' share of the GEMV rate (offload/sparse_down.h),
    // down from its neuron-major copy of ffn_down_bytes_per_weight bytes per weight (0: no
    // copy, ffn_down read whole). Prefill stays dense (the same FLOPs).
    // ffn_down_copy_auto: a layer keeps the copy only where it pays (sparse_down.h's
    // neuron_major_copy_pays against the tensor's own type); the others read ffn_down whole.
    double ffn_active_fraction = 1.0;
    double ffn_down_bytes_per_weight = 0;
    bool ffn_down_copy_auto = false;
    // Hot neurons, per layer (empty: none; a layer past its end or with a split FFN is priced
    // as above). Decode: the GPU's hot range (its gate and up rows, its ffn_down columns at
    // hot_down_bytes_per_weight) and the CPU's cold part (gate rows, then up and neuron-major
    // down rows at cold_active, at the row kernels' shares) run concurrently, with the normed
    // input to the GPU and the partial sum back; prefill: the hot range on the GPU, the cold
    // gate rows and the whole ffn_up and ffn_down on the CPU (the masked dense products).
    std::vector<HotColdCost> hot_cold;
    double hot_down_bytes_per_weight = 34.0 / 32.0;  // Q8_0
    // Prompt batches of at least ship_min_tokens multiply host weights on the GPU through
    // ship_slots staging buffers (0: never shipped; SessionParams::gpu_prefill_min_tokens,
    // RuntimeBudgets::staging_slots); ship_registered: the RAM weights are registered for
    // direct copies (--pin-weights and its default).
    int64_t ship_min_tokens = 64;
    int ship_slots = 2;
    bool ship_registered = true;
    // The share of the shorter side (copies or products) that two slots hide under the longer:
    // on the H200 machine's 70B at 6 GiB, one slot against two at 512 and 2048 tokens, 0.49-0.53
    // (the slots alternate matrices of unequal copy and product times; docs/BENCHMARKS.md).
    double ship_hidden = 0.5;
};

struct CostEstimate {
    double decode_s_per_token = 0;
    double prefill_s_per_token = 0;  // 0: not predicted
    // The decode terms (decode_s_per_token is their sum):
    double gpu_s = 0;           // gpu_scale · G
    double cpu_s = 0;           // cpu_scale · C
    double disk_exposed_s = 0;  // max(0, disk_scale·D − gpu_s − cpu_s)
    double transfer_s = 0;      // T
    double overhead_s = 0;      // overhead_s or graph_overhead_s, as the step runs
    double fixed_s = 0;         // the fixed costs within gpu_s and cpu_s
    // For reading: D (all disk time, mostly hidden) and the copies per decode step.
    double disk_s = 0;
    int transfers = 0;
};

// The estimate of a placement that passes check_placement. ArgumentError when the placement
// uses the GPU but the profile has no GPU rates, or the profile lacks host_read_gbs.
CostEstimate estimate(const Placement& placement, const TensorTable& table,
                      const HardwareProfile& profile, const CostParams& params);

// One measured run, as unit-scale terms of the cost model and the time it took.
struct Observation {
    double gpu_s = 0, cpu_s = 0, disk_s = 0, transfer_s = 0;  // G, C, D, T
    double measured_s_per_token = 0;
    double gpu_fixed_s = 0, cpu_fixed_s = 0;  // fixed costs, unit scale (in gpu_s/cpu_s: not)
    bool graph = false;                        // the step ran as one CUDA graph
};
Observation observe(const Placement& placement, const TensorTable& table,
                    const HardwareProfile& profile, const CostParams& params,
                    double measured_s_per_token);
// The decode seconds per token `params` predict for the run behind `o` (its terms only; its
// measured time is not used): the same sum as CostModel::combine.
double predict_decode(const CostParams& params, const Observation& o);

// Least-squares fit of the eight coefficients (all >= 0) to measured = overhead + transfer_scale·T +
// max(gpu_scale·G + cpu_scale·C + gpu_fixed_scale·Gf + cpu_fixed_scale·Cf, disk_scale·D)
// (overhead: graph_overhead_s for graph steps, overhead_s for the others),
// in relative error (each run weighted by 1/measured²), alternating between
// classifying each run as compute- or disk-bound and solving that linear model. Closed form:
// the normal equations on every subset of the coefficients, keeping the best non-negative
// solution. A pull toward the current values (the prior: the profile's measured rates and op
// costs) of `prior_weight` per coefficient, in units of the coefficient's size (1 for scales,
// 1 ms overheads): with the default, doubling a scale costs as much as a 7%
// error on one run (0.005 gave the best leave-one-out predictions of 0.001-0.5 on three
// 20-run calibrations on the H200 machine), so a few runs of one kind cannot carry a
// coefficient they barely determine far from what the machine measured. ArgumentError on no observations or a measured
// time <= 0.
constexpr double kDefaultPriorWeight = 0.005;
// "overhead 0.12 ms (graph steps 0.70 ms), gpu x1.00, cpu x1.16, disk x1.33, gpu fixed costs
// x1.10, cpu fixed costs x0.40, transfers x1.20": the fitted coefficients, for reading.
std::string describe_fit(const CostParams& params);
// Returns false, leaving `params` as they were, when the runs are degenerate: the fitted model
// would predict a zero, negative or infinite time for one of them.
bool fit(CostParams& params, const std::vector<Observation>& observations,
         double prior_weight = kDefaultPriorWeight);

// ---- For the planner: many layouts of one model, estimated fast ----

// A placement by table index. split[layer] set: the layer's FFN tensors are cut there (their
// entries in `tier` are ignored).
struct Layout {
    std::vector<Tier> tier;                   // per table tensor
    std::vector<std::optional<FfnSplit>> split;  // per layer
    std::vector<Tier> kv;                     // per layer
    // Per layer (may be shorter than n_layer): each expert's tier, or empty where the layer's
    // *_exps tensors are placed whole (their entries in `tier` are then used, else ignored).
    std::vector<std::vector<Tier>> experts;
    const std::vector<Tier>* experts_of(int layer) const {
        const auto l = static_cast<size_t>(layer);
        return l < experts.size() && !experts[l].empty() ? &experts[l] : nullptr;
    }
};

// Decode (unit scale) and prefill terms of a part of the model; they add up.
struct CostTerms {
    double gpu_s = 0, cpu_s = 0, disk_s = 0, transfer_s = 0;
    int transfers = 0;
    double pf_gpu_s = 0, pf_cpu_s = 0, pf_disk_s = 0, pf_transfer_s = 0;  // per prompt token
    double pf_ship_s = 0;  // per prompt token: host weights copied to the GPU for the batch
    double gpu_fixed_s = 0, cpu_fixed_s = 0;  // small ops, products' floors, attention (not in gpu_s/cpu_s)
    // For the CUDA graph a decode step runs as when nothing is on the host (host_parts == 0):
    // GPU kernels (products and small ops), and weights, KV caches or tables on the host.
    double gpu_kernels = 0, host_parts = 0;
    CostTerms& operator+=(const CostTerms& o);
    CostTerms& operator-=(const CostTerms& o);
};

// The model's tensors classified and rated once. Cheap to query from one thread; holds
// references to the table (which must outlive it).
class CostModel {
  public:
    static constexpr double kGiga = 1e9;  // the G of the profile's GB/s and GFLOP/s

    // kv_type: the KV cache's type, for the bytes each decode step's attention reads.
    CostModel(const TensorTable& table, const HardwareProfile& profile, const CostParams& params,
              GgmlType kv_type = GgmlType::F16);

    struct TensorInfo {
        TensorClass role = TensorClass::Small;
        int layer = -1;
        double cpu_rate = 0, gpu_rate = 0;  // weight bytes/s at one token
        double flops = 0;                   // per token, 2 per weight
        double decode_share = 1.0;          // of its bytes a decode step reads (MoE experts: k/n_expert)
    };
    const std::vector<TensorInfo>& info() const { return info_; }
    const TensorTable& table() const { return table_; }
    const std::optional<FfnTensors>& ffn(int layer) const { return layers_[static_cast<size_t>(layer)].ffn; }
    // A MoE layer's expert tensors, their table indices (gate, up, down) and each expert's
    // expected selections per token.
    const std::optional<ExpertTensors>& experts(int layer) const { return layers_[static_cast<size_t>(layer)].experts; }
    const int* expert_index(int layer) const { return layers_[static_cast<size_t>(layer)].expert_index; }
    const std::vector<double>& expert_use(int layer) const { return layers_[static_cast<size_t>(layer)].expert_use; }
    int n_layer() const { return table_.n_layer; }
    bool prefill_known() const { return prefill_known_; }
    const CostParams& params() const { return params_; }
    double disk_bytes_per_s() const;
    // Host-to-device GB/s of an unregistered host weight (staged; h2d_gbs where not measured).
    double staged_h2d_gbs() const { return profile_.h2d_staged_gbs > 0 ? profile_.h2d_staged_gbs : profile_.h2d_gbs; }

    // FormatError for tensors the table lacks (check_placement first for full checks).
    Layout layout_of(const Placement& placement) const;
    // tensors, ffn_splits and kv of `layout` (other fields default).
    Placement to_placement(const Layout& layout, const Placement& base = {}) const;

    // Segments: layers 0..n_layer-1, then the global one (n_layer: the start at the embedding
    // table, the output matrix, the final copies). A change of a tensor of segment s changes
    // the terms of s and of next_segment(s) only.
    int n_segments() const { return table_.n_layer + 1; }
    int next_segment(int s) const { return s == table_.n_layer ? 0 : s + 1; }
    int segment_of(int tensor) const;
    CostTerms segment(const Layout& layout, int s) const;
    CostTerms terms(const Layout& layout) const;
    CostEstimate combine(const CostTerms& total) const;
    // The unit-scale fixed GPU seconds of `total`: its gpu_fixed_s, plus what recording the
    // step as a CUDA graph adds per kernel when nothing is on the host (the layer program
    // then does).
    double gpu_fixed_unit_s(const CostTerms& total) const;
    // Whether the layer program runs the step as one CUDA graph: GPU kernels, nothing on the host.
    static bool is_graph(const CostTerms& total);
    CostEstimate estimate(const Layout& layout) const { return combine(terms(layout)); }

  private:
    struct LayerInfo {
        std::vector<int> attn;   // Attn tensors
        std::vector<int> other;  // LayerOther tensors
        std::optional<FfnTensors> ffn;
        int ffn_index[3] = {-1, -1, -1};  // gate, up, down
        int router = -1;                  // ffn_gate_inp: the MoE step's home
        std::optional<ExpertTensors> experts;
        int expert_index[3] = {-1, -1, -1};  // gate, up, down _exps
        std::vector<double> expert_use;      // per expert, selections per token
        double kv_cell_bytes = 0;
        int64_t window = 0;  // sliding-window attention: keys a query reads (0: the whole context)
        double q_width = 0;  // attn_q output width (prefill attention FLOP)
        double n_embd = 0;
        double attn_ops = 0, ffn_ops = 0;  // small ops per block, optional tensors included
        double gpu_attn_ops = 0, gpu_ffn_ops = 0;  // the same as the GPU's fused kernels
    };
    enum Proc { kCpu = 0, kGpu = 1 };
    struct Walk;

    // The constructor's parts: per layer its FFN, KV and small-op facts; per tensor its role.
    void index_layers(GgmlType kv_type);
    void rate_tensors();

    double op_s(int proc) const;                       // one small op on `proc`
    double gemv_floor_s(int proc, double bytes) const;  // a product's fixed cost on `proc`

    int home_out(const Layout& layout, int layer) const;
    int ffn_home(const Layout& layout, int layer) const;
    // The output segment: the last hidden state to the host, the output matrix.
    void add_output(Walk& w, const Layout& layout) const;
    // A layer's attention block; its homes: the KV cache's processor, and decode's block home
    // (the host where every projection is on the host and the cache on the GPU).
    struct AttentionHomes {
        int kv;
        int decode;
    };
    AttentionHomes add_attention(Walk& w, const Layout& layout, int layer) const;
    // Whether a prompt batch of n_prompt ships host weights to the GPU (the runtime's rule).
    bool ships_host_weights() const;
    // Where a prompt pass runs the layer's FFN: on the GPU when its home is the host, it is one
    // dense FFN and every matrix of it ships (the executor's part_backend), else its home.
    int ffn_prefill_home(const Layout& layout, int layer) const;
    // home_out for a prompt pass (ffn_prefill_home for the FFN).
    int prefill_home_out(const Layout& layout, int layer) const;
    // decode_share: the part of `bytes` a decode step reads (activation sparsity).
    void add_weight(Walk& w, int tensor, double bytes, Tier tier, int home,
                    double pf_share = 1.0, double decode_share = 1.0) const;
    void add_ffn_split(Walk& w, int layer, const FfnSplit& split) const;
    void add_sparse_ffn(Walk& w, const Layout& layout, int layer, int home) const;
    void add_hot_cold_ffn(Walk& w, const Layout& layout, int layer, const HotColdCost& hot_cold) const;
    void add_experts(Walk& w, const std::vector<Tier>& tiers, int layer, int home) const;
    // Whether a decode step routes layer L on the GPU: its router (home) and all its experts
    // (count per tier) there, and no shared expert.
    bool routes_on_gpu(const LayerInfo& L, const std::array<double, 3>& count, int home) const;

    const TensorTable& table_;
    const HardwareProfile& profile_;
    CostParams params_;
    std::vector<TensorInfo> info_;
    std::vector<LayerInfo> layers_;
    int output_ = -1;      // Output tensor
    int embd_ = -1;        // the tensor get_rows reads (token_embd)
    double n_embd_ = 0;
    double n_vocab_ = 0;
    bool prefill_known_ = false;
    // One attention of the model's shape, as measured: at0 + per_cell · cells, at least floor.
    struct AttentionLine {
        double at0_s = 0, per_cell_s = 0, floor_s = 0;
    };
    std::optional<AttentionLine> cpu_attention_, gpu_attention_;  // nullopt: not measured
};

}  // namespace strata

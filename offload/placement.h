// Placement: where every weight of one model lives (GPU, RAM or DISK tier) and therefore which
// backend computes with it, plus where each layer's KV cache lives. Plain data; its JSON file
// format (placement_file.h) and the built-in placement from budgets (builtin_placement.h) build
// on it. docs/PLACEMENT.md documents the file.
//
// The compute backend follows the tier: GPU tensors are multiplied on the GPU, RAM and DISK
// tensors on the CPU (DISK ones streamed into staging buffers at each use).
//
// FFN splits: a layer's three FFN tensors (ffn_gate, ffn_up: [n_embd, n_ff]; ffn_down:
// [n_ff, n_embd]) may share one split of the neuron axis (rows of gate/up, columns of down):
// neurons [0, gpu_end) on the GPU, [gpu_end, ram_end) in RAM, [ram_end, n_ff) on DISK. The
// boundaries are multiples of the tensors' quantization block size (so the down projection can
// be cut along its rows). A split layer's three FFN tensors are not listed in `tensors`.
//
// Expert tiers: a mixture-of-experts layer's experts placed one by one. Expert e's three
// matrices (the e-th [.., .., e] slices of ffn_gate_exps, ffn_up_exps and ffn_down_exps) are one
// unit on tiers[e]. Such a layer's three *_exps tensors are not listed in `tensors`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor_role.h"
#include "offload/tier.h"
#include "quant/ggml_type.h"

namespace strata {

// One tensor of the model as the placement sees it.
struct TensorEntry {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    uint64_t bytes = 0;

    // What the tensor is for and its block ("blk.N."; -1 outside the blocks), read from the name
    // by the one mapping every layer uses (engine/core/tensor_role.h).
    TensorRole role() const { return tensor_name_info(name).role; }
    int layer() const { return tensor_name_info(name).layer; }
};

// The model as the placement sees it: its tensors and identity.
struct TensorTable {
    std::vector<TensorEntry> tensors;
    int n_layer = 0;
    std::string architecture;
    // Layer 0's attention (for the cost model's measured attention cost); 0: unknown.
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    // Mixture of experts: experts a token uses of the ne[2] in each layer's 3-D expert tensors
    // (0: a dense model). A token reads n_expert_used / ne[2] of such a tensor on average.
    int n_expert_used = 0;
    // Sliding-window attention: per layer, how many keys a query sees (0: the whole context);
    // empty: no such layers. Such a layer's KV cache keeps kv_layer_cells() cells per sequence
    // (a ring of its window plus kv_ring_slack), and kv_bytes_per_layer's n_ctx counts the cells
    // of kv_sequences sequences.
    std::vector<int64_t> attn_window;
    int64_t kv_ring_slack = 0;
    int64_t kv_sequences = 1;
    // Measured routing (strata profile): per layer, per expert the share of tokens routed to it
    // (each layer's values sum to n_expert_used). Empty, or a layer's entry empty: uniform,
    // n_expert_used / n_expert each.
    std::vector<std::vector<double>> expert_use;
};

// Identifies one model file: its total size and a hash of its header and tensor table (not of
// the weights, so it is cheap for a 40 GiB file).
struct ModelFingerprint {
    uint64_t file_bytes = 0;
    std::string header_hash;  // hex
    bool operator==(const ModelFingerprint&) const = default;
};

struct Budgets {
    uint64_t gpu_bytes = 0;  // 0: no GPU
    uint64_t ram_bytes = 0;  // resident weights in RAM (and disk staging)
    bool operator==(const Budgets&) const = default;
};

// What the machine looked like when the plan was made (informative, plus the GPU name, which a
// plan is checked against).
struct HardwareSummary {
    std::string gpu_name;        // empty: no GPU
    uint64_t gpu_total_bytes = 0;
    std::string cpu_name;
    int cpu_threads = 0;
    uint64_t ram_total_bytes = 0;
};

struct PredictedSpeed {
    double prefill_tok_s = 0;  // 0: not predicted
    double decode_tok_s = 0;
};

struct TensorPlacement {
    std::string name;
    Tier tier = Tier::Ram;
};

struct FfnSplit {
    int layer = 0;
    int64_t gpu_end = 0;  // neurons [0, gpu_end) on the GPU
    int64_t ram_end = 0;  // [gpu_end, ram_end) in RAM, [ram_end, n_ff) on DISK
};

struct ExpertTiers {
    int layer = 0;
    std::vector<Tier> tiers;  // [n_expert]: expert e's gate, up and down slices
};

struct Placement {
    // 2: hot_neurons (issue 19). A plan without them is written as version 1, which 1-only
    // readers still read; this reader reads both.
    static constexpr int kSchemaVersion = 2;

    ModelFingerprint model;
    Budgets budgets;
    int64_t n_ctx = 0;     // KV cells the budgets were computed for
    GgmlType kv_type = GgmlType::F16;
    HardwareSummary hardware;
    PredictedSpeed predicted;
    std::vector<TensorPlacement> tensors;  // every tensor except those of split FFNs
    std::vector<FfnSplit> ffn_splits;      // at most one per layer
    std::vector<Tier> kv;                  // per layer: Gpu or Ram
    // Per layer, the FFN neurons (ordered hot-first by the activation stats) whose copies are on
    // the GPU with --hot-neurons; the FFN tensors themselves are then off the GPU. Empty: none.
    std::vector<int64_t> hot_neurons;
    std::vector<ExpertTiers> expert_tiers;  // at most one per MoE layer

    // The tier of a whole (unsplit) tensor; nullopt when it is not listed.
    std::optional<Tier> tier_of(const std::string& name) const;
    // The split of `layer`'s FFN, or null.
    const FfnSplit* ffn_split(int layer) const;
    // The per-expert tiers of `layer`, or null (its *_exps tensors are then placed whole).
    const ExpertTiers* experts_of(int layer) const;
};

// --- Placement against a model (placement.cpp) ---

// The layer of a "blk.N.*" tensor name; -1 for global tensors (tensor_name_info's).
inline int tensor_layer(const std::string& name) { return tensor_name_info(name).layer; }

// A layer's splittable FFN: ffn_gate and ffn_up ([n_embd, n_ff]: one row per neuron) and
// ffn_down ([n_ff, n_embd]: one column per neuron). Pointers into the table.
struct FfnTensors {
    const TensorEntry* gate = nullptr;
    const TensorEntry* up = nullptr;
    const TensorEntry* down = nullptr;
    int64_t n_ff = 0;
    int64_t granule = 1;  // split boundaries are multiples of this (lcm of the block sizes) or n_ff
};

// The FFN tensors of `layer` ("blk.N.ffn_gate.weight" ...), or nullopt when the layer lacks one
// of them or their shapes disagree (such a layer cannot be split).
std::optional<FfnTensors> find_ffn_tensors(const TensorTable& table, int layer);
// Bytes of neurons [begin, end) of all three tensors. begin/end on granule boundaries or n_ff.
uint64_t ffn_slice_bytes(const FfnTensors& ffn, int64_t begin, int64_t end);

// A layer's 3-D expert tensors ("blk.N.ffn_{gate,up,down}_exps.weight", ne[2] = n_expert).
struct ExpertTensors {
    const TensorEntry* gate = nullptr;
    const TensorEntry* up = nullptr;
    const TensorEntry* down = nullptr;
    int64_t n_expert = 0;
    uint64_t bytes_per_expert = 0;  // one expert's gate + up + down slices
};

// The expert tensors of `layer`, or nullopt when it lacks one or their expert counts differ.
std::optional<ExpertTensors> find_expert_tensors(const TensorTable& table, int layer);
// Expected selections per token of each expert of `layer` (table.expert_use, else uniform).
std::vector<double> expert_use_of(const TensorTable& table, int layer, int64_t n_expert);

// The K and V row widths of a layer: attn_k's and attn_v's ne[1], or the K and V rows of a fused
// attn_qkv (phi3) of (n_head + 2*n_head_kv)*head_dim rows, from the table's head counts. nullopt:
// neither.
std::optional<std::pair<int64_t, int64_t>> kv_row_widths(const TensorTable& table, int layer);

// KV cells one sequence's cache keeps for a layer: n_ctx for full attention (window 0); for a
// sliding window, a ring of the window plus ring_slack cells (the most tokens one forward pass
// stores, so a batch never overwrites a key its own queries see), at most n_ctx.
int64_t kv_layer_cells(int64_t window, int64_t n_ctx, int64_t ring_slack);

// K + V cache bytes of one layer for n_ctx cells of `kv_type` (n_ctx spanning table.kv_sequences
// sequences; a sliding-window layer keeps only its ring: kv_layer_cells), from the widths of the
// layer's attn_k and attn_v (ne[1]), as engine/runtime/kv_cache lays them out. ArgumentError when
// the layer has no attn_k/attn_v (nor a fused attn_qkv: kv_row_widths).
uint64_t kv_bytes_per_layer(const TensorTable& table, int layer, int64_t n_ctx, GgmlType kv_type);

struct TierBytes {
    uint64_t gpu = 0;
    uint64_t ram = 0;
    uint64_t disk = 0;
    bool operator==(const TierBytes&) const = default;
};

// Weight bytes per tier (not the KV cache); a split FFN contributes each neuron range's share.
// The placement must pass check_placement (FormatError names an unknown tensor otherwise).
TierBytes placement_bytes(const Placement& placement, const TensorTable& table);

// Refuses (FormatError, naming the values) a placement that does not fit this model: a
// fingerprint other than `actual`; a tensor unknown to the table, listed twice, or missing; a
// split for a layer out of range, twice, without splittable FFN tensors or whose FFN tensors are
// also listed whole; split bounds outside 0 <= gpu_end <= ram_end <= n_ff or off the granule;
// kv not one entry per layer, or a kv entry on DISK; expert tiers for a layer out of range,
// twice, without expert tensors, with a count other than its n_expert, or whose *_exps
// tensors are also listed whole.
void check_placement(const Placement& placement, const TensorTable& table,
                     const ModelFingerprint& actual);

}  // namespace strata

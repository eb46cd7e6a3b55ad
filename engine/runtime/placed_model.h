// PlacedModel: a model's weights loaded into the tiers a Placement names (residency), as the
// executor (LayerProgram) uses them. Each weight matrix has the backend that computes with it:
// GPU-tier weights are copied into the GPU backend's memory, RAM-tier weights stay views of the
// file mapping (read by the CPU backend; a split FFN's columns of ffn_down are packed into a
// copy, since a strided view reads slowly), DISK-tier weights are read by a DiskStream at each
// use. Small 1-D weights (norms, biases) are copied to every backend in use, so a norm runs
// wherever the activations are. Immutable after construction; sessions share it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "offload/disk_stream.h"
#include "offload/placement.h"
#include "offload/tier.h"

namespace strata {

class Model;
struct LayerWeights;

// A weight matrix and where it is computed.
struct PlacedWeight {
    Tensor tensor;               // in backend's memory; a DISK weight's data is null (streamed)
    Backend* backend = nullptr;  // null: the model has no such weight
    Tier tier = Tier::Ram;
    int stream_id = -1;          // >= 0: DiskStream read that brings its bytes
    bool present() const { return backend != nullptr; }
};

// A 1-D weight with one copy per backend of the PlacedModel (index = backend index).
struct SmallWeight {
    std::vector<Tensor> copies;
    bool present() const { return !copies.empty(); }
    const Tensor& on(int backend_index) const { return copies.at(static_cast<size_t>(backend_index)); }
};

// Neurons [begin, end) of a layer's FFN on one backend: rows of gate/up, columns of down.
struct FfnPart {
    int64_t begin = 0, end = 0;
    PlacedWeight gate, up, down;
};

// One expert's gated FFN: gate/up [n_embd, width], down [width, n_embd].
struct ExpertWeights {
    PlacedWeight gate, up, down;
};

// A layer's mixture of experts (engine/model MoeConfig). Each expert's matrices are the slices of
// the 3-D tensors (RAM: views of the mapping, no copies), placed as the tensor is; DISK experts
// are one stream read per matrix, in expert order.
struct PlacedMoe {
    PlacedWeight router;                 // [n_embd, n_expert]
    std::vector<ExpertWeights> experts;  // [n_expert]; empty for a dense layer
    ExpertWeights shared;                // shared expert (gate.present() iff the model has one)
    PlacedWeight shared_gate;            // [n_embd, 1]: sigmoid scale of the shared expert, or absent
};

// The layer's experts by index, as Backend::routed_expert_ffn takes them (weights unused).
std::vector<ExpertRef> expert_refs(const PlacedMoe& moe);
// Whether a decode step runs this layer's routing and experts as one op on g
// (Backend::routed_expert_ffn): the router and every expert resident there (not streamed), no
// shared expert, and g routes them with top-k n_used.
bool moe_routes_on(const PlacedMoe& moe, const Backend& g, int64_t n_used, Activation act);

struct PlacedLayer {
    Backend* attn_home = nullptr;  // runs norms, RoPE and attention; holds the layer's KV
    PlacedWeight attn_q, attn_k, attn_v, attn_output;
    SmallWeight attn_norm, attn_q_bias, attn_k_bias, attn_v_bias, attn_q_norm, attn_k_norm,
        post_attention_norm, ffn_norm, post_ffw_norm;
    std::vector<FfnPart> ffn;      // device backends first, then host ones; empty for MoE
    PlacedMoe moe;                 // experts.empty() for a dense layer
};

// The backends tiers map to: GPU -> gpu, RAM and DISK -> cpu.
struct TierBackends {
    Backend* cpu = nullptr;  // required
    Backend* gpu = nullptr;  // a CUDA or fake device backend, or null when there is no GPU
    bool ram_copy = false;   // --no-mmap: RAM weights copied out of the file mapping
    bool ram_lock = false;   // --mlock: RAM weights locked in memory (a warning where refused)
};

// Bytes of weights per tier, and the copies the placement adds.
struct ResidencyStats {
    uint64_t gpu_weight_bytes = 0;
    uint64_t ram_weight_bytes = 0;   // what the CPU reads: views of the mapping, packed copies
    uint64_t disk_weight_bytes = 0;  // streamed per token
    uint64_t small_copy_bytes = 0;   // norms/biases copied to each backend
    uint64_t locked_bytes = 0;       // RAM weights mlock()ed (ram_lock)
    uint64_t registered_bytes = 0;   // RAM weights the GPU copies from directly (register_ram_weights)
    double register_seconds = 0;
};

class PlacedModel {
  public:
    // Loads `model` as `placement` says. The placement must have passed check_placement for this
    // model; a GPU tier without tiers.gpu, a DISK range inside a split FFN, or a DISK embedding
    // or output matrix throws UnsupportedError. The model and backends must outlive this.
    // `on_layer` (may be empty) is called after each layer is placed: (layers done, n_layer).
    PlacedModel(const Model& model, const Placement& placement, const TierBackends& tiers,
                const DiskStreamOptions& disk = {}, const std::function<void(int, int)>& on_layer = {});
    // Every weight on one backend: host backends read the file mapping in place, device ones
    // get copies.
    PlacedModel(const Model& model, Backend& backend);
    ~PlacedModel();
    PlacedModel(const PlacedModel&) = delete;
    PlacedModel& operator=(const PlacedModel&) = delete;

    const Model& model() const { return model_; }
    const std::vector<Backend*>& backends() const { return backends_; }
    int backend_index(const Backend* b) const;  // -1 if not used

    const PlacedWeight& token_embd() const { return token_embd_; }
    const PlacedWeight& output() const { return output_; }
    const SmallWeight& output_norm() const { return output_norm_; }
    const float* rope_freqs() const { return rope_freqs_; }  // host, or null
    const PlacedLayer& layer(int il) const { return layers_.at(static_cast<size_t>(il)); }
    int n_layer() const { return static_cast<int>(layers_.size()); }

    // The backend of each layer's KV cache (its attention home).
    std::vector<Backend*> kv_backends() const;
    // Null when no weight is on DISK. Mutable: reading advances it.
    DiskStream* disk_stream() const { return stream_.get(); }
    const ResidencyStats& stats() const { return stats_; }
    // Registers the RAM weights with `gpu` for direct copies (prefill ships them to it: at 70B
    // on an H100, 54 GB/s from registered pages against 28 GB/s through the staging memcpy).
    // Neighbouring weights are merged into page-aligned runs; a refused run stays staged.
    // Returns the bytes registered (also in stats()).
    uint64_t register_ram_weights(Backend& gpu);

  private:
    int use_backend(Backend* b);  // index, adding it if new
    PlacedWeight place(const Tensor& view, const std::string& name, Tier tier, const TierBackends& tiers);
    SmallWeight small(const Tensor& view);
    void bind_small_weights(PlacedLayer& l, const LayerWeights& lw);
    // The MoE weights of layer il, each tensor in the tier tier_of(name) gives, or each expert
    // where `per_expert` (may be null) says (placed_moe.cpp).
    void place_moe(int il, const LayerWeights& lw, const std::function<Tier(const std::string&)>& tier_of,
                   const ExpertTiers* per_expert, const TierBackends& tiers, PlacedMoe& out);
    void finish_small_weights();
    // A disk stream over the model's shards when the placement puts anything on DISK (whole
    // tensors only: UnsupportedError for a split FFN with a part there).
    void open_disk_stream(const Placement& placement, const DiskStreamOptions& disk);
    // Layer il's dense FFN: whole tensors in the tiers tier_of gives, or the split `s` (may be
    // null) as a GPU part and a RAM part.
    void place_dense_ffn(int il, const LayerWeights& lw, const FfnSplit* s,
                         const std::function<Tier(const std::string&)>& tier_of, const TierBackends& tiers,
                         PlacedLayer& l);

    const Model& model_;
    std::vector<Backend*> backends_;
    std::vector<Buffer> owned_;
    std::unique_ptr<DiskStream> stream_;
    PlacedWeight token_embd_, output_;
    SmallWeight output_norm_;
    const float* rope_freqs_ = nullptr;
    std::vector<PlacedLayer> layers_;
    ResidencyStats stats_;
    std::vector<std::pair<const uint8_t*, uint64_t>> ram_ranges_;  // contiguous RAM weights
    std::vector<Buffer> registrations_;  // after owned_: dropped before the copies they cover
};

}  // namespace strata

// LayerProgram: the forward pass shared by every supported architecture (llama, qwen2, qwen3,
// gemma3), written once against the Backend interface — and the executor that runs it over a
// PlacedModel, where weights may live on several backends:
//   x = embed(tokens)·embd_scale
//   per layer: x += [post_norm](Wo · attention(rope(norm_qk(Wq·n(x) + bq)), rope(..Wk..), Wv..))
//              x += [post_norm](Σ_parts Wdown[:, part] · (act(Wgate[part]·n(x)) ⊙ Wup[part]·n(x)))
//   hidden = output_norm(x);  logits = softcap(Woutput · hidden)
//
// Execution: each layer's attention runs on its home backend (where its KV is); each matmul
// runs on the backend that holds its weight, its input and output crossing to and from the
// home when they differ; the FFN runs on the backend of its first part, and a split FFN's
// parts run on their own backends — device parts are queued first, so they overlap the host
// parts — their partial sums added at the home. DISK weights come from the model's DiskStream
// in program order. The residual stream moves only when the next block's home differs.
// Prefill: in batches of at least gpu_prefill_min_tokens, a weight held by a host backend (RAM
// or DISK) is copied into a GPU staging buffer and multiplied there, when the model has a GPU
// backend (compute-bound batches gain more from the GPU than the copy costs; single stream,
// so the next weight's host-side copy overlaps the current GPU product).
// Decode with every weight on the GPU is recorded as one step graph after one eager step
// (Backend::begin_step_graph) and replayed at the next positions (Backend::replay_step) until
// its buffers or cache change.
// Not thread-safe: one program per sequence being evaluated.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "predictor/activation_profile.h"

namespace strata {

struct ModelConfig;
class ActivationObserver;
class KvCache;
class PlacedModel;
class SparseFfn;
class HotColdFfn;
struct ExpertWeights;
struct PlacedMoe;
struct MoeScratch;
struct PlacedWeight;
struct FfnPart;

class LayerProgram {
  public:
    // The placed model (and its backends) must outlive the program. gpu_prefill_min_tokens: 0
    // never ships host weights to the GPU; gpu_staging_limit: the most GPU bytes the staging of a
    // shipped weight may take (a larger weight is computed where it lives).
    explicit LayerProgram(const PlacedModel& model, int64_t gpu_prefill_min_tokens = 64,
                          uint64_t gpu_staging_limit = UINT64_MAX);
    ~LayerProgram();

    // Evaluates `tokens` at positions kv.n_used() .. kv.n_used()+n-1, appending their keys and
    // values to `kv` (which must live on the placed model's kv_backends()). For each index in
    // `output_rows` (positions within the batch), writes the final normalised hidden state to
    // `hidden` [n_embd, output_rows.size()] (host memory). Throws ArgumentError for token ids
    // outside the vocabulary or a batch that overflows the cache. A batch longer than
    // kv.max_batch() (a sliding-window ring's room) runs in parts of that size.
    void forward(std::span<const int32_t> tokens, KvCache& kv,
                 std::span<const int32_t> output_rows, std::vector<float>& hidden);

    // One sequence of a multi-sequence batch (batch_step.h): its next `n` rows of the batch,
    // evaluated after the kv->n_used() cells of its own cache (sequences take consecutive rows).
    struct SequenceRows {
        KvCache* kv = nullptr;
        int64_t n = 0;
    };
    // As forward(), for rows of several sequences in one pass (layer_program_batch.cpp): every
    // matmul runs over all rows at once, RoPE, KV stores and attention per sequence. Row i of
    // the result is the same as forward() gives that row's sequence alone on host backends.
    void forward_batch(std::span<const int32_t> tokens, std::span<const SequenceRows> seqs,
                       std::span<const int32_t> output_rows, std::vector<float>& hidden);

    // logits [n_vocab, n] = output · hidden [n_embd, n] (host memory), soft-capped when the
    // model says so.
    void logits(const float* hidden, int64_t n, float* logits);

    int64_t n_embd() const;
    int64_t n_vocab() const;

    // Bytes this program holds for activations on `backend` (its scratch grows to the largest
    // batch seen).
    uint64_t activation_bytes(const Backend* backend) const;
    // Host weights shipped to the GPU by prompt batches so far, and the host-side seconds their
    // copies took (the pinned staging; the transfers themselves overlap).
    struct ShipStats {
        uint64_t bytes = 0;
        double seconds = 0;
    };
    const ShipStats& ship_stats() const { return ship_stats_; }

    // Activation sparsity (sparse_ffn.h): each FFN runs with the calibrated thresholds of
    // `sparse` (which must outlive the program, and was built for this placed model), or dense
    // when null. The counts of neurons evaluated and active per layer, since the last reset.
    void set_sparse(const SparseFfn* sparse);
    const SparseFfn* sparse() const { return sparse_; }
    // Hot neurons on the GPU (hot_cold_ffn.h), built on the sparse FFN set above; null: off.
    void set_hot_cold(const HotColdFfn* hot_cold);
    struct SparsityCount {
        uint64_t evaluated = 0;  // (neuron, token) pairs
        uint64_t active = 0;
    };
    // Host counts plus those a GPU keeps on the device (read back: not while a graph records).
    const std::vector<SparsityCount>& sparsity_counts() const;
    void reset_sparsity_counts();

    // A calibration hook (activation_observer.h), or null; it must outlive the program's use.
    void set_observer(ActivationObserver* observer) { observer_ = observer; }

  private:
    enum Slot { kX, kCur, kQ, kK, kV, kAttn, kProj, kGate, kUp, kPart, kPartTmp, kMmIn, kMmOut,
                kHidden, kLogits, kRouter, kMoeIn, kMoeOut, kMoeSum, kSlotCount };
    static constexpr int kMaxBackends = 4;

    // A sequence's rows [row0, row0+n) of the batch, at positions pos0.. of its cache.
    struct SeqSpan {
        KvCache* kv = nullptr;
        int64_t row0 = 0, n = 0, pos0 = 0;
    };
    // Token ids checked, embedding, every layer, the final norm of output_rows: the pass shared
    // by forward() and forward_batch() (seqs_ and positions_ set). Returns the hidden rows.
    void check_batch(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) const;
    Tensor run_layers(std::span<const int32_t> tokens, std::span<const int32_t> output_rows);
    void copy_hidden_out(const Tensor& out, int64_t m, std::vector<float>& hidden);
    void attention_block(int il, int64_t n);
    // forward() in batches of kv.max_batch() tokens, the output rows gathered in order.
    void forward_in_parts(std::span<const int32_t> tokens, KvCache& kv, std::span<const int32_t> output_rows,
                          std::vector<float>& hidden);
    void ffn_block(int il, int64_t n);
    // The FFN with sparse_'s threshold (layer_program_sparse.cpp).
    void sparse_ffn_block(int il, int64_t n);
    // The sparse FFN split into a hot range on the GPU and the cold rest (layer_program_hot_cold.cpp).
    void hot_cold_ffn_block(int il, int64_t n);
    // A mixture-of-experts FFN (layer_program_moe.cpp): routing on the host, each expert with
    // tokens on the backend of its weights, the weighted sum on the host.
    void moe_ffn_block(int il, int64_t n);
    // out [n_embd, n] (host) += Σ over slots of expert e: weight · expert(in row of the slot's token).
    void run_expert(const ExpertWeights& w, int64_t e, const float* in_host, float* out_host);
    // Decode (one token): its selected experts whose three matrices are on the device, summed
    // with their weights there (kMoeSum). True when there was one. cur: the normed input on hb.
    bool run_device_experts(const PlacedMoe& m, int hb, const Tensor& cur, const float* in_host);
    bool on_device(const ExpertWeights& w) const;
    // A host pointer to t's f32 values: t's own on a host backend, else copied into `buf`.
    const float* host_f32(int bi, const Tensor& t, std::vector<float>& buf);
    void observe(int il, ActivationSite site, const Tensor& t) const;
    // An f32 [ne0, n] scratch tensor of `slot` on backend bi (grown as needed).
    Tensor act(int bi, Slot slot, int64_t ne0, int64_t n);
    // Copies src on backend `from` into dst on backend `to` (through host memory).
    void transfer(int from, const Tensor& src, int to, Tensor& dst);
    // Moves the residual stream to backend bi.
    Tensor residual_on(int bi, int64_t n);
    // out = w · in, with in and out on backend `home`; w runs on its own backend.
    void matmul(const PlacedWeight& w, int home, const Tensor& in, Tensor& out);
    // w · in on backend bi (w's own, or the GPU it is shipped to), in and out there too;
    // streams w in when it is on DISK.
    void matmul_local(const PlacedWeight& w, int bi, const Tensor& in, Tensor& out);
    // The backend a weight's product runs on for a batch of n tokens.
    int compute_backend(const PlacedWeight& w, int64_t n) const;
    // The backend an FFN part (gate, up and down together) runs on for a batch of n tokens.
    int part_backend(const FfnPart& p, int64_t n) const;
    Backend& backend(int bi) const;
    int index_of(const Backend* b) const;

    const PlacedModel& model_;
    const ModelConfig& config_;
    std::vector<int32_t> positions_;
    std::vector<SeqSpan> seqs_;  // the sequences of the pass being run (one for forward())
    int x_home_ = 0;  // backend index holding the residual stream
    int gpu_ = -1;    // index of the device backend, if any
    bool all_on_gpu_ = false;   // every weight and KV on the device backend: decode as a graph
    int64_t forwards_ = 0;      // single-token steps run; graphs start after an eager one
    // What a recorded step graph names besides its token and position: the KV cache and the
    // activation buffers (act_epoch_ counts their reallocations). Null kv: nothing recorded.
    struct StepKey {
        const void* kv = nullptr;
        int64_t n_ctx = 0;
        uint64_t act_epoch = 0;
        bool operator==(const StepKey&) const = default;
    };
    StepKey step_key_;
    uint64_t act_epoch_ = 0;
    int64_t gpu_prefill_min_tokens_;
    uint64_t gpu_staging_limit_;
    bool shipping_ok_ = true;  // false once the GPU had no room for the staging buffer
    Buffer ship_;              // GPU staging of a host weight during prefill
    ShipStats ship_stats_;
    std::array<std::array<Buffer, kSlotCount>, kMaxBackends> scratch_;
    std::vector<float> bounce_;  // host hop of device-to-device transfers
    const SparseFfn* sparse_ = nullptr;
    const HotColdFfn* hot_cold_ = nullptr;
    std::vector<SparsityCount> sparsity_counts_;  // per layer, counted on the host
    Buffer sparse_device_counts_;  // u64 [n_layer][evaluated, active] on the GPU backend (gpu_)
    mutable std::vector<SparsityCount> sparsity_view_;  // what sparsity_counts() returns
    ActivationObserver* observer_ = nullptr;
    std::unique_ptr<MoeScratch> moe_;  // routing and host buffers of the MoE step
};

}  // namespace strata

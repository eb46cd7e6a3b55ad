// LayerExecutor: where each op of the forward pass (layer_program.h) runs, and what it costs to
// get its operands there. The forward math asks it for scratch tensors and weight products;
// it decides:
//   - the backend of each product: the one holding the weight, or in prompt batches of at least
//     gpu_prefill_min_tokens (the cost model's break-even, Runtime) a GPU that a host (RAM or
//     DISK) weight is shipped to through two staging slots in turn, the next weight's copy
//     beside this one's product (one slot where two do not fit);
//   - the crossings: a product off its block's home gets its input copied there and its output
//     back; the residual stream moves only when the next block's home differs;
//   - a split FFN's parts, each on its own backend, device parts queued first (they overlap the
//     host parts), their partial sums added at the home;
//   - DISK weights, acquired from the model's DiskStream in program order and released after
//     their product;
//   - decode steps with every weight on the GPU, recorded once as a step graph after one eager
//     step and replayed at later positions until the cache or the scratch buffers change.
// Not thread-safe: one executor per LayerProgram.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/buffer.h"

namespace strata {

class KvCache;
class PlacedModel;
struct PlacedWeight;
struct FfnPart;

class LayerExecutor {
  public:
    // Scratch activations, one buffer per (backend, slot), grown to the largest batch seen.
    enum Slot { kX, kCur, kQ, kK, kV, kAttn, kProj, kGate, kUp, kPart, kPartTmp, kMmIn, kMmOut,
                kHidden, kLogits, kRouter, kMoeIn, kMoeOut, kMoeSum, kSlotCount };
    static constexpr int kMaxBackends = 4;

    // The placed model (and its backends) must outlive the executor. gpu_prefill_min_tokens: 0
    // never ships host weights to the GPU; gpu_staging_limit: the most GPU bytes the staging of
    // a shipped weight may take (a larger weight is computed where it lives).
    LayerExecutor(const PlacedModel& model, int64_t gpu_prefill_min_tokens, uint64_t gpu_staging_limit);

    // ---- one pass ----
    // Before a pass of n tokens: the residual stream's home at the embedding's backend, and
    // with `stage` the GPU staging buffer for a prompt batch (allocated once, for the largest
    // host weight; without room for it prefill stays on the host backends).
    void begin_pass(int64_t n, bool stage = true);
    // How a pass runs: eagerly, recorded as a step graph, or replayed from the last recording
    // (then the layers are not run again: their hidden state is already in act(x_home, kHidden)).
    enum class StepMode { Eager, Record, Replayed };
    // A decode step (one token, one output row) with everything on a GPU that has step graphs,
    // after one eager step: replayed when the cache and the scratch are those recorded, else
    // recorded. `tokens` and `positions` must stay valid until end_step.
    // `logits`: the caller wants the step's logits computed on the device (a replay is used only
    // when the recording computed them too).
    StepMode begin_step(KvCache& kv, const int32_t* tokens, const int32_t* positions, int64_t n, int64_t m,
                        bool logits = false);
    // After the layers ran; `logits`: the recording includes the logits.
    void end_step(StepMode mode, KvCache& kv, bool logits = false);
    void abort_step(StepMode mode);             // after an exception
    // Stretches of an eager decode step (one that cannot be one graph: experts or layers on the
    // host): ops between begin_segment and end_segment that run on the GPU alone — weights
    // resident there, no copies, no host reads, the residual stream there already — are
    // recorded under `id` (a stretch's name within the step: a layer) and replayed at later
    // positions like a step graph. Replayed: the stretch ran; else run its ops, then end_segment
    // (abort_step after an exception).
    StepMode begin_segment(int id);
    void end_segment(StepMode mode, int id);
    // Off: every step runs eagerly, no graph recorded or replayed (while an observer reads the
    // activations, which may copy them to the host: no graph can hold a copy). On by default.
    void set_graphs(bool on) { graphs_ = on; }
    // hidden (host) [n_embd, m] = out [n_embd, m] on the residual stream's home.
    void copy_hidden_out(const Tensor& out, int64_t m, std::vector<float>& hidden);

    // ---- where ops run ----
    Backend& backend(int bi) const;
    int index_of(const Backend* b) const;
    int gpu() const { return gpu_; }  // index of the device backend, -1: none
    int x_home() const { return x_home_; }
    // An f32 [ne0, n] scratch tensor of `slot` on backend bi (grown as needed).
    Tensor act(int bi, Slot slot, int64_t ne0, int64_t n);
    // Copies src on backend `from` into dst on backend `to` (through host memory).
    void transfer(int from, const Tensor& src, int to, Tensor& dst);
    // The residual stream [n_embd, n], moved to backend bi first when it is elsewhere.
    Tensor residual_on(int bi, int64_t n);
    // out = w · in, with in and out on backend `home`; w runs on its compute backend.
    void matmul(const PlacedWeight& w, int home, const Tensor& in, Tensor& out);
    // w · in on backend bi (w's own, or the GPU it is shipped to), in and out there too;
    // streams w in when it is on DISK.
    void matmul_local(const PlacedWeight& w, int bi, const Tensor& in, Tensor& out);
    // outs[i] = ws[i] · in for every i (at most 8), with in and outs on backend `home`: one
    // matmul_many there when every weight is resident there (not streamed, not shipped), else
    // each as matmul() (local: as matmul_local()).
    void matmul_many(std::span<const PlacedWeight* const> ws, int home, const Tensor& in, std::span<Tensor* const> outs,
                     bool local = false);
    // The backend a weight's product runs on for a batch of n tokens.
    int compute_backend(const PlacedWeight& w, int64_t n) const;
    // The backend an FFN part (gate, up and down together) runs on for a batch of n tokens.
    int part_backend(const FfnPart& p, int64_t n) const;
    // A host pointer to t's f32 values: t's own on a host backend, else copied into `buf`.
    const float* host_f32(int bi, const Tensor& t, std::vector<float>& buf);

    // The math of one FFN part, which run_ffn_parts calls on the part's backend `pb`:
    // out [n_embd, n] = f(in [n_embd, n]), both on pb.
    class FfnPartMath {
      public:
        virtual void operator()(const FfnPart& part, int pb, const Tensor& in, Tensor& out) = 0;

      protected:
        ~FfnPartMath() = default;
    };
    // proj [n_embd, n] on the home hb = Σ over `parts` of math(part): each part computed on its
    // backend from `cur` [n_embd, n] on hb (copied there first), partial sums added at hb.
    void run_ffn_parts(std::span<const FfnPart> parts, int hb, const Tensor& cur, Tensor& proj, int64_t n,
                       FfnPartMath& math);

    // ---- what it holds ----
    // Bytes of activations on `backend` (its scratch grows to the largest batch seen).
    uint64_t activation_bytes(const Backend* backend) const;
    // Host weights shipped to the GPU by prompt batches so far, and the host-side seconds their
    // copies took (the pinned staging; the transfers themselves overlap).
    struct ShipStats {
        uint64_t bytes = 0;
        double seconds = 0;
        int slots = 0;  // staging slots (two: copies overlap products)
    };
    const ShipStats& ship_stats() const { return ship_stats_; }

  private:
    using BackendFlags = std::array<bool, kMaxBackends>;
    void allocate_staging();
    // Every part's backend gets its copy of `cur` before any part is queued, so the copies
    // never wait behind a device part.
    void scatter_ffn_input(std::span<const FfnPart> parts, int hb, const Tensor& cur, int64_t n);
    // proj += the partial sums of the other backends in `has_sum`.
    void gather_ffn_sums(const BackendFlags& has_sum, int hb, Tensor& proj, int64_t n);

    const PlacedModel& model_;
    int64_t n_embd_;
    int x_home_ = 0;            // backend index holding the residual stream
    int gpu_ = -1;              // index of the device backend, if any
    bool all_on_gpu_ = false;   // every weight and KV on the device backend: decode as a graph
    int64_t forwards_ = 0;      // single-token steps run; graphs start after an eager one
    bool graphs_ = true;        // set_graphs
    // What a recorded step graph names besides its token and position: the KV cache and the
    // activation buffers (act_epoch_ counts their reallocations). Null kv: nothing recorded.
    struct StepKey {
        const void* kv = nullptr;
        int64_t n_ctx = 0;
        uint64_t act_epoch = 0;
        bool logits = false;  // the recording ends with the logits
        bool operator==(const StepKey&) const = default;
    };
    StepKey step_key_;
    uint64_t act_epoch_ = 0;
    // The eager decode step under way, when its GPU stretches may be recorded (begin_segment).
    struct SegmentStep {
        bool on = false;
        StepKey key;  // the step's cache (act_epoch: at the recording's start)
        const int32_t* token = nullptr;
        const int32_t* position = nullptr;
    } segment_step_;
    std::vector<StepKey> segment_keys_;  // per stretch id, what its recording names (null kv: none)
    int64_t gpu_prefill_min_tokens_;
    uint64_t gpu_staging_limit_;
    bool shipping_ok_ = true;  // false once the GPU had no room for the staging buffer
    // GPU staging of host weights during prefill: slots used in turn (Backend::ship_in).
    std::array<Buffer, Backend::kShipSlots> ship_;
    int ship_slots_ = 1;
    int next_slot_ = 0;
    ShipStats ship_stats_;
    std::array<std::array<Buffer, kSlotCount>, kMaxBackends> scratch_;
    std::vector<float> bounce_;  // host hop of device-to-device transfers
};

}  // namespace strata

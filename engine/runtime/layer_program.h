// LayerProgram: the forward pass shared by every supported architecture (llama, qwen2, qwen3,
// gemma3), written once against the Backend interface over a PlacedModel:
//   x = embed(tokens)·embd_scale                                          [n_embd, n]
//   per layer: x += [post_norm](Wo · attention(rope(norm_qk(Wq·n(x) + bq)), rope(..Wk..), Wv..))
//              x += [post_norm](Σ_parts Wdown[:, part] · (act(Wgate[part]·n(x)) ⊙ Wup[part]·n(x)))
//   hidden = output_norm(x);  logits = softcap(Woutput · hidden)
// The FFN may instead be sparse (sparse_ffn.h), split hot/cold (hot_cold_ffn.h) or a mixture of
// experts (layer_program_moe.cpp). Where each op runs — home backends, crossings, split FFN
// parts, DISK streaming, GPU prefill staging, step graphs — is the LayerExecutor's decision
// (layer_executor.h); this class states only the math.
// Not thread-safe: one program per sequence being evaluated.
#pragma once

#include <cstdint>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/runtime/layer_executor.h"
#include "engine/runtime/placed_model.h"
#include "predictor/activation_profile.h"

namespace strata {

struct ModelConfig;
class ActivationObserver;
class KvCache;
class SparseFfn;
class HotColdFfn;
struct LayerPredictor;
struct ExpertWeights;
struct PlacedMoe;
struct MoeScratch;

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
    // As forward() with one output row, then logits(): logits [n_vocab] of row `output_row`.
    // When the residual stream ends on the device that holds the output matrix, the logits are
    // computed there straight from the hidden state (no host round trip), inside the decode
    // step's graph; `hidden` is then left as it was.
    void forward_logits(std::span<const int32_t> tokens, KvCache& kv, int32_t output_row,
                        std::vector<float>& hidden, float* logits);

    // One sequence of a multi-sequence batch (batch_step.h): its next `n` rows of the batch,
    // evaluated after the kv->n_used() cells of its own cache (sequences take consecutive rows).
    struct SequenceRows {
        KvCache* kv = nullptr;
        int64_t n = 0;
    };
    // As forward(), for rows of several sequences in one pass (layer_program_batch.cpp): every
    // matmul runs over all rows at once, RoPE, KV stores and attention per sequence. Row i of
    // the result is the same as forward() gives that row's sequence alone on host backends.
    // With `logits` ([n_vocab, output_rows.size()]) also the logits of the output rows, as
    // logits() gives them; where the output matrix sits on the device with the hidden rows they
    // are computed there and `hidden` is left as it was. The caches hold the rows before the
    // logits are computed (an error there leaves them written).
    void forward_batch(std::span<const int32_t> tokens, std::span<const SequenceRows> seqs,
                       std::span<const int32_t> output_rows, std::vector<float>& hidden, float* logits = nullptr);

    // logits [n_vocab, n] = output · hidden [n_embd, n] (host memory), soft-capped when the
    // model says so.
    void logits(const float* hidden, int64_t n, float* logits);
    static constexpr int64_t kLogitRows = 32;  // logits computed this many rows at a time (bounds scratch)

    int64_t n_embd() const;
    int64_t n_vocab() const;

    // Bytes this program holds for activations on `backend` (its scratch grows to the largest
    // batch seen).
    uint64_t activation_bytes(const Backend* backend) const;
    // Host weights shipped to the GPU by prompt batches so far, and the host-side seconds their
    // copies took (the pinned staging; the transfers themselves overlap).
    using ShipStats = LayerExecutor::ShipStats;
    const ShipStats& ship_stats() const { return exec_.ship_stats(); }
    // Host time of decode steps' MoE layers routed on the host, summed since the program was
    // made (steady clock around its phases; `bench -v` prints it per token).
    struct MoeHostTimes {
        int64_t layers = 0;     // host-routed decode layers run
        double wait_s = 0;      // the router's logits and input reaching the host (the GPU's work before them)
        double route_s = 0;     // top-k on the host
        double device_s = 0;    // queueing the device's experts
        double host_s = 0;      // the host's experts
        double sum_s = 0;       // the sums at the home, the post norm and the residual add
        // Expert selections of decode tokens, by where the chosen expert ran (a layer routed on
        // the GPU counts all its selections there, replayed or not; a step replayed whole as
        // one graph is not counted).
        uint64_t gpu_selections = 0, host_selections = 0;
    };
    const MoeHostTimes& moe_host_times() const { return moe_times_; }

    // Activation sparsity (sparse_ffn.h): each FFN runs with the calibrated thresholds of
    // `sparse` (which must outlive the program, and was built for this placed model), or dense
    // when null. The counts of neurons evaluated and active per layer, since the last reset.
    void set_sparse(const SparseFfn* sparse);
    const SparseFfn* sparse() const { return sparse_; }
    // Hot neurons on the GPU (hot_cold_ffn.h), built on the sparse FFN set above; null: off.
    void set_hot_cold(const HotColdFfn* hot_cold);
    // The self-draft (speculate.h): each FFN runs only what the placement put on the GPU — its
    // parts there (none when the FFN is in RAM), or a split layer's hot range (its cold part is
    // skipped). The attention and the MoE FFNs run as usual. UnsupportedError when the model
    // streams weights from disk (its reads are cyclic: a pass cannot skip some).
    void set_gpu_ffn_only(bool on);
    bool gpu_ffn_only() const { return gpu_ffn_only_; }
    struct SparsityCount {
        uint64_t evaluated = 0;  // (neuron, token) pairs
        uint64_t active = 0;
        // Of the evaluated pairs, those of tokens a trained predictor ran for (predicted), and
        // the candidates it chose among them (the gate rows read).
        uint64_t predicted = 0;
        uint64_t candidates = 0;
        // With input sparsity (TEAL): the FFN input values seen and those kept (not zeroed).
        uint64_t inputs = 0;
        uint64_t inputs_kept = 0;
        void add(const SparsityCount& o) {
            evaluated += o.evaluated, active += o.active, predicted += o.predicted, candidates += o.candidates;
            inputs += o.inputs, inputs_kept += o.inputs_kept;
        }
    };
    // Host counts plus those a GPU keeps on the device (read back: not while a graph records).
    const std::vector<SparsityCount>& sparsity_counts() const;
    // The per-layer counts summed (one read of sparsity_counts()).
    SparsityCount sparsity_total() const;
    void reset_sparsity_counts();

    // A calibration hook (activation_observer.h), or null; it must outlive the program's use.
    // While one is set, decode runs eagerly (no step graphs: it may copy what it sees) and MoE
    // routing runs on the host (it reads the router's logits there).
    void set_observer(ActivationObserver* observer) {
        observer_ = observer;
        exec_.set_graphs(observer == nullptr);
    }

  private:
    using enum LayerExecutor::Slot;

    // A sequence's rows [row0, row0+n) of the batch, at positions pos0.. of its cache.
    struct SeqSpan {
        KvCache* kv = nullptr;
        int64_t row0 = 0, n = 0, pos0 = 0;
    };
    // Token ids and output rows inside the vocabulary and the batch, else ArgumentError.
    void check_batch(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) const;
    // Embedding, every layer, the final norm of output_rows: the pass shared by forward() and
    // forward_batch() (seqs_ and positions_ set). Returns the hidden rows on exec_.x_home().
    Tensor run_layers(std::span<const int32_t> tokens, std::span<const int32_t> output_rows);
    // forward() in batches of kv.max_batch() tokens, the output rows gathered in order.
    // forward() and forward_logits(): logits null, or [n_vocab] for the single output row.
    void forward_impl(std::span<const int32_t> tokens, KvCache& kv, std::span<const int32_t> output_rows,
                      std::vector<float>& hidden, float* logits);
    // The output matrix's backend index when the logits of `out` (the hidden rows on the
    // residual stream's home) can be computed there without leaving the device; -1 otherwise.
    int device_logits_backend() const;
    // logits [n_vocab, m] on backend ob (= the residual stream's home) from hidden rows `out`.
    Tensor logits_on_device(int ob, const Tensor& out, int64_t m);
    // A pass's results to the host: the logits `lg` when the device computed them (`hidden`
    // left as it was), else the m hidden rows `out` and, with `logits`, theirs through logits().
    void results_out(const Tensor& lg, const Tensor& out, int64_t m, std::vector<float>& hidden, float* logits);
    void forward_in_parts(std::span<const int32_t> tokens, KvCache& kv, std::span<const int32_t> output_rows,
                          std::vector<float>& hidden);
    // One layer's attention and FFN blocks. In a decode step the stretch of them that runs on
    // the GPU alone is one segment (exec_.begin_segment): recorded once, then replayed.
    void layer(int il, int64_t n);
    // How much of layer il runs on the GPU alone (its weights resident there, nothing read on
    // the host): none, the attention block, that and the MoE router, or the whole layer.
    enum class GpuStretch : uint8_t { None, Attention, AttentionRouter, Layer };
    GpuStretch gpu_stretch(int il) const;
    void attention_block(int il, int64_t n);
    // Where layer il's attention norm, projections and residual add run for a batch of n: the
    // KV cache's backend, except where the cache is on the GPU and every projection is computed
    // on one host backend (RAM weights in a decode, which ships none): there, so that only q, k
    // and v go to the cache and the attention comes back (4 copies and one wait, not a copy of
    // the input and of the output around each host product: 10 copies and 5 waits).
    int projection_home(int il, int64_t n) const;
    // attn [n_head*hd_v, n] = softmax(q·kᵀ)·v per sequence on its own cache, after RoPE and the
    // KV store of this batch's k and v.
    void attend(int il, int hb, Tensor& q, Tensor& k, Tensor& v, Tensor& attn);
    // attend on the cache's backend kb for q, k, v and attn that live on backend hb.
    void attend_away(int il, int hb, int kb, Tensor& q, Tensor& k, Tensor& v, Tensor& attn);
    void ffn_block(int il, int64_t n);
    // One FFN part on backend pb: out [n_embd, n] = Wdown · (act(Wgate·in) ⊙ Wup·in).
    void gated_ffn(int il, const FfnPart& p, int pb, const Tensor& in, Tensor& out);
    // The FFN with sparse_'s threshold (layer_program_sparse.cpp).
    void sparse_ffn_block(int il, int64_t n);
    // TEAL on the FFN input: cur's values below layer il's input threshold set to zero on h,
    // and counted (nothing when input sparsity is off).
    void mask_ffn_input(int il, Backend& h, Tensor& cur, int64_t n);
    // Decode's sparse FFN with layer il's trained predictor on host backend hb: proj = the FFN of
    // cur over the predicted neurons. Returns the active count.
    int64_t sparse_up_whole_down(int il, const FfnPart& p, int hb, const Tensor& cur, const Tensor& gate,
                                 Tensor& proj);
    int64_t predicted_ffn(int il, const LayerPredictor& predictor, const FfnPart& p, int hb, const Tensor& cur,
                          Tensor& proj);
    // A batch's thresholded activation y [n_ff, n] (host) with the neurons layer il's predictor
    // does not name for each token's input cur set to 0, as decode skips them. Returns how many
    // nonzero values it kept: the active neurons left (an active neuron whose product with up
    // is exactly 0, as an integer dot can give, counts as off).
    int64_t mask_to_predicted(int il, const LayerPredictor& predictor, int hb, const Tensor& cur, Tensor& y);
    // The sparse FFN split into a hot range on the GPU and the cold rest (layer_program_hot_cold.cpp).
    void hot_cold_ffn_block(int il, int64_t n);
    // A mixture-of-experts FFN (layer_program_moe.cpp): routing on the host, each expert with
    // tokens on the backend of its weights, the weighted sum on the host.
    // routed: moe_router already ran (inside the layer's GPU segment).
    void moe_ffn_block(int il, int64_t n, bool routed = false);
    // Decode of a layer whose routing and experts run as one op on the GPU (routed_experts_):
    // x += [post_ffw_norm](routed_expert_ffn(cur, logits)), nothing on the host.
    void moe_routed_block(int il, bool routed);
    // The MoE block's head on the router's backend: cur = ffn_norm(x), logits = router · cur,
    // side by side in its kRouter scratch (one copy to the host).
    void moe_router(int il, int64_t n);
    // out [n_embd, n] (host) += Σ over slots of expert e: weight · expert(in row of the slot's token).
    void run_expert(const ExpertWeights& w, int64_t e, const float* in_host, float* out_host);
    // Decode (one token): its selected experts whose three matrices are on the device, as one
    // expert_ffn there into kMoeSum. True when there was one; false too when the device has no
    // such op (they then run one by one in the loop). cur: the normed input on hb.
    bool run_device_experts(const PlacedMoe& m, int hb, const Tensor& cur, const float* in_host);
    // What run_selected_experts queued on the GPU for a pass of several tokens (any: some).
    struct DeviceExperts {
        bool any = false;
        Tensor cur_g, slots_out;
    };
    DeviceExperts run_selected_experts(const PlacedMoe& m, int hb, const Tensor& cur, const float* in_host,
                                       float* sum, int64_t n, bool device_sum);
    // A pass of several tokens: expert e on the GPU (its weights there or shipped), queued
    // without a wait: its tokens' rows gathered from cur_g [n_embd, n] there, its outputs
    // written to their slots' rows of `slots_out` [n_embd, n·n_used] (by_expert order).
    void queue_device_expert(const ExpertWeights& w, int64_t e, const Tensor& cur_g, Tensor& slots_out);
    // sum [n_embd, n] on the GPU = Σ over each token's slots computed there of weight · slot row.
    void combine_device_experts(const Tensor& slots_out, Tensor& sum);
    // sum [n_embd, n] (host) += the shared expert of cur [n_embd, n] on hb, scaled by its gate.
    void shared_expert(const PlacedMoe& m, int hb, const Tensor& cur, float* sum);
    // The MoE input on the GPU: cur when hb is the GPU, else in_host copied there.
    Tensor input_on_gpu(int hb, const Tensor& cur, const float* in_host);
    // proj [n_embd, n] on hb = the host's sum + device_total (the GPU's experts; none when its
    // data is null), added on the GPU when that is the home, else on the host.
    void sum_at_home(int hb, float* sum, const Tensor& device_total, Tensor& proj);
    // out [n_embd, c] = down(act(gate · in) ⊙ up · in) of expert w for in [n_embd, c], both on
    // eb: its shipped copies there, else each matrix where it lives.
    void expert_gated_ffn(const ExpertWeights& w, int eb, const Tensor& in, Tensor& out);
    bool on_device(const ExpertWeights& w) const;
    // The backend expert w runs on when c of a pass's n tokens chose it: its own, or the GPU a
    // prompt pass ships it to (all three matrices, or none).
    int expert_backend(const ExpertWeights& w, int64_t c, int64_t n) const;
    // The host backend that runs expert w of a decode step as part of one fused expert_ffn: its
    // three matrices resident (not streamed) on one host backend with that op; -1: none.
    int fused_host_backend(const ExpertWeights& w) const;
    void observe(int il, ActivationSite site, const Tensor& t) const;

    // ---- block boundaries (layer_program_residual.cpp). A block ends with add_residual(il,
    // site, ...) naming the block that comes next (site of layer il), which starts with
    // input_norm for the same il and site.
    enum class NormSite : uint8_t { Attention, Ffn };
    // The input norm of the block (il, site) when it will run on backend hb: its weight and
    // output buffer; none when it runs elsewhere, has no plain input norm, or il is past the last layer.
    struct NextNorm {
        const SmallWeight* weight;
        Tensor out;
    };
    std::optional<NextNorm> next_norm(int il, NormSite site, int hb, int64_t n);
    // x += [post_norm](proj) on backend hb (proj normed in place), fused with the next block's
    // input norm where next_norm finds it.
    void add_residual(int il, NormSite site, int hb, Tensor& x, Tensor& proj, const SmallWeight& post_norm);
    // out = rms_norm(x) with weight on hb, unless the last add_residual already wrote it for
    // this very block (layer, site, backend and buffer).
    void input_norm(int il, NormSite site, int hb, const Tensor& x, const SmallWeight& weight, Tensor& out);
    struct Prenormed {
        int il = -1;
        NormSite site = NormSite::Attention;
        int hb = -1;
        const void* out = nullptr;
        std::array<int64_t, 4> ne{};
    };
    Prenormed prenormed_;  // what the last add_residual normed, until the next block takes it

    const PlacedModel& model_;
    const ModelConfig& config_;
    std::vector<int32_t> positions_;
    std::vector<SeqSpan> seqs_;  // the sequences of the pass being run (one for forward())
    std::vector<SequenceKv> seq_kv_;  // a batched decode step's caches (attend(), one token each)
    LayerExecutor exec_;  // where each op runs
    const SparseFfn* sparse_ = nullptr;
    const HotColdFfn* hot_cold_ = nullptr;
    bool gpu_ffn_only_ = false;
    std::vector<std::vector<FfnPart>> gpu_parts_;  // set_gpu_ffn_only: per layer, its FFN parts on the GPU
    std::vector<int32_t> predicted_rows_;  // the predictor's candidates, and its scratch
    std::vector<float> predictor_scratch_;
    std::vector<SparsityCount> sparsity_counts_;  // per layer, counted on the host
    Buffer sparse_device_counts_;  // u64 [n_layer][evaluated, active] on the GPU backend (exec_.gpu())
    mutable std::vector<SparsityCount> sparsity_view_;  // what sparsity_counts() returns
    ActivationObserver* observer_ = nullptr;
    std::unique_ptr<MoeScratch> moe_;  // routing and host buffers of the MoE step
    MoeHostTimes moe_times_;
    // Per layer: its experts when a decode step routes them on the GPU (moe_routes_on), else empty.
    std::vector<std::vector<ExpertRef>> routed_experts_;
};

}  // namespace strata

// Session: one sequence being evaluated — the tokens so far, their KV cache, and the logits
// of the last token. Prompts are fed in batches (prefill), generated tokens one at a time
// (decode). Multi-turn chat keeps the session and feeds only the new tokens.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

class Model;
class SparseFfn;
class HotColdFfn;

struct SessionParams {
    int64_t n_ctx = 4096;              // KV cells; clamped to the model's training context
    // n_ctx may reach this many times the training context (bench: 8, as llama-bench sizes its
    // context by the test; speed is measured there, text past the training context degrades).
    int64_t ctx_train_factor = 1;
    // Prompt tokens per forward pass; also the room a sliding-window layer's KV ring keeps beyond
    // its window (kv_cache.h), so rewinding up to n_batch tokens keeps the cache.
    int64_t n_batch = 256;
    // Keep every position in sliding-window layers too, as full caches (llama.cpp's --swa-full):
    // more memory, rewinds never re-evaluate.
    bool swa_full = false;
    GgmlType kv_type = GgmlType::F16;  // f16, f32, q8_0, q4_0
    // Prompt batches of at least this many tokens multiply RAM/DISK weights on the GPU (copied
    // there per batch); 0 = never. Runtime lowers it to the cost model's break-even on the
    // machine's profile (Runtime::set_ship_break_even); never raises it.
    int64_t gpu_prefill_min_tokens = 64;
    // GPU bytes prefill may take to stage a shipped weight: what the placement left on the GPU
    // beyond weights, KV and the activation reserve (Runtime sets it). A weight larger than this
    // is not shipped, so staging never takes the room activations need.
    uint64_t gpu_staging_limit = UINT64_MAX;
    // Sessions of these params the budgets must hold at once (strata serve --parallel): the
    // runtime counts n_sequences KV caches of n_ctx cells and as many activation scratches.
    int64_t n_sequences = 1;
    // Activation sparsity of the FFNs (sparse_ffn.h), built for the same placed model; null:
    // dense. Must outlive the session.
    const SparseFfn* sparse = nullptr;
    // Hot neurons on the GPU (hot_cold_ffn.h), built on `sparse`; null: off. Must outlive it.
    const HotColdFfn* hot_cold = nullptr;
    // The self-draft of speculative decoding (speculate.h): only the FFN work placed on the GPU
    // runs (LayerProgram::set_gpu_ffn_only). UnsupportedError for a model streamed from disk.
    bool gpu_ffn_only = false;
};

// The KV cells a session of these params holds: n_ctx, at most ctx_train_factor times the
// context the model's RoPE covers (rope_context: the training context, more with scaling); the
// training context when n_ctx <= 0.
int64_t session_context(const ModelConfig& config, const SessionParams& params);

class Session {
public:
    // Weights as `placed` holds them; the KV cache goes where its layers' attention runs.
    Session(const PlacedModel& placed, const SessionParams& params);
    // Every weight on `backend` (a host backend reads the file mapping in place).
    Session(const Model& model, Backend& backend, const SessionParams& params);

    // Evaluates `tokens` after the ones already in the session; returns the logits [n_vocab]
    // of the last one (valid until the next call). Throws ArgumentError if the context would
    // overflow, naming the sizes.
    std::span<const float> feed(std::span<const TokenId> tokens);
    // As feed(), without computing logits: a prompt chunk that is not the prompt's last.
    void prefill(std::span<const TokenId> tokens);
    // As feed(), returning the logits of every one of `tokens`: [n_vocab, tokens.size()], row i
    // the prediction after tokens[i] (speculative verification checks a draft in one pass).
    std::span<const float> feed_all(std::span<const TokenId> tokens);

    // Keeps the first n tokens (and their KV), forgetting the rest: reuse of a shared prefix.
    // Where a sliding-window layer's ring has already overwritten keys the kept tokens' window
    // needs (a rewind past its room, kv_cache.h), the kept tokens are evaluated again.
    void truncate(int64_t n);
    void clear() { truncate(0); }

    const std::vector<TokenId>& tokens() const { return tokens_; }
    int64_t n_ctx() const { return kv_.n_ctx(); }
    int64_t n_batch() const { return params_.n_batch; }
    const KvCache& kv_cache() const { return kv_; }
    const Model& model() const { return model_; }
    const PlacedModel& placed() const { return *placed_; }
    const LayerProgram& program() const { return program_; }

private:
    friend class BatchStep;  // decodes several sessions in one pass (batch_step.h)
    // Throws ArgumentError when n more tokens overflow the context.
    void check_room(int64_t n) const;

    std::unique_ptr<PlacedModel> owned_;  // the single-backend constructor's placement
    const PlacedModel* placed_;
    const Model& model_;
    SessionParams params_;
    KvCache kv_;
    LayerProgram program_;
    std::vector<TokenId> tokens_;
    std::vector<float> hidden_, logits_;
};

}  // namespace strata

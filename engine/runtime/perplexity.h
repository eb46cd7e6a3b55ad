// Perplexity by llama-perplexity's method: the text's tokens are cut into windows of n_ctx,
// each evaluated from an empty cache with its first token replaced by BOS (when the vocabulary
// adds one), and only the second half of each window is scored (tokens n_ctx/2+1 .. n_ctx-1).
// PPL = exp(mean NLL); its error = PPL · sqrt(var(NLL) / (count - 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "engine/tokenizer/vocab.h"
#include "quant/ggml_type.h"

namespace strata {

class Model;
class Backend;
class PlacedModel;
class Runtime;
class SparseFfn;
class HotColdFfn;

struct PerplexityParams {
    int64_t n_ctx = 512;
    int64_t n_batch = 512;
    int64_t max_chunks = -1;  // -1: every full window
    const SparseFfn* sparse = nullptr;  // activation sparsity (sparse_ffn.h), or null: dense
    const HotColdFfn* hot_cold = nullptr;  // hot neurons on the GPU (hot_cold_ffn.h), built on sparse
    GgmlType kv_type = GgmlType::F16;   // the KV cache's type (f16, f32, q8_0, q4_0)
    // The executor's prompt settings (SessionParams gives their meaning).
    int64_t gpu_prefill_min_tokens = 64;
    uint64_t gpu_staging_limit = UINT64_MAX;
    // Also evaluates each window densely and counts the scored positions where the greedy
    // (top-1) token agrees (doubles the time).
    bool compare_dense = false;
};

struct PerplexityResult {
    int64_t n_chunks = 0;
    int64_t n_scored = 0;        // tokens scored
    double ppl = 0;
    double ppl_error = 0;
    std::vector<double> running;  // cumulative PPL after each chunk
    double top1_agreement = -1;   // compare_dense: share of scored positions, else -1
    double achieved_sparsity = -1;  // with sparse: skipped share of FFN neuron evaluations
    double gate_rows_read = -1;     // with trained predictors: their candidates' share of the neurons
    double achieved_input_sparsity = -1;  // with input sparsity: zeroed share of the FFN inputs' values
};

// Called after each chunk with its index and the running estimate.
using ChunkCallback = std::function<void(int64_t chunk, int64_t n_chunks, double running_ppl)>;

// Throws ArgumentError when the text has fewer than 2·n_ctx tokens or n_ctx < 4.
PerplexityResult perplexity(const PlacedModel& model, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk = {});
// On the runtime's placed model, with its KV type, prefill settings and sparsity (those of
// `params` are replaced by the runtime's session parameters).
PerplexityResult perplexity(const Runtime& runtime, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk = {});
// Every weight on `backend`.
PerplexityResult perplexity(const Model& model, Backend& backend, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk = {});

}  // namespace strata

// Windowed perplexity (perplexity.h).
#include "engine/runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "engine/core/error.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/runtime.h"

namespace strata {
namespace {

// Logits computed this many rows at a time (64 rows of a 262144-token vocabulary: 64 MiB), and
// their negative log-likelihoods on all threads.
constexpr int64_t kLogitRows = 64;

// The final hidden states of rows first .. n_ctx-2 of a window: hidden [n_embd, n_ctx-1-first].
void window_hidden(LayerProgram& program, KvCache& kv, const std::vector<TokenId>& window, int64_t n_batch,
                   int64_t first, int64_t n_embd, std::vector<float>& hidden) {
    const int64_t n_ctx = static_cast<int64_t>(window.size());
    std::vector<float> batch_hidden;
    kv.clear();
    hidden.assign(static_cast<size_t>(n_embd * (n_ctx - 1 - first)), 0.0f);
    for (int64_t b0 = 0; b0 < n_ctx; b0 += n_batch) {
        const int64_t nb = std::min(n_batch, n_ctx - b0);
        std::vector<int32_t> rows;
        for (int64_t r = std::max(b0, first); r < std::min(b0 + nb, n_ctx - 1); ++r) rows.push_back(static_cast<int32_t>(r - b0));
        if (rows.empty()) {
            const int32_t last = static_cast<int32_t>(nb - 1);  // cache only
            program.forward({window.data() + b0, static_cast<size_t>(nb)}, kv, {&last, 1}, batch_hidden);
            continue;
        }
        program.forward({window.data() + b0, static_cast<size_t>(nb)}, kv, rows, batch_hidden);
        const int64_t dst_row = b0 + rows.front() - first;
        std::copy(batch_hidden.begin(), batch_hidden.end(), hidden.begin() + dst_row * n_embd);
    }
}

int64_t argmax(const float* v, int64_t n) { return std::max_element(v, v + n) - v; }

// Negative log-likelihood of `target` under a row of logits, in double.
double nll(const float* logits, int64_t n_vocab, TokenId target) {
    const float max = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
    return std::log(sum) - static_cast<double>(logits[target] - max);
}

// The windows of n_ctx tokens to score (at most max_chunks); ArgumentError for a context under
// 4, a batch under 1 or a text shorter than two windows.
int64_t count_chunks(const PerplexityParams& params, int64_t n_tokens) {
    const int64_t n_ctx = params.n_ctx;
    if (n_ctx < 4) throw ArgumentError(cat("perplexity needs a context of at least 4, got ", n_ctx));
    if (params.n_batch <= 0) throw ArgumentError(cat("batch size must be positive, got ", params.n_batch));
    if (n_tokens < 2 * n_ctx) {
        throw ArgumentError(cat("the text has ", n_tokens, " tokens; perplexity with -c ", n_ctx,
                                " needs at least ", 2 * n_ctx));
    }
    const int64_t n_chunks = n_tokens / n_ctx;
    return params.max_chunks > 0 ? std::min(n_chunks, params.max_chunks) : n_chunks;
}

}  // namespace

PerplexityResult perplexity(const Model& model, Backend& backend, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk) {
    const PlacedModel placed(model, backend);
    return perplexity(placed, tokens, params, on_chunk);
}

PerplexityResult perplexity(const Runtime& runtime, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk) {
    const SessionParams& sp = runtime.session_params();
    PerplexityParams p = params;
    p.sparse = runtime.sparse();
    p.hot_cold = runtime.hot_cold();
    p.kv_type = sp.kv_type;
    p.gpu_prefill_min_tokens = sp.gpu_prefill_min_tokens;
    p.gpu_staging_limit = sp.gpu_staging_limit;
    return perplexity(runtime.placed(), tokens, p, on_chunk);
}

PerplexityResult perplexity(const PlacedModel& placed, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk) {
    const Model& model = placed.model();
    const int64_t n_ctx = params.n_ctx;
    const int64_t n_chunks = count_chunks(params, static_cast<int64_t>(tokens.size()));

    const ModelConfig& config = model.config();
    const Vocab& vocab = model.tokenizer().vocab();
    LayerProgram program(placed, params.gpu_prefill_min_tokens, params.gpu_staging_limit);
    program.set_sparse(params.sparse);
    program.set_hot_cold(params.hot_cold);
    const int64_t n_vocab = program.n_vocab();
    KvCache kv(config, n_ctx, params.kv_type, placed.kv_backends(), std::max<int64_t>(1, params.n_batch));
    // The dense twin of compare_dense, and the positions where both pick the same token.
    std::unique_ptr<LayerProgram> dense;
    std::unique_ptr<KvCache> dense_kv;
    std::vector<float> dense_hidden, dense_logits;
    int64_t agree = 0;
    if (params.compare_dense) {
        dense = std::make_unique<LayerProgram>(placed, params.gpu_prefill_min_tokens, params.gpu_staging_limit);
        dense_kv = std::make_unique<KvCache>(config, n_ctx, params.kv_type, placed.kv_backends(),
                                             std::max<int64_t>(1, params.n_batch));
        dense_logits.resize(static_cast<size_t>(n_vocab * kLogitRows));
    }

    // Score rows first .. n_ctx-2, each predicting the next token.
    const int64_t first = n_ctx / 2;
    std::vector<float> hidden, logits(static_cast<size_t>(n_vocab * kLogitRows));
    std::vector<double> row_nll(static_cast<size_t>(kLogitRows));
    double sum = 0, sum_sq = 0;
    int64_t count = 0;
    PerplexityResult result;
    result.n_chunks = n_chunks;

    for (int64_t c = 0; c < n_chunks; ++c) {
        std::vector<TokenId> window(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (vocab.add_bos && vocab.bos != kNoToken) window[0] = vocab.bos;
        window_hidden(program, kv, window, params.n_batch, first, config.n_embd, hidden);
        if (dense) window_hidden(*dense, *dense_kv, window, params.n_batch, first, config.n_embd, dense_hidden);
        for (int64_t r0 = 0; r0 < n_ctx - 1 - first; r0 += kLogitRows) {
            const int64_t nr = std::min(kLogitRows, n_ctx - 1 - first - r0);
            program.logits(hidden.data() + r0 * config.n_embd, nr, logits.data());
            if (dense) {
                dense->logits(dense_hidden.data() + r0 * config.n_embd, nr, dense_logits.data());
                for (int64_t r = 0; r < nr; ++r)
                    agree += argmax(logits.data() + r * n_vocab, n_vocab) == argmax(dense_logits.data() + r * n_vocab, n_vocab);
            }
            // Rows in parallel (a row is a pass over the vocabulary), summed in row order.
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < nr; ++r) {
                const TokenId target = window[static_cast<size_t>(first + r0 + r + 1)];
                row_nll[static_cast<size_t>(r)] = nll(logits.data() + r * n_vocab, n_vocab, target);
            }
            for (int64_t r = 0; r < nr; ++r) {
                const double v = row_nll[static_cast<size_t>(r)];
                sum += v;
                sum_sq += v * v;
                ++count;
            }
        }
        result.running.push_back(std::exp(sum / static_cast<double>(count)));
        if (on_chunk) on_chunk(c, n_chunks, result.running.back());
    }
    const double mean = sum / static_cast<double>(count);
    const double var = sum_sq / static_cast<double>(count) - mean * mean;
    result.n_scored = count;
    if (dense) result.top1_agreement = static_cast<double>(agree) / static_cast<double>(count);
    if (params.sparse != nullptr) {
        const LayerProgram::SparsityCount t = program.sparsity_total();
        const auto share = [](uint64_t part, uint64_t whole) { return static_cast<double>(part) / static_cast<double>(whole); };
        if (t.evaluated > 0) result.achieved_sparsity = 1.0 - share(t.active, t.evaluated);
        if (t.predicted > 0) result.gate_rows_read = share(t.candidates, t.predicted);
        if (t.inputs > 0) result.achieved_input_sparsity = 1.0 - share(t.inputs_kept, t.inputs);
    }
    result.ppl = std::exp(mean);
    result.ppl_error = var > 0 ? result.ppl * std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
    return result;
}

}  // namespace strata

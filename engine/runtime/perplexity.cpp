// Windowed perplexity (perplexity.h).
#include "engine/runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {

// Negative log-likelihood of `target` under a row of logits, in double.
double nll(const float* logits, int64_t n_vocab, TokenId target) {
    const float max = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
    return std::log(sum) - static_cast<double>(logits[target] - max);
}

}  // namespace

PerplexityResult perplexity(const Model& model, Backend& backend, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk) {
    const PlacedModel placed(model, backend);
    return perplexity(placed, tokens, params, on_chunk);
}

PerplexityResult perplexity(const PlacedModel& placed, std::span<const TokenId> tokens,
                            const PerplexityParams& params, const ChunkCallback& on_chunk) {
    const Model& model = placed.model();
    const int64_t n_ctx = params.n_ctx;
    if (n_ctx < 4) throw ArgumentError(cat("perplexity needs a context of at least 4, got ", n_ctx));
    if (params.n_batch <= 0) throw ArgumentError(cat("batch size must be positive, got ", params.n_batch));
    const int64_t n_tokens = static_cast<int64_t>(tokens.size());
    if (n_tokens < 2 * n_ctx) {
        throw ArgumentError(cat("the text has ", n_tokens, " tokens; perplexity with -c ", n_ctx,
                                " needs at least ", 2 * n_ctx));
    }
    int64_t n_chunks = n_tokens / n_ctx;
    if (params.max_chunks > 0) n_chunks = std::min(n_chunks, params.max_chunks);

    const ModelConfig& config = model.config();
    const Vocab& vocab = model.tokenizer().vocab();
    LayerProgram program(placed);
    const int64_t n_vocab = program.n_vocab();
    KvCache kv(config, n_ctx, GgmlType::F16, placed.kv_backends());

    // Score rows first .. n_ctx-2, each predicting the next token.
    const int64_t first = n_ctx / 2;
    constexpr int64_t kLogitRows = 16;  // logits computed this many rows at a time
    std::vector<float> hidden, batch_hidden, logits(static_cast<size_t>(n_vocab * kLogitRows));
    double sum = 0, sum_sq = 0;
    int64_t count = 0;
    PerplexityResult result;
    result.n_chunks = n_chunks;

    for (int64_t c = 0; c < n_chunks; ++c) {
        std::vector<TokenId> window(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (vocab.add_bos && vocab.bos != kNoToken) window[0] = vocab.bos;
        kv.clear();
        hidden.assign(static_cast<size_t>(config.n_embd * (n_ctx - 1 - first)), 0.0f);
        for (int64_t b0 = 0; b0 < n_ctx; b0 += params.n_batch) {
            const int64_t nb = std::min(params.n_batch, n_ctx - b0);
            std::vector<int32_t> rows;
            for (int64_t r = std::max(b0, first); r < std::min(b0 + nb, n_ctx - 1); ++r) {
                rows.push_back(static_cast<int32_t>(r - b0));
            }
            if (rows.empty()) {
                const int32_t last = static_cast<int32_t>(nb - 1);  // cache only
                program.forward({window.data() + b0, static_cast<size_t>(nb)}, kv, {&last, 1},
                                batch_hidden);
                continue;
            }
            program.forward({window.data() + b0, static_cast<size_t>(nb)}, kv, rows, batch_hidden);
            const int64_t dst_row = b0 + rows.front() - first;
            std::copy(batch_hidden.begin(), batch_hidden.end(),
                      hidden.begin() + dst_row * config.n_embd);
        }
        for (int64_t r0 = 0; r0 < n_ctx - 1 - first; r0 += kLogitRows) {
            const int64_t nr = std::min(kLogitRows, n_ctx - 1 - first - r0);
            program.logits(hidden.data() + r0 * config.n_embd, nr, logits.data());
            for (int64_t r = 0; r < nr; ++r) {
                const TokenId target = window[static_cast<size_t>(first + r0 + r + 1)];
                const double v = nll(logits.data() + r * n_vocab, n_vocab, target);
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
    result.ppl = std::exp(mean);
    result.ppl_error = var > 0 ? result.ppl * std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
    return result;
}

}  // namespace strata

// One decode step over several sessions (batch_step.h).
#include "engine/runtime/batch_step.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/placed_model.h"

namespace strata {

BatchStep::BatchStep(const PlacedModel& placed, const SparseFfn* sparse)
    : placed_(placed), program_(placed, /*gpu_prefill_min_tokens=*/0) {
    program_.set_sparse(sparse);
    for (const Backend* b : placed.backends()) {
        if (b->memory_kind() == MemoryKind::Device) max_rows_ = kMaxDeviceRows;
    }
}

std::span<const float> BatchStep::decode(std::span<Session* const> sessions, std::span<const TokenId> tokens) {
    const int64_t n = static_cast<int64_t>(sessions.size());
    if (n == 0) throw ArgumentError("a batch step needs at least one session");
    if (tokens.size() != sessions.size()) {
        throw ArgumentError(cat("a batch step of ", n, " sessions got ", tokens.size(), " tokens"));
    }
    for (int64_t i = 0; i < n; ++i) {
        const Session& s = *sessions[static_cast<size_t>(i)];
        if (!accepts(s)) throw ArgumentError(cat("session ", i, " of the batch was built on another placement"));
        s.check_room(1);
    }
    const int64_t n_vocab = program_.n_vocab();
    logits_.resize(static_cast<size_t>(n * n_vocab));
    for (int64_t first = 0; first < n; first += max_rows_) {
        const size_t count = static_cast<size_t>(std::min(max_rows_, n - first));
        run_group(sessions.subspan(static_cast<size_t>(first), count), tokens.subspan(static_cast<size_t>(first), count),
                  logits_.data() + first * n_vocab);
    }
    return logits_;
}

void BatchStep::run_group(std::span<Session* const> sessions, std::span<const TokenId> tokens, float* logits) {
    const size_t n = sessions.size();
    rows_.clear();
    output_rows_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        rows_.push_back(LayerProgram::SequenceRows{&sessions[i]->kv_, 1});
        output_rows_[i] = static_cast<int32_t>(i);
    }
    program_.forward_batch(tokens, rows_, output_rows_, hidden_);
    // The KV cells are written: each session now holds its token (before the logits, so an
    // error there leaves caches and token lists in step).
    for (size_t i = 0; i < n; ++i) sessions[i]->tokens_.push_back(tokens[i]);
    program_.logits(hidden_.data(), static_cast<int64_t>(n), logits);
}

}  // namespace strata

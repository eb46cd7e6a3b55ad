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
        if (b->memory_kind() == MemoryKind::Device) {
            max_rows_ = kMaxDeviceRows;
            host_only_ = false;
        }
    }
}

void BatchStep::check_sessions(std::span<Session* const> sessions, size_t n_chunks) const {
    if (sessions.empty()) throw ArgumentError("a batch step needs at least one session");
    if (n_chunks != sessions.size()) {
        throw ArgumentError(cat("a batch step of ", sessions.size(), " sessions got ", n_chunks, " token lists"));
    }
    for (size_t i = 0; i < sessions.size(); ++i) {
        if (!accepts(*sessions[i])) throw ArgumentError(cat("session ", i, " of the batch was built on another placement"));
    }
}

std::span<const float> BatchStep::decode(std::span<Session* const> sessions, std::span<const TokenId> tokens) {
    check_sessions(sessions, tokens.size());
    const int64_t n = static_cast<int64_t>(sessions.size());
    one_token_.clear();
    for (int64_t i = 0; i < n; ++i) {
        sessions[static_cast<size_t>(i)]->check_room(1);
        one_token_.emplace_back(&tokens[static_cast<size_t>(i)], 1);
    }
    const int64_t n_vocab = program_.n_vocab();
    logits_.resize(static_cast<size_t>(n * n_vocab));
    for (int64_t first = 0; first < n; first += max_rows_) {
        const size_t count = static_cast<size_t>(std::min(max_rows_, n - first));
        run_group(sessions.subspan(static_cast<size_t>(first), count),
                  std::span<const std::span<const TokenId>>(one_token_).subspan(static_cast<size_t>(first), count),
                  logits_.data() + first * n_vocab);
    }
    return logits_;
}

std::span<const float> BatchStep::step_rows(std::span<Session* const> sessions,
                                            std::span<const std::span<const TokenId>> chunks) {
    check_sessions(sessions, chunks.size());
    if (!host_only_) {
        throw ArgumentError("prompt rows join a batch step only on host placements (a device backend is placed)");
    }
    int64_t rows = 0;
    for (size_t i = 0; i < sessions.size(); ++i) {
        const int64_t n = static_cast<int64_t>(chunks[i].size());
        sessions[i]->check_room(n);
        if (n > sessions[i]->kv_cache().max_batch()) {
            throw ArgumentError(cat("session ", i, "'s ", n, " tokens exceed its cache's batch of ",
                                    sessions[i]->kv_cache().max_batch()));
        }
        rows += n;
    }
    if (rows > max_rows_) throw ArgumentError(cat("a batch step of ", rows, " rows, at most ", max_rows_));
    logits_.resize(sessions.size() * static_cast<size_t>(program_.n_vocab()));
    run_group(sessions, chunks, logits_.data());
    return logits_;
}

void BatchStep::run_group(std::span<Session* const> sessions, std::span<const std::span<const TokenId>> chunks,
                          float* logits) {
    const size_t n = sessions.size();
    rows_.clear();
    row_tokens_.clear();
    output_rows_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        rows_.push_back(LayerProgram::SequenceRows{&sessions[i]->kv_, static_cast<int64_t>(chunks[i].size())});
        row_tokens_.insert(row_tokens_.end(), chunks[i].begin(), chunks[i].end());
        output_rows_[i] = static_cast<int32_t>(row_tokens_.size() - 1);  // the session's last row
    }
    used_before_.resize(n);
    for (size_t i = 0; i < n; ++i) used_before_[i] = sessions[i]->kv_.n_used();
    // Once the KV cells are written each session holds its tokens, also when the logits fail
    // after them (caches and token lists stay in step).
    const auto take_tokens = [&] {
        for (size_t i = 0; i < n; ++i) {
            if (sessions[i]->kv_.n_used() == used_before_[i] + static_cast<int64_t>(chunks[i].size())) {
                sessions[i]->tokens_.insert(sessions[i]->tokens_.end(), chunks[i].begin(), chunks[i].end());
            }
        }
    };
    try {
        program_.forward_batch(row_tokens_, rows_, output_rows_, hidden_, logits);
    } catch (...) {
        take_tokens();
        throw;
    }
    take_tokens();
}

}  // namespace strata

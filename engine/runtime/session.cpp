// Prefill and decode over a KV cache (session.h).
#include "engine/runtime/session.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/rope_overrides.h"
#include "engine/runtime/model.h"

namespace strata {
namespace {

int64_t context_size(const Model& model, const SessionParams& params) {
    return session_context(model.config(), params);
}

// The most tokens one forward pass stores: the room of the sliding-window rings (kv_cache.h);
// the whole context with swa_full.
int64_t kv_batch(const Model& model, const SessionParams& params) {
    return params.swa_full ? context_size(model, params) : std::max<int64_t>(params.n_batch, 1);
}

}  // namespace

int64_t session_context(const ModelConfig& config, const SessionParams& params) {
    if (params.n_ctx <= 0) return config.n_ctx_train;
    return std::min(params.n_ctx, rope_context(config) * std::max<int64_t>(1, params.ctx_train_factor));
}

Session::Session(const PlacedModel& placed, const SessionParams& params)
    : placed_(&placed),
      model_(placed.model()),
      params_(params),
      kv_(model_.config(), context_size(model_, params), params.kv_type, placed.kv_backends(),
          kv_batch(model_, params)),
      program_(placed, params.gpu_prefill_min_tokens, params.gpu_staging_limit) {
    if (params.n_batch <= 0) throw ArgumentError(cat("batch size must be positive, got ", params.n_batch));
    program_.set_sparse(params.sparse);
    program_.set_hot_cold(params.hot_cold);
    program_.set_gpu_ffn_only(params.gpu_ffn_only);
}

Session::Session(const Model& model, Backend& backend, const SessionParams& params)
    : owned_(std::make_unique<PlacedModel>(model, backend)),
      placed_(owned_.get()),
      model_(model),
      params_(params),
      kv_(model.config(), context_size(model, params), params.kv_type, owned_->kv_backends(),
          kv_batch(model, params)),
      program_(*owned_, params.gpu_prefill_min_tokens, params.gpu_staging_limit) {
    if (params.n_batch <= 0) throw ArgumentError(cat("batch size must be positive, got ", params.n_batch));
}

void Session::check_room(int64_t n) const {
    if (n <= 0) throw ArgumentError("nothing to evaluate: no tokens");
    if (kv_.n_used() + n > kv_.n_ctx()) {
        throw ArgumentError(cat("the context holds ", kv_.n_ctx(), " tokens: ", kv_.n_used(),
                                " used + ", n, " new do not fit (raise -c)"));
    }
}

void Session::prefill(std::span<const TokenId> tokens) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    check_room(n);
    for (int64_t first = 0; first < n; first += params_.n_batch) {
        const int64_t count = std::min(params_.n_batch, n - first);
        const int32_t last = static_cast<int32_t>(count - 1);
        program_.forward(tokens.subspan(static_cast<size_t>(first), static_cast<size_t>(count)),
                         kv_, {&last, 1}, hidden_);
    }
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
}

std::span<const float> Session::feed(std::span<const TokenId> tokens) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    check_room(n);  // before any batch runs
    // Every batch but the last as prefill() runs it; the last one's logits in the same pass
    // (on the device when the model ends there: one graph per decode token).
    const int64_t last_first = (n - 1) / params_.n_batch * params_.n_batch;
    if (last_first > 0) prefill(tokens.first(static_cast<size_t>(last_first)));
    const std::span<const TokenId> rest = tokens.subspan(static_cast<size_t>(last_first));
    logits_.resize(static_cast<size_t>(program_.n_vocab()));
    program_.forward_logits(rest, kv_, static_cast<int32_t>(rest.size() - 1), hidden_, logits_.data());
    tokens_.insert(tokens_.end(), rest.begin(), rest.end());
    return logits_;
}

std::span<const float> Session::feed_all(std::span<const TokenId> tokens) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    check_room(n);
    const int64_t n_vocab = program_.n_vocab();
    logits_.resize(static_cast<size_t>(n * n_vocab));
    std::vector<int32_t> rows;
    for (int64_t first = 0; first < n; first += params_.n_batch) {
        const int64_t count = std::min(params_.n_batch, n - first);
        rows.resize(static_cast<size_t>(count));
        for (int64_t r = 0; r < count; ++r) rows[static_cast<size_t>(r)] = static_cast<int32_t>(r);
        program_.forward(tokens.subspan(static_cast<size_t>(first), static_cast<size_t>(count)), kv_, rows,
                         hidden_);
        program_.logits(hidden_.data(), count, logits_.data() + first * n_vocab);
    }
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    return logits_;
}

void Session::truncate(int64_t n) {
    if (n < 0 || n > static_cast<int64_t>(tokens_.size())) {
        throw ArgumentError(cat("cannot keep ", n, " of ", tokens_.size(), " tokens"));
    }
    tokens_.resize(static_cast<size_t>(n));
    if (kv_.keeps_prefix(n)) {
        kv_.truncate(n);
        return;
    }
    // A sliding-window ring has overwritten keys the next positions would see: evaluate the
    // kept tokens again (their results are the same; only their KV is needed).
    kv_.clear();
    const std::vector<TokenId> kept = std::move(tokens_);
    tokens_.clear();
    prefill(kept);
}

}  // namespace strata

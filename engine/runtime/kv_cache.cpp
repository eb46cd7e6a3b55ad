// KV cache storage (kv_cache.h).
#include "engine/runtime/kv_cache.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "offload/placement.h"

namespace strata {

KvCache::KvCache(const ModelConfig& config, int64_t n_ctx, GgmlType type,
                 std::span<Backend* const> layer_backends, int64_t max_batch)
    : n_ctx_(n_ctx), max_batch_(n_ctx), type_(type) {
    if (n_ctx <= 0) throw ArgumentError(cat("context size must be positive, got ", n_ctx));
    if (max_batch <= 0) throw ArgumentError(cat("KV cache: tokens per batch must be positive, got ", max_batch));
    if (type != GgmlType::F16 && type != GgmlType::F32 && type != GgmlType::Q8_0 &&
        type != GgmlType::Q4_0) {
        throw ArgumentError(cat("KV cache type ", type_traits(type).name,
                                " is not supported (f32, f16, q8_0, q4_0)"));
    }
    const int64_t block = type_traits(type).block_size;
    if (config.head_dim_k % block != 0 || config.head_dim_v % block != 0) {
        throw ArgumentError(cat("KV cache type ", type_traits(type).name, " needs head dims that are",
                                " multiples of ", block, "; this model has ", config.head_dim_k,
                                " and ", config.head_dim_v));
    }
    if (!layer_backends.empty() && static_cast<int>(layer_backends.size()) != config.n_layer) {
        throw ArgumentError(cat("KV cache: ", layer_backends.size(), " layer backends for ",
                                config.n_layer, " layers"));
    }
    auto make = [&](int il, int64_t width, int64_t cells, const char* what) {
        const uint64_t bytes = row_bytes(type, width) * static_cast<uint64_t>(cells);
        Backend* b = layer_backends.empty() ? nullptr : layer_backends[static_cast<size_t>(il)];
        if (b != nullptr) {
            storage_.push_back(b->allocate(bytes, cat("KV cache (", what, " of layer ", il, ")")));
        } else {
            auto* p = new uint8_t[bytes];
            storage_.emplace_back(p, bytes, MemoryKind::Host, [](void* q, uint64_t) { delete[] static_cast<uint8_t*>(q); });
        }
        owners_.push_back(b);
        return storage_.back().tensor(type, {width, cells});
    };
    for (int il = 0; il < config.n_layer; ++il) {
        const int64_t window = config.is_swa.at(static_cast<size_t>(il)) ? config.sliding_window : 0;
        const int64_t cells = kv_layer_cells(window, n_ctx, max_batch);
        // A ring (fewer cells than positions) holds the last `cells` positions; a batch's first
        // query sees window - 1 keys before it, so window - 1 + batch <= cells.
        window_.push_back(cells < n_ctx ? window : 0);
        if (cells < n_ctx) max_batch_ = std::min(max_batch_, cells - window + 1);
        k_.push_back(make(il, config.n_embd_k_gqa(il), cells, "K"));
        v_.push_back(make(il, config.n_embd_v_gqa(il), cells, "V"));
    }
}

void KvCache::set_used(int64_t n) {
    if (n < 0 || n > n_ctx_) {
        throw ArgumentError(cat("KV cache has ", n_ctx_, " cells, cannot hold ", n, " positions"));
    }
    n_used_ = n;
}

bool KvCache::keeps_prefix(int64_t n) const {
    if (n <= 0) return true;
    for (size_t il = 0; il < window_.size(); ++il) {
        if (window_[il] == 0) continue;
        // The next query (position n) sees [n - window + 1, n); the ring holds [n_used - cells, n_used).
        const int64_t first_seen = std::max<int64_t>(0, n - window_[il] + 1);
        if (first_seen < n_used_ - k_[il].ne[1]) return false;
    }
    return true;
}

void KvCache::truncate(int64_t n) {
    STRATA_INVARIANT(n >= 0 && n <= n_used_ && keeps_prefix(n));
    n_used_ = n;
}

uint64_t KvCache::bytes() const {
    uint64_t total = 0;
    for (const auto& s : storage_) total += s.size();
    return total;
}

uint64_t KvCache::bytes_on(const Backend* backend) const {
    uint64_t total = 0;
    for (size_t i = 0; i < storage_.size(); ++i)
        if (owners_[i] == backend) total += storage_[i].size();
    return total;
}

}  // namespace strata

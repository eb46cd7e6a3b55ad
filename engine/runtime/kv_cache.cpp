// KV cache storage (kv_cache.h).
#include "engine/runtime/kv_cache.h"

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace strata {

KvCache::KvCache(const ModelConfig& config, int64_t n_ctx, GgmlType type)
    : n_ctx_(n_ctx), type_(type) {
    if (n_ctx <= 0) throw ArgumentError(cat("context size must be positive, got ", n_ctx));
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
    auto make = [&](int64_t width) {
        storage_.emplace_back(row_bytes(type, width) * static_cast<uint64_t>(n_ctx));
        return Tensor::contiguous(type, storage_.back().data(), {width, n_ctx});
    };
    storage_.reserve(2 * static_cast<size_t>(config.n_layer));  // keeps data() pointers stable
    for (int il = 0; il < config.n_layer; ++il) {
        k_.push_back(make(config.n_embd_k_gqa(il)));
        v_.push_back(make(config.n_embd_v_gqa(il)));
    }
}

void KvCache::set_used(int64_t n) {
    if (n < 0 || n > n_ctx_) {
        throw ArgumentError(cat("KV cache has ", n_ctx_, " cells, cannot hold ", n, " positions"));
    }
    n_used_ = n;
}

void KvCache::truncate(int64_t n) {
    STRATA_INVARIANT(n >= 0 && n <= n_used_);
    n_used_ = n;
}

uint64_t KvCache::bytes() const {
    uint64_t total = 0;
    for (const auto& s : storage_) total += s.size();
    return total;
}

}  // namespace strata

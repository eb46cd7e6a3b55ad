// KvCache: keys and values of every layer for one sequence, one row per position
// (cell c holds position c), in a quantized or f16 type. Each layer's cache lives in the memory
// of the backend that runs that layer's attention (host memory when none is given).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/tensor.h"

namespace strata {

struct ModelConfig;

class KvCache {
public:
    // n_ctx cells for every layer, K and V of `type` (F16, F32, Q8_0, Q4_0; a quantized type
    // needs head dims that are multiples of its block size). Throws ArgumentError otherwise.
    // layer_backends: empty (host memory) or one backend per layer, which allocates that
    // layer's cache (BudgetError when it does not fit).
    KvCache(const ModelConfig& config, int64_t n_ctx, GgmlType type = GgmlType::F16,
            std::span<Backend* const> layer_backends = {});

    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_used() const { return n_used_; }  // cells [0, n_used) hold positions 0..n_used-1
    GgmlType type() const { return type_; }

    Tensor& k(int il) { return k_.at(static_cast<size_t>(il)); }  // [n_head_kv*hd_k, n_ctx]
    Tensor& v(int il) { return v_.at(static_cast<size_t>(il)); }  // [n_head_kv*hd_v, n_ctx]

    // Marks cells [0, n) as holding positions 0..n-1; n <= n_ctx.
    void set_used(int64_t n);
    // Forgets every position after the first n (n <= n_used): KV reuse for a shared prefix.
    void truncate(int64_t n);
    void clear() { n_used_ = 0; }

    uint64_t bytes() const;
    // Bytes held in the memory of `backend` (null: host memory of no backend).
    uint64_t bytes_on(const Backend* backend) const;

private:
    int64_t n_ctx_;
    int64_t n_used_ = 0;
    GgmlType type_;
    std::vector<Buffer> storage_;
    std::vector<const Backend*> owners_;  // per storage_ entry
    std::vector<Tensor> k_, v_;
};

}  // namespace strata

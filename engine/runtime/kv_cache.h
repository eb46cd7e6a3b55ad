// KvCache: keys and values of every layer for one sequence, one row per position, in a quantized
// or f16 type. A full-attention layer keeps every position (cell c holds position c); a
// sliding-window layer keeps only its window plus one batch, as a ring (position p in cell
// p % cells: Backend::kv_store/attention). Each layer's cache lives in the memory of the backend
// that runs that layer's attention (host memory when none is given).
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
    // The most tokens one forward pass stores when the caller does not say.
    static constexpr int64_t kDefaultMaxBatch = 512;  // model_placement.h's kDefaultKvRingSlack

    // n_ctx positions for every layer, K and V of `type` (F16, F32, Q8_0, Q4_0; a quantized type
    // needs head dims that are multiples of its block size). Throws ArgumentError otherwise.
    // layer_backends: empty (host memory) or one backend per layer, which allocates that
    // layer's cache (BudgetError when it does not fit). max_batch: the most tokens one forward
    // pass stores (a sliding-window layer's ring keeps window + max_batch cells, at most n_ctx);
    // n_ctx or more keeps every position in every layer.
    KvCache(const ModelConfig& config, int64_t n_ctx, GgmlType type = GgmlType::F16,
            std::span<Backend* const> layer_backends = {}, int64_t max_batch = kDefaultMaxBatch);

    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_used() const { return n_used_; }  // positions 0..n_used-1 have been stored
    GgmlType type() const { return type_; }

    Tensor& k(int il) { return k_.at(static_cast<size_t>(il)); }  // [n_head_kv*hd_k, cells(il)]
    Tensor& v(int il) { return v_.at(static_cast<size_t>(il)); }  // [n_head_kv*hd_v, cells(il)]
    // Cells of layer il: n_ctx, or a sliding-window layer's ring.
    int64_t cells(int il) const { return k_.at(static_cast<size_t>(il)).ne[1]; }
    // The most tokens one forward pass may store: a batch longer than this would overwrite, in
    // some ring, a key that one of its own queries sees (LayerProgram splits such batches).
    int64_t max_batch() const { return max_batch_; }

    // Marks positions 0..n-1 as stored; n <= n_ctx.
    void set_used(int64_t n);
    // Whether truncate(n) keeps everything the next positions will read: true unless a ring
    // has already overwritten a key of the window before position n.
    bool keeps_prefix(int64_t n) const;
    // Forgets every position after the first n (n <= n_used and keeps_prefix(n)): KV reuse for
    // a shared prefix.
    void truncate(int64_t n);
    void clear() { n_used_ = 0; }

    uint64_t bytes() const;
    // Bytes held in the memory of `backend` (null: host memory of no backend).
    uint64_t bytes_on(const Backend* backend) const;

private:
    int64_t n_ctx_;
    int64_t n_used_ = 0;
    int64_t max_batch_;
    GgmlType type_;
    std::vector<int64_t> window_;  // per layer: sliding window of a ring layer, 0 otherwise
    std::vector<Buffer> storage_;
    std::vector<const Backend*> owners_;  // per storage_ entry
    std::vector<Tensor> k_, v_;
};

}  // namespace strata

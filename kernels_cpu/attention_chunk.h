// Internal to kernels_cpu: one unit of attention work and how units combine. A chunk is the
// query heads of one KV head at one token over a run of cache cells; it yields unnormalised
// softmax partials (max score, Σ exp, Σ exp·v) that merge_attention_partial folds in cell
// order. Chunk boundaries are fixed multiples of kAttentionChunkCells, so a token's result is
// the same whether its chunks run on many threads (decode) or one after another (prefill).
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"

namespace strata::cpu {

inline constexpr int64_t kAttentionChunkCells = 128;

// The cell of `cache` [row, cells] that holds position pos: pos % cells (a sliding-window
// layer's cache is a ring; a full one never wraps). Chunks count in positions, so a ring and a
// full cache holding the same keys give bit-identical results.
inline int64_t cache_cell(const Tensor& cache, int64_t pos) {
    const int64_t cells = cache.ne[1];
    return pos < cells ? pos : pos % cells;
}

struct AttentionChunk {
    const float* const* q;  // [n_q] query rows, each [dk] (all read the same KV head)
    int n_q;
    const Tensor* k_cache;  // [dk · n_kv_heads, cells], any dequantizable type
    const Tensor* v_cache;  // [dv · n_kv_heads, cells]
    int64_t kv_head;
    int64_t dk, dv;
    int64_t c0, c1;  // positions [c0, c1), c0 < c1 <= c0 + kAttentionChunkCells (cache_cell)
    float scale;     // on q·k, before the softcap
    float softcap;   // 0 = off
    // Outputs: per query head h, m[h] = max score, l[h] = Σ exp(s − m[h]),
    // o[h·dv .. (h+1)·dv) = Σ exp(s − m[h])·v.
    float* m;
    float* l;
    float* o;
};

using AttentionChunkFn = void (*)(const AttentionChunk& chunk);

// Running state of one query head: (m, l, o[dv]) with m = -inf before the first chunk. Folds a
// chunk's partial in; the same operations in the same order wherever it is called.
void merge_attention_partial(float& m, float& l, float* o, float chunk_m, float chunk_l,
                             const float* chunk_o, int64_t dv);

// The plain C++ chunk (attention_scalar.cpp): any dequantizable cache type and head size.
void attention_chunk_scalar(const AttentionChunk& chunk);

}  // namespace strata::cpu

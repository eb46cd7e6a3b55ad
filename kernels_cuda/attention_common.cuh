// Internal to the attention kernels: one K/V cache element as f32 from any supported cache type
// (dequantized inside the kernel, bit-identical to quant/'s reference), and the visible key
// range of a query (causal, optional sliding window).
#pragma once

#include <math_constants.h>

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {

// The row holding position pos: cell pos % cells (a sliding-window layer's cache is a ring).
__device__ __forceinline__ const uint8_t* cache_row(const CacheView& c, int64_t pos) {
    const int64_t cell = pos < c.cells ? pos : pos % c.cells;
    return c.data + static_cast<uint64_t>(cell) * c.nb1;
}

// Query token t's cache: c, or in a batched decode step (bases given: one cache per token) its
// sequence's, of the same type and shape.
__device__ __forceinline__ CacheView token_cache(const CacheView& c, const uint8_t* const* bases, int t) {
    CacheView v = c;
    if (bases != nullptr) v.data = bases[t];
    return v;
}

// Element e of the cache row holding position pos (e counts over the whole row, all kv heads).
__device__ __forceinline__ float cache_value(const CacheView& c, int64_t pos, int64_t e) {
    const uint8_t* row = cache_row(c, pos);
    const int j = static_cast<int>(e % 32);
    switch (c.type) {
        case GgmlType::F32: return reinterpret_cast<const float*>(row)[e];
        case GgmlType::F16: return half_to_float(reinterpret_cast<const uint16_t*>(row)[e]);
        case GgmlType::BF16: return bf16_to_float(reinterpret_cast<const uint16_t*>(row)[e]);
        case GgmlType::Q8_0: {
            const uint8_t* b = row + (e / 32) * 34;
            return mul_rn(static_cast<float>(static_cast<int8_t>(b[2 + j])), half_to_float(load_u16(b)));
        }
        case GgmlType::Q4_0: {
            const uint8_t* b = row + (e / 32) * 18;
            const int byte = b[2 + (j & 15)];
            return mul_rn(half_to_float(load_u16(b)), static_cast<float>((j < 16 ? byte & 0xF : byte >> 4) - 8));
        }
        case GgmlType::Q4_1: {
            const uint8_t* b = row + (e / 32) * 20;
            const int byte = b[4 + (j & 15)];
            return add_rn(mul_rn(half_to_float(load_u16(b)), static_cast<float>(j < 16 ? byte & 0xF : byte >> 4)),
                          half_to_float(load_u16(b + 2)));
        }
        case GgmlType::Q5_0: {
            const uint8_t* b = row + (e / 32) * 22;
            const int byte = b[6 + (j & 15)];
            const int q = (j < 16 ? byte & 0xF : byte >> 4) | (((b[2 + j / 8] >> (j % 8)) & 1) << 4);
            return mul_rn(half_to_float(load_u16(b)), static_cast<float>(q - 16));
        }
        case GgmlType::Q5_1: {
            const uint8_t* b = row + (e / 32) * 24;
            const int byte = b[8 + (j & 15)];
            const int q = (j < 16 ? byte & 0xF : byte >> 4) | (((b[4 + j / 8] >> (j % 8)) & 1) << 4);
            return add_rn(mul_rn(half_to_float(load_u16(b)), static_cast<float>(q)), half_to_float(load_u16(b + 2)));
        }
        case GgmlType::IQ4_NL: {
            const uint8_t* b = row + (e / 32) * 18;
            const int byte = b[2 + (j & 15)];
            return mul_rn(half_to_float(load_u16(b)), static_cast<float>(iq4nl_value(j < 16 ? byte & 0xF : byte >> 4)));
        }
        default: return CUDART_NAN_F;  // attention_cache_supported() keeps other types out
    }
}

// Positions [first, last] that query position pos sees: causal, and inside the window if any.
__device__ __forceinline__ int64_t visible_first(int64_t pos, int32_t window) {
    return window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
}

// A prefill block's query rows (attention_tiled.cu, attention_mma.cu): blockIdx.y is kv head
// kvh times n_hgroups plus its head group, blockIdx.x a run of tt tokens; row r is token
// t0 + r / gb, query head h0 + r % gb (a short last head group has tt == 1).
struct PrefillRows {
    int kvh, h0, t0, gb, n_rows, n_tokens, n_head;
    __device__ PrefillRows(const AttentionLaunch& a, int n_hgroups, int gb_, int tt) {
        kvh = static_cast<int>(blockIdx.y) / n_hgroups;
        const int hg = static_cast<int>(blockIdx.y) % n_hgroups;
        const int group = a.n_head / a.n_head_kv;
        gb = gb_;
        h0 = kvh * group + hg * gb;
        t0 = static_cast<int>(blockIdx.x) * tt;
        n_rows = min(gb, group - hg * gb) * tt;
        n_tokens = a.n_tokens;
        n_head = a.n_head;
    }
    __device__ bool valid(int r) const { return r < n_rows && t0 + r / gb < n_tokens; }
    // The row of q and out (token-major, heads within a token).
    __device__ int64_t out_row(int r) const { return static_cast<int64_t>(t0 + r / gb) * n_head + h0 + r % gb; }
};

// Split `split` of n_splits of a prefill block's keys: the cells [begin, end] (inclusive; empty
// when begin > end) of the union of its rows' visible ranges [first[r], last[r]], rows r <
// n_rows that valid(r) accepts.
struct KeyRange {
    int64_t begin, end;
};
template <class Valid>
__device__ __forceinline__ KeyRange split_key_range(const int64_t* first, const int64_t* last, int n_rows, Valid valid,
                                                    int split, int n_splits) {
    int64_t lo = INT64_MAX, hi = -1;
    for (int r = 0; r < n_rows; ++r) {
        if (!valid(r)) continue;
        lo = min(lo, first[r]);
        hi = max(hi, last[r]);
    }
    const int64_t chunk = (hi - lo + 1 + n_splits - 1) / n_splits;
    const int64_t begin = lo + split * chunk;
    return KeyRange{begin, min(hi, begin + chunk - 1)};
}

__device__ __forceinline__ float softcapped(float s, float cap, float inv_cap) {
    return cap > 0.0f ? cap * tanhf(s * inv_cap) : s;
}

// ---- shared by the decode kernels (attention_decode.cu, attention_decode_vec.cu)
constexpr int kDecodeMaxGroup = 8;  // query heads per block

// The vectorized kernel for f16, q8_0 and q4_0 caches (K and V of one type) of head dim
// 64/128/256 (same grid as the generic one); false, launching nothing, for any other cache.
bool attention_decode_vec(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream);

// Split `split` of a decode token at position pos: its cells [c0, c1) of the token's visible
// range [first, pos]; `active` false for splits past the token's active ones (nothing to do:
// the combine reads only the active ones). Uniform over a block.
struct DecodeSplit {
    int64_t c0, c1;
    bool active;
};
__device__ __forceinline__ DecodeSplit decode_split_range(const AttentionLaunch& a, int64_t pos, int split) {
    const int64_t first = visible_first(pos, a.window);
    const int n_active = active_splits(a, pos - first + 1);
    if (split >= n_active) return DecodeSplit{0, 0, false};
    const int64_t chunk = (pos - first + 1 + n_active - 1) / n_active;
    const int64_t c0 = first + split * chunk;
    return DecodeSplit{c0, min(pos + 1, c0 + chunk), true};  // c1 exclusive; empty splits write m = -inf
}

// A decode block's place (attention_decode.cu, attention_decode_vec.cu): blockIdx.x is its key
// split, blockIdx.y kv head kvh times n_hgroups plus its head group, blockIdx.z the token t. It
// holds query heads h0 .. h0 + gb - 1 (gb <= heads_per_block) and the split's cells `range`.
struct DecodeBlock {
    int split, kvh, t, h0, gb;
    int32_t pos;        // the token's position: its load is issued by the constructor
    DecodeSplit range;  // set by find_keys
    __device__ DecodeBlock(const AttentionLaunch& a, int n_hgroups, int heads_per_block) {
        split = static_cast<int>(blockIdx.x);
        kvh = static_cast<int>(blockIdx.y) / n_hgroups;
        const int hg = static_cast<int>(blockIdx.y) % n_hgroups;
        t = static_cast<int>(blockIdx.z);
        const int group = a.n_head / a.n_head_kv;
        h0 = kvh * group + hg * heads_per_block;
        gb = min(heads_per_block, group - hg * heads_per_block);
        pos = a.positions[t];
    }
    // The split's cells: apart from the constructor, so that loads which do not need the
    // position (q) can be issued in between, while the position's load is in flight.
    __device__ void find_keys(const AttentionLaunch& a) { range = decode_split_range(a, pos, split); }
};

// Writes the merged (max, sum, acc) of query row `row` for this split: the final output when
// there is one split, else the partial slot.
__device__ __forceinline__ void write_result(const AttentionLaunch& a, int64_t row, int split, int e,
                                             float m, float l, float acc) {
    if (a.n_splits == 1) {
        a.out.row(row)[e] = acc * (l > 0.0f ? 1.0f / l : 0.0f);
        return;
    }
    const int64_t slot = row * a.n_splits + split;
    a.part_acc[slot * a.dv + e] = acc;
    if (e == 0) {
        a.part_ml[2 * slot] = m;
        a.part_ml[2 * slot + 1] = l;
    }
}

// Online-softmax step of one tile: per head, the new running max, sc turned into p = e^(s - m),
// the running sum, and corr = the factor the earlier accumulators are scaled by.
// sc is [n][kDecodeMaxGroup]; one warp per head.
__device__ __forceinline__ void softmax_tile(int gb, int n, float* sc, float* rm, float* rl, float* rc) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int g = warp; g < gb; g += static_cast<int>(blockDim.x / 32)) {
        float mx = -CUDART_INF_F;
        for (int j = lane; j < n; j += 32) mx = fmaxf(mx, sc[j * kDecodeMaxGroup + g]);
        mx = warp_max(mx);
        const float m_old = rm[g];
        const float m_new = fmaxf(m_old, mx);
        float sum = 0.0f;
        for (int j = lane; j < n; j += 32) {
            const float p = expf(sc[j * kDecodeMaxGroup + g] - m_new);
            sc[j * kDecodeMaxGroup + g] = p;
            sum += p;
        }
        sum = warp_sum(sum);
        if (lane == 0) {
            const float corr = m_old == -CUDART_INF_F ? 0.0f : expf(m_old - m_new);
            rc[g] = corr;
            rl[g] = rl[g] * corr + sum;
            rm[g] = m_new;
        }
    }
}

}  // namespace strata::cuda

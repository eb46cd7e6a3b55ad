// Internal to the .cu files: one f32 value, or one 32-value block held a value per lane, into a
// KV cache cell as F32, F16, BF16, Q8_0, Q4_0 or Q5_0, bit-identical to quant/'s reference
// quantizers (kv_store.cu, attention_prologue.cu).
#pragma once

#include <cuda_fp16.h>

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {

__device__ __forceinline__ uint16_t f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }

// ggml's reference bf16 rounding: NaN quietened, else round to nearest even.
__device__ __forceinline__ uint16_t bf16_bits(float f) {
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// 1/d, or 0 where that is not finite (quant/'s inverse_or_zero).
__device__ __forceinline__ float inverse_or_zero(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isfinite(id) ? id : 0.0f;
}

__device__ __forceinline__ int clamp_to_int(float v, int lo, int hi) {
    return static_cast<int>(fminf(fmaxf(v, static_cast<float>(lo)), static_cast<float>(hi)));
}

// The row of the cache that position `pos` goes to (a ring when cells < positions).
__device__ __forceinline__ uint8_t* ring_row(const KvStoreLaunch& c, int64_t pos) {
    return c.cache + static_cast<uint64_t>(pos % c.cells) * c.nb1;
}

// Where src row r of a store from position `first` goes (row_cache: each row its own cache).
__device__ __forceinline__ uint8_t* store_row(const KvStoreLaunch& c, int64_t first, int64_t r) {
    if (c.row_cache == nullptr) return ring_row(c, first + r);
    return c.row_cache[r] + static_cast<uint64_t>(c.row_position[r] % c.cells) * c.nb1;
}

// Element e of a cache row of a plain type (F32, F16, BF16).
template <GgmlType kType>
__device__ __forceinline__ void store_plain(float v, uint8_t* row, int64_t e) {
    if constexpr (kType == GgmlType::F32) reinterpret_cast<float*>(row)[e] = v;
    if constexpr (kType == GgmlType::F16) reinterpret_cast<uint16_t*>(row)[e] = f16_bits(v);
    if constexpr (kType == GgmlType::BF16) reinterpret_cast<uint16_t*>(row)[e] = bf16_bits(v);
}

// The 32-value block lane j holds x_j of, at b (Q8_0, Q4_0, Q5_0). Every lane must call it.
template <GgmlType kType>
__device__ __forceinline__ void store_block_warp(float x, int lane, uint8_t* b) {
    if constexpr (kType == GgmlType::Q8_0) {
        const float d = warp_max(fabsf(x)) / 127.0f;
        const float id = inverse_or_zero(d);
        b[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(clamp_to_int(roundf(mul_rn(x, id)), -127, 127)));
        if (lane == 0) *reinterpret_cast<uint16_t*>(b) = f16_bits(d);
    } else {
        // Signed value of largest magnitude, the first one on a tie (NaN never wins).
        float best = isnan(x) ? -1.0f : fabsf(x);
        int idx = lane;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ob = __shfl_xor_sync(kFullMask, best, o);
            const int oi = __shfl_xor_sync(kFullMask, idx, o);
            if (ob > best || (ob == best && oi < idx)) {
                best = ob;
                idx = oi;
            }
        }
        const float winner = __shfl_sync(kFullMask, x, idx);
        const float max = best > 0.0f ? winner : 0.0f;
        constexpr int kLevels = kType == GgmlType::Q4_0 ? 16 : 32;
        constexpr float kHalf = static_cast<float>(kLevels / 2);
        const float d = max / -kHalf;
        const float id = inverse_or_zero(d);
        const int q = clamp_to_int(add_rn(mul_rn(x, id), kHalf + 0.5f), 0, kLevels - 1);
        const int q_hi = __shfl_down_sync(kFullMask, q, 16);  // element lane + 16
        const int qs = kType == GgmlType::Q4_0 ? 2 : 6;
        if (lane < 16) b[qs + lane] = static_cast<uint8_t>((q & 0xF) | ((q_hi & 0xF) << 4));
        if constexpr (kType == GgmlType::Q5_0) {
            const uint32_t qh = __ballot_sync(kFullMask, (q >> 4) & 1);
            if (lane < 4) b[2 + lane] = static_cast<uint8_t>(qh >> (8 * lane));
        }
        if (lane == 0) *reinterpret_cast<uint16_t*>(b) = f16_bits(d);
    }
}

// Bytes of one block of a KV block type.
template <GgmlType kType>
inline constexpr int kKvBlockBytes = kType == GgmlType::Q8_0 ? 34 : (kType == GgmlType::Q4_0 ? 18 : 22);

}  // namespace strata::cuda

// Internal to the .cu files: warp reductions, launch-size helpers and the switch from a GgmlType
// to its codec (codec.cuh), so each kernel family is one template over codecs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/core/error.h"
#include "kernels_cuda/codec.cuh"
#include "kernels_cuda/codec_iq.cuh"
#include "kernels_cuda/cuda_check.h"
#include "kernels_cuda/launch.h"

namespace strata::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();  // partial may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int n_warps = blockDim.x / 32;
    v = lane < n_warps ? partial[lane] : 0.0f;
    return warp_sum(v);
}

inline unsigned blocks_for(int64_t n, int per_block) {
    return static_cast<unsigned>((n + per_block - 1) / per_block);
}

// Grid-stride loops cap the grid here; the kernels loop over the rest.
constexpr int64_t kMaxGridX = 65535LL * 16;

inline unsigned capped_blocks(int64_t n, int per_block) {
    const int64_t b = (n + per_block - 1) / per_block;
    return static_cast<unsigned>(b < kMaxGridX ? (b > 0 ? b : 1) : kMaxGridX);
}

// Calls f(Codec{}) for the codec of `type` and returns true; false for a type with no codec.
template <class F>
bool visit_codec(GgmlType type, F&& f) {
    switch (type) {
        case GgmlType::F32: f(CodecF32{}); return true;
        case GgmlType::F16: f(CodecF16{}); return true;
        case GgmlType::BF16: f(CodecBf16{}); return true;
        case GgmlType::Q4_0: f(CodecQ4_0{}); return true;
        case GgmlType::Q4_1: f(CodecQ4_1{}); return true;
        case GgmlType::Q5_0: f(CodecQ5_0{}); return true;
        case GgmlType::Q5_1: f(CodecQ5_1{}); return true;
        case GgmlType::Q8_0: f(CodecQ8_0{}); return true;
        case GgmlType::Q8_1: f(CodecQ8_1{}); return true;
        case GgmlType::IQ4_NL: f(CodecIq4Nl{}); return true;
        case GgmlType::MXFP4: f(CodecMxfp4{}); return true;
        case GgmlType::Q2_K: f(CodecQ2_K{}); return true;
        case GgmlType::Q3_K: f(CodecQ3_K{}); return true;
        case GgmlType::Q4_K: f(CodecQ4_K{}); return true;
        case GgmlType::Q5_K: f(CodecQ5_K{}); return true;
        case GgmlType::Q6_K: f(CodecQ6_K{}); return true;
        case GgmlType::Q8_K: f(CodecQ8_K{}); return true;
        case GgmlType::IQ4_XS: f(CodecIq4Xs{}); return true;
        case GgmlType::IQ2_XXS: f(CodecIq2Xxs{}); return true;
        case GgmlType::IQ2_XS: f(CodecIq2Xs{}); return true;
        case GgmlType::IQ2_S: f(CodecIq2S{}); return true;
        case GgmlType::IQ3_XXS: f(CodecIq3Xxs{}); return true;
        case GgmlType::IQ3_S: f(CodecIq3S{}); return true;
        case GgmlType::IQ1_S: f(CodecIq1S{}); return true;
        case GgmlType::IQ1_M: f(CodecIq1M{}); return true;
        case GgmlType::TQ1_0: f(CodecTq1_0{}); return true;
        case GgmlType::TQ2_0: f(CodecTq2_0{}); return true;
        default: return false;
    }
}

// As visit_codec; UnsupportedError naming the op for a type with no codec.
template <class F>
void dispatch_codec(GgmlType type, const char* op, F&& f) {
    if (!visit_codec(type, f)) {
        throw UnsupportedError(cat(op, ": type ", type_traits(type).name,
                                   " is not supported on the CUDA backend"));
    }
}

}  // namespace strata::cuda

// Internal to the .cu files: warp reductions, launch-size helpers and the switch from a GgmlType
// to its codec (codec.cuh), so each kernel family is one template over codecs.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "kernels_cuda/codec.cuh"
#include "kernels_cuda/codec_iq.cuh"
#include "kernels_cuda/cuda_check.h"
#include "kernels_cuda/launch.h"

namespace strata::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

// Opts kernel K in to `bytes` of dynamic shared memory (past the default 48 KiB) once per
// device, not at every launch: bit d of `done` (one flag set per kernel).
template <auto K>
void allow_dynamic_smem(int bytes) {
    static std::atomic<uint64_t> done{0};
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
    if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return;
    CUDA_CHECK(cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    done.fetch_or(bit, std::memory_order_release);
}

// ---- programmatic dependent launch (sm_90+). A kernel started with launch_pdl() may begin
// while the kernel before it on the stream is finishing (its blocks get scheduled, and can load
// what that kernel does not write, such as weights); it must call pdl_wait() before it reads
// or writes memory the earlier kernel touches. On older devices, or with STRATA_CUDA_PDL=0, a
// plain launch. No kernel lets its dependents start earlier (griddepcontrol.launch_dependents
// at its start): on an H200 that took Gemma 3 270M decode from ~920 to ~880 tok/s and the 7B
// from 360 to 338 (docs/BENCHMARKS.md, twenty-third session).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Asks L2 for the 128-byte lines of [p, p + bytes), the block's threads taking every
// blockDim.x-th line: a hint that returns at once, so a kernel can have its constants (norm
// weights, RoPE tables) in flight while it waits for the kernel before it.
__device__ __forceinline__ void prefetch_l2(const void* p, uint64_t bytes) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{127};
    const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
    for (uintptr_t a = first + uintptr_t{threadIdx.x} * 128; a < end; a += uintptr_t{blockDim.x} * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
}

// Whether launch_pdl() overlaps kernels on the current device (compute capability 9.0 and
// later; STRATA_CUDA_PDL=0 turns it off, for A/B measurements). The answer is cached per thread
// with the device it was asked for: a launch pays a cudaGetDevice (a load of the runtime's
// thread state), no attribute query after the first.
inline bool pdl_enabled() {
    static const bool allowed = !env_turned_off("STRATA_CUDA_PDL");
    if (!allowed) return false;
    thread_local int cached_device = -1;
    thread_local bool cached_answer = false;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (device != cached_device) {
        int major = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
        cached_device = device;
        cached_answer = major >= 9;
    }
    return cached_answer;
}

template <typename... KArgs, typename... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attr;
    config.numAttrs = pdl_enabled() ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

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

// The q8 block of 32 values held one per lane, as quantize_rows_q8 writes it: xq[lane], and from
// lane 0 ds = (d, d·Σq). Every lane of the warp must call it.
__device__ __forceinline__ void quantize_q8_warp(float v, int lane, int8_t* xq, float2* ds) {
    // fmaxf from 0 as quantize_q8_act's loop: a NaN drops out of the max there too.
    const float d = warp_max(fmaxf(0.0f, fabsf(v))) / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    const int r = static_cast<int>(roundf(mul_rn(v, id)));
    const int q = r < -127 ? -127 : (r > 127 ? 127 : r);
    xq[lane] = static_cast<int8_t>(q);
    int sum = q;  // (__reduce_add_sync would need sm_80)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
    if (lane == 0) *ds = make_float2(d, mul_rn(d, static_cast<float>(sum)));
}

// The same block held as one float4 by each of 8 aligned lanes (g = lane % 8 holds elements
// 4g..4g+3); every lane of the warp must call it, and writes only where `write`.
__device__ __forceinline__ void quantize_q8_lanes8(float4 v, int g, bool write, int8_t* xq, float2* ds) {
    float a = fmaxf(fmaxf(fmaxf(0.0f, fabsf(v.x)), fmaxf(0.0f, fabsf(v.y))),
                    fmaxf(fmaxf(0.0f, fabsf(v.z)), fmaxf(0.0f, fabsf(v.w))));
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(kFullMask, a, o));
    const float d = a / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    const float f[4] = {v.x, v.y, v.z, v.w};
    int q[4], sum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = static_cast<int>(roundf(mul_rn(f[i], id)));
        q[i] = r < -127 ? -127 : (r > 127 ? 127 : r);
        sum += q[i];
    }
    if (write) *reinterpret_cast<char4*>(xq + 4 * g) = make_char4(static_cast<signed char>(q[0]), static_cast<signed char>(q[1]),
                                                       static_cast<signed char>(q[2]), static_cast<signed char>(q[3]));
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
    if (write && g == 0) *ds = make_float2(d, mul_rn(d, static_cast<float>(sum)));
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

// The codec a kernel takes for rows that start 16-byte aligned: C::Aligned where C has one (a
// decode() with vector loads), else C.
template <class C, class = void>
struct AlignedCodec {
    using type = C;
};
template <class C>
struct AlignedCodec<C, std::void_t<typename C::Aligned>> {
    using type = typename C::Aligned;
};
template <class C>
constexpr bool kHasAligned = !std::is_same_v<typename AlignedCodec<C>::type, C>;

// Whether p is on a 16-byte boundary (a float4 / uint4 load may read it).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether every row of a matrix at w with row stride nb1 starts 16-byte aligned.
inline bool rows_aligned16(const void* w, uint64_t nb1) { return aligned16(w) && nb1 % 16 == 0; }

// As visit_codec; UnsupportedError naming the op for a type with no codec.
template <class F>
void dispatch_codec(GgmlType type, const char* op, F&& f) {
    if (!visit_codec(type, f)) {
        throw UnsupportedError(cat(op, ": type ", type_traits(type).name,
                                   " is not supported on the CUDA backend"));
    }
}

}  // namespace strata::cuda

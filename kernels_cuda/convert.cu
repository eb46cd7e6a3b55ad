// Format conversions on the device: get_rows (embedding lookup from any type), weight rows to an
// f16 tile for cuBLAS, activations to f16, and activations to q8 blocks for the dp4a GEMV.
#include <cuda_fp16.h>

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

template <class C>
__global__ void get_rows_kernel(const uint8_t* table, uint64_t nb1, int64_t ne0, int64_t n_items,
                                const int32_t* ids, int64_t n, F32View out) {
    const int64_t total = n * n_items;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t i = t / n_items, item = t % n_items;
        int sub = 0;
        const uint8_t* blk = item_block<C>(table + static_cast<uint64_t>(ids[i]) * nb1, item, sub);
        const int valid = static_cast<int>(ne0 - item * 32 < 32 ? ne0 - item * 32 : 32);
        float v[32];
        C::dequant(blk, sub, v, valid);
        float* dst = out.row(i) + item * 32;
#pragma unroll
        for (int j = 0; j < 32; ++j)
            if (j < valid) dst[j] = v[j];
    }
}

// dst [rows][k]; `vec` = k % 8 == 0, so each whole item's 32 halves are four aligned 16-byte
// stores (a partial last item of a plain-type row is written element by element).
template <class C>
__global__ void dequantize_f16_kernel(const uint8_t* w, uint64_t nb1, int64_t k, int64_t n_items,
                                      int64_t rows, __half* dst, bool vec) {
    const int64_t total = rows * n_items;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = t / n_items, item = t % n_items;
        int sub = 0;
        const uint8_t* blk = item_block<C>(w + static_cast<uint64_t>(r) * nb1, item, sub);
        const int valid = static_cast<int>(k - item * 32 < 32 ? k - item * 32 : 32);
        float v[32];
        C::dequant(blk, sub, v, valid);
        __half* out = dst + r * k + item * 32;
        if (vec && valid == 32) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                __half2 h[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) h[j] = __floats2half2_rn(v[8 * i + 2 * j], v[8 * i + 2 * j + 1]);
                reinterpret_cast<uint4*>(out)[i] = *reinterpret_cast<const uint4*>(h);
            }
        } else {
#pragma unroll
            for (int j = 0; j < 32; ++j)
                if (j < valid) out[j] = __float2half_rn(v[j]);
        }
    }
}

__global__ void convert_f16_kernel(F32View x, __half* dst) {
    const int64_t total = x.n_rows * x.ne0;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        dst[t] = __float2half_rn(x.row(t / x.ne0)[t % x.ne0]);
    }
}

// One warp per 32-element block of x: lane j loads element j (one coalesced 128-byte load), the
// warp reduces max |x| and Σq by shuffles. One thread per block was latency-bound (32 dependent
// loads each). Bit-identical to quantize_q8_act: the max and the integer sum do not depend on
// order, and d, 1/d, q and s are the same IEEE operations (no fast math in this library).
__global__ void quantize_q8_kernel(F32View x, int8_t* xq, float* xds) {
    pdl_wait();
    const int64_t n_blocks = x.ne0 / 32;
    const int64_t total = x.n_rows * n_blocks;
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
    for (int64_t t = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32; t < total;
         t += warps) {
        const float v = x.row(t / n_blocks)[(t % n_blocks) * 32 + lane];
        quantize_q8_warp(v, lane, xq + t * 32, reinterpret_cast<float2*>(xds) + t);  // [m][k]: m·k/32 blocks
    }
}

}  // namespace

bool codec_supported(GgmlType type) {
    return visit_codec(type, [](auto) {});
}

void get_rows(GgmlType type, const uint8_t* table, uint64_t table_nb1, int64_t ne0,
              const int32_t* ids, int64_t n, F32View out, cudaStream_t stream) {
    if (n == 0 || ne0 == 0) return;
    const int64_t n_items = (ne0 + 31) / 32;
    dispatch_codec(type, "get_rows", [&](auto codec) {
        using C = decltype(codec);
        get_rows_kernel<C><<<capped_blocks(n * n_items, kThreads), kThreads, 0, stream>>>(
            table, table_nb1, ne0, n_items, ids, n, out);
        CUDA_CHECK_LAUNCH("get_rows_kernel");
    });
}

void dequantize_rows_f16(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t rows,
                         uint16_t* dst, cudaStream_t stream) {
    if (rows == 0 || k == 0) return;
    const int64_t n_items = (k + 31) / 32;
    const bool vec = k % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
    dispatch_codec(type, "matmul", [&](auto codec) {
        using C = decltype(codec);
        dequantize_f16_kernel<C><<<capped_blocks(rows * n_items, kThreads), kThreads, 0, stream>>>(
            w, nb1, k, n_items, rows, reinterpret_cast<__half*>(dst), vec);
        CUDA_CHECK_LAUNCH("dequantize_f16_kernel");
    });
}

void convert_rows_f16(F32View x, uint16_t* dst, cudaStream_t stream) {
    if (x.n_rows * x.ne0 == 0) return;
    convert_f16_kernel<<<capped_blocks(x.n_rows * x.ne0, kThreads), kThreads, 0, stream>>>(
        x, reinterpret_cast<__half*>(dst));
    CUDA_CHECK_LAUNCH("convert_f16_kernel");
}

void quantize_rows_q8(F32View x, int8_t* xq, float* xds, cudaStream_t stream) {
    const int64_t total = x.n_rows * (x.ne0 / 32);
    if (total == 0) return;
    launch_pdl(quantize_q8_kernel, dim3(capped_blocks(total * 32, kThreads)), dim3(kThreads), 0, stream, x, xq, xds);
    CUDA_CHECK_LAUNCH("quantize_q8_kernel");
}

}  // namespace strata::cuda

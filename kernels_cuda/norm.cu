// RMSNorm on the device: one block per row (a whole hidden state, or one head of a
// [head_dim, n_heads, n_tokens] view), f32 sums reduced in a tree, optional weight; optionally
// after x += [rms_norm(delta)·delta_weight] in the same pass (add_rms_norm: a block's post norm
// and residual add before the next block's norm).
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kMaxVec = 8;  // float4s a thread keeps: rows up to 4 · 8 · 1024 = 32768 floats

// Weight group i, a thread's j-th: from the registers where the kernel holds them, else loaded.
template <bool kHold, int N>
__device__ __forceinline__ float4 weight_group(const float4 (&held)[N], const float4* __restrict__ w, int j, int64_t i) {
    if constexpr (kHold) {
        return held[j];
    } else {
        return w[i];
    }
}

// y = x / sqrt(mean(x²) + eps) · w for rows of float4s (16-byte aligned, ne0 % 4 == 0). Each
// thread keeps its kVec float4s in registers from the sum to the scaling, so x is read once and
// a decode row (one block) has all its loads in flight together. In place is safe: each thread
// rewrites only the elements it read, after block_sum has synchronised the block.
// With xq: y is also quantized to q8 blocks (xq [rows][ne0], xds [rows][ne0/32]) as
// quantize_rows_q8 would, for the GEMV that reads it next (ne0 % 32 == 0).
// With delta.data: x = x + delta first (written back; y must not alias x then), delta normed
// with delta_weight first where that is given (the same sums as a launch of its own would make).
// A decode row is latency-bound: the weights are asked of L2 while the kernel before runs.
template <int kVec>
__global__ void __launch_bounds__(kMaxThreads) rms_norm_vec_kernel(F32View x, F32View delta, const float4* __restrict__ delta_weight,
                                    const float4* __restrict__ weight, float eps, F32View y, int8_t* xq, float2* xds) {
    // Short rows (decode's hidden states up to 8192) hold x, delta and the weights in registers
    // from the start; longer ones (1024 threads, 64 registers each) load x after delta's sum.
    constexpr bool kHold = kVec <= 2;
    const int64_t n4 = x.ne0 / 4;
    if (weight != nullptr) prefetch_l2(weight, static_cast<uint64_t>(n4) * 16);
    if (delta_weight != nullptr) prefetch_l2(delta_weight, static_cast<uint64_t>(n4) * 16);
    pdl_wait();
    for (int64_t r = blockIdx.x; r < x.n_rows; r += gridDim.x) {
        float4* xr = reinterpret_cast<float4*>(x.row(r));
        const float4* dr = delta.data != nullptr ? reinterpret_cast<const float4*>(delta.row(r)) : nullptr;
        float4 d[kVec];
        float4 v[kVec];
        float4 wv[kHold ? kVec : 1], dwv[kHold ? kVec : 1];  // the weights, where registers allow
        const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
            const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
            if (dr != nullptr) d[j] = i < n4 ? dr[i] : zero;
            if constexpr (kHold) {
                v[j] = i < n4 ? xr[i] : zero;
                wv[j] = weight != nullptr && i < n4 ? weight[i] : zero;
                dwv[j] = delta_weight != nullptr && i < n4 ? delta_weight[i] : zero;
            }
        }
        if (dr != nullptr) {
            float sd = 0.0f;
#pragma unroll
            for (int j = 0; j < kVec; ++j) sd += d[j].x * d[j].x + d[j].y * d[j].y + d[j].z * d[j].z + d[j].w * d[j].w;
            if (delta_weight != nullptr) {
                sd = block_sum(sd);
                const float inv_d = 1.0f / sqrtf(sd / static_cast<float>(x.ne0) + eps);
#pragma unroll
                for (int j = 0; j < kVec; ++j) {
                    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
                    if (i >= n4) break;
                    const float4 w = weight_group<kHold>(dwv, delta_weight, j, i);
                    d[j] = make_float4(d[j].x * inv_d * w.x, d[j].y * inv_d * w.y, d[j].z * inv_d * w.z, d[j].w * inv_d * w.w);
                }
            }
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
            const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
            if constexpr (!kHold) v[j] = i < n4 ? xr[i] : zero;
            if (dr != nullptr && i < n4) {
                v[j] = make_float4(v[j].x + d[j].x, v[j].y + d[j].y, v[j].z + d[j].z, v[j].w + d[j].w);
                xr[i] = v[j];
            }
            s += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
        }
        s = block_sum(s);
        const float inv = 1.0f / sqrtf(s / static_cast<float>(x.ne0) + eps);
        float4* yr = reinterpret_cast<float4*>(y.row(r));
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
            const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
            const bool ok = i < n4;
            if (!ok && xq == nullptr) break;  // with xq every lane takes part in the shuffles
            float4 o = make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv);
            if (weight != nullptr && ok) {
                const float4 w = weight_group<kHold>(wv, weight, j, i);
                o = make_float4(o.x * w.x, o.y * w.y, o.z * w.z, o.w * w.w);
            }
            if (ok) yr[i] = o;
            // 8 lanes hold a 32-element block; n4 % 8 == 0, so a group is all in or all out.
            if (xq != nullptr) quantize_q8_lanes8(o, static_cast<int>(i % 8), ok, xq + r * x.ne0 + (i / 8) * 32, xds + r * (x.ne0 / 32) + i / 8);
        }
    }
}

// Any row length and alignment (two reads of x).
__global__ void rms_norm_kernel(F32View x, F32View delta, const float* __restrict__ delta_weight,
                                const float* __restrict__ weight, float eps, F32View y) {
    const int64_t ne0 = x.ne0;
    for (int64_t r = blockIdx.x; r < x.n_rows; r += gridDim.x) {
        float* xr = x.row(r);
        float* yr = y.row(r);
        if (delta.data != nullptr) {  // each thread rereads only what it wrote
            const float* dr = delta.row(r);
            if (delta_weight != nullptr) {
                float sd = 0.0f;
                for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) sd += dr[i] * dr[i];
                sd = block_sum(sd);
                const float inv_d = 1.0f / sqrtf(sd / static_cast<float>(ne0) + eps);
                for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) xr[i] = xr[i] + (dr[i] * inv_d) * delta_weight[i];
            } else {
                for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) xr[i] = xr[i] + dr[i];
            }
        }
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) s += xr[i] * xr[i];
        s = block_sum(s);
        const float mean = s / static_cast<float>(ne0);
        const float inv = 1.0f / sqrtf(mean + eps);
        if (weight != nullptr) {
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) yr[i] = (xr[i] * inv) * weight[i];
        } else {
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) yr[i] = xr[i] * inv;
        }
    }
}

// Every row of v starts on a 16-byte boundary.
bool view_rows_aligned16(const F32View& v) {
    return aligned16(v.data) && v.rows.nb1 % 16 == 0 && v.rows.nb2 % 16 == 0 && v.rows.nb3 % 16 == 0;
}

template <int kVec>
void launch_vec(F32View x, F32View delta, const float* delta_weight, const float* weight, float eps, F32View y, int8_t* xq,
                float* xds, unsigned blocks, cudaStream_t stream) {
    const int64_t n4 = x.ne0 / 4;
    const int threads = static_cast<int>((n4 + kVec - 1) / kVec + 31) / 32 * 32;
    launch_pdl(rms_norm_vec_kernel<kVec>, dim3(blocks), dim3(threads), 0, stream, x, delta,
               reinterpret_cast<const float4*>(delta_weight), reinterpret_cast<const float4*>(weight), eps, y, xq,
               reinterpret_cast<float2*>(xds));
    CUDA_CHECK_LAUNCH("rms_norm_vec_kernel");
}

}  // namespace

bool rms_norm(F32View x, const float* weight, float eps, F32View y, int8_t* xq, float* xds, cudaStream_t stream,
              F32View delta, const float* delta_weight) {
    if (delta.data == nullptr) delta_weight = nullptr;
    if (x.n_rows == 0 || x.ne0 == 0) return false;
    if (xq != nullptr && x.ne0 % 32 != 0) xq = nullptr;
    const unsigned blocks = static_cast<unsigned>(x.n_rows < kMaxGridX ? x.n_rows : kMaxGridX);
    const int64_t n4 = x.ne0 / 4;
    if (x.ne0 % 4 == 0 && n4 <= int64_t{kMaxVec} * kMaxThreads && view_rows_aligned16(x) && view_rows_aligned16(y) &&
        (delta.data == nullptr || view_rows_aligned16(delta)) && (weight == nullptr || aligned16(weight)) &&
        (delta_weight == nullptr || aligned16(delta_weight))) {
        if (n4 <= kMaxThreads) launch_vec<1>(x, delta, delta_weight, weight, eps, y, xq, xds, blocks, stream);
        else if (n4 <= 2 * kMaxThreads) launch_vec<2>(x, delta, delta_weight, weight, eps, y, xq, xds, blocks, stream);
        else if (n4 <= 4 * kMaxThreads) launch_vec<4>(x, delta, delta_weight, weight, eps, y, xq, xds, blocks, stream);
        else launch_vec<kMaxVec>(x, delta, delta_weight, weight, eps, y, xq, xds, blocks, stream);
        return xq != nullptr;
    }
    const int threads = x.ne0 <= 256 ? 64 : (x.ne0 <= 2048 ? 256 : 512);
    rms_norm_kernel<<<blocks, threads, 0, stream>>>(x, delta, delta_weight, weight, eps, y);
    CUDA_CHECK_LAUNCH("rms_norm_kernel");
    return false;
}

}  // namespace strata::cuda

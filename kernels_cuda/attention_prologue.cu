// Attention's prologue in one launch (Backend::attention_prologue): per head of q and k the
// bias, the RMSNorm and RoPE in shared memory, written back in place and, for k, into its cache
// cells; v's rows get their bias and go to theirs. Block u: q head rows first (token-major),
// then k's, then one block per token's v row. The RoPE steps are rope.cu's (rope.cuh) and the
// cache codecs kv_store.cu's (kv_codec.cuh), so q, k and the caches match those ops'.
#include "kernels_cuda/kv_codec.cuh"
#include "kernels_cuda/rope.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;

// vals[0, len) (in shared or global memory, written before a __syncthreads) into elements
// [e0, e0 + len) of a cache row; e0 and len multiples of 32 for the block types.
__device__ void store_segment(const KvStoreLaunch& c, uint8_t* row, int64_t e0, const float* vals, int64_t len) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
    switch (c.type) {
        case GgmlType::F32:
            for (int64_t e = threadIdx.x; e < len; e += blockDim.x) store_plain<GgmlType::F32>(vals[e], row, e0 + e);
            return;
        case GgmlType::F16:
            for (int64_t e = threadIdx.x; e < len; e += blockDim.x) store_plain<GgmlType::F16>(vals[e], row, e0 + e);
            return;
        case GgmlType::BF16:
            for (int64_t e = threadIdx.x; e < len; e += blockDim.x) store_plain<GgmlType::BF16>(vals[e], row, e0 + e);
            return;
        case GgmlType::Q8_0:
            for (int64_t b = warp; b < len / 32; b += n_warps)
                store_block_warp<GgmlType::Q8_0>(vals[b * 32 + lane], lane, row + (e0 / 32 + b) * kKvBlockBytes<GgmlType::Q8_0>);
            return;
        case GgmlType::Q4_0:
            for (int64_t b = warp; b < len / 32; b += n_warps)
                store_block_warp<GgmlType::Q4_0>(vals[b * 32 + lane], lane, row + (e0 / 32 + b) * kKvBlockBytes<GgmlType::Q4_0>);
            return;
        case GgmlType::Q5_0:
            for (int64_t b = warp; b < len / 32; b += n_warps)
                store_block_warp<GgmlType::Q5_0>(vals[b * 32 + lane], lane, row + (e0 / 32 + b) * kKvBlockBytes<GgmlType::Q5_0>);
            return;
        default: return;  // the host checked the type
    }
}

// One q or k head: bias, norm and RoPE in `buf` (head_dim floats), back to x, and a k head to
// its cache cell.
__device__ void head_row(const PrologueLaunch& a, bool is_k, int64_t r, int64_t first, float* buf) {
    const int64_t hd = a.head_dim;
    const int64_t heads = is_k ? a.n_head_kv : a.n_head;
    const int64_t t = r / heads, h = r % heads;
    float* xr = (is_k ? a.k : a.q).row(r);
    const float* bias = is_k ? a.k_bias : a.q_bias;
    const float* norm = is_k ? a.k_norm : a.q_norm;
    float ss = 0.0f;
    for (int64_t e = threadIdx.x; e < hd; e += blockDim.x) {
        const float v = bias != nullptr ? xr[e] + bias[h * hd + e] : xr[e];
        buf[e] = v;
        ss += v * v;
    }
    if (norm != nullptr) {
        ss = block_sum(ss);
        const float inv = 1.0f / sqrtf(ss / static_cast<float>(hd) + a.eps);
        for (int64_t e = threadIdx.x; e < hd; e += blockDim.x) buf[e] = (buf[e] * inv) * norm[e];
    }
    __syncthreads();
    const float pos = static_cast<float>(a.rope.positions[t]);
    for (int i = threadIdx.x; i < a.rope.n_rot / 2; i += blockDim.x) {
        const int i0 = rope_first(a.rope, i), i1 = rope_second(a.rope, i);
        float x0 = buf[i0], x1 = buf[i1];
        rope_rotate(a.rope, i, pos, x0, x1);
        buf[i0] = x0;
        buf[i1] = x1;
    }
    __syncthreads();
    for (int64_t e = threadIdx.x; e < hd; e += blockDim.x) xr[e] = buf[e];
    if (is_k && a.store) store_segment(a.k_cache, ring_row(a.k_cache, first + t), h * hd, buf, hd);
}

// Token t's v row: its bias in place, then to its cache cell.
__device__ void v_row(const PrologueLaunch& a, int64_t t, int64_t first) {
    float* vr = a.v.row(t);
    if (a.v_bias != nullptr) {
        for (int64_t e = threadIdx.x; e < a.v.ne0; e += blockDim.x) vr[e] += a.v_bias[e];
        __syncthreads();  // the block's global writes are visible to it after the barrier
    }
    if (a.store) store_segment(a.v_cache, ring_row(a.v_cache, first + t), 0, vr, a.v.ne0);
}

// The block's constants (bias, norm weights, RoPE tables), asked of L2 before it waits for the
// kernel that wrote q, k and v.
__device__ void prefetch_constants(const PrologueLaunch& a, int64_t u, int64_t n_q, int64_t n_k) {
    const uint64_t row = static_cast<uint64_t>(a.head_dim) * sizeof(float);
    const uint64_t table = static_cast<uint64_t>(a.rope.n_rot / 2) * sizeof(float);
    if (u < n_q + n_k) {
        const bool is_k = u >= n_q;
        const int64_t h = is_k ? (u - n_q) % a.n_head_kv : u % a.n_head;
        const float* bias = is_k ? a.k_bias : a.q_bias;
        const float* norm = is_k ? a.k_norm : a.q_norm;
        if (bias != nullptr) prefetch_l2(bias + h * a.head_dim, row);
        if (norm != nullptr) prefetch_l2(norm, row);
        prefetch_l2(a.rope.inv_freq, table);
        if (a.rope.freq_factors != nullptr) prefetch_l2(a.rope.freq_factors, table);
        if (a.rope.yarn_ramp != nullptr) prefetch_l2(a.rope.yarn_ramp, table);
    } else if (a.v_bias != nullptr) {
        prefetch_l2(a.v_bias, static_cast<uint64_t>(a.v.ne0) * sizeof(float));
    }
}

__global__ void __launch_bounds__(kThreads) attention_prologue_kernel(PrologueLaunch a) {
    const int64_t n_q = a.n_head * a.n_tokens, n_k = a.n_head_kv * a.n_tokens;
    const int64_t u = blockIdx.x;
    prefetch_constants(a, u, n_q, n_k);
    pdl_wait();
    extern __shared__ float buf[];
    const int64_t first = a.first_dev != nullptr ? *a.first_dev : a.first_cell;
    if (u < n_q) head_row(a, false, u, first, buf);
    else if (u < n_q + n_k) head_row(a, true, u - n_q, first, buf);
    else v_row(a, u - n_q - n_k, first);
}

}  // namespace

void attention_prologue(const PrologueLaunch& a, cudaStream_t stream) {
    if (a.n_tokens == 0) return;
    const int64_t v_rows = a.store || a.v_bias != nullptr ? a.n_tokens : 0;
    const int64_t blocks = (a.n_head + a.n_head_kv) * a.n_tokens + v_rows;
    launch_pdl(attention_prologue_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), sizeof(float) * a.head_dim,
               stream, a);
    CUDA_CHECK_LAUNCH("attention_prologue_kernel");
}

}  // namespace strata::cuda

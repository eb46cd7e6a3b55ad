// Flash-decoding over f16 caches with head dims 64, 128 or 256 (the common case), in 16-byte
// loads: the generic kernel (attention_decode.cu) reads one element per load with its address
// arithmetic and is bound by instructions, not bytes. Same blocks as the generic kernel (one
// token, one kv head with up to 8 query heads, one split of the token's keys, tiles of 64
// cells); here LK = DK/8 lanes share one cell's keys (8 halves each, reduced by shuffles) and
// LV = DV/8 threads one cell's values, so a block has a whole tile's loads in flight at once.
#include <cuda_fp16.h>

#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 64;
constexpr int kG = kDecodeMaxGroup;

__device__ __forceinline__ void unpack8(const uint4& u, float* f) {
    const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 v = __half22float2(h[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

// 16 bytes at offset_bytes of the row holding position pos.
__device__ __forceinline__ uint4 load16(const CacheView& c, int64_t pos, int offset_bytes) {
    return *reinterpret_cast<const uint4*>(cache_row(c, pos) + offset_bytes);
}

// Scores of the tile's n cells (from ct) into sc[cell][head].
template <int DK>
__device__ __forceinline__ void score_tile(const AttentionLaunch& a, int kvh, int gb, const float* qs, int64_t ct,
                                           int n, float inv_cap, float* sc) {
    constexpr int LK = DK / 8;                 // lanes per cell
    constexpr int CK = 32 / LK;                // cells per warp load
    constexpr int R0 = kTile / (kWarps * CK);  // loads per lane to cover a tile
    constexpr int R = R0 < 8 ? R0 : 8;         // loads in flight per lane
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int part = lane % LK, sub = lane / LK;
    const int offset = (kvh * DK + part * 8) * 2;
    for (int j0 = warp * CK * R; j0 < n; j0 += kWarps * CK * R) {
        uint4 kr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int j = j0 + r * CK + sub;
            kr[r] = j < n ? load16(a.k, ct + j, offset) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float kf[8];
            unpack8(kr[r], kf);
            const int j = j0 + r * CK + sub;
#pragma unroll
            for (int g = 0; g < kG; ++g) {
                if (g >= gb) break;  // block-uniform
                const float4 q0 = *reinterpret_cast<const float4*>(qs + g * DK + part * 8);
                const float4 q1 = *reinterpret_cast<const float4*>(qs + g * DK + part * 8 + 4);
                float s = q0.x * kf[0] + q0.y * kf[1] + q0.z * kf[2] + q0.w * kf[3] + q1.x * kf[4] +
                          q1.y * kf[5] + q1.z * kf[6] + q1.w * kf[7];
#pragma unroll
                for (int o = LK / 2; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
                if (part == 0 && j < n) sc[j * kG + g] = softcapped(s * a.scale, a.softcap, inv_cap);
            }
        }
    }
}

// A tile's p·V into this thread's accumulators acc[head][8] (its 8 value elements): rescaled
// first by the tile's corr rc[head], then the values vr of its cells vcg + r·CV of the tile's n
// (p in sc[cell][head]).
template <int RV, int CV>
__device__ __forceinline__ void accumulate_values(int gb, int n, int vcg, const uint4 (&vr)[RV], const float* sc,
                                                  const float* rc, float (&acc)[kG][8]) {
#pragma unroll
    for (int g = 0; g < kG; ++g) {
        if (g >= gb) break;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] *= rc[g];
    }
#pragma unroll
    for (int r = 0; r < RV; ++r) {
        const int j = vcg + r * CV;
        if (j >= n) break;
        float vf[8];
        unpack8(vr[r], vf);
#pragma unroll
        for (int g = 0; g < kG; ++g) {
            if (g >= gb) break;
            const float p = sc[j * kG + g];
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[g][i] += p * vf[i];
        }
    }
}

// Per head g < gb (output row row0 + g): the CV cell groups' accumulators summed through red
// [CV][DV], then written (write_result).
template <int DV, int CV>
__device__ __forceinline__ void write_heads(const AttentionLaunch& a, int64_t row0, int split, int gb, int vpart,
                                            int vcg, const float* rm, const float* rl, float* red,
                                            const float (&acc)[kG][8]) {
#pragma unroll
    for (int g = 0; g < kG; ++g) {
        if (g >= gb) break;
#pragma unroll
        for (int i = 0; i < 8; ++i) red[vcg * DV + vpart * 8 + i] = acc[g][i];
        __syncthreads();
        for (int e = threadIdx.x; e < DV; e += kThreads) {
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < CV; ++c) s += red[c * DV + e];
            write_result(a, row0 + g, split, e, rm[g], rl[g], s);
        }
        __syncthreads();
    }
}

template <int DK, int DV>
__global__ void __launch_bounds__(kThreads, 2) attention_decode_f16_kernel(AttentionLaunch a, int n_hgroups) {
    constexpr int LV = DV / 8;       // threads per cell's values
    constexpr int CV = kThreads / LV;  // cells in parallel
    constexpr int RV = kTile / CV;   // value loads per thread per tile
    __shared__ __align__(16) float qs[kG * DK];
    __shared__ float sc[kTile * kG];
    __shared__ float rm[kG], rl[kG], rc[kG];
    __shared__ __align__(16) float red[CV * DV];
    const int split = blockIdx.x;
    const int kvh = blockIdx.y / n_hgroups, hg = blockIdx.y % n_hgroups;
    const int t = blockIdx.z;
    const int group = a.n_head / a.n_head_kv;
    const int h0 = kvh * group + hg * kG;
    const int gb = min(kG, group - hg * kG);
    const int tid = threadIdx.x;

    const int64_t pos = a.positions[t];
    const int64_t first = visible_first(pos, a.window);
    const int n_active = active_splits(a, pos - first + 1);
    if (split >= n_active) return;  // uniform over the block; the combine reads the active ones
    const int64_t chunk = (pos - first + 1 + n_active - 1) / n_active;
    const int64_t c0 = first + split * chunk;
    const int64_t c1 = min(pos + 1, c0 + chunk);

    const float* q_base = a.q.row(static_cast<int64_t>(t) * a.n_head + h0);  // heads of a token are rows in a row
    const uint64_t q_stride = a.q.rows.nb1;
    for (int i = tid; i < gb * DK; i += kThreads)
        qs[i] = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(q_base) + (i / DK) * q_stride)[i % DK];
    if (tid < kG) {
        rm[tid] = -CUDART_INF_F;
        rl[tid] = 0.0f;
    }
    __syncthreads();

    const int vpart = tid % LV, vcg = tid / LV;
    const int voffset = (kvh * DV + vpart * 8) * 2;
    float acc[kG][8];
#pragma unroll
    for (int g = 0; g < kG; ++g)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] = 0.0f;

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    for (int64_t ct = c0; ct < c1; ct += kTile) {
        const int n = c1 - ct < kTile ? static_cast<int>(c1 - ct) : kTile;
        // The tile's values are loaded before the scores are needed: their latency overlaps.
        uint4 vr[RV];
#pragma unroll
        for (int r = 0; r < RV; ++r) {
            const int j = vcg + r * CV;
            vr[r] = j < n ? load16(a.v, ct + j, voffset) : make_uint4(0, 0, 0, 0);
        }
        score_tile<DK>(a, kvh, gb, qs, ct, n, inv_cap, sc);
        __syncthreads();
        softmax_tile(gb, n, sc, rm, rl, rc);
        __syncthreads();
        accumulate_values<RV, CV>(gb, n, vcg, vr, sc, rc, acc);
        __syncthreads();  // sc and rc are rewritten by the next tile
    }

    // Per head: sum the CV cell groups' accumulators through shared memory and write.
    const int64_t row0 = static_cast<int64_t>(t) * a.n_head + h0;
    write_heads<DV, CV>(a, row0, split, gb, vpart, vcg, rm, rl, red, acc);
}

template <int DK, int DV>
void launch(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    attention_decode_f16_kernel<DK, DV><<<grid, kThreads, 0, stream>>>(a, n_hgroups);
    CUDA_CHECK_LAUNCH("attention_decode_f16_kernel");
}

}  // namespace

bool attention_decode_f16(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    if (a.k.type != GgmlType::F16 || a.v.type != GgmlType::F16 || a.dk != a.dv) return false;
    // 16-byte loads: cell rows and the caches' bases on 16 bytes; q rows of one token evenly spaced.
    const auto aligned = [](const CacheView& c) {
        return c.nb1 % 16 == 0 && reinterpret_cast<uintptr_t>(c.data) % 16 == 0;
    };
    if (!aligned(a.k) || !aligned(a.v) || a.q.rows.ne1 < a.n_head) return false;
    switch (a.dk) {
        case 64: launch<64, 64>(a, n_hgroups, grid, stream); return true;
        case 128: launch<128, 128>(a, n_hgroups, grid, stream); return true;
        case 256: launch<256, 256>(a, n_hgroups, grid, stream); return true;
        default: return false;
    }
}

}  // namespace strata::cuda

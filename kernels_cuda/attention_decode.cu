// Flash-decoding attention for few query tokens (f16, q8_0 and q4_0 caches of the common head
// dims take the vectorized kernel of attention_decode_vec.cu; this one serves every cache type).
// A block takes one token, one kv head with up to 8 of its query heads (GQA: K/V read once for
// the group) and one split of the token's visible keys; the split's size is worked out on the
// device from the token's position, so one launch shape serves every position (a replayed
// graph). Keys go in tiles of kTile cells: each warp scores 4 cells at a time (independent loads
// in flight), the block updates the online softmax in shared memory, then every thread sums p·V
// for its value elements over the whole tile.
// Partial results of the splits are merged by attention_combine; all arithmetic in f32.
#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxGroup = kDecodeMaxGroup;    // query heads per block
constexpr int kMaxE = kAttnMaxHeadDim / 32;   // key elements per lane
constexpr int kTile = 64;                     // key cells per tile
constexpr int kCellsPerWarp = 8;              // cells one warp scores together (loads in flight)
constexpr int kVBatch = 16;                   // cells one thread loads V of before summing
constexpr int kMaxVE = kAttnMaxHeadDim / kThreads;  // value elements per thread (dv > 128)

size_t decode_smem_bytes(int dk) {
    return sizeof(float) * (static_cast<size_t>(kMaxGroup) * dk + kTile * kMaxGroup + 3 * kMaxGroup +
                            static_cast<size_t>(kThreads) * kMaxGroup);
}

// Element e of a cache row: f16 caches (the common case) read directly, others dequantized.
template <bool kF16>
__device__ __forceinline__ float kv_value(const CacheView& c, int64_t pos, int64_t e) {
    if constexpr (kF16) {
        return half_to_float(reinterpret_cast<const uint16_t*>(cache_row(c, pos))[e]);
    } else {
        return cache_value(c, pos, e);
    }
}

// Scores of cells [c, c + n) of this tile for the block's gb heads into sc[cell][head].
template <bool kF16>
__device__ __forceinline__ void score_tile(const AttentionLaunch& a, const CacheView& kc, int kvh, int gb, const float* qs,
                                           int64_t c_tile, int n, float inv_cap, float* sc) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int dk = a.dk;
    for (int j0 = warp * kCellsPerWarp; j0 < n; j0 += kWarps * kCellsPerWarp) {
        float kf[kCellsPerWarp][kMaxE];
#pragma unroll
        for (int u = 0; u < kCellsPerWarp; ++u) {
            const bool ok = j0 + u < n;
#pragma unroll
            for (int i = 0; i < kMaxE; ++i) {
                const int e = lane + 32 * i;
                kf[u][i] = ok && e < dk ? kv_value<kF16>(kc, c_tile + j0 + u, static_cast<int64_t>(kvh) * dk + e) : 0.0f;
            }
        }
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
            if (g >= gb) break;  // block-uniform
            float s[kCellsPerWarp];
#pragma unroll
            for (int u = 0; u < kCellsPerWarp; ++u) s[u] = 0.0f;
#pragma unroll
            for (int i = 0; i < kMaxE; ++i) {
                if (lane + 32 * i >= dk) break;
                const float qv = qs[g * dk + lane + 32 * i];
#pragma unroll
                for (int u = 0; u < kCellsPerWarp; ++u) s[u] += qv * kf[u][i];
            }
#pragma unroll
            for (int u = 0; u < kCellsPerWarp; ++u) {
                const float v = softcapped(warp_sum(s[u]) * a.scale, a.softcap, inv_cap);
                if (lane == 0 && j0 + u < n) sc[(j0 + u) * kMaxGroup + g] = v;
            }
        }
    }
}

// A tile's p·V into this thread's accumulators acc[head][i] (element e0 + kThreads·i of each
// head), rescaled first by the tile's corr rc[head]: the thread's value group vg takes every
// n_vg-th of the tile's n cells from ct (p in sc[cell][head]).
template <bool kF16>
__device__ __forceinline__ void accumulate_values(const AttentionLaunch& a, const CacheView& vc, int kvh, int gb, int64_t ct, int n, int n_vg,
                                                  int vg, int e0, const float* sc, const float* rc,
                                                  float (&acc)[kMaxGroup][kMaxVE]) {
    const int dv = a.dv;
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
        if (g >= gb) break;
#pragma unroll
        for (int i = 0; i < kMaxVE; ++i) acc[g][i] *= rc[g];
    }
    // kVBatch cells' values loaded before any is used: the loads overlap.
    for (int j0 = vg; j0 < n; j0 += n_vg * kVBatch) {
        float vf[kVBatch][kMaxVE];
#pragma unroll
        for (int u = 0; u < kVBatch; ++u) {
            const int j = j0 + u * n_vg;
#pragma unroll
            for (int i = 0; i < kMaxVE; ++i) {
                const int e = e0 + kThreads * i;
                vf[u][i] = j < n && e < dv ? kv_value<kF16>(vc, ct + j, static_cast<int64_t>(kvh) * dv + e) : 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < kVBatch; ++u) {
            const int j = j0 + u * n_vg;
            if (j >= n) break;
#pragma unroll
            for (int g = 0; g < kMaxGroup; ++g) {
                if (g >= gb) break;
                const float p = sc[j * kMaxGroup + g];
#pragma unroll
                for (int i = 0; i < kMaxVE; ++i) acc[g][i] += p * vf[u][i];
            }
        }
    }
}

// With n_vg > 1 value groups (dv < 128): the groups' sums of each element through red
// [kThreads][kMaxGroup], into acc[head][0] of the threads tid < dv.
__device__ __forceinline__ void sum_value_groups(int gb, int dv, int n_vg, bool v_active, float* red,
                                                 float (&acc)[kMaxGroup][kMaxVE]) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g)
        if (g < gb) red[tid * kMaxGroup + g] = v_active ? acc[g][0] : 0.0f;
    __syncthreads();
    if (tid < dv) {
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
            if (g >= gb) break;
            float s = 0.0f;
            for (int w = 0; w < n_vg; ++w) s += red[(w * dv + tid) * kMaxGroup + g];
            acc[g][0] = s;
        }
    }
}

template <bool kF16>
__global__ void __launch_bounds__(kThreads, 2)
    attention_decode_kernel(AttentionLaunch a, int n_hgroups) {
    pdl_wait();
    extern __shared__ float smem[];
    DecodeBlock b(a, n_hgroups, kMaxGroup);
    b.find_keys(a);
    if (!b.range.active) return;  // uniform over the block
    const int split = b.split, kvh = b.kvh, t = b.t, h0 = b.h0, gb = b.gb;
    const int64_t c0 = b.range.c0, c1 = b.range.c1;
    const int tid = threadIdx.x;
    const int dk = a.dk, dv = a.dv;
    const CacheView kc = token_cache(a.k, a.k_bases, t), vc = token_cache(a.v, a.v_bases, t);

    float* qs = smem;                            // [gb][dk]
    float* sc = qs + kMaxGroup * dk;             // [kTile][kMaxGroup] scores, then p
    float* rm = sc + kTile * kMaxGroup;          // [kMaxGroup] running max
    float* rl = rm + kMaxGroup;                  // [kMaxGroup] running sum
    float* rc = rl + kMaxGroup;                  // [kMaxGroup] rescale of this tile
    float* red = rc + kMaxGroup;                 // [kThreads][kMaxGroup] value-group reduction
    for (int i = tid; i < gb * dk; i += kThreads)
        qs[i] = a.q.row(static_cast<int64_t>(t) * a.n_head + h0 + i / dk)[i % dk];
    if (tid < kMaxGroup) {
        rm[tid] = -CUDART_INF_F;
        rl[tid] = 0.0f;
    }
    __syncthreads();

    // Value roles: n_vg groups of dv threads (dv <= 128) each take every n_vg-th cell of a tile
    // for element e = tid % dv; with dv > 128 one group, elements tid and tid + 128.
    const int n_vg = dv >= kThreads ? 1 : kThreads / dv;
    const int vg = dv >= kThreads ? 0 : tid / dv;
    const bool v_active = vg < n_vg;
    const int e0 = dv >= kThreads ? tid : tid % dv;
    float acc[kMaxGroup][kMaxVE];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g)
#pragma unroll
        for (int i = 0; i < kMaxVE; ++i) acc[g][i] = 0.0f;

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    for (int64_t ct = c0; ct < c1; ct += kTile) {
        const int n = c1 - ct < kTile ? static_cast<int>(c1 - ct) : kTile;
        score_tile<kF16>(a, kc, kvh, gb, qs, ct, n, inv_cap, sc);
        __syncthreads();
        softmax_tile(gb, n, sc, rm, rl, rc);
        __syncthreads();
        if (v_active) accumulate_values<kF16>(a, vc, kvh, gb, ct, n, n_vg, vg, e0, sc, rc, acc);
        __syncthreads();  // sc and rc are rewritten by the next tile
    }

    // Sum the value groups (dv < 128) through shared memory, then write.
    if (n_vg > 1) sum_value_groups(gb, dv, n_vg, v_active, red, acc);
    if (vg != 0 || !v_active) return;
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
        if (g >= gb) break;
        const int64_t row = static_cast<int64_t>(t) * a.n_head + h0 + g;
#pragma unroll
        for (int i = 0; i < kMaxVE; ++i) {
            const int e = e0 + kThreads * i;
            if (e < dv) write_result(a, row, split, e, rm[g], rl[g], acc[g][i]);
        }
    }
}

// out row = Σ_s acc_s·e^(m_s - M) / Σ_s l_s·e^(m_s - M) over the token's active splits; a block
// per output row (blockIdx.x its head, blockIdx.y its token). The first warp works out each
// split's factor e^(m_s - M) and 1 / Σ l_s·e^(m_s - M) once (lane l sums splits l, l + 32, ...,
// then the warp's sum: an order fixed by the token's splits alone, so the result does not depend
// on the batch), so an element's loop is one load and one multiply-add per split, the loads
// independent of each other.
__global__ void attention_combine_kernel(AttentionLaunch a) {
    __shared__ float factor[kAttentionMaxSplits];
    __shared__ float inv_sum;
    pdl_wait();
    const int t = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.x);
    const int64_t row = static_cast<int64_t>(t) * a.n_head + h;
    const float* ml = a.part_ml + row * a.n_splits * 2;
    const int64_t pos = a.positions[t];
    const int n_active = active_splits(a, pos - visible_first(pos, a.window) + 1);
    if (threadIdx.x < 32) {
        const int lane = static_cast<int>(threadIdx.x);
        float mx = -CUDART_INF_F;
        for (int s = lane; s < n_active; s += 32) mx = fmaxf(mx, ml[2 * s]);
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int s = lane; s < n_active; s += 32) {
            const float m = ml[2 * s];
            const float f = m == -CUDART_INF_F ? 0.0f : expf(m - mx);  // a split with no visible key: 0
            factor[s] = f;
            sum += ml[2 * s + 1] * f;
        }
        sum = warp_sum(sum);
        if (lane == 0) inv_sum = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
    __syncthreads();
    const int64_t k = int64_t{a.n_head} * a.dv;  // a token's row of q8 activations
    const float* acc = a.part_acc + row * a.n_splits * a.dv;
    for (int e0 = 0; e0 < a.dv; e0 += blockDim.x) {
        const int e = e0 + static_cast<int>(threadIdx.x);
        if (e < a.dv) {
            float out = 0.0f;
#pragma unroll 4
            for (int s = 0; s < n_active; ++s) out += acc[int64_t{s} * a.dv + e] * factor[s];
            const float o = out * inv_sum;
            a.out.row(row)[e] = o;
            // dv % 32 == 0: a warp's 32 elements are one q8 block, all in range together.
            if (a.out_xq != nullptr) {
                const int64_t blk = (int64_t{h} * a.dv + e) / 32;
                quantize_q8_warp(o, static_cast<int>(threadIdx.x % 32), a.out_xq + t * k + blk * 32,
                                 reinterpret_cast<float2*>(a.out_xds) + t * (k / 32) + blk);
            }
        }
    }
}

}  // namespace

bool attention_cache_supported(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL: return true;
        default: return false;
    }
}

void attention_decode(const AttentionLaunch& a, cudaStream_t stream) {
    const int group = a.n_head / a.n_head_kv;
    const int n_hgroups = (group + kMaxGroup - 1) / kMaxGroup;
    const int splits = a.grid_splits > 0 ? a.grid_splits : a.n_splits;
    const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(a.n_head_kv * n_hgroups),
                    static_cast<unsigned>(a.n_tokens));
    if (attention_decode_vec(a, n_hgroups, grid, stream)) {
        // f16/q8_0/q4_0 caches with head dim 64/128/256: 8-element loads (attention_decode_vec.cu)
    } else if (a.k.type == GgmlType::F16 && a.v.type == GgmlType::F16) {
        launch_pdl(attention_decode_kernel<true>, grid, dim3(kThreads), decode_smem_bytes(a.dk), stream, a, n_hgroups);
    } else {
        launch_pdl(attention_decode_kernel<false>, grid, dim3(kThreads), decode_smem_bytes(a.dk), stream, a, n_hgroups);
    }
    CUDA_CHECK_LAUNCH("attention_decode_kernel");
    if (a.n_splits > 1) attention_combine(a, stream);
}

void attention_combine(const AttentionLaunch& a, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.n_tokens));
    launch_pdl(attention_combine_kernel, grid, dim3(128), 0, stream, a);
    CUDA_CHECK_LAUNCH("attention_combine_kernel");
}

}  // namespace strata::cuda

// Prefill attention on tensor cores (WMMA, f16 × f16 -> f32): a block of 4 warps holds 64 query
// rows (tokens × query heads of one kv head, as attention_tiled.cu maps them) and walks the keys
// in tiles of TC cells, dequantized to f16 in shared memory. Each warp takes 16 rows: S = Q·Kᵀ
// with f32 accumulators, the online softmax in f32 (two lanes per row), P rounded to f16, then
// O += P·V with O kept in shared memory in f32, so each row's rescale is exact. Q, K, V and P
// are rounded to f16 as the f16 cuBLAS prefill rounds its operands; the scores, the softmax
// and every sum stay f32. Key splits write partials for attention_combine, as the tiled kernel.
#include <cuda_fp16.h>

#include <cstdint>
#include <mma.h>

#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kM = 16;              // WMMA tile edge

// Shared memory of one block, head dim D and key tile TC (offsets in bytes; every fragment
// pointer lands on 32 bytes, as WMMA requires). Padded rows keep the fragment loads off one bank.
template <int D, int TC>
struct Smem {
    static constexpr int ldh = D + 8;   // halves per row of Q, K, V
    static constexpr int lds = TC + 4;  // floats per row of S
    static constexpr int ldp = TC + 8;  // halves per row of P
    static constexpr int ldo = D + 4;   // floats per row of O
    static constexpr size_t q = 0;
    static constexpr size_t k = q + sizeof(__half) * kRows * ldh;
    static constexpr size_t v = k + sizeof(__half) * TC * ldh;
    static constexpr size_t s = v + sizeof(__half) * TC * ldh;
    static constexpr size_t p = s + sizeof(float) * kRows * lds;
    static constexpr size_t o = p + sizeof(__half) * kRows * ldp;
    static constexpr size_t first = o + sizeof(float) * kRows * ldo;  // [kRows] int64 first visible cell
    static constexpr size_t last = first + sizeof(int64_t) * kRows;   // [kRows] int64 last visible cell
    static constexpr size_t bytes = last + sizeof(int64_t) * kRows;
    static_assert(k % 32 == 0 && v % 32 == 0 && s % 32 == 0 && p % 32 == 0 && o % 32 == 0, "WMMA alignment");
    static_assert((kM * ldh * 2) % 32 == 0 && (kM * lds * 4) % 32 == 0 && (kM * ldp * 2) % 32 == 0 &&
                      (kM * ldo * 4) % 32 == 0,
                  "WMMA alignment of a warp's 16 rows");
};

// Cells [c0, c0 + TC) of kv head kvh into dst [TC][ldh] as f16; cells past c_end are zeros (a
// zero value times p = 0 stays 0, where an unwritten cell could hold NaN).
template <int D, int TC, bool kF16>
__device__ __forceinline__ void load_tile(const CacheView& c, int kvh, int64_t c0, int64_t c_end, __half* dst) {
    constexpr int ldh = Smem<D, TC>::ldh;
    if constexpr (kF16) {
        constexpr int kChunks = D / 8;  // 16-byte chunks of a head's row
        for (int i = threadIdx.x; i < TC * kChunks; i += kThreads) {
            const int cell = i / kChunks, ch = i % kChunks;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (c0 + cell <= c_end) {
                v = *reinterpret_cast<const uint4*>(cache_row(c, c0 + cell) +
                                                    (static_cast<int64_t>(kvh) * D + ch * 8) * 2);
            }
            *reinterpret_cast<uint4*>(dst + cell * ldh + ch * 8) = v;
        }
    } else {
        for (int i = threadIdx.x; i < TC * D; i += kThreads) {
            const int cell = i / D, e = i % D;
            const float v = c0 + cell <= c_end ? cache_value(c, c0 + cell, static_cast<int64_t>(kvh) * D + e) : 0.0f;
            dst[cell * ldh + e] = __float2half_rn(v);
        }
    }
}

// This warp's scores S [16][TC] = Q [16][D] · K [TC][D]ᵀ into s (row-major, lds).
template <int D, int TC>
__device__ __forceinline__ void warp_scores(const __half* q, const __half* k, float* s) {
    using L = Smem<D, TC>;
    wmma::fragment<wmma::accumulator, kM, kM, kM, float> acc[TC / kM];
#pragma unroll
    for (int n = 0; n < TC / kM; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / kM; ++kk) {
        wmma::fragment<wmma::matrix_a, kM, kM, kM, __half, wmma::row_major> qa;
        wmma::load_matrix_sync(qa, q + kk * kM, L::ldh);
#pragma unroll
        for (int n = 0; n < TC / kM; ++n) {
            wmma::fragment<wmma::matrix_b, kM, kM, kM, __half, wmma::col_major> kb;
            wmma::load_matrix_sync(kb, k + n * kM * L::ldh + kk * kM, L::ldh);
            wmma::mma_sync(acc[n], qa, kb, acc[n]);
        }
    }
#pragma unroll
    for (int n = 0; n < TC / kM; ++n) wmma::store_matrix_sync(s + n * kM, acc[n], L::lds, wmma::mem_row_major);
}

// This warp's O [16][D] (f32, row-major ldo) += P [16][TC] · V [TC][D].
template <int D, int TC>
__device__ __forceinline__ void warp_values(const __half* p, const __half* v, float* o) {
    using L = Smem<D, TC>;
    wmma::fragment<wmma::matrix_a, kM, kM, kM, __half, wmma::row_major> pa[TC / kM];
#pragma unroll
    for (int kk = 0; kk < TC / kM; ++kk) wmma::load_matrix_sync(pa[kk], p + kk * kM, L::ldp);
#pragma unroll
    for (int n = 0; n < D / kM; ++n) {
        wmma::fragment<wmma::accumulator, kM, kM, kM, float> acc;
        wmma::load_matrix_sync(acc, o + n * kM, L::ldo, wmma::mem_row_major);
#pragma unroll
        for (int kk = 0; kk < TC / kM; ++kk) {
            wmma::fragment<wmma::matrix_b, kM, kM, kM, __half, wmma::row_major> vb;
            wmma::load_matrix_sync(vb, v + kk * kM * L::ldh + n * kM, L::ldh);
            wmma::mma_sync(acc, pa[kk], vb, acc);
        }
        wmma::store_matrix_sync(o + n * kM, acc, L::ldo, wmma::mem_row_major);
    }
}

// A lane pair's online-softmax step for its row over one tile: the scores srow (this lane's
// half of the tile, cells from cell0) scaled, soft-capped and masked to the cells the row sees
// ([first, last], none past c_end); the running max m and sum l updated; the probabilities
// written to prow in f16; the lane's half of the row's output orow rescaled.
template <int D, int TC>
__device__ __forceinline__ void softmax_step(const AttentionLaunch& a, float inv_cap, int64_t cell0, int64_t c_end,
                                             int64_t first, int64_t last, float* srow, __half* prow, float* orow,
                                             float& m, float& l) {
    float mx = -CUDART_INF_F;
#pragma unroll 8
    for (int j = 0; j < TC / 2; ++j) {
        const int64_t cell = cell0 + j;
        const bool seen = cell <= c_end && cell >= first && cell <= last;
        const float s = seen ? softcapped(srow[j] * a.scale, a.softcap, inv_cap) : -CUDART_INF_F;
        srow[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
    const float m_new = fmaxf(m, mx);
    float sum = 0.0f, corr = 1.0f;
    if (m_new == -CUDART_INF_F) {  // nothing seen yet by this row
#pragma unroll 8
        for (int j = 0; j < TC / 2; ++j) prow[j] = __float2half_rn(0.0f);
    } else {
        corr = m == -CUDART_INF_F ? 0.0f : expf(m - m_new);
#pragma unroll 8
        for (int j = 0; j < TC / 2; ++j) {
            const float p = srow[j] == -CUDART_INF_F ? 0.0f : expf(srow[j] - m_new);
            sum += p;
            prow[j] = __float2half_rn(p);
        }
        m = m_new;
    }
    sum += __shfl_xor_sync(kFullMask, sum, 1);
    l = l * corr + sum;
    if (corr != 1.0f) {
#pragma unroll 4
        for (int e = 0; e < D / 2; ++e) orow[e] *= corr;
    }
}

template <int D, int TC, bool kF16>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttentionLaunch a, int n_hgroups, int gb, int tt) {
    using L = Smem<D, TC>;
    extern __shared__ __align__(128) unsigned char smem[];
    __half* qs = reinterpret_cast<__half*>(smem + L::q);
    __half* ks = reinterpret_cast<__half*>(smem + L::k);
    __half* vs = reinterpret_cast<__half*>(smem + L::v);
    float* ss = reinterpret_cast<float*>(smem + L::s);
    __half* ps = reinterpret_cast<__half*>(smem + L::p);
    float* os = reinterpret_cast<float*>(smem + L::o);
    int64_t* rfirst = reinterpret_cast<int64_t*>(smem + L::first);
    int64_t* rlast = reinterpret_cast<int64_t*>(smem + L::last);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const PrefillRows rows(a, n_hgroups, gb, tt);
    const int kvh = rows.kvh, t0 = rows.t0;
    auto row_valid = [&](int r) { return rows.valid(r); };
    auto out_row = [&](int r) { return rows.out_row(r); };

    for (int i = tid; i < kRows * D; i += kThreads) {
        const int r = i / D, e = i % D;
        qs[r * L::ldh + e] = __float2half_rn(row_valid(r) ? a.q.row(out_row(r))[e] : 0.0f);
    }
    if (tid < kRows) {
        const int64_t pos = row_valid(tid) ? a.positions[t0 + tid / gb] : -1;
        rfirst[tid] = row_valid(tid) ? visible_first(pos, a.window) : 1;  // empty if invalid
        rlast[tid] = pos;
    }
    // Lane pair (2j, 2j + 1) owns the warp's row j: columns [half·TC/2, ...) of S and P,
    // elements [half·D/2, ...) of O.
    const int row = warp * kM + lane / 2, half = lane % 2;
    float* orow = os + row * L::ldo + half * (D / 2);
#pragma unroll 4
    for (int e = 0; e < D / 2; ++e) orow[e] = 0.0f;
    __syncthreads();

    const KeyRange keys = split_key_range(rfirst, rlast, rows.n_rows, row_valid, static_cast<int>(blockIdx.z), a.n_splits);
    const int64_t c_begin = keys.begin, c_end = keys.end;  // inclusive

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    const int64_t my_first = rfirst[row], my_last = rlast[row];
    float m = -CUDART_INF_F, l = 0.0f;
    float* srow = ss + row * L::lds + half * (TC / 2);
    __half* prow = ps + row * L::ldp + half * (TC / 2);

    for (int64_t c0 = c_begin; c0 <= c_end; c0 += TC) {
        load_tile<D, TC, kF16>(a.k, kvh, c0, c_end, ks);
        load_tile<D, TC, kF16>(a.v, kvh, c0, c_end, vs);
        __syncthreads();
        warp_scores<D, TC>(qs + warp * kM * L::ldh, ks, ss + warp * kM * L::lds);
        __syncwarp();

        softmax_step<D, TC>(a, inv_cap, c0 + half * (TC / 2), c_end, my_first, my_last, srow, prow, orow, m, l);
        __syncwarp();
        warp_values<D, TC>(ps + warp * kM * L::ldp, vs, os + warp * kM * L::ldo);
        __syncthreads();  // K, V are rewritten by the next tile
    }
    __syncwarp();
    if (!row_valid(row)) return;
    const int64_t out = out_row(row);
    for (int e = 0; e < D / 2; ++e) write_result(a, out, static_cast<int>(blockIdx.z), half * (D / 2) + e, m, l, orow[e]);
}

template <int D, int TC>
constexpr size_t smem_bytes() {
    return Smem<D, TC>::bytes;
}

template <int D, int TC>
void launch(const AttentionLaunch& a, bool f16, int n_hgroups, int gb, int tt, cudaStream_t stream) {
    const dim3 grid(blocks_for(a.n_tokens, tt), static_cast<unsigned>(a.n_head_kv * n_hgroups),
                    static_cast<unsigned>(a.n_splits));
    const int smem = static_cast<int>(smem_bytes<D, TC>());
    if (f16) {
        allow_dynamic_smem<attention_mma_kernel<D, TC, true>>(smem);
        attention_mma_kernel<D, TC, true><<<grid, kThreads, smem, stream>>>(a, n_hgroups, gb, tt);
    } else {
        allow_dynamic_smem<attention_mma_kernel<D, TC, false>>(smem);
        attention_mma_kernel<D, TC, false><<<grid, kThreads, smem, stream>>>(a, n_hgroups, gb, tt);
    }
    CUDA_CHECK_LAUNCH("attention_mma_kernel");
}

// The key tile for head dim D within smem_limit bytes: 64 cells, else 32, else 0 (none fits).
template <int D>
int key_tile(size_t smem_limit) {
    if (smem_bytes<D, 64>() <= smem_limit) return 64;
    if (smem_bytes<D, 32>() <= smem_limit) return 32;
    return 0;
}

int key_tile_for(int d, size_t smem_limit) {
    switch (d) {
        case 64: return key_tile<64>(smem_limit);
        case 128: return key_tile<128>(smem_limit);
        case 256: return key_tile<256>(smem_limit);
        default: return 0;
    }
}

}  // namespace

int attention_mma_rows() { return kRows; }

int attention_mma_key_tile(const AttentionLaunch& a, size_t smem_limit) {
    if (a.dk != a.dv || !attention_cache_supported(a.k.type) || !attention_cache_supported(a.v.type)) return 0;
    return key_tile_for(a.dk, smem_limit);
}

void attention_mma(const AttentionLaunch& a, int tc, cudaStream_t stream) {
    const int group = a.n_head / a.n_head_kv;
    const int n_hgroups = (group + kRows - 1) / kRows;
    const int gb = group < kRows ? group : kRows;  // query heads per block
    const int tt = kRows / gb;                      // tokens per block
    // 16-byte loads of f16 rows: the caches' bases and rows on 16 bytes.
    const auto aligned = [](const CacheView& c) {
        return c.type == GgmlType::F16 && c.nb1 % 16 == 0 && reinterpret_cast<uintptr_t>(c.data) % 16 == 0;
    };
    const bool f16 = aligned(a.k) && aligned(a.v);
    switch (a.dk * 1000 + tc) {
        case 64064: launch<64, 64>(a, f16, n_hgroups, gb, tt, stream); break;
        case 64032: launch<64, 32>(a, f16, n_hgroups, gb, tt, stream); break;
        case 128064: launch<128, 64>(a, f16, n_hgroups, gb, tt, stream); break;
        case 128032: launch<128, 32>(a, f16, n_hgroups, gb, tt, stream); break;
        case 256064: launch<256, 64>(a, f16, n_hgroups, gb, tt, stream); break;
        case 256032: launch<256, 32>(a, f16, n_hgroups, gb, tt, stream); break;
        default: throw UnsupportedError(cat("attention_mma: head dim ", a.dk, " with a key tile of ", tc));
    }
    if (a.n_splits > 1) attention_combine(a, stream);
}

}  // namespace strata::cuda

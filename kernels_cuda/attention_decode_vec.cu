// Flash-decoding over f16, q8_0 and q4_0 caches with head dims 64, 128 or 256 (the common
// cases), 8 elements per load group: the generic kernel (attention_decode.cu) reads one element
// per load with its address arithmetic and a type switch, and is bound by instructions, not
// bytes (a q8_0 cache at 4,096 cells read 36 GB/s on an H200). Same blocks as the generic kernel
// (one token, one kv head with up to 8 query heads, one split of the token's keys, tiles of 64
// cells); here LK = DK/8 lanes share one cell's keys (8 elements each, reduced by shuffles) and
// LV = DV/8 threads one cell's values; a thread has up to 4 such loads in flight (the kernel's
// comment says why not more).
// Each codec loads 8 consecutive elements of a row and dequantizes them as cache_value does.
#include <cuda_fp16.h>

#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 64;
constexpr int kG = kDecodeMaxGroup;

// f16 rows: one 16-byte load.
struct F16Codec {
    using Raw = uint4;
    static __device__ __forceinline__ Raw load(const CacheView& c, int64_t pos, int elem) {
        return *reinterpret_cast<const uint4*>(cache_row(c, pos) + static_cast<int64_t>(elem) * 2);
    }
    static __device__ __forceinline__ Raw zero() { return make_uint4(0, 0, 0, 0); }
    static __device__ __forceinline__ void unpack(const Raw& u, float* f) {
        const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float2 v = __half22float2(h[i]);
            f[2 * i] = v.x;
            f[2 * i + 1] = v.y;
        }
    }
};

// 8 bytes of a block starting 2 bytes into a 2-byte-aligned block: four 2-byte loads.
__device__ __forceinline__ uint2 load8_u16(const uint8_t* p) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    return make_uint2(static_cast<uint32_t>(h[0]) | static_cast<uint32_t>(h[1]) << 16,
                      static_cast<uint32_t>(h[2]) | static_cast<uint32_t>(h[3]) << 16);
}

struct QuantRaw {
    uint2 q;     // the 8 elements' bytes (q8_0) or nibble bytes (q4_0)
    uint16_t d;  // the block's f16 scale
    uint16_t hi; // q4_0: the elements are the high nibbles
};

// q8_0 (34-byte blocks: f16 scale, 32 int8).
struct Q8Codec {
    using Raw = QuantRaw;
    static __device__ __forceinline__ Raw load(const CacheView& c, int64_t pos, int elem) {
        const uint8_t* b = cache_row(c, pos) + (elem / 32) * 34;
        return QuantRaw{load8_u16(b + 2 + elem % 32), load_u16(b), 0};
    }
    static __device__ __forceinline__ Raw zero() { return QuantRaw{make_uint2(0, 0), 0, 0}; }
    static __device__ __forceinline__ void unpack(const Raw& r, float* f) {
        const float d = half_to_float(r.d);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const uint32_t w = i < 4 ? r.q.x : r.q.y;
            f[i] = mul_rn(static_cast<float>(static_cast<int8_t>((w >> (8 * (i % 4))) & 0xFF)), d);
        }
    }
};

// q4_0 (18-byte blocks: f16 scale, 16 bytes; element j < 16 the low nibble of byte j, j >= 16
// the high nibble of byte j - 16).
struct Q4Codec {
    using Raw = QuantRaw;
    static __device__ __forceinline__ Raw load(const CacheView& c, int64_t pos, int elem) {
        const uint8_t* b = cache_row(c, pos) + (elem / 32) * 18;
        const int j = elem % 32;
        return QuantRaw{load8_u16(b + 2 + j % 16), load_u16(b), static_cast<uint16_t>(j >= 16)};
    }
    static __device__ __forceinline__ Raw zero() { return QuantRaw{make_uint2(0, 0), 0, 0}; }
    static __device__ __forceinline__ void unpack(const Raw& r, float* f) {
        const float d = half_to_float(r.d);
        const int shift = r.hi ? 4 : 0;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const uint32_t w = i < 4 ? r.q.x : r.q.y;
            const int q = static_cast<int>((w >> (8 * (i % 4) + shift)) & 0xF);
            f[i] = mul_rn(d, static_cast<float>(q - 8));
        }
    }
};

// Scores of the tile's n cells (from ct) into sc[cell][head].
template <class C, int DK, int G>
__device__ __forceinline__ void score_tile(const AttentionLaunch& a, const CacheView& kc, int kvh, int gb, const float* qs, int64_t ct,
                                           int n, float inv_cap, float* sc) {
    constexpr int LK = DK / 8;                 // lanes per cell
    constexpr int CK = 32 / LK;                // cells per warp load
    constexpr int R0 = kTile / (kWarps * CK);  // loads per lane to cover a tile
    constexpr int R = R0 < 4 ? R0 : 4;         // loads in flight per lane (registers: see the kernel)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int part = lane % LK, sub = lane / LK;
    const int elem = kvh * DK + part * 8;
    for (int j0 = warp * CK * R; j0 < n; j0 += kWarps * CK * R) {
        typename C::Raw kr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int j = j0 + r * CK + sub;
            kr[r] = j < n ? C::load(kc, ct + j, elem) : C::zero();
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float kf[8];
            C::unpack(kr[r], kf);
            const int j = j0 + r * CK + sub;
#pragma unroll
            for (int g = 0; g < G; ++g) {
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

// Scales this thread's accumulators acc[head][8] by the tile's corr rc[head].
template <int G>
__device__ __forceinline__ void rescale(int gb, const float* rc, float (&acc)[G][8]) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
        if (g >= gb) break;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] *= rc[g];
    }
}

// H of this thread's value loads of a tile, from its r0-th: the cells vcg + (r0 + r)·CV of the
// tile's n (from ct) loaded, then their p·V added into acc[head][8] (its 8 value elements; p in
// sc[cell][head]).
template <class C, int H, int CV, int G>
__device__ __forceinline__ void accumulate_values(const CacheView& vc, int gb, int64_t ct, int n, int vcg, int velem,
                                                  int r0, const float* sc, float (&acc)[G][8]) {
    typename C::Raw vr[H];
#pragma unroll
    for (int r = 0; r < H; ++r) {
        const int j = vcg + (r0 + r) * CV;
        vr[r] = j < n ? C::load(vc, ct + j, velem) : C::zero();
    }
#pragma unroll
    for (int r = 0; r < H; ++r) {
        const int j = vcg + (r0 + r) * CV;
        if (j >= n) break;
        float vf[8];
        C::unpack(vr[r], vf);
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (g >= gb) break;
            const float p = sc[j * kG + g];
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[g][i] += p * vf[i];
        }
    }
}

// Per head g < gb (output row row0 + g): the CV cell groups' accumulators summed through red
// [CV][DV], then written (write_result).
template <int DV, int CV, int G>
__device__ __forceinline__ void write_heads(const AttentionLaunch& a, int64_t row0, int split, int gb, int vpart,
                                            int vcg, const float* rm, const float* rl, float* red,
                                            const float (&acc)[G][8]) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
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

// G: accumulator rows, at least the block's query heads (a block of one head keeps 8 registers
// of sums, not 64, and more blocks fit a multiprocessor).
// Registers decide the speed: a block holds one tile's loads at a time and waits on them, so
// the blocks resident per multiprocessor hide each other's latency. The values are loaded after
// the scores, and at most 4 key and 4 value loads per thread are in flight: a one-head block
// (G = 1) then fits 64 registers (q4_0: with one 8-byte spill) and 8 blocks share a
// multiprocessor (H200, Llama-2-7B shape at 8,192 cells: q8_0 109 -> 67 us, f16 72 -> 50 us;
// loading all a tile's values before its scores took 107-113 registers, 4 blocks per
// multiprocessor).
template <class C, int DK, int DV, int G>
__global__ void __launch_bounds__(kThreads, G == 1 ? 8 : 2) attention_decode_vec_kernel(AttentionLaunch a, int n_hgroups) {
    pdl_wait();
    constexpr int LV = DV / 8;       // threads per cell's values
    constexpr int CV = kThreads / LV;  // cells in parallel
    constexpr int RV = kTile / CV;   // value loads per thread per tile
    constexpr int VH = RV < 4 ? RV : 4;  // of them in flight at once (as score_tile's keys)
    __shared__ __align__(16) float qs[G * DK];
    __shared__ float sc[kTile * kG];
    __shared__ float rm[kG], rl[kG], rc[kG];
    __shared__ __align__(16) float red[CV * DV];
    DecodeBlock b(a, n_hgroups, kG);
    const int split = b.split, kvh = b.kvh, t = b.t, h0 = b.h0, gb = b.gb;
    const int tid = threadIdx.x;
    // q does not wait for the token's position (DecodeBlock's load): both loads are in flight
    // together, also in a block that then has no keys to take.
    const float* q_base = a.q.row(static_cast<int64_t>(t) * a.n_head + h0);  // heads of a token are rows in a row
    const uint64_t q_stride = a.q.rows.nb1;
    for (int i = tid; i < gb * DK; i += kThreads)
        qs[i] = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(q_base) + (i / DK) * q_stride)[i % DK];
    b.find_keys(a);
    if (!b.range.active) return;  // uniform over the block
    const int64_t c0 = b.range.c0, c1 = b.range.c1;
    const CacheView kc = token_cache(a.k, a.k_bases, t), vc = token_cache(a.v, a.v_bases, t);
    if (tid < kG) {
        rm[tid] = -CUDART_INF_F;
        rl[tid] = 0.0f;
    }
    __syncthreads();

    const int vpart = tid % LV, vcg = tid / LV;
    const int velem = kvh * DV + vpart * 8;
    float acc[G][8];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] = 0.0f;

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    for (int64_t ct = c0; ct < c1; ct += kTile) {
        const int n = c1 - ct < kTile ? static_cast<int>(c1 - ct) : kTile;
        score_tile<C, DK, G>(a, kc, kvh, gb, qs, ct, n, inv_cap, sc);
        __syncthreads();
        softmax_tile(gb, n, sc, rm, rl, rc);
        __syncthreads();
        rescale<G>(gb, rc, acc);
#pragma unroll
        for (int r0 = 0; r0 < RV; r0 += VH) accumulate_values<C, VH, CV, G>(vc, gb, ct, n, vcg, velem, r0, sc, acc);
        __syncthreads();  // sc and rc are rewritten by the next tile
    }

    // Per head: sum the CV cell groups' accumulators through shared memory and write.
    const int64_t row0 = static_cast<int64_t>(t) * a.n_head + h0;
    write_heads<DV, CV, G>(a, row0, split, gb, vpart, vcg, rm, rl, red, acc);
}

template <class C, int D, int G>
void launch(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    launch_pdl(attention_decode_vec_kernel<C, D, D, G>, grid, dim3(kThreads), 0, stream, a, n_hgroups);
    CUDA_CHECK_LAUNCH("attention_decode_vec_kernel");
}

// The accumulator rows for the block's query heads: 1, 2, 4 or 8.
template <class C, int D>
void launch(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    const int heads = a.n_head / a.n_head_kv;
    if (heads == 1) launch<C, D, 1>(a, n_hgroups, grid, stream);
    else if (heads == 2) launch<C, D, 2>(a, n_hgroups, grid, stream);
    else if (heads <= 4) launch<C, D, 4>(a, n_hgroups, grid, stream);
    else launch<C, D, kG>(a, n_hgroups, grid, stream);
}

template <class C>
bool launch_dims(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    switch (a.dk) {
        case 64: launch<C, 64>(a, n_hgroups, grid, stream); return true;
        case 128: launch<C, 128>(a, n_hgroups, grid, stream); return true;
        case 256: launch<C, 256>(a, n_hgroups, grid, stream); return true;
        default: return false;
    }
}

}  // namespace

bool attention_decode_vec(const AttentionLaunch& a, int n_hgroups, dim3 grid, cudaStream_t stream) {
    if (a.k.type != a.v.type || a.dk != a.dv || a.q.rows.ne1 < a.n_head) return false;  // q rows of a token evenly spaced
    // f16: 16-byte loads (cell rows and the caches' bases on 16 bytes); q8_0/q4_0: 2-byte loads.
    const auto aligned = [](const CacheView& c, unsigned bytes) {
        return c.nb1 % bytes == 0 && reinterpret_cast<uintptr_t>(c.data) % bytes == 0;
    };
    switch (a.k.type) {
        case GgmlType::F16:
            return aligned(a.k, 16) && aligned(a.v, 16) && launch_dims<F16Codec>(a, n_hgroups, grid, stream);
        case GgmlType::Q8_0:
            return aligned(a.k, 2) && aligned(a.v, 2) && launch_dims<Q8Codec>(a, n_hgroups, grid, stream);
        case GgmlType::Q4_0:
            return aligned(a.k, 2) && aligned(a.v, 2) && launch_dims<Q4Codec>(a, n_hgroups, grid, stream);
        default: return false;
    }
}

}  // namespace strata::cuda

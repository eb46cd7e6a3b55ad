// AVX-512 (BW + VNNI) dot products of Q4_K, Q5_K and Q6_K weights with Q8_K activations in the
// lane layouts of act_lanes.h. A super-block's weights are unpacked once into the four 64-byte
// vpdpbusd operands whose every int32 lane meets one sub-block, so each activation row costs
// four vpdpbusd for 256 weights; the lane sums are exact, then scaled by d·sc per lane in float
// (Q4_K/Q5_K: less dmin·m times the activation sub-block sums), times the row's block d, and
// accumulated in 16 float lanes, summed at the end: qdot_scalar_k.cpp's integer arithmetic,
// another float summation order. The weight unpacking is shared by up to 8 activation rows.
#include "kernels_cpu/qdot.h"

#include <array>
#include <type_traits>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#include "kernels_cpu/simd_f32_avx512.h"

namespace strata::cpu {
namespace {

using x86::f16;

using Lanes16 = std::array<int32_t, 16>;

inline __m512i load(const void* p) {
    return _mm512_loadu_si512(p);
}

inline __m512i load(const Lanes16& a) {
    return _mm512_loadu_si512(a.data());
}

inline __m512 to_float(__m512i v) {
    return _mm512_cvtepi32_ps(v);
}

// Σ over the four groups of one activation block: exact int32 per lane (unsigned weights,
// signed activations).
inline __m512i lane_sums(const __m512i (&w)[4], const BlockQ8KLanes& x) {
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p)
        s = _mm512_dpbusd_epi32(s, w[p], load(x.qs + 64 * p));
    return s;
}

// The loop of every kernel below: per weight super-block (prefetched Step::kAhead blocks on), its
// operands unpacked once (Step::unpack returns what the rows then need of the block), then
// acc[c] = Step::row(acc[c], operands, unpacked, x_c's block) for each of the C activation rows;
// each row's 16 lanes summed at the end.
template <typename Step, int C, typename Block>
inline void over_blocks(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8KLanes* xb[C];
    __m512 acc[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8KLanes*>(x.row(c));
        acc[c] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const Block& wb = w[b];
        x86::prefetch_ahead(&wb, Step::kAhead);
        __m512i wv[4];
        const typename Step::Unpacked unpacked = Step::unpack(wb, wv);
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            acc[c] = Step::row(acc[c], wv, unpacked, xb[c][b]);
    }
    for (int c = 0; c < C; ++c)
        out[c] = SimdAvx512::hsum(acc[c]);
}

// ---- Q4_K / Q5_K (Lanes::K4) ------------------------------------------------------------------
// Group p's operand: qword q = 2i + h (sub-block q) is qs[32i + 8p .. +7], low nibbles (h = 0)
// or high nibbles (h = 1): elements 32q + 8p + (0..7), as act_lanes.h's K4 order has them.
template <typename Block, bool HasHigh>
inline void unpack_k4(const Block& wb, __m512i (&w)[4]) {
    const __m512i lo = load(wb.qs), hi = load(wb.qs + 64);
    const __m512i nibble = _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0), low4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
        const __m512i pick = _mm512_set_epi64(12 + p, 12 + p, 8 + p, 8 + p, 4 + p, 4 + p, p, p);
        w[p] = _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutex2var_epi64(lo, pick, hi), nibble), low4);
        if constexpr (HasHigh) {  // bit q of qh[8p + l] is the fifth bit of sub-block q's element 8p + l
            int64_t qh;
            __builtin_memcpy(&qh, wb.qh + 8 * p, sizeof(qh));
            const __m512i bit = _mm512_set_epi64(0x8080808080808080, 0x4040404040404040, 0x2020202020202020,
                                                 0x1010101010101010, 0x0808080808080808, 0x0404040404040404,
                                                 0x0202020202020202, 0x0101010101010101);
            const __mmask64 set = _mm512_test_epi8_mask(_mm512_set1_epi64(qh), bit);
            w[p] = _mm512_mask_add_epi8(w[p], set, w[p], _mm512_set1_epi8(16));
        }
    }
}

template <typename Block, bool HasHigh>
struct K4Step {
    static constexpr int kAhead = 3;
    struct Unpacked {
        __m512 dsc, dmm;
    };
    static Unpacked unpack(const Block& wb, __m512i (&wv)[4]) {
        unpack_k4<Block, HasHigh>(wb, wv);
        const x86::ScalesMinsK4 sm = x86::unpack_scales_mins_k4(wb.scales);
        const __m128i sc8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.sc));
        // Lane L: d·sc[L/2]; dmin·m[L] for L < 8 against aux[L] (the lanes only need to add up).
        return {_mm512_mul_ps(to_float(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(sc8, sc8))), _mm512_set1_ps(f16(wb.d))),
                _mm512_mul_ps(to_float(_mm512_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sm.m)))),
                              _mm512_set1_ps(f16(wb.dmin)))};
    }
    static __m512 row(__m512 acc, const __m512i (&wv)[4], const Unpacked& u, const BlockQ8KLanes& xc) {
        __m512 t = _mm512_mul_ps(to_float(lane_sums(wv, xc)), u.dsc);
        t = _mm512_fnmadd_ps(u.dmm, _mm512_loadu_ps(xc.aux), t);
        return _mm512_fmadd_ps(t, _mm512_set1_ps(xc.aux[kLanesD]), acc);
    }
};

// ---- Q6_K (Lanes::K6) -------------------------------------------------------------------------
// Lane L = 4k + s of group p holds sub-block 4s + k, elements 4p .. 4p+3: the low (s even) or
// high (s odd) nibbles of ql dword 4k + p of the first (s < 2) or second 64 bytes, and 2-bit
// pair 2·(s%2) + k/2 of qh dword 8·(s/2) + 4·(k%2) + p (Q6_K's element order, quant/blocks.h).
struct Q6Maps {
    Lanes16 ql_word[4], qh_word[4];
    Lanes16 ql_shift, qh_shift, scale;
};

constexpr Q6Maps q6_maps() {
    Q6Maps m{};
    for (int lane = 0; lane < 16; ++lane) {
        const int k = lane / 4, s = lane % 4;
        for (int p = 0; p < 4; ++p) {
            m.ql_word[p][lane] = 16 * (s / 2) + 4 * k + p;
            m.qh_word[p][lane] = 8 * (s / 2) + 4 * (k % 2) + p;
        }
        m.ql_shift[lane] = 4 * (s % 2);
        m.qh_shift[lane] = 4 * (s % 2) + 2 * (k / 2);
        m.scale[lane] = 4 * s + k;
    }
    return m;
}

alignas(64) constexpr Q6Maps kQ6 = q6_maps();

// The four operands as signed weights q − 32; returns −128·Σ(q − 32) per lane, which takes
// back the +128 of the unsigned activations.
inline __m512i unpack_q6_k(const BlockQ6_K& wb, __m512i (&w)[4]) {
    const __m512i ql0 = load(wb.ql), ql1 = load(wb.ql + 64), qh = load(wb.qh);
    const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
    __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
        const __m512i lo = _mm512_and_si512(
            _mm512_srlv_epi32(_mm512_permutex2var_epi32(ql0, load(kQ6.ql_word[p]), ql1), load(kQ6.ql_shift)), low4);
        const __m512i hi = _mm512_and_si512(
            _mm512_srlv_epi32(_mm512_permutexvar_epi32(load(kQ6.qh_word[p]), qh), load(kQ6.qh_shift)), low2);
        w[p] = _mm512_sub_epi8(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi8(32));
        sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(static_cast<char>(0x80)), w[p]);
    }
    return _mm512_sub_epi32(_mm512_setzero_si512(), sum);
}

struct Q6Step {
    static constexpr int kAhead = 4;
    struct Unpacked {
        __m512i bias;
        __m512 dsc;
    };
    static Unpacked unpack(const BlockQ6_K& wb, __m512i (&wv)[4]) {
        const __m512i bias = unpack_q6_k(wb, wv);
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
        return {bias, _mm512_mul_ps(to_float(_mm512_permutexvar_epi32(load(kQ6.scale), sc)), _mm512_set1_ps(f16(wb.d)))};
    }
    static __m512 row(__m512 acc, const __m512i (&wv)[4], const Unpacked& u, const BlockQ8KLanes& xc) {
        __m512i s = u.bias;
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p)  // unsigned activations, signed weights
            s = _mm512_dpbusd_epi32(s, load(xc.qs + 64 * p), wv[p]);
        return _mm512_fmadd_ps(to_float(s), _mm512_mul_ps(u.dsc, _mm512_set1_ps(xc.aux[kLanesD])), acc);
    }
};

template <typename Block, int C>
void dot_cols(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    if constexpr (std::is_same_v<Block, BlockQ6_K>)
        over_blocks<Q6Step, C>(w, x, n_blocks, out);
    else
        over_blocks<K4Step<Block, std::is_same_v<Block, BlockQ5_K>>, C>(w, x, n_blocks, out);
}

template <typename Block>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const Block*>(w);
    with_group_size(n_cols, [&](auto c) { dot_cols<Block, decltype(c)::value>(wb, x, n_blocks, out); });
}

}  // namespace

QDotFn qdot_avx512_k(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_K: return dot_rows<BlockQ4_K>;
        case GgmlType::Q5_K: return dot_rows<BlockQ5_K>;
        case GgmlType::Q6_K: return dot_rows<BlockQ6_K>;
        default: return nullptr;
    }
}

QuantizeFn qdot_avx512_k_acts(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: return quantize_q8_k_lanes4;
        case GgmlType::Q6_K: return quantize_q8_k_lanes6;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options

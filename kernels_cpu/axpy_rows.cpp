// y += Σ c·(row segment) over up to four rows (sparse_rows.h), per kernel variant: the sparse
// accumulate of ffn_down's neuron-major rows, Q8_0 (8.5 bits per weight) or Q4_0 (4.5). Each
// element adds (c·d)·q of each row in turn in f32 (one FMA on the SIMD paths, a multiply and an
// add in the scalar one), so variants differ by one rounding per row at most; the AVX2 and
// AVX-512 Q4_0 kernels for four rows add (c·d)·(q + 8) and take 8·Σ c·d off once (a few roundings per group
// of rows; the tests bound every variant against a double reference). One template per variant;
// a block type says how its 32 quants unpack to signed bytes.
#include <cstring>

#include "kernels_cpu/sparse_rows.h"
#include "quant/blocks.h"
#include "quant/half.h"

#if defined(__x86_64__)
// As in simd_x86.h: GCC 12's AVX-512 headers warn inside themselves at every inlined use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace strata::cpu {
namespace {

// Q8_0: qs[j] is element j.
struct Q8Rows {
    using Block = BlockQ8_0;
    static int quant(const Block& b, int j) { return b.qs[j]; }
#if defined(__x86_64__)
    __attribute__((target("avx2"))) static void unpack(const Block& b, __m128i& lo, __m128i& hi) {
        std::memcpy(&lo, b.qs, 16);
        std::memcpy(&hi, b.qs + 16, 16);
    }
#endif
};

// Q4_0: element j < 16 is the low nibble of qs[j] - 8, element j + 16 its high nibble - 8.
struct Q4Rows {
    using Block = BlockQ4_0;
    static int quant(const Block& b, int j) { return (j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4)) - 8; }
#if defined(__x86_64__)
    __attribute__((target("avx2"))) static void unpack(const Block& b, __m128i& lo, __m128i& hi) {
        __m128i q;
        std::memcpy(&q, b.qs, 16);
        const __m128i mask = _mm_set1_epi8(0xF), eight = _mm_set1_epi8(8);
        lo = _mm_sub_epi8(_mm_and_si128(q, mask), eight);
        hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), mask), eight);
    }
#endif
};

// Rows are added one after another for each element, in the same order on every variant.
template <class R>
void axpy_scalar(const uint8_t* const* rows, const float* c, int n_rows, int64_t n_blocks, float* y,
                 const uint8_t* const* /*next*/) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const typename R::Block*>(rows[r])[i];
            const float d = c[r] * fp16_to_fp32(b.d);
            for (int j = 0; j < 32; ++j) y[j] += d * static_cast<float>(R::quant(b, j));
        }
    }
}

#if defined(__x86_64__)
// Block i of each next row into L1 (sparse_rows.h); a block shares its line with its neighbours
// (34 or 18 bytes), so some of these ask for a line already asked for, which costs one uop.
// always_inline: GCC does not inline a plain function into the target("avx…") kernels, and then
// drops the call as having no effect (a prefetch is none), prefetches and all.
template <class R>
__attribute__((always_inline)) inline void prefetch_block(const uint8_t* const* next, int n_rows, int64_t i) {
    if (next == nullptr) return;
    for (int r = 0; r < n_rows; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(next[r] + i * sizeof(typename R::Block)), _MM_HINT_T0);
}

template <class R>
__attribute__((target("avx2,fma,f16c"))) void axpy_avx2(const uint8_t* const* rows, const float* c, int n_rows,
                                                           int64_t n_blocks, float* y, const uint8_t* const* next) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        prefetch_block<R>(next, n_rows, i);
        __m256 acc[4] = {_mm256_loadu_ps(y), _mm256_loadu_ps(y + 8), _mm256_loadu_ps(y + 16), _mm256_loadu_ps(y + 24)};
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const typename R::Block*>(rows[r])[i];
            const __m256 d = _mm256_set1_ps(c[r] * _cvtsh_ss(b.d));
            __m128i lo, hi;
            R::unpack(b, lo, hi);
            const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
            for (int j = 0; j < 4; ++j) {
                acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[j])), acc[j]);
            }
        }
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, acc[j]);
    }
}

template <class R>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"))) void axpy_avx512(const uint8_t* const* rows,
                                                                                 const float* c, int n_rows,
                                                                                 int64_t n_blocks, float* y,
                                                                                 const uint8_t* const* next) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        prefetch_block<R>(next, n_rows, i);
        __m512 lo = _mm512_loadu_ps(y), hi = _mm512_loadu_ps(y + 16);
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const typename R::Block*>(rows[r])[i];
            const __m512 d = _mm512_set1_ps(c[r] * _cvtsh_ss(b.d));
            __m128i ql, qh;
            R::unpack(b, ql, qh);
            lo = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ql)), lo);
            hi = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(qh)), hi);
        }
        _mm512_storeu_ps(y, lo);
        _mm512_storeu_ps(y + 16, hi);
    }
}

// The four rows' c·d (lanes 0..3) from the blocks' f16 scales, and 8·Σ c·d.
__attribute__((target("avx2,f16c"), always_inline)) inline __m128 q4_scales(const BlockQ4_0* const* blocks,
                                                                           __m128 coef, float& bias) {
    __m128i dh = _mm_cvtsi32_si128(blocks[0]->d);
    dh = _mm_insert_epi16(dh, blocks[1]->d, 1);
    dh = _mm_insert_epi16(dh, blocks[2]->d, 2);
    dh = _mm_insert_epi16(dh, blocks[3]->d, 3);
    const __m128 s = _mm_mul_ps(_mm_cvtph_ps(dh), coef);
    __m128 sum = _mm_add_ps(s, _mm_movehl_ps(s, s));
    sum = _mm_add_ss(sum, _mm_shuffle_ps(sum, sum, 1));
    bias = 8.0f * _mm_cvtss_f32(sum);
    return s;
}

// The AVX2 twin of axpy4_avx512_q4 below: eight lanes, so a row's 32 nibbles are widened from
// two 8-byte halves, each giving its low nibbles (elements j) and its high ones (j + 16).
__attribute__((target("avx2,fma,f16c"))) void axpy4_avx2_q4(const uint8_t* const* rows, const float* c, int n_rows,
                                                            int64_t n_blocks, float* y, const uint8_t* const* next) {
    if (n_rows != 4) {
        axpy_avx2<Q4Rows>(rows, c, n_rows, n_blocks, y, next);
        return;
    }
    const BlockQ4_0* base[4] = {reinterpret_cast<const BlockQ4_0*>(rows[0]), reinterpret_cast<const BlockQ4_0*>(rows[1]),
                                reinterpret_cast<const BlockQ4_0*>(rows[2]), reinterpret_cast<const BlockQ4_0*>(rows[3])};
    const __m128 coef = _mm_loadu_ps(c);
    const __m256i low4 = _mm256_set1_epi32(0xF);
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        prefetch_block<Q4Rows>(next, 4, i);
        const BlockQ4_0* blocks[4] = {base[0] + i, base[1] + i, base[2] + i, base[3] + i};
        float bias = 0;
        const __m128 s = q4_scales(blocks, coef, bias);
        alignas(16) float sc[4];
        _mm_store_ps(sc, s);
        __m256 acc[4] = {_mm256_loadu_ps(y), _mm256_loadu_ps(y + 8), _mm256_loadu_ps(y + 16), _mm256_loadu_ps(y + 24)};
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const __m256 d = _mm256_set1_ps(sc[r]);
            __m128i raw;
            std::memcpy(&raw, blocks[r]->qs, 16);
            const __m256i q0 = _mm256_cvtepu8_epi32(raw), q1 = _mm256_cvtepu8_epi32(_mm_srli_si128(raw, 8));
            acc[0] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(q0, low4)), acc[0]);
            acc[1] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(q1, low4)), acc[1]);
            acc[2] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_srli_epi32(q0, 4)), acc[2]);
            acc[3] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_srli_epi32(q1, 4)), acc[3]);
        }
        const __m256 vb = _mm256_set1_ps(bias);
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, _mm256_sub_ps(acc[j], vb));
    }
}

// Q4_0, four rows (every call but a group's last): each element adds c·d·q with q the unsigned
// nibble (0..15), and 8·Σ c·d is taken off the block once, so a row costs one widening load, a
// mask, a shift, two converts and two FMAs per block (the sign-extending unpack above takes
// eight operations), and the four rows' scales are converted and scaled together. In L2 on one
// core: 15.7 against 12.1 G weights/s. Other row counts take axpy_avx512<Q4Rows>.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"))) void axpy4_avx512_q4(const uint8_t* const* rows,
                                                                                     const float* c, int n_rows,
                                                                                     int64_t n_blocks, float* y,
                                                                                     const uint8_t* const* next) {
    if (n_rows != 4) {
        axpy_avx512<Q4Rows>(rows, c, n_rows, n_blocks, y, next);
        return;
    }
    const auto* b0 = reinterpret_cast<const BlockQ4_0*>(rows[0]);
    const auto* b1 = reinterpret_cast<const BlockQ4_0*>(rows[1]);
    const auto* b2 = reinterpret_cast<const BlockQ4_0*>(rows[2]);
    const auto* b3 = reinterpret_cast<const BlockQ4_0*>(rows[3]);
    const __m128 coef = _mm_loadu_ps(c);
    const __m512i low4 = _mm512_set1_epi32(0xF);
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        prefetch_block<Q4Rows>(next, 4, i);
        const BlockQ4_0* blocks[4] = {b0 + i, b1 + i, b2 + i, b3 + i};
        float sum = 0;
        const __m128 s = q4_scales(blocks, coef, sum);  // c·d of the four rows
        const __m512 bias = _mm512_set1_ps(sum);
        const __m512 s4 = _mm512_broadcast_f32x4(s);
        __m512 lo = _mm512_loadu_ps(y), hi = _mm512_loadu_ps(y + 16);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const __m512 d = _mm512_permutexvar_ps(_mm512_set1_epi32(r), s4);
            __m128i raw;
            std::memcpy(&raw, blocks[r]->qs, 16);
            const __m512i q = _mm512_cvtepu8_epi32(raw);
            lo = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(q, low4)), lo);
            hi = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), hi);
        }
        _mm512_storeu_ps(y, _mm512_sub_ps(lo, bias));
        _mm512_storeu_ps(y + 16, _mm512_sub_ps(hi, bias));
    }
}
#endif

template <class R>
AxpyFn find_for(KernelVariant v) {
    if (!kernel_variant_supported(v)) return nullptr;
    switch (v) {
        case KernelVariant::Dequant:
        case KernelVariant::Scalar: return axpy_scalar<R>;
#if defined(__x86_64__)
        case KernelVariant::Avx2: return axpy_avx2<R>;
        case KernelVariant::Avx512: return axpy_avx512<R>;
#endif
        default: return nullptr;
    }
}

}  // namespace

AxpyFn find_axpy(GgmlType type, KernelVariant v) {
    if (type == GgmlType::Q8_0) return find_for<Q8Rows>(v);
    if (type == GgmlType::Q4_0) {
#if defined(__x86_64__)
        if (v == KernelVariant::Avx512 && kernel_variant_supported(v)) return axpy4_avx512_q4;
        if (v == KernelVariant::Avx2 && kernel_variant_supported(v)) return axpy4_avx2_q4;
#endif
        return find_for<Q4Rows>(v);
    }
    return nullptr;
}

}  // namespace strata::cpu

// Internal to kernels_cpu: the attention chunk (attention_chunk.h) over a vector type S, for
// K/V caches in f32, f16, q8_0 or q4_0 with head sizes a multiple of S::W. Each cell's K head is
// converted in registers W values at a time and dotted with every query head of the group at
// once (up to kMaxHeads per pass), so a GQA group reads its KV head once; the softmax and the
// P·V accumulation are vectorised over cells and head dims. Instantiated in row_ops_avx2.cpp /
// row_ops_avx512.cpp after row_ops_simd.h.
#pragma once

#include <limits>
#include <vector>

#include "kernels_cpu/attention_chunk.h"
#include "kernels_cpu/row_ops_simd.h"

namespace strata::cpu {
namespace {  // per-ISA instantiations must not merge (simd_f32_avx2.h)

constexpr int kMaxHeads = 8;  // query heads per pass: their accumulators stay in registers

// The row holding position pos (cache_cell: the cache may be a ring).
inline const uint8_t* cache_row(const Tensor& t, int64_t pos) {
    return static_cast<const uint8_t*>(t.data) + static_cast<uint64_t>(cache_cell(t, pos)) * t.nb[1];
}

// scores[h·stride + c] = (q_h · k_c)·scale for G heads and cells [c0, c1).
template <class S, class L, int G>
void qk_scores(const AttentionChunk& a, int h0, float* scores, int64_t stride) {
    using V = typename S::V;
    const int64_t e0 = a.kv_head * a.dk;
    const float* q[G];
    for (int h = 0; h < G; ++h)
        q[h] = a.q[h0 + h];
    for (int64_t c = a.c0; c < a.c1; ++c) {
        const uint8_t* row = cache_row(*a.k_cache, c);
        if (c + 4 < a.c1) S::prefetch(cache_row(*a.k_cache, c + 4));
        V acc[G];
        for (int h = 0; h < G; ++h)
            acc[h] = S::zero();
        for (int64_t i = 0; i < a.dk; i += S::W) {
            const V k = L::template load<S>(row, e0 + i);
            for (int h = 0; h < G; ++h)
                acc[h] = S::fma(k, S::load(q[h] + i), acc[h]);
        }
        for (int h = 0; h < G; ++h)
            scores[(h0 + h) * stride + (c - a.c0)] = S::hsum(acc[h]) * a.scale;
    }
}

template <class S, class L>
void qk_scores_heads(const AttentionChunk& a, float* scores, int64_t stride) {
    for (int h0 = 0; h0 < a.n_q; h0 += kMaxHeads) {
        switch (a.n_q - h0 < kMaxHeads ? a.n_q - h0 : kMaxHeads) {
            case 1: qk_scores<S, L, 1>(a, h0, scores, stride); break;
            case 2: qk_scores<S, L, 2>(a, h0, scores, stride); break;
            case 3: qk_scores<S, L, 3>(a, h0, scores, stride); break;
            case 4: qk_scores<S, L, 4>(a, h0, scores, stride); break;
            case 5: qk_scores<S, L, 5>(a, h0, scores, stride); break;
            case 6: qk_scores<S, L, 6>(a, h0, scores, stride); break;
            case 7: qk_scores<S, L, 7>(a, h0, scores, stride); break;
            default: qk_scores<S, L, 8>(a, h0, scores, stride); break;
        }
    }
}

// o_h += p_h[c]·v_c over the chunk's cells, every head per converted V vector.
template <class S, class L>
void pv_accumulate(const AttentionChunk& a, const float* p, int64_t stride) {
    const int64_t e0 = a.kv_head * a.dv;
    for (int64_t h = 0; h < a.n_q; ++h) {
        for (int64_t i = 0; i < a.dv; i += S::W)
            S::store(a.o + h * a.dv + i, S::zero());
    }
    for (int64_t c = a.c0; c < a.c1; ++c) {
        const uint8_t* row = cache_row(*a.v_cache, c);
        if (c + 4 < a.c1) S::prefetch(cache_row(*a.v_cache, c + 4));
        for (int64_t i = 0; i < a.dv; i += S::W) {
            const typename S::V v = L::template load<S>(row, e0 + i);
            for (int64_t h = 0; h < a.n_q; ++h) {
                float* o = a.o + h * a.dv + i;
                S::store(o, S::fma(S::set1(p[h * stride + (c - a.c0)]), v, S::load(o)));
            }
        }
    }
}

// In place: s = cap·tanh(s/cap) (cap > 0), then m = max s, s = exp(s − m), l = Σ s.
template <class S>
void softmax_row(float* s, int64_t n, float cap, float& m, float& l) {
    using V = typename S::V;
    constexpr int W = S::W;
    if (cap > 0.0f) simd_softcap<S>(s, cap, n);
    V vm = S::set1(-std::numeric_limits<float>::infinity());
    int64_t i = 0;
    for (; i + W <= n; i += W)
        vm = S::max(vm, S::load(s + i));
    float mx = S::hmax(vm);
    for (int64_t j = i; j < n; ++j)
        mx = s[j] > mx ? s[j] : mx;
    const V vmx = S::set1(mx);
    map1<S>(s, s, n, [vmx](V x) { return simd_exp<S>(S::sub(x, vmx)); });
    V vl = S::zero();
    for (i = 0; i + W <= n; i += W)
        vl = S::add(vl, S::load(s + i));
    float sum = S::hsum(vl);
    for (int64_t j = i; j < n; ++j)
        sum += s[j];
    m = mx;
    l = sum;
}

template <class S>
bool simd_attention_supports(GgmlType k_type, GgmlType v_type, int64_t dk, int64_t dv) {
    auto ok = [](GgmlType t) {
        return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q8_0 ||
               t == GgmlType::Q4_0;
    };
    return ok(k_type) && ok(v_type) && dk % S::W == 0 && dv % S::W == 0;
}

template <class S, template <class, class> class Fn, class... Args>
void with_loader(GgmlType type, Args&&... args) {
    switch (type) {
        case GgmlType::F32: Fn<S, LoadF32>::run(args...); break;
        case GgmlType::F16: Fn<S, LoadF16>::run(args...); break;
        case GgmlType::Q8_0: Fn<S, LoadQ8_0>::run(args...); break;
        default: Fn<S, LoadQ4_0>::run(args...); break;  // simd_attention_supports: Q4_0
    }
}

template <class S, class L>
struct QkStep {
    static void run(const AttentionChunk& a, float* s, int64_t n) { qk_scores_heads<S, L>(a, s, n); }
};
template <class S, class L>
struct PvStep {
    static void run(const AttentionChunk& a, float* s, int64_t n) { pv_accumulate<S, L>(a, s, n); }
};

template <class S>
void simd_attention_chunk(const AttentionChunk& a) {
    const int64_t n = a.c1 - a.c0;
    // [n_q][n] scores then probabilities; thread_local: one chunk per call of the OpenMP loop.
    thread_local std::vector<float> scores;
    scores.resize(static_cast<size_t>(a.n_q * n));
    with_loader<S, QkStep>(a.k_cache->type, a, scores.data(), n);
    for (int h = 0; h < a.n_q; ++h)
        softmax_row<S>(scores.data() + h * n, n, a.softcap, a.m[h], a.l[h]);
    with_loader<S, PvStep>(a.v_cache->type, a, scores.data(), n);
}

}  // namespace
}  // namespace strata::cpu

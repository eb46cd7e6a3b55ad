// Internal to kernels_cpu: the row-op kernels (row_ops.h) written once over a vector type S
// (simd_f32_avx2.h, simd_f32_avx512.h) and instantiated in row_ops_avx2.cpp / row_ops_avx512.cpp
// under their target pragmas. A row's last n % W elements go through the same vector code on a
// padded copy, so each element's result depends on its inputs only.
#pragma once

#include "kernels_cpu/simd_math.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {  // per-ISA instantiations must not merge (simd_f32_avx2.h)

// y[i] = f(x[i]) for a V → V function f; y may alias x.
template <class S, class F>
inline void map1(const float* x, float* y, int64_t n, F f) {
    constexpr int W = S::W;
    int64_t i = 0;
    for (; i + W <= n; i += W)
        S::store(y + i, f(S::load(x + i)));
    if (i == n) return;
    float a[W] = {}, r[W];
    for (int64_t j = i; j < n; ++j)
        a[j - i] = x[j];
    S::store(r, f(S::load(a)));
    for (int64_t j = i; j < n; ++j)
        y[j] = r[j - i];
}

// y[i] = f(a[i], b[i]); y may alias a or b.
template <class S, class F>
inline void map2(const float* a, const float* b, float* y, int64_t n, F f) {
    constexpr int W = S::W;
    int64_t i = 0;
    for (; i + W <= n; i += W)
        S::store(y + i, f(S::load(a + i), S::load(b + i)));
    if (i == n) return;
    float pa[W] = {}, pb[W] = {}, r[W];
    for (int64_t j = i; j < n; ++j) {
        pa[j - i] = a[j];
        pb[j - i] = b[j];
    }
    S::store(r, f(S::load(pa), S::load(pb)));
    for (int64_t j = i; j < n; ++j)
        y[j] = r[j - i];
}

// Squares of x in double, 4 vector accumulators (2W lanes each pair) summed in a fixed order.
template <class S>
double simd_sum_squares(const float* x, int64_t n) {
    constexpr int W = S::W;
    typename S::D a0 = S::zero_d(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        S::add_squares(a0, a1, S::load(x + i));
        S::add_squares(a2, a3, S::load(x + i + W));
    }
    if (i + W <= n) {
        S::add_squares(a0, a1, S::load(x + i));
        i += W;
    }
    if (i < n) {
        float pad[W] = {};  // zeros add nothing
        for (int64_t j = i; j < n; ++j)
            pad[j - i] = x[j];
        S::add_squares(a2, a3, S::load(pad));
    }
    return S::hsum_d(S::add_d(S::add_d(a0, a2), S::add_d(a1, a3)));
}

// (x·inv)·w rounds like the scalar table, so only the sum of squares differs between variants.
template <class S>
void simd_scale_mul(const float* x, const float* w, float inv, float* y, int64_t n) {
    const typename S::V vi = S::set1(inv);
    if (w != nullptr) {
        map2<S>(x, w, y, n, [vi](auto a, auto b) { return S::mul(S::mul(a, vi), b); });
    } else {
        map1<S>(x, y, n, [vi](auto a) { return S::mul(a, vi); });
    }
}

// NORM: even lanes x0·c − x1·s, odd lanes x1·c + x0·s, with (c, s) duplicated per pair.
template <class S>
typename S::V rotate_pairs(typename S::V v, typename S::V cc, typename S::V ss) {
    return S::fmaddsub(v, cc, S::mul(S::swap_pairs(v), ss));
}

template <class S>
void simd_rope_norm(float* x, const float* c, const float* s, int64_t half) {
    constexpr int W = S::W, P = W / 2;  // P pairs per vector
    constexpr auto rotate = rotate_pairs<S>;
    int64_t i = 0;
    for (; i + P <= half; i += P)
        S::store(x + 2 * i, rotate(S::load(x + 2 * i), S::load_dup_pairs(c + i),
                                   S::load_dup_pairs(s + i)));
    if (i == half) return;
    float px[W] = {}, pc[P] = {}, ps[P] = {};
    for (int64_t j = i; j < half; ++j) {
        px[2 * (j - i)] = x[2 * j];
        px[2 * (j - i) + 1] = x[2 * j + 1];
        pc[j - i] = c[j];
        ps[j - i] = s[j];
    }
    S::store(px, rotate(S::load(px), S::load_dup_pairs(pc), S::load_dup_pairs(ps)));
    for (int64_t j = i; j < half; ++j) {
        x[2 * j] = px[2 * (j - i)];
        x[2 * j + 1] = px[2 * (j - i) + 1];
    }
}

// NEOX: a' = a·c − b·s, b' = a·s + b·c with a = x[i], b = x[i + half].
template <class S>
void simd_rope_neox(float* x, const float* c, const float* s, int64_t half) {
    constexpr int W = S::W;
    auto step = [](float* a, float* b, const float* cp, const float* sp) {
        const typename S::V va = S::load(a), vb = S::load(b);
        const typename S::V vc = S::load(cp), vs = S::load(sp);
        S::store(a, S::fnma(vb, vs, S::mul(va, vc)));
        S::store(b, S::fma(va, vs, S::mul(vb, vc)));
    };
    int64_t i = 0;
    for (; i + W <= half; i += W)
        step(x + i, x + half + i, c + i, s + i);
    if (i == half) return;
    float pa[W] = {}, pb[W] = {}, pc[W] = {}, ps[W] = {};
    for (int64_t j = i; j < half; ++j) {
        pa[j - i] = x[j];
        pb[j - i] = x[half + j];
        pc[j - i] = c[j];
        ps[j - i] = s[j];
    }
    step(pa, pb, pc, ps);
    for (int64_t j = i; j < half; ++j) {
        x[j] = pa[j - i];
        x[half + j] = pb[j - i];
    }
}

template <class S>
void simd_add(const float* a, const float* b, float* y, int64_t n) {
    map2<S>(a, b, y, n, [](auto u, auto v) { return S::add(u, v); });
}

template <class S>
void simd_scale(float* x, float s, int64_t n) {
    const typename S::V vs = S::set1(s);
    map1<S>(x, x, n, [vs](auto v) { return S::mul(v, vs); });
}

template <class S>
void simd_softcap(float* x, float cap, int64_t n) {
    const typename S::V vc = S::set1(cap), vi = S::set1(1.0f / cap);
    map1<S>(x, x, n, [vc, vi](auto v) { return S::mul(vc, simd_tanh<S>(S::mul(v, vi))); });
}

template <class S>
void simd_silu_mul(const float* g, const float* u, float* y, int64_t n) {
    map2<S>(g, u, y, n, [](auto a, auto b) { return S::mul(simd_silu<S>(a), b); });
}

template <class S>
void simd_gelu_tanh_mul(const float* g, const float* u, float* y, int64_t n) {
    map2<S>(g, u, y, n, [](auto a, auto b) { return S::mul(simd_gelu_tanh<S>(a), b); });
}

// Row conversions. f16 tails go through a padded copy; q8_0 / q4_0 rows are whole blocks
// (quant/'s contract) and W divides the 32-element block.
template <class S>
void simd_f16_to_f32(const void* src, float* dst, int64_t n) {
    constexpr int W = S::W;
    const auto* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + W <= n; i += W)
        S::store(dst + i, S::load_f16(h + i));
    if (i == n) return;
    uint16_t ph[W] = {};
    float r[W];
    for (int64_t j = i; j < n; ++j)
        ph[j - i] = h[j];
    S::store(r, S::load_f16(ph));
    for (int64_t j = i; j < n; ++j)
        dst[j] = r[j - i];
}

template <class S>
void simd_f32_to_f16(const float* src, void* dst, int64_t n) {
    constexpr int W = S::W;
    auto* h = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + W <= n; i += W)
        S::store_f16(h + i, S::load(src + i));
    if (i == n) return;
    float pf[W] = {};
    uint16_t r[W];
    for (int64_t j = i; j < n; ++j)
        pf[j - i] = src[j];
    S::store_f16(r, S::load(pf));
    for (int64_t j = i; j < n; ++j)
        h[j] = r[j - i];
}

// W values of elements [e, e + W) of a row of blocks, as f32 (e a multiple of W). One loader
// per cache type: attention and get_rows read K/V rows through these.
struct LoadF32 {
    template <class S>
    static typename S::V load(const uint8_t* row, int64_t e) {
        return S::load(reinterpret_cast<const float*>(row) + e);
    }
};
struct LoadF16 {
    template <class S>
    static typename S::V load(const uint8_t* row, int64_t e) {
        return S::load_f16(reinterpret_cast<const uint16_t*>(row) + e);
    }
};
struct LoadQ8_0 {
    template <class S>
    static typename S::V load(const uint8_t* row, int64_t e) {
        const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + e / kQk32;
        return S::mul(S::load_i8(b->qs + e % kQk32), S::set1(x86::f16(b->d)));
    }
};
struct LoadQ4_0 {  // element j < 16 of a block is qs[j]'s low nibble, j >= 16 qs[j − 16]'s high
    template <class S>
    static typename S::V load(const uint8_t* row, int64_t e) {
        const auto* b = reinterpret_cast<const BlockQ4_0*>(row) + e / kQk32;
        const int64_t j = e % kQk32;
        return S::mul(S::load_q4(b->qs + j % 16, j >= 16), S::set1(x86::f16(b->d)));
    }
};

template <class S, class L>
void simd_dequantize_row(const void* src, float* dst, int64_t n) {
    const auto* row = static_cast<const uint8_t*>(src);
    for (int64_t e = 0; e < n; e += S::W)
        S::store(dst + e, L::template load<S>(row, e));
}

}  // namespace
}  // namespace strata::cpu

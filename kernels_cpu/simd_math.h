// Internal to kernels_cpu: exp, tanh and the sigmoid-form activations over the vector types of
// simd_f32_avx2.h / simd_f32_avx512.h (S below). Include after one of them, under its pragma.
// Accuracy (tests/kernels_cpu/simd_math_test.cpp measures it against double):
//  - exp: Cephes' degree-6 polynomial after x = n·ln2 + r; max relative error 2e-7 on
//    [-87.3, 88]. Below -87.34 (and for -inf) it returns 0; above 88 it returns e^88 ≈ 1.65e38
//    instead of overflowing (callers only need "huge").
//  - tanh: odd polynomial on |x| < 0.625 (no cancellation near 0), 1 − 2/(e^{2|x|} + 1) above;
//    max relative error 3e-7.
//  - silu and gelu_tanh go through x / (1 + e^{−z}): 0.5·(1 + tanh(u)) = sigmoid(2u) has no
//    cancellation where tanh(u) → −1, so the relative error stays ~3e-7 for every x.
#pragma once

namespace strata::cpu {
namespace {  // per-ISA instantiations must not merge (simd_f32_avx2.h)

template <class S>
typename S::V simd_exp(typename S::V x) {
    using V = typename S::V;
    const V lo = S::set1(-87.33654475f);  // ln(2^-126): n stays a normal exponent
    const V xc = S::min(S::max(x, lo), S::set1(88.0f));
    const V n = S::round(S::mul(xc, S::set1(1.44269504089f)));
    V r = S::fnma(n, S::set1(0.693359375f), xc);  // ln2 split in two: r exact to ~1 ulp
    r = S::fnma(n, S::set1(-2.12194440e-4f), r);
    V p = S::set1(1.9875691500e-4f);
    p = S::fma(p, r, S::set1(1.3981999507e-3f));
    p = S::fma(p, r, S::set1(8.3334519073e-3f));
    p = S::fma(p, r, S::set1(4.1665795894e-2f));
    p = S::fma(p, r, S::set1(1.6666665459e-1f));
    p = S::fma(p, r, S::set1(5.0000001201e-1f));
    const V y = S::add(S::fma(p, S::mul(r, r), r), S::set1(1.0f));
    return S::select_lt(x, lo, S::zero(), S::mul(y, S::pow2i(n)));
}

template <class S>
typename S::V simd_tanh(typename S::V x) {
    using V = typename S::V;
    const V a = S::abs(x);
    const V z = S::mul(x, x);
    V p = S::set1(-5.70498872745e-3f);
    p = S::fma(p, z, S::set1(2.06390887954e-2f));
    p = S::fma(p, z, S::set1(-5.37397155531e-2f));
    p = S::fma(p, z, S::set1(1.33314422036e-1f));
    p = S::fma(p, z, S::set1(-3.33332819422e-1f));
    const V small = S::fma(S::mul(p, z), x, x);
    const V e = simd_exp<S>(S::add(a, a));
    const V big = S::sub(S::set1(1.0f), S::div(S::set1(2.0f), S::add(e, S::set1(1.0f))));
    return S::select_lt(a, S::set1(0.625f), small, S::bit_xor(big, S::sign_bits(x)));
}

// x / (1 + e^{-z})
template <class S>
typename S::V simd_x_sigmoid(typename S::V x, typename S::V z) {
    const typename S::V e = simd_exp<S>(S::sub(S::zero(), z));
    return S::div(x, S::add(S::set1(1.0f), e));
}

template <class S>
typename S::V simd_silu(typename S::V x) {
    return simd_x_sigmoid<S>(x, x);
}

// 0.5·x·(1 + tanh(u)) = x · sigmoid(2u), u = √(2/π)·x·(1 + 0.044715·x²)
template <class S>
typename S::V simd_gelu_tanh(typename S::V x) {
    const typename S::V x2 = S::mul(x, x);
    const typename S::V inner = S::fma(S::set1(0.044715f), x2, S::set1(1.0f));
    const typename S::V two_u = S::mul(S::mul(S::set1(2.0f * 0.79788456080286535588f), x), inner);
    return simd_x_sigmoid<S>(x, two_u);
}

}  // namespace
}  // namespace strata::cpu

// Internal to kernels_cpu: the i-quant (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and
// ternary (TQ1_0, TQ2_0) weight blocks unpacked to signed bytes with integer sub-block scales,
// so their dot products with Q8_K activations are exact integer sums (qdot_scalar_iq.cpp,
// qdot_avx2_iq.cpp). Plain C++, built without SIMD flags; one call per 256-element block.
#pragma once

#include <cstdint>

#include "quant/ggml_type.h"

namespace strata::cpu {

// One block as w_e = dw · sc[e / 16] · q[e], equal to quant/'s reference dequantization up to
// float rounding (the reference rounds d·scale first). |q| <= 62 and 1 <= sc <= 31, so a block's
// Σ sc·q·x with Q8_K's |x| <= 127 stays far inside int32, and maddubs pairs (2·62·127) inside
// int16.
struct IqDecoded {
    alignas(32) int8_t q[256];
    alignas(32) int16_t sc[16];
    float dw;
};

// Unpacks the block at `block` (any alignment) into out.
using IqDecodeFn = void (*)(const void* block, IqDecoded& out);

// The decoder of `type`, or nullptr for types that are not i-quants or ternary.
IqDecodeFn find_iq_decode(GgmlType type);

// Σ_e sc[e / 16] · q[e] · x[e] over one decoded block and 256 Q8_K quants: exact.
using IqIsumFn = int32_t (*)(const IqDecoded& w, const int8_t* x);
int32_t iq_isum_scalar(const IqDecoded& w, const int8_t* x);
// The AVX2 twin (qdot_avx2_iq.cpp), the same integer; nullptr off x86-64.
IqIsumFn iq_isum_avx2();

}  // namespace strata::cpu

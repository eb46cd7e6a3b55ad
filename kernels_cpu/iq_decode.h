// Internal to kernels_cpu: the i-quant (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and
// ternary (TQ1_0, TQ2_0) weight blocks unpacked to signed bytes with integer sub-block scales,
// so their dot products with Q8_K activations are exact integer sums (qdot_iq.cpp). Unpacking
// is two steps: a per-type gather of 8-byte grid entries and sign / offset masks (plain C++),
// then one generic finish to bytes, scalar or AVX2 (qdot_avx2_iq.cpp).
#pragma once

#include <array>
#include <cstdint>

#include "kernels_cpu/qdot.h"
#include "quant/ggml_type.h"

namespace strata::cpu {

// One block gathered: group g (elements 8g..8g+7) is grid[g] with mask[g] applied bytewise,
// q = mask byte 0xFF ? -grid byte : grid byte (Signed), or q = grid byte - mask byte (Offset:
// IQ1's 8g+1 less 0 or 2, ternary t less 1). Scales as in IqDecoded.
struct IqGathered {
    enum class Mode { Signed, Offset };
    alignas(32) uint64_t grid[32];
    alignas(32) uint64_t mask[32];
    int16_t sc[16];
    float dw;
    Mode mode;
};

// One block as w_e = dw · sc[e / 16] · q[e], equal to quant/'s reference dequantization up to
// float rounding (the reference rounds d·scale first). |q| <= 62 and 1 <= sc <= 31, so a block's
// Σ sc·q·x with Q8_K's |x| <= 127 stays far inside int32, and maddubs pairs (2·62·127) inside
// int16.
struct IqDecoded {
    alignas(32) int8_t q[256];
    alignas(32) int16_t sc[16];
    float dw;
    int32_t bias;  // 128 · Σ_e sc[e / 16] · q[e], for sums over x + 128 (set by decoded rows only)
};

// Gathers the block at `block` (any alignment).
using IqGatherFn = void (*)(const void* block, IqGathered& out);
// The gatherer of `type`, or nullptr for types that are not i-quants or ternary.
IqGatherFn find_iq_gather(GgmlType type);

// Bytes and scales from a gathered block.
using IqFinishFn = void (*)(const IqGathered& g, IqDecoded& out);
void iq_finish_scalar(const IqGathered& g, IqDecoded& out);

// Σ_e sc[e / 16] · q[e] · x[e] over one decoded block and 256 Q8_K quants: exact.
using IqIsumFn = int32_t (*)(const IqDecoded& w, const int8_t* x);
int32_t iq_isum_scalar(const IqDecoded& w, const int8_t* x);

// The AVX2 twins (qdot_avx2_iq.cpp): the same bytes, the same integer; nullptr off x86-64.
IqFinishFn iq_finish_avx2();
IqIsumFn iq_isum_avx2();

// The byte masks of IQ2_XXS / IQ2_XS / IQ3_XXS's 7-bit sign indices (128 entries; the 8th
// sign makes the count of minus signs even), for kernels that gather in registers.
extern const std::array<uint64_t, 128> kIqSignMasks7;

// The AVX2 dot product of an i-quant (IQ1_S .. IQ3_S) decoded in registers (qdot_avx2_iq.cpp):
// the gather, finish and integer sum above fused, each 32-element group met with every
// activation row. The same integers and float sums as the generic path (qdot_iq.cpp); nullptr
// for other types and off x86-64.
QDotFn iq_fused_dot_avx2(GgmlType type);

}  // namespace strata::cpu

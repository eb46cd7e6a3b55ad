// Scalar reference row conversions between float32 and the GGUF types (the oracle every fast kernel
// is tested against). Dequantizers are bit-identical to gguf-py 0.19 (gguf.quants.dequantize).
#pragma once

#include <cstdint>
#include <string_view>

namespace strata {

// Every function below converts one run of n elements, src -> dst.
//  - n must be >= 0 and a multiple of the type's block size, else std::invalid_argument (with n
//    and the block size in the message) is thrown before anything is written.
//  - Quantized src/dst hold n / block_size blocks (quant/blocks.h), aligned to the block struct
//    (2 bytes; 4 for Q8_K). The caller owns both buffers; nothing is allocated.
//  - Pure functions: safe to call from any thread on disjoint outputs.
//  - Built with -ffp-contract=off: the float operations and their order are the contract
//    (e.g. Q4_K is (d*sc)*q - dmin*m, each product rounded to float32).

// Throws std::invalid_argument unless n >= 0 is a multiple of block_size.
void require_whole_blocks(std::string_view type_name, int64_t n, int64_t block_size);

// ---- dequantize: exact functions of the stored bits (NaN payloads included).
void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void dequantize_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_mxfp4(const void* src, float* dst, int64_t n);
void dequantize_q2_k(const void* src, float* dst, int64_t n);
void dequantize_q3_k(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);
void dequantize_q8_k(const void* src, float* dst, int64_t n);
void dequantize_iq4_xs(const void* src, float* dst, int64_t n);
void dequantize_iq2_xxs(const void* src, float* dst, int64_t n);
void dequantize_iq2_xs(const void* src, float* dst, int64_t n);
void dequantize_iq2_s(const void* src, float* dst, int64_t n);
void dequantize_iq3_xxs(const void* src, float* dst, int64_t n);
void dequantize_iq3_s(const void* src, float* dst, int64_t n);
void dequantize_iq1_s(const void* src, float* dst, int64_t n);
void dequantize_iq1_m(const void* src, float* dst, int64_t n);
void dequantize_tq1_0(const void* src, float* dst, int64_t n);
void dequantize_tq2_0(const void* src, float* dst, int64_t n);

// ---- quantize. Bounds hold for finite inputs (F16/BF16/F32 also take inf/NaN); other
// non-finite inputs give unspecified blocks, never undefined behaviour. Error bounds are per
// element, y = dequantize(quantize(x)), "d" is the block's float32 scale before it is rounded to
// f16, "d16" the stored one, amax = max |x| over the block, and "+ulp" means a few float32 ulps
// of the operands. Valid while the scales stay in f16 range (amax below about 8e6 for Q8_0);
// blocks with 0 < amax < ~1e-36 (1/d overflows) are stored as zero blocks.

// Exact.
void quantize_f32(const float* src, void* dst, int64_t n);
// IEEE round to nearest even: |x - y| <= 2^-11 |x| in the normal range (2^-25 absolute below it);
// overflow to ±inf above 65504 (ties at 65520).
void quantize_f16(const float* src, void* dst, int64_t n);
// Round to nearest even (ggml's rule, NaN quietened): |x - y| <= 2^-8 |x|.
void quantize_bf16(const float* src, void* dst, int64_t n);

// The next three are bit-identical to ggml's reference and gguf-py's quantizers.
// Q8_0: d = amax/127, q = round(x/d) (half away from zero):
//   |x - y| <= d/2 + 127*|d - d16| (+ulp)      (~0.56 d in the f16 normal range)
void quantize_q8_0(const float* src, void* dst, int64_t n);
// Q4_0: d = max/-8 with max the signed value of largest |x|, q = min(15, trunc(x/d + 8.5)):
// the max maps exactly, -max clips one step short, so
//   |x - y| <= amax/8 + 8*|d - d16| (+ulp)
void quantize_q4_0(const float* src, void* dst, int64_t n);
// Q5_0: as Q4_0 with 5 bits, d = max/-16:  |x - y| <= amax/16 + 16*|d - d16| (+ulp)
void quantize_q5_0(const float* src, void* dst, int64_t n);

// Q8_1: quants and d exactly as Q8_0 (same bound); s = f16(d * sum(q)).
void quantize_q8_1(const float* src, void* dst, int64_t n);

// Q8_K (ggml's reference rule): iscale = -127/max with max the signed value of largest |x|,
// q = min(127, round_half_even(x*iscale)), d = 1/iscale kept in float32 (not f16):
//   |x - y| <= |d|/2 (+ulp);  bsums are the exact sums of each 16 quants.
void quantize_q8_k(const float* src, void* dst, int64_t n);

// Q4_K (Strata's own search; only the layout is normative): per 32-element sub-block the stored
// 6-bit (sc, m) are chosen so that [-dmin*m, 15*d*sc - dmin*m] covers the sub-block, then
// m+1 and up to 3 larger sc are tried for the least squared error. With hi/lo the sub-block's
// max/min and neg = max(0, -lo):
//   |x - y| <= d16*sc/2 (+ulp),  d16*sc <= (hi + dmin16*m)/15 + 4*d16,
//   dmin16*m <= neg + 2*dmin16.
void quantize_q4_k(const float* src, void* dst, int64_t n);

// Q6_K (Strata's own search): per 16-element sub-block the int8 scale sc >= 0 is chosen so that
// 31*d*sc >= the sub-block's amax, then up to 3 larger sc are tried for the least squared error.
//   |x - y| <= d16*sc/2 (+ulp)  and  d16*sc <= amax_sub/31 + 4*d16.
void quantize_q6_k(const float* src, void* dst, int64_t n);

// TQ1_0 / TQ2_0 (bit-identical to gguf-py): d = amax, t = round(x/d) in {-1, 0, 1}:
//   |x - y| <= amax/2 + |amax - d16| (+ulp)
void quantize_tq1_0(const float* src, void* dst, int64_t n);
void quantize_tq2_0(const float* src, void* dst, int64_t n);

// The lattice i-quants (Strata's own search, quant/iq_search.h): each group of 8 (IQ3: 4)
// elements takes the lattice point nearest to it at its sub-block's scale, after a least-squares
// fit of that scale. The lattices hold a few hundred of the 3^8.. points of the full grid, so no
// per-element bound holds; what is guaranteed is that no other lattice point at the stored
// scale is closer to a group (up to float rounding of the search), and tests bound the NMSE on
// Gaussian rows per type (tests/quant/iq_quantize_test.cpp). Signs of IQ2_XXS / IQ2_XS / IQ3_XXS
// groups with an odd number of negatives lose the sign of their smallest |x|.
void quantize_iq2_xxs(const float* src, void* dst, int64_t n);
void quantize_iq2_xs(const float* src, void* dst, int64_t n);
void quantize_iq2_s(const float* src, void* dst, int64_t n);
void quantize_iq3_xxs(const float* src, void* dst, int64_t n);
void quantize_iq3_s(const float* src, void* dst, int64_t n);
void quantize_iq1_s(const float* src, void* dst, int64_t n);
void quantize_iq1_m(const float* src, void* dst, int64_t n);

}  // namespace strata

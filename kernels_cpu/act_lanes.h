// Internal to kernels_cpu: the activation layouts of the AVX-512 kernels (qdot_avx512_k.cpp,
// qdot_avx512_legacy.cpp), each the values of a partner format in the order its kernel reads.
//
// K-quants (qdot_avx512_k.cpp): Q8_K's values (quant/'s quantize_q8_k: the same d, the same
// int8 quants). A vpdpbusd sums four bytes per int32 lane, and these kernels need every lane to
// meet the elements of one weight sub-block only, in all four of a block's vpdpbusd groups, so
// that one scale per lane applies after the integer sums. Group p (0..3) of a block holds 64
// bytes: lane L's four consecutive elements at bytes 4L..4L+3.
//  - Lanes::K4 (Q4_K, Q5_K: 32-element sub-blocks, two lanes each): lane L holds elements
//    32·(L/2) + 8p + 4·(L%2) + (0..3), the order in which the 4-bit weights unpack cheapest.
//    aux[j] = Σ q over sub-block j (j < 8) for the weight minima; aux[8..14] = 0.
//  - Lanes::K6 (Q6_K: 16-element sub-blocks, one lane each): lane L holds elements
//    16·(4·(L%4) + L/4) + 4p + (0..3), stored as q + 128 (unsigned), so that the signed 6-bit
//    weights are vpdpbusd's signed operand and the +128 is taken back per weight sub-block.
//    aux[0..14] = 0.
// aux[15] is the block's d in both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/ggml_type.h"

namespace strata::cpu {

struct BlockQ8KLanes {
    int8_t qs[256];
    float aux[16];
};
static_assert(sizeof(BlockQ8KLanes) == 320, "a whole number of cache lines per block");

inline constexpr int kLanesD = 15;  // aux index of d

enum class Lanes { K4, K6 };

// The Q8_K element (0..255) at byte 4·lane + i of group p.
constexpr int lane_element(Lanes layout, int p, int lane, int i) {
    return layout == Lanes::K4 ? 32 * (lane / 2) + 8 * p + 4 * (lane % 2) + i
                               : 16 * (4 * (lane % 4) + lane / 4) + 4 * p + i;
}

// Quantizers to the two layouts (n a multiple of 256), QuantizeFn-shaped.
void quantize_q8_k_lanes4(const float* src, void* dst, int64_t n);
void quantize_q8_k_lanes6(const float* src, void* dst, int64_t n);

// The signed 32-element formats (Q4_0, Q5_0, Q8_0, IQ4_NL; qdot_avx512_legacy.cpp): Q8_0's
// values (quant/'s quantize_q8_0) two blocks at a time, so one vpdpbusd covers both: qs holds
// q + 128 (unsigned) of blocks 2i and 2i+1, d each block's f16 d as float in the 8 lanes of its
// 32 bytes. A row of an odd number of blocks ends with half a pair: the missing block's quants
// 128 (zero) and its d 0.
struct BlockQ8_0Pair {
    uint8_t qs[64];
    float d[16];
};
static_assert(sizeof(BlockQ8_0Pair) == 128, "a whole number of cache lines per pair");

inline constexpr int kPairBlocks = 2;

// n a multiple of 32. A call that ends on an even-indexed block pads its pair as a row's end,
// so a row quantized in several calls must be cut at even blocks (matmul's slices are 512).
void quantize_q8_0_pairs(const float* src, void* dst, int64_t n);

}  // namespace strata::cpu

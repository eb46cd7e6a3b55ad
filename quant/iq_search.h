// Internal to quant/: the search behind the i-quant quantizers (quantize_iq.cpp). A block's
// elements are cut into points of the format's lattice (8 elements, 4 for IQ3) and units that
// share one sub-block scale (16 or 32 elements); each point gets the nearest lattice point at
// its unit's scale, each unit the scale (a float fit, then the nearest stored integer levels)
// with the least squared error. Signs are folded into the targets before the search.
#pragma once

#include <cstdint>

namespace strata::iq {

// The lattices searched. Iq1sPlus/Minus are IQ1_S's grid plus/minus 1/8; Iq1mBoth is both
// (point p >= 2048 is point p - 2048 with the minus delta), for IQ1_M's delta per point.
enum class Lattice { Iq2xxs, Iq2xs, Iq2s, Iq3xxs, Iq3s, Iq1sPlus, Iq1sMinus, Iq1mBoth };

// How a format stores the signs of a group of 8: none (IQ1), 7 bits with an even number of
// minus signs (IQ2_XXS, IQ2_XS, IQ3_XXS), or all 8 bits (IQ2_S, IQ3_S).
enum class SignRule { None, Parity7, Free8 };

struct Format {
    int width;               // elements per lattice point: 8 or 4
    int unit;                // elements per sub-block scale: 16 or 32
    int n_levels;            // stored sub-block scale levels: 16 (4 bits) or 8 (3 bits)
    float (*unit_scale)(float d, int level);  // the dequantizer's float ops, exactly
    SignRule signs;
    Lattice options[2];      // lattices a unit may pick from (IQ1_S: the two deltas)
    int n_options;
};

// One 256-element block's choices, ready to pack.
struct BlockChoice {
    uint16_t d16 = 0;        // f16 bits of the block scale
    uint8_t level[16] = {};  // per unit
    uint8_t option[16] = {};  // per unit: index into Format::options
    uint16_t point[64] = {};  // per lattice point: its index in the unit's lattice
    uint8_t signs[32] = {};   // per group of 8: bit j set = element j negative
};

// Chooses everything for the 256 floats at x. A block whose largest |x| is 0 (or whose scale
// underflows f16) gets d16 = 0, which dequantizes to zeros whatever the other fields hold.
void choose_block(const Format& f, const float* x, BlockChoice& out);

}  // namespace strata::iq

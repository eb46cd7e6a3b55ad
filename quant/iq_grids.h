// The lattice grids of the i-quant formats (IQ1_S/IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S)
// as host arrays, and the small rules around them (sign bytes, IQ1's delta). The data is
// generated from the gguf package (quant/iq_grid_data.h, scripts/gen_iq_grids.py).
#pragma once

#include <bit>
#include <cstdint>

#include "quant/ggml_type.h"

namespace strata {

// The lattice i-quants: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S.
bool is_iq_lattice(GgmlType type);
// The ternary formats TQ1_0 and TQ2_0 (no grid, but unpacked like the i-quants downstream).
constexpr bool is_ternary(GgmlType type) { return type == GgmlType::TQ1_0 || type == GgmlType::TQ2_0; }

// Entry i is grid point i; byte j of it is element j of the group (see iq_grid_data.h).
extern const uint64_t kIq2xxsGrid[256];   // magnitudes 8, 25, 43
extern const uint64_t kIq2xsGrid[512];    // magnitudes 8, 25, 43
extern const uint64_t kIq2sGrid[1024];    // magnitudes 8, 25, 43
extern const uint32_t kIq3xxsGrid[256];   // magnitudes 4, 12, .., 62
extern const uint32_t kIq3sGrid[512];     // magnitudes 1, 3, .., 15
extern const uint64_t kIq1sGrid[2048];    // int8 -1, 0, +1 (IQ1_S and IQ1_M)

// Element j (0..7) of a packed grid entry: an unsigned magnitude, or (iq1) a signed byte.
constexpr int grid_u8(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }
constexpr int grid_i8(uint64_t entry, int j) { return static_cast<int8_t>(grid_u8(entry, j)); }

// IQ2_XXS / IQ2_XS / IQ3_XXS store 7 sign bits per group of 8; the 8th makes the number of
// minus signs even. Bit j set = element j is negative.
constexpr uint8_t iq_sign_byte(uint32_t index7) {
    const uint32_t i = index7 & 0x7F;
    return static_cast<uint8_t>(i | ((std::popcount(i) & 1u) << 7));
}

// IQ1_S / IQ1_M add ±1/8 to every grid value of a group: y = dl * (grid + delta).
inline constexpr float kIq1Delta = 0.125f;

}  // namespace strata

// Input-major Q4_K copies (input_major.h).
#include "quant/input_major.h"

#include <stdexcept>
#include <string>

#include "quant/blocks.h"
#include "quant/half.h"

namespace strata {

bool input_major_q4k_fits(int64_t n_in, int64_t n_out) {
    return n_in > 0 && n_out > 0 && n_in % kQkK == 0 && n_out % 32 == 0;
}

uint64_t input_major_q4k_bytes(int64_t n_in, int64_t n_out) {
    if (!input_major_q4k_fits(n_in, n_out)) {
        throw std::invalid_argument("input-major q4_K: a " + std::to_string(n_out) + " x " + std::to_string(n_in) +
                                    " matrix does not fit (inputs a multiple of 256, outputs of 32)");
    }
    const auto n = static_cast<uint64_t>(n_in) * static_cast<uint64_t>(n_out);
    return n / 2 + 2 * (n / 32) + 4 * (n / kQkK);
}

void make_input_major_q4k(const void* src, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t r0, int64_t r1) {
    input_major_q4k_bytes(n_in, n_out);  // checks the shape
    if (r0 < 0 || r1 > n_out || r0 > r1 || r0 % 32 != 0 || r1 % 32 != 0) {
        throw std::invalid_argument("input-major q4_K: rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                                    ") are not whole groups of 32 of " + std::to_string(n_out));
    }
    const InputMajorQ4K w{dst, n_in, n_out};
    auto* out_d = const_cast<uint16_t*>(w.d(0));
    auto* out_dmin = const_cast<uint16_t*>(w.dmin(0));
    auto* out_sc = const_cast<uint8_t*>(w.scales(0));
    auto* out_m = const_cast<uint8_t*>(w.mins(0));
    const int64_t n_blocks = n_in / kQkK;
    const auto* rows = static_cast<const BlockQ4_K*>(src);
    for (int64_t r = r0; r < r1; ++r) {
        // Row r's values go to byte (r % 32) % 16 of its group, low nibble for r % 32 < 16.
        const int64_t byte = (r / 32) * 16 + (r % 32) % 16;
        const int shift = (r % 32) < 16 ? 0 : 4;
        const uint8_t keep = shift == 0 ? 0xF0 : 0x0F;
        for (int64_t b = 0; b < n_blocks; ++b) {
            const BlockQ4_K& blk = rows[r * n_blocks + b];
            out_d[b * n_out + r] = blk.d;
            out_dmin[b * n_out + r] = blk.dmin;
            for (int s = 0; s < 8; ++s) {
                const ScaleMin sm = unpack_scale_min_k4(blk.scales, s);
                const int64_t c = b * 8 + s;
                out_sc[c * n_out + r] = sm.sc;
                out_m[c * n_out + r] = sm.m;
                // Sub-block s: nibble s % 2 of qs[32 * (s / 2) + l] (dequantize_q4_k).
                const uint8_t* qs = blk.qs + 32 * (s / 2);
                for (int l = 0; l < 32; ++l) {
                    const auto q = static_cast<uint8_t>((qs[l] >> (4 * (s % 2))) & 0xF);
                    uint8_t& o = dst[(c * 32 + l) * (n_out / 2) + byte];
                    o = static_cast<uint8_t>((o & keep) | (q << shift));
                }
            }
        }
    }
}

float input_major_q4k_value(const InputMajorQ4K& w, int64_t r, int64_t j) {
    const int64_t c = j / 32, s = j / kQkK;
    const uint8_t byte = w.column(j)[(r / 32) * 16 + (r % 32) % 16];
    const int q = (r % 32) < 16 ? (byte & 0xF) : (byte >> 4);
    const float ds = fp16_to_fp32(w.d(s)[r]) * static_cast<float>(w.scales(c)[r]);
    const float dm = fp16_to_fp32(w.dmin(s)[r]) * static_cast<float>(w.mins(c)[r]);
    return ds * static_cast<float>(q) - dm;
}

}  // namespace strata

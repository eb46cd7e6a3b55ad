// Input-major Q4_K: the values of a Q4_K matrix, stored so that one input's column is
// contiguous. A product whose input is mostly zero (activation sparsity: the masked FFN input of
// TEAL, the masked activations CATS feeds ffn_down) then reads only the columns of the nonzero
// inputs. GGUF keeps a row's 32-element sub-blocks together (one 6-bit scale and min each), so a
// skipped input saves no bytes there. The copy is exact: every dequantized value equals
// dequantize_q4_k's, with no re-quantization.
//
// Layout of W [n_out rows, n_in columns] (GGUF ne = {n_in, n_out}), chunk c = columns
// [32c, 32c + 32) (one Q4_K sub-block of every row), superblock s = columns [256s, 256s + 256):
//   q     [n_in][n_out / 2]  the 4-bit values of column j, in groups of 32 rows as Q4_0 packs
//                            its 32 values: byte b of a group holds row b (low nibble) and row
//                            16 + b (high nibble);
//   sc, m [n_in / 32][n_out] the 6-bit scale and min of row r's sub-block c, one byte each;
//   d, dmin [n_in / 256][n_out] row r's f16 super-scales of superblock s.
// W[r, j] = (d·sc)·q − dmin·m, each product rounded to f32, as quant/reference.h's Q4_K.
// 0.578 bytes per weight (Q4_K: 0.5625); a product at active fraction a reads the scales and
// mins whole and a of the values: 0.078 + 0.5·a bytes per weight.
#pragma once

#include <cstdint>

namespace strata {

struct InputMajorQ4K {
    const uint8_t* data = nullptr;  // input_major_q4k_bytes(n_in, n_out) bytes
    int64_t n_in = 0, n_out = 0;

    int64_t n_chunks() const { return n_in / 32; }
    const uint8_t* column(int64_t j) const { return data + j * (n_out / 2); }
    const uint8_t* scales(int64_t c) const { return data + n_in * (n_out / 2) + c * n_out; }
    const uint8_t* mins(int64_t c) const { return scales(n_chunks()) + c * n_out; }
    const uint16_t* d(int64_t s) const {
        return reinterpret_cast<const uint16_t*>(mins(n_chunks())) + s * n_out;
    }
    const uint16_t* dmin(int64_t s) const { return d(n_in / 256) + s * n_out; }
};

// Whether a Q4_K matrix of this shape has an input-major copy: n_in a multiple of 256 (every
// Q4_K row is) and n_out of 32 (the value groups).
bool input_major_q4k_fits(int64_t n_in, int64_t n_out);

// The copy's bytes (std::invalid_argument where the shape does not fit).
uint64_t input_major_q4k_bytes(int64_t n_in, int64_t n_out);

// Writes the input-major copy of the Q4_K rows `src` (n_out rows of n_in / 256 blocks) to dst
// (input_major_q4k_bytes, 2-byte aligned). Rows [r0, r1) only, r0 and r1 multiples of 32: the
// parts are independent, so a caller can split the work.
void make_input_major_q4k(const void* src, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t r0, int64_t r1);

// W[r, j] of the copy (f32, as dequantize_q4_k gives it): the reference for tests.
float input_major_q4k_value(const InputMajorQ4K& w, int64_t r, int64_t j);

}  // namespace strata

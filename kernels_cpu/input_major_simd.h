// Internal to kernels_cpu: the input-major Q4_K product (RowOps::input_major_q4k) as one
// template over the f32 SIMD type S. Included by row_ops_x86.h after S's header.
//
// Per chunk (32 columns, one sub-block of every row) with a nonzero input: for a tile of rows,
// acc = Σ_j x_j·q_j over the chunk's active columns j in registers, then
// y += ds·acc − dm·Σ_j x_j with ds = d·sc and dm = dmin·m of the tile's rows (the Q4_K value
// (d·sc)·q − dmin·m, regrouped). A tile covers whole 32-row value groups: vector k of a group
// holds rows [k·W, k·W + W), the low nibbles of its 16 bytes for the first 16 rows and the high
// ones for the rest (S::load_u4_pair gives both halves of W bytes at once).
#pragma once

#include <cstdint>

#include "quant/input_major.h"

namespace strata::cpu {
namespace {

// Rows of one tile: 8 vectors on AVX-512 (128 rows, a 64-byte line of each active column), 4 on
// AVX2 (32 rows: its 16 registers hold the tile's sums and the output's).
template <class S>
constexpr int input_major_tile_vectors() {
    return S::W >= 16 ? 8 : 4;
}

// The tiles of `nv` vectors at rows [r, r + nv·W) for one chunk's active columns.
template <class S, int NV>
__attribute__((always_inline)) inline void input_major_tile(const InputMajorQ4K& w, const int32_t* cols,
                                                            const float* xs, int n_active, float sx, int64_t c,
                                                            int64_t r, int64_t ahead, float* y) {
    using V = typename S::V;
    constexpr int W = S::W;
    constexpr int kPerGroup = 32 / W;  // vectors per 32-row value group
    V acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = S::zero();
    for (int a = 0; a < n_active; ++a) {
        const uint8_t* q = w.column(cols[a]) + r / 2;
        // Into L2 (an L1 prefetch per column would need more fill buffers than a core has).
        __builtin_prefetch(q + ahead, 0, 2);
        const V xv = S::set1(xs[a]);
        // Each group of 32 rows is 16 bytes: W of them give vector k (low nibbles) and vector
        // k + 16/W (high nibbles) of the group.
        for (int g = 0; g < NV / kPerGroup; ++g) {
            for (int k = 0; k < kPerGroup / 2; ++k) {
                V lo, hi;
                S::load_u4_pair(q + g * 16 + k * W, lo, hi);
                acc[g * kPerGroup + k] = S::fma(lo, xv, acc[g * kPerGroup + k]);
                acc[g * kPerGroup + kPerGroup / 2 + k] = S::fma(hi, xv, acc[g * kPerGroup + kPerGroup / 2 + k]);
            }
        }
    }
    const uint8_t* sc = w.scales(c) + r;
    const uint8_t* mn = w.mins(c) + r;
    const uint16_t* d = w.d(c / 8) + r;
    const uint16_t* dmin = w.dmin(c / 8) + r;
    const V sxv = S::set1(sx);
    for (int v = 0; v < NV; ++v) {
        const V ds = S::mul(S::load_f16(d + v * W), S::load_i8(reinterpret_cast<const int8_t*>(sc + v * W)));
        const V dm = S::mul(S::load_f16(dmin + v * W), S::load_i8(reinterpret_cast<const int8_t*>(mn + v * W)));
        V out = S::load(y + v * W);
        out = S::fma(ds, acc[v], out);
        out = S::fnma(dm, sxv, out);
        S::store(y + v * W, out);
    }
}

// y[0, n_out) = Σ over chunks [c0, c1) of their active columns' share (bit i of masks[c]: input
// 32c + i is nonzero). Chunks in order, rows in tiles; the sums' order depends on neither.
template <class S>
void simd_input_major_q4k(const InputMajorQ4K& w, const float* x, const uint32_t* masks, int64_t c0, int64_t c1,
                          int64_t ahead, float* y) {
    constexpr int NV = input_major_tile_vectors<S>(), kSmall = 32 / S::W;
    constexpr int64_t kTileRows = NV * S::W;
    for (int64_t r = 0; r < w.n_out; ++r) y[r] = 0.0f;
    int32_t cols[32];
    float xs[32];
    for (int64_t c = c0; c < c1; ++c) {
        int n_active = 0;
        float sx = 0.0f;
        for (uint32_t m = masks[c]; m != 0; m &= m - 1) {
            const int32_t j = static_cast<int32_t>(c * 32 + __builtin_ctz(m));
            cols[n_active] = j;
            xs[n_active++] = x[j];
            sx += x[j];
        }
        if (n_active == 0) continue;
        // The next chunk's columns start new streams: their heads are asked for now, so they
        // arrive while this chunk is summed (the tiles' look-ahead covers the rest).
        if (c + 1 < c1) {
            for (uint32_t m = masks[c + 1]; m != 0; m &= m - 1) {
                const uint8_t* head = w.column((c + 1) * 32 + __builtin_ctz(m));
                for (int64_t b = 0; b < ahead; b += 64) __builtin_prefetch(head + b, 0, 2);
            }
        }
        int64_t r = 0;
        for (; r + kTileRows <= w.n_out; r += kTileRows) input_major_tile<S, NV>(w, cols, xs, n_active, sx, c, r, ahead, y + r);
        for (; r < w.n_out; r += 32) input_major_tile<S, kSmall>(w, cols, xs, n_active, sx, c, r, ahead, y + r);
    }
}

}  // namespace
}  // namespace strata::cpu

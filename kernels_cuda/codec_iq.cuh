// Block codecs of the lattice i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and
// the ternary TQ1_0 / TQ2_0 (layouts: quant/blocks.h). Each unpacks an item of 32 elements to
// signed bytes q with one float scale per 16, w = a·q, which is also its dp4a decode: the
// scales are the reference's float values (IQ1: dl/8 with q = 8g ± 1, exact), so dequant() is
// bit-identical to quant/'s reference. The grids live in device memory (__device__ arrays from
// quant/iq_grid_data.h) and, on the host, in quant/'s arrays.
#pragma once

#include "kernels_cuda/codec.cuh"
#include "quant/iq_grid_data.h"

namespace strata {
// quant/iq_grids.h's host arrays (that header is C++20; .cu files are compiled as C++17).
extern const uint64_t kIq2xxsGrid[256];
extern const uint64_t kIq2xsGrid[512];
extern const uint64_t kIq2sGrid[1024];
extern const uint32_t kIq3xxsGrid[256];
extern const uint32_t kIq3sGrid[512];
extern const uint64_t kIq1sGrid[2048];
}  // namespace strata

namespace strata::cuda {

#if defined(__CUDACC__)
static __device__ const uint64_t kIq2xxsGridDev[256] = {STRATA_IQ2XXS_GRID};
static __device__ const uint64_t kIq2xsGridDev[512] = {STRATA_IQ2XS_GRID};
static __device__ const uint64_t kIq2sGridDev[1024] = {STRATA_IQ2S_GRID};
static __device__ const uint32_t kIq3xxsGridDev[256] = {STRATA_IQ3XXS_GRID};
static __device__ const uint32_t kIq3sGridDev[512] = {STRATA_IQ3S_GRID};
static __device__ const uint64_t kIq1sGridDev[2048] = {STRATA_IQ1S_GRID};
#endif

#ifdef __CUDA_ARCH__
#define STRATA_GRID_AT(name, i) name##Dev[i]
#else
#define STRATA_GRID_AT(name, i) ::strata::name[i]
#endif

enum class IqGrid { Iq2xxs, Iq2xs, Iq2s, Iq3xxs, Iq3s, Iq1s };

// Grid entry i, byte j = element j (IQ3 grids: 4 bytes).
template <IqGrid G>
STRATA_HD uint64_t iq_grid(int i) {
    if constexpr (G == IqGrid::Iq2xxs) return STRATA_GRID_AT(kIq2xxsGrid, i);
    if constexpr (G == IqGrid::Iq2xs) return STRATA_GRID_AT(kIq2xsGrid, i);
    if constexpr (G == IqGrid::Iq2s) return STRATA_GRID_AT(kIq2sGrid, i);
    if constexpr (G == IqGrid::Iq3xxs) return STRATA_GRID_AT(kIq3xxsGrid, i);
    if constexpr (G == IqGrid::Iq3s) return STRATA_GRID_AT(kIq3sGrid, i);
    return STRATA_GRID_AT(kIq1sGrid, i);
}

// 7 stored sign bits plus the 8th that makes the count of minus signs even.
STRATA_HD uint32_t iq_sign8(uint32_t i7) {
    i7 &= 0x7Fu;
    uint32_t p = i7 ^ (i7 >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return i7 | ((p & 1u) << 7);
}

// 8 grid magnitudes into q, negated where bit j of signs is set.
STRATA_HD void put_signed8(uint64_t grid, uint32_t signs, int8_t* q) {
    for (int j = 0; j < 8; ++j) {
        const int v = static_cast<int>((grid >> (8 * j)) & 0xFFu);
        q[j] = static_cast<int8_t>((signs >> j) & 1u ? -v : v);
    }
}

// IQ1: 8·g ± 1 for the 8 values (-1, 0, +1 bytes) of a grid entry.
STRATA_HD void put_iq1(uint64_t grid, bool minus, int8_t* q) {
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(8 * static_cast<int8_t>((grid >> (8 * j)) & 0xFFu) + (minus ? -1 : 1));
}

STRATA_HD float iq2_scale(float d, int ls) { return mul_rn(mul_rn(d, add_rn(0.5f, static_cast<float>(ls))), 0.25f); }

// ---- per-format unpack of item ib (elements 32ib .. 32ib + 31): q and the scales of its halves.
struct UnpackIq2Xxs {  // d, then per item: 4 grid index bytes, u32 of signs and scale
    static constexpr int kBlockBytes = 66;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const uint32_t idx = load_u32(b + 2 + 8 * ib), aux = load_u32(b + 6 + 8 * ib);
        a0 = a1 = iq2_scale(half_to_float(load_u16(b)), static_cast<int>(aux >> 28));
        for (int k = 0; k < 4; ++k)
            put_signed8(iq_grid<IqGrid::Iq2xxs>((idx >> (8 * k)) & 0xFF), iq_sign8(aux >> (7 * k)), q + 8 * k);
    }
};

struct UnpackIq2Xs {  // d, qs[32] u16 (9-bit index | 7-bit signs << 9), scales[8]
    static constexpr int kBlockBytes = 74;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const float d = half_to_float(load_u16(b));
        a0 = iq2_scale(d, b[66 + ib] & 0xF);
        a1 = iq2_scale(d, b[66 + ib] >> 4);
        for (int k = 0; k < 4; ++k) {
            const uint32_t v = load_u16(b + 2 + 2 * (4 * ib + k));
            put_signed8(iq_grid<IqGrid::Iq2xs>(v & 511), iq_sign8(v >> 9), q + 8 * k);
        }
    }
};

struct UnpackIq2S {  // d, qs[32], signs[32], qh[8], scales[8]
    static constexpr int kBlockBytes = 82;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const float d = half_to_float(load_u16(b));
        a0 = iq2_scale(d, b[74 + ib] & 0xF);
        a1 = iq2_scale(d, b[74 + ib] >> 4);
        for (int k = 0; k < 4; ++k) {
            const int l = 4 * ib + k;
            const int idx = b[2 + l] | (((b[66 + ib] >> (2 * k)) & 3) << 8);
            put_signed8(iq_grid<IqGrid::Iq2s>(idx), b[34 + l], q + 8 * k);
        }
    }
};

struct UnpackIq3Xxs {  // d, qs[64] (grid points of 4), then per item a u32 of signs and scale
    static constexpr int kBlockBytes = 98;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const uint32_t aux = load_u32(b + 66 + 4 * ib);
        const float d = half_to_float(load_u16(b));
        a0 = a1 = mul_rn(mul_rn(d, add_rn(0.5f, static_cast<float>(aux >> 28))), 0.5f);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* g = b + 2 + 8 * ib + 2 * k;
            const uint64_t grid = iq_grid<IqGrid::Iq3xxs>(g[0]) | iq_grid<IqGrid::Iq3xxs>(g[1]) << 32;
            put_signed8(grid, iq_sign8(aux >> (7 * k)), q + 8 * k);
        }
    }
};

struct UnpackIq3S {  // d, qs[64], qh[8], signs[32], scales[4]
    static constexpr int kBlockBytes = 110;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const int sc = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0xF;
        a0 = a1 = mul_rn(half_to_float(load_u16(b)), static_cast<float>(1 + 2 * sc));
        const int qh = b[66 + ib];
        for (int k = 0; k < 4; ++k) {
            const int l = 8 * ib + 2 * k;
            const int i0 = b[2 + l] | (((qh >> (2 * k)) & 1) << 8), i1 = b[3 + l] | (((qh >> (2 * k + 1)) & 1) << 8);
            put_signed8(iq_grid<IqGrid::Iq3s>(i0) | iq_grid<IqGrid::Iq3s>(i1) << 32, b[74 + 4 * ib + k], q + 8 * k);
        }
    }
};

struct UnpackIq1S {  // d, qs[32], qh[8] u16: 3 index bits per point, scale (bits 12-14), delta sign
    static constexpr int kBlockBytes = 50;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        const int qh = load_u16(b + 34 + 2 * ib);
        const float dl = mul_rn(half_to_float(load_u16(b)), static_cast<float>(2 * ((qh >> 12) & 7) + 1));
        a0 = a1 = mul_rn(dl, 0.125f);
        for (int k = 0; k < 4; ++k)
            put_iq1(iq_grid<IqGrid::Iq1s>(b[2 + 4 * ib + k] | (((qh >> (3 * k)) & 7) << 8)), qh & 0x8000, q + 8 * k);
    }
};

struct UnpackIq1M {  // qs[32], qh[16] (a nibble per point), scales[4] u16 (d in the top nibbles)
    static constexpr int kBlockBytes = 56;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        int s[4];
        for (int w = 0; w < 4; ++w) s[w] = load_u16(b + 48 + 2 * w);
        const float d = half_to_float(static_cast<uint16_t>((s[0] >> 12) | ((s[1] >> 8) & 0x00F0) |
                                                            ((s[2] >> 4) & 0x0F00) | (s[3] & 0xF000)));
        const int i0 = 2 * ib, i1 = 2 * ib + 1;  // the two 3-bit scales of this item
        a0 = mul_rn(mul_rn(d, static_cast<float>(2 * ((s[i0 / 4] >> (3 * (i0 % 4))) & 7) + 1)), 0.125f);
        a1 = mul_rn(mul_rn(d, static_cast<float>(2 * ((s[i1 / 4] >> (3 * (i1 % 4))) & 7) + 1)), 0.125f);
        for (int k = 0; k < 4; ++k) {
            const int l = 4 * ib + k;
            const int nib = (b[32 + l / 2] >> (4 * (l % 2))) & 0xF;
            put_iq1(iq_grid<IqGrid::Iq1s>(b[l] | ((nib & 7) << 8)), nib & 8, q + 8 * k);
        }
    }
};

struct UnpackTq1_0 {  // qs[48], qh[4], d: base-3 digits scaled to bytes
    static constexpr int kBlockBytes = 54;
    STRATA_HD static int trit(int byte, int k) {
        const int pow3 = k == 0 ? 1 : k == 1 ? 3 : k == 2 ? 9 : k == 3 ? 27 : 81;
        return ((((byte * pow3) & 0xFF) * 3) >> 8) - 1;
    }
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        a0 = a1 = half_to_float(load_u16(b + 52));
        for (int j = 0; j < 32; ++j) {
            const int e = 32 * ib + j;
            int v;
            if (e < 160) v = trit(b[e % 32], e / 32);
            else if (e < 240) v = trit(b[32 + (e - 160) % 16], (e - 160) / 16);
            else v = trit(b[48 + (e - 240) % 4], (e - 240) / 4);
            q[j] = static_cast<int8_t>(v);
        }
    }
};

struct UnpackTq2_0 {  // qs[64], d: element 128h + 32k + l is bits 2k.. of qs[32h + l]
    static constexpr int kBlockBytes = 66;
    STRATA_HD static void unpack(const uint8_t* b, int ib, int8_t* q, float& a0, float& a1) {
        a0 = a1 = half_to_float(load_u16(b + 64));
        const uint8_t* qs = b + 32 * (ib / 4);
        for (int l = 0; l < 32; ++l) q[l] = static_cast<int8_t>(((qs[l] >> (2 * (ib % 4))) & 3) - 1);
    }
};

// The codec over an unpacker: dequant is a·q per element (bit-identical to the reference, see
// the header comment), decode hands the same bytes and scales to dp4a.
template <class U>
struct IqCodec {
    static constexpr int kBlockElems = 256, kBlockBytes = U::kBlockBytes;
    static constexpr bool kDp4a = true;
    STRATA_HD static void dequant(const uint8_t* b, int ib, float* v, int /*valid*/) {
        int8_t q[32];
        float a0, a1;
        U::unpack(b, ib, q, a0, a1);
        for (int e = 0; e < 32; ++e) v[e] = mul_rn(e < 16 ? a0 : a1, static_cast<float>(q[e]));
    }
    STRATA_HD static Q8Item decode(const uint8_t* b, int ib) {
        int8_t q[32];
        Q8Item it;
        U::unpack(b, ib, q, it.a0, it.a1);
        for (int i = 0; i < 8; ++i) {
            it.q[i] = static_cast<int>(static_cast<uint32_t>(static_cast<uint8_t>(q[4 * i])) |
                                       static_cast<uint32_t>(static_cast<uint8_t>(q[4 * i + 1])) << 8 |
                                       static_cast<uint32_t>(static_cast<uint8_t>(q[4 * i + 2])) << 16 |
                                       static_cast<uint32_t>(static_cast<uint8_t>(q[4 * i + 3])) << 24);
        }
        it.b = 0.0f;
        return it;
    }
};
using CodecIq2Xxs = IqCodec<UnpackIq2Xxs>;
using CodecIq2Xs = IqCodec<UnpackIq2Xs>;
using CodecIq2S = IqCodec<UnpackIq2S>;
using CodecIq3Xxs = IqCodec<UnpackIq3Xxs>;
using CodecIq3S = IqCodec<UnpackIq3S>;
using CodecIq1S = IqCodec<UnpackIq1S>;
using CodecIq1M = IqCodec<UnpackIq1M>;
using CodecTq1_0 = IqCodec<UnpackTq1_0>;
using CodecTq2_0 = IqCodec<UnpackTq2_0>;

#undef STRATA_GRID_AT

}  // namespace strata::cuda

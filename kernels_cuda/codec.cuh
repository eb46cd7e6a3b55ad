// Block codecs of every GGUF type the CUDA backend reads (docs/FORMATS.md §2). A row is cut into
// "items" of 32 elements that line up with one q8 activation block: dequant() gives an item's
// floats bit-identical to quant/'s reference; decode() gives its quants for a dp4a dot (dp4a
// types).
#pragma once

#include "kernels_cuda/codec_base.cuh"

namespace strata::cuda {

// An item's 32 quants as signed bytes in q[8], with w_e ≈ a(e)·q_e + b: a0 for e < 16, a1 for
// e >= 16. Against q8 activations x_e = dx·qx_e: Σ w·x = dx·(a0·S0 + a1·S1) + b·sx, where S0/S1
// are the integer dots of each half and sx = dx·Σqx.
struct Q8Item {
    int q[8];
    float a0, a1, b;
};

STRATA_HD int byte_of(uint32_t w, int i) { return static_cast<int>((w >> (8 * i)) & 0xFFu); }

// ---- plain types: a "block" is 32 elements; the last one of a row may hold fewer (valid).
template <typename Elem, int kElemBytes>
struct PlainCodec {
    static constexpr int kBlockElems = 32;
    static constexpr int kBlockBytes = 32 * kElemBytes;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int /*sub*/, float* v, int valid) {
#ifdef __CUDA_ARCH__
        if (valid == 32 && reinterpret_cast<uintptr_t>(b) % 16 == 0) {  // 16-byte loads
            for (int i = 0; i < kBlockBytes / 16; ++i) {
                const uint4 q = *reinterpret_cast<const uint4*>(b + 16 * i);
                const uint32_t w[4] = {q.x, q.y, q.z, q.w};
                for (int j = 0; j < 16 / kElemBytes; ++j) {
                    const uint32_t word = w[j * kElemBytes / 4];
                    v[i * 16 / kElemBytes + j] =
                        kElemBytes == 4 ? bits_to_float(word) : Elem::from16(static_cast<uint16_t>(word >> (16 * (j % 2))));
                }
            }
            return;
        }
#endif
        for (int j = 0; j < 32; ++j) v[j] = j < valid ? Elem::get(b + j * kElemBytes) : 0.0f;
    }
};
struct F32Elem {
    STRATA_HD static float get(const uint8_t* p) { return bits_to_float(load_u32(p)); }
    STRATA_HD static float from16(uint16_t) { return 0.0f; }  // unused: f32 is not 16-bit
};
struct F16Elem {
    STRATA_HD static float get(const uint8_t* p) { return half_to_float(load_u16(p)); }
    STRATA_HD static float from16(uint16_t h) { return half_to_float(h); }
};
struct Bf16Elem {
    STRATA_HD static float get(const uint8_t* p) { return bf16_to_float(load_u16(p)); }
    STRATA_HD static float from16(uint16_t h) { return bf16_to_float(h); }
};
using CodecF32 = PlainCodec<F32Elem, 4>;
using CodecF16 = PlainCodec<F16Elem, 2>;
using CodecBf16 = PlainCodec<Bf16Elem, 2>;

// ---- 32-element formats: nibble j of qs is element j (low) and j + 16 (high).
// Offsets: kD (f16 scale), kM (f16 min, -1 = none), kQh (5th bits, -1 = none), kQs.
template <int kBytes, int kM, int kQh, int kQs, int kOffset>
struct Nibble32Codec {
    static constexpr int kBlockElems = 32;
    static constexpr int kBlockBytes = kBytes;
    static constexpr bool kDp4a = true;

    STRATA_HD static int quant(const uint8_t* b, uint32_t qh, int e) {
        const int byte = b[kQs + (e & 15)];
        int q = e < 16 ? (byte & 0xF) : (byte >> 4);
        if (kQh >= 0) q |= static_cast<int>((qh >> e) & 1u) << 4;
        return q;
    }
    STRATA_HD static void dequant(const uint8_t* b, int /*sub*/, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b));
        const uint32_t qh = kQh >= 0 ? load_u32(b + kQh) : 0u;
        if (kM >= 0) {
            const float m = half_to_float(load_u16(b + kM));
            for (int e = 0; e < 32; ++e) v[e] = add_rn(mul_rn(d, static_cast<float>(quant(b, qh, e))), m);
        } else {
            for (int e = 0; e < 32; ++e) v[e] = mul_rn(d, static_cast<float>(quant(b, qh, e) - kOffset));
        }
    }
    // decode() reads through load_words: staged (shared) memory only.
    STRATA_HD static Q8Item decode(const uint8_t* b, int /*sub*/) {
        Q8Item it;
        const float d = half_to_float(load_u16(b));
        const uint32_t qh = kQh >= 0 ? load_u32(b + kQh) : 0u;
        uint32_t qs[4];
        load_words<4>(b + kQs, qs);
        for (int i = 0; i < 4; ++i) {
            const uint32_t w = qs[i];
            uint32_t lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
            if (kQh >= 0) {
                lo |= spread_bits4(qh >> (4 * i));
                hi |= spread_bits4(qh >> (16 + 4 * i));
            }
            it.q[i] = static_cast<int>(lo);
            it.q[4 + i] = static_cast<int>(hi);
        }
        it.a0 = it.a1 = d;
        it.b = kM >= 0 ? half_to_float(load_u16(b + kM)) : static_cast<float>(-kOffset) * d;
        return it;
    }
};
using CodecQ4_0 = Nibble32Codec<18, -1, -1, 2, 8>;
using CodecQ4_1 = Nibble32Codec<20, 2, -1, 4, 0>;
using CodecQ5_0 = Nibble32Codec<22, -1, 2, 6, 16>;
using CodecQ5_1 = Nibble32Codec<24, 2, 4, 8, 0>;

// Q8_0 (d, qs[32]) and Q8_1 (d, s, qs[32]): y = qs·d.
template <int kBytes, int kQs>
struct Int8Codec {
    static constexpr int kBlockElems = 32;
    static constexpr int kBlockBytes = kBytes;
    static constexpr bool kDp4a = true;
    STRATA_HD static void dequant(const uint8_t* b, int /*sub*/, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b));
        for (int i = 0; i < 8; ++i) {
            const uint32_t w = load_u32(b + kQs + 4 * i);
            for (int j = 0; j < 4; ++j)
                v[4 * i + j] = mul_rn(static_cast<float>(static_cast<int8_t>(byte_of(w, j))), d);
        }
    }
    STRATA_HD static Q8Item decode(const uint8_t* b, int /*sub*/) {
        Q8Item it;
        uint32_t qs[8];
        load_words<8>(b + kQs, qs);
        for (int i = 0; i < 8; ++i) it.q[i] = static_cast<int>(qs[i]);
        it.a0 = it.a1 = half_to_float(load_u16(b));
        it.b = 0.0f;
        return it;
    }
};
using CodecQ8_0 = Int8Codec<34, 2>;
using CodecQ8_1 = Int8Codec<36, 4>;

// Non-linear 4-bit formats (table values), 32-element blocks.
template <bool kMx>
struct Table4Codec {
    static constexpr int kBlockElems = 32;
    static constexpr int kBlockBytes = kMx ? 17 : 18;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int /*sub*/, float* v, int /*valid*/) {
        const float d = kMx ? e8m0_half_to_float(b[0]) : half_to_float(load_u16(b));
        const uint8_t* qs = b + (kMx ? 1 : 2);
        for (int j = 0; j < 16; ++j) {
            const int lo = qs[j] & 0xF, hi = qs[j] >> 4;
            v[j] = mul_rn(d, static_cast<float>(kMx ? mxfp4_value(lo) : iq4nl_value(lo)));
            v[j + 16] = mul_rn(d, static_cast<float>(kMx ? mxfp4_value(hi) : iq4nl_value(hi)));
        }
    }
};
using CodecIq4Nl = Table4Codec<false>;
using CodecMxfp4 = Table4Codec<true>;

// ---- 256-element K-quants; item `sub` (0..7) is elements 32·sub .. 32·sub + 31.
struct CodecQ2_K {  // scales[16] qs[64] d dmin
    static constexpr int kBlockElems = 256, kBlockBytes = 84;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int s, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b + 80)), dmin = half_to_float(load_u16(b + 82));
        const uint8_t* qs = b + 16 + 32 * (s / 4);
        const int shift = 2 * (s % 4);
        for (int l = 0; l < 32; ++l) {
            const int sc = b[2 * s + l / 16];
            const float dl = mul_rn(d, static_cast<float>(sc & 0xF));
            const float ml = mul_rn(dmin, static_cast<float>(sc >> 4));
            v[l] = sub_rn(mul_rn(dl, static_cast<float>((qs[l] >> shift) & 3)), ml);
        }
    }
};

struct CodecQ3_K {  // hmask[32] qs[64] scales[12] d
    static constexpr int kBlockElems = 256, kBlockBytes = 110;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int s, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b + 108));
        const uint8_t* sc = b + 96;
        const int h = s / 4, j = s % 4;
        for (int u = 0; u < 2; ++u) {
            const int i = 2 * s + u;
            const int low4 = i < 8 ? (sc[i] & 0xF) : (sc[i - 8] >> 4);
            const int high2 = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
            const float dl = mul_rn(d, static_cast<float>((low4 | (high2 << 4)) - 32));
            for (int l = 16 * u; l < 16 * u + 16; ++l) {
                const int q2 = (b[32 + 32 * h + l] >> (2 * j)) & 3;
                const int hbit = (b[l] >> (4 * h + j)) & 1;
                v[l] = mul_rn(dl, static_cast<float>(q2 - (hbit ? 0 : 4)));
            }
        }
    }
};

// Q4_K (d dmin scales[12] qs[128]) and Q5_K (d dmin scales[12] qh[32] qs[128]). kAligned:
// decode() reads 16-byte aligned blocks (Aligned: the codec a kernel takes for a row that starts
// 16-byte aligned), with vector loads in place of load_words' funnel shifts.
template <bool kFive, bool kAligned = false>
struct K45Codec {
    using Aligned = K45Codec<kFive, true>;
    static constexpr int kBlockElems = 256, kBlockBytes = kFive ? 176 : 144;
    static constexpr int kQs = kFive ? 48 : 16;
    static constexpr bool kDp4a = true;
    STRATA_HD static void scales(const uint8_t* b, int s, float& ds, float& dm) {
        int sc = 0, m = 0;
        scale_min_k4(b + 4, s, sc, m);
        ds = mul_rn(half_to_float(load_u16(b)), static_cast<float>(sc));
        dm = mul_rn(half_to_float(load_u16(b + 2)), static_cast<float>(m));
    }
    STRATA_HD static void dequant(const uint8_t* b, int s, float* v, int /*valid*/) {
        float ds, dm;
        scales(b, s, ds, dm);
        const uint8_t* qs = b + kQs + 32 * (s / 2);
        const int shift = 4 * (s % 2);
        for (int l = 0; l < 32; ++l) {
            int q = (qs[l] >> shift) & 0xF;
            if (kFive) q |= ((b[16 + l] >> s) & 1) << 4;
            v[l] = sub_rn(mul_rn(ds, static_cast<float>(q)), dm);
        }
    }
    STRATA_HD static Q8Item decode(const uint8_t* b, int s) {
        Q8Item it;
        // Header words: d | dmin << 16, then the 12 scale bytes S0..S11 (scale_min_k4's layout).
        uint32_t h[4];
        load_words_a<4, kAligned>(b, h);
        int sc, m;
        if (s < 4) {
            sc = byte_of(h[1], s) & 63;
            m = byte_of(h[2], s) & 63;
        } else {
            sc = (byte_of(h[3], s - 4) & 0xF) | ((byte_of(h[1], s - 4) >> 6) << 4);
            m = (byte_of(h[3], s - 4) >> 4) | ((byte_of(h[2], s - 4) >> 6) << 4);
        }
        const float ds = mul_rn(half_to_float(static_cast<uint16_t>(h[0] & 0xFFFFu)), static_cast<float>(sc));
        const float dm = mul_rn(half_to_float(static_cast<uint16_t>(h[0] >> 16)), static_cast<float>(m));
        uint32_t qs[8], qh[8];
        load_words_a<8, kAligned>(b + kQs + 32 * (s / 2), qs);
        if (kFive) load_words_a<8, kAligned>(b + 16, qh);
        const int shift = 4 * (s % 2);
        for (int i = 0; i < 8; ++i) {
            uint32_t q = (qs[i] >> shift) & 0x0F0F0F0Fu;
            if (kFive) q |= ((qh[i] >> s) & 0x01010101u) << 4;
            it.q[i] = static_cast<int>(q);
        }
        it.a0 = it.a1 = ds;
        it.b = -dm;
        return it;
    }
};
using CodecQ4_K = K45Codec<false>;
using CodecQ5_K = K45Codec<true>;

struct CodecQ6_K {  // ql[128] qh[64] scales[16] (int8) d
    static constexpr int kBlockElems = 256, kBlockBytes = 210;
    static constexpr bool kDp4a = true;
    STRATA_HD static void dequant(const uint8_t* b, int s, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b + 208));
        const int h = s / 4, k = s % 4;
        const uint8_t* ql = b + 64 * h + 32 * (k % 2);
        const uint8_t* qh = b + 128 + 32 * h;
        for (int l = 0; l < 32; ++l) {
            const int lo4 = (ql[l] >> (4 * (k / 2))) & 0xF;
            const int hi2 = (qh[l] >> (2 * k)) & 3;
            const float dl = mul_rn(d, static_cast<float>(static_cast<int8_t>(b[192 + 2 * s + l / 16])));
            v[l] = mul_rn(dl, static_cast<float>((lo4 | (hi2 << 4)) - 32));
        }
    }
    STRATA_HD static Q8Item decode(const uint8_t* b, int s) {
        Q8Item it;
        const int h = s / 4, k = s % 4;
        uint32_t ql[8], qh[8];
        load_words<8>(b + 64 * h + 32 * (k % 2), ql);
        load_words<8>(b + 128 + 32 * h, qh);
        for (int i = 0; i < 8; ++i) {
            const uint32_t q6 = ((ql[i] >> (4 * (k / 2))) & 0x0F0F0F0Fu) |
                                (((qh[i] >> (2 * k)) & 0x03030303u) << 4);
            // q6 - 32 per byte: flip bit 5, then copy it into bits 6 and 7 (6-bit sign extension).
            const uint32_t x = q6 ^ 0x20202020u;
            it.q[i] = static_cast<int>(x | ((x & 0x20202020u) * 6u));
        }
        const float d = half_to_float(load_u16(b + 208));
        const uint16_t sc = load_u16(b + 192 + 2 * s);  // the two sub-block scales, int8 each
        it.a0 = mul_rn(d, static_cast<float>(static_cast<int8_t>(sc & 0xFF)));
        it.a1 = mul_rn(d, static_cast<float>(static_cast<int8_t>(sc >> 8)));
        it.b = 0.0f;
        return it;
    }
};

struct CodecQ8_K {  // float d, qs[256], bsums[16]
    static constexpr int kBlockElems = 256, kBlockBytes = 292;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int s, float* v, int /*valid*/) {
        const float d = bits_to_float(load_u32(b));
        for (int l = 0; l < 32; ++l)
            v[l] = mul_rn(d, static_cast<float>(static_cast<int8_t>(b[4 + 32 * s + l])));
    }
};

struct CodecIq4Xs {  // d, scales_h (u16), scales_l[4], qs[128]
    static constexpr int kBlockElems = 256, kBlockBytes = 136;
    static constexpr bool kDp4a = false;
    STRATA_HD static void dequant(const uint8_t* b, int ib, float* v, int /*valid*/) {
        const float d = half_to_float(load_u16(b));
        const int scales_h = load_u16(b + 2);
        const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
        const float dl = mul_rn(d, static_cast<float>(ls - 32));
        const uint8_t* qs = b + 8 + 16 * ib;
        for (int j = 0; j < 16; ++j) {
            v[j] = mul_rn(dl, static_cast<float>(iq4nl_value(qs[j] & 0xF)));
            v[j + 16] = mul_rn(dl, static_cast<float>(iq4nl_value(qs[j] >> 4)));
        }
    }
};

// Item `item` of a row: its block's bytes and its index inside the block.
template <class C>
STRATA_HD const uint8_t* item_block(const uint8_t* row, int64_t item, int& sub) {
    constexpr int kItems = C::kBlockElems / 32;
    sub = static_cast<int>(item % kItems);
    return row + (item / kItems) * C::kBlockBytes;
}

// ---- q8 activations for the dp4a GEMV: per 32 floats, d = amax/127, q = round(x/d),
// s = d·Σq (d kept in f32; the same function runs in the kernel and in the tests' oracle).
STRATA_HD void quantize_q8_act(const float* x, int8_t* q, float& d, float& s) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(x[j]));
    d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        const int v = static_cast<int>(roundf(mul_rn(x[j], id)));
        q[j] = static_cast<int8_t>(v < -127 ? -127 : (v > 127 ? 127 : v));
        sum += q[j];
    }
    s = mul_rn(d, static_cast<float>(sum));
}

// An item's sum from its two integer half dots: dx·(a0·S0 + a1·S1) + b·sx, every product and sum
// rounded as written. Both GEMVs (dp4a and tensor cores) take it, so an item adds the same float
// to a row's sum in either kernel.
STRATA_HD float scale_item(float a0, float a1, float b, int s0, int s1, float dx, float sx) {
#ifdef __CUDA_ARCH__
    // Explicit roundings: left to the compiler, the multiply-adds were fused differently in the
    // GEMV's instantiations (rows per warp, columns), and a Q4_K/Q5_K token's sums changed with
    // the number of tokens beside it (H200: CudaMatmul.ColumnsDoNotDependOnTheBatch).
    return __fmaf_rn(dx, __fmaf_rn(a0, static_cast<float>(s0), __fmul_rn(a1, static_cast<float>(s1))), __fmul_rn(b, sx));
#else
    return dx * (a0 * static_cast<float>(s0) + a1 * static_cast<float>(s1)) + b * sx;
#endif
}

// Σ over one item of w·x for q8 activations xq (32 int8 as 8 words) with (dx, sx).
STRATA_HD float dot_q8(const Q8Item& it, const int* xq, float dx, float sx) {
    int s0 = 0, s1 = 0;
    for (int i = 0; i < 4; ++i) s0 = dp4a(it.q[i], xq[i], s0);
    for (int i = 4; i < 8; ++i) s1 = dp4a(it.q[i], xq[i], s1);
    return scale_item(it.a0, it.a1, it.b, s0, s1, dx, sx);
}

}  // namespace strata::cuda

// Reference quantizers of the super-block formats Q8_K (ggml's rule), Q4_K and Q6_K (Strata's own
// covering scale search; the layout is normative, the search is not). Bounds: quant/reference.h.
#include <cmath>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

// Smallest f16 >= v for finite v >= 0 (v past 65504 gives +inf: outside the documented range).
uint16_t fp16_round_up(float v) {
    uint16_t h = fp32_to_fp16(v);
    if (fp16_to_fp32(h) < v) ++h;  // positive halves are ordered like their bits
    return h;
}

// nearbyint(v) clamped to [lo, hi]; NaN gives lo. Keeps the float -> int conversion defined.
int round_clamped(float v, int lo, int hi) {
    return static_cast<int>(std::fmin(std::fmax(std::nearbyint(v), static_cast<float>(lo)), static_cast<float>(hi)));
}

// Sum of squared errors of one sub-block quantized as y = ds*q - dm, q in [qmin, qmax]; writes q.
float sub_block_error(const float* x, int n, float ds, float dm, int qmin, int qmax, int8_t* q) {
    float err = 0.0f;
    for (int l = 0; l < n; ++l) {
        const int v = ds != 0.0f ? round_clamped((x[l] + dm) / ds, qmin, qmax) : 0;
        q[l] = static_cast<int8_t>(v);
        const float diff = x[l] - (ds * static_cast<float>(v) - dm);
        err += diff * diff;
    }
    return err;
}

// Smallest sc in [0, sc_max] whose top level covers hi, i.e. (d*sc)*top - dm >= hi, evaluated
// with the dequantizer's float32 rounding; sc_max + 1 when none does.
int covering_scale(float d, float dm, float hi, int top, int sc_max) {
    const auto covers = [&](int sc) {
        return (d * static_cast<float>(sc)) * static_cast<float>(top) - dm >= hi;
    };
    int sc = 0;
    if (d != 0.0f) {  // start one below the estimate: the division may have rounded up
        const float guess = std::ceil((hi + dm) / (d * static_cast<float>(top)));
        sc = guess > static_cast<float>(sc_max) ? sc_max : (guess > 1.0f ? static_cast<int>(guess) - 1 : 0);
    }
    while (sc <= sc_max && !covers(sc)) ++sc;
    return sc;
}

// Smallest f16 d (rounded up from an estimate) for which every target t[i] is covered by
// (d*sc_max)*top - dm[i] >= t[i]; dm may be null (all zero).
uint16_t covering_super_scale(const float* t, const float* dm, int n, int top, int sc_max) {
    float est = 0.0f;
    for (int i = 0; i < n; ++i) {
        est = std::fmax(est, (t[i] + (dm ? dm[i] : 0.0f)) / (static_cast<float>(top) * static_cast<float>(sc_max)));
    }
    uint16_t h = fp16_round_up(est);
    for (int i = 0; i < n && h < 0x7c00; ++i) {
        while (h < 0x7c00 && covering_scale(fp16_to_fp32(h), dm ? dm[i] : 0.0f, t[i], top, sc_max) > sc_max) ++h;
    }
    return h;
}

}  // namespace

void quantize_q8_k(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_K", n, kQkK);
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        BlockQ8_K& blk = blocks[b];
        float amax = 0.0f, max = 0.0f;
        for (int e = 0; e < kQkK; ++e) {
            if (amax < std::fabs(src[e])) {
                amax = std::fabs(src[e]);
                max = src[e];
            }
        }
        float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
        if (!std::isfinite(iscale)) iscale = 0.0f;  // amax below ~1e-37: store a zero block
        for (int e = 0; e < kQkK; ++e) {
            blk.qs[e] = static_cast<int8_t>(round_clamped(iscale * src[e], -127, 127));  // -max gives 127
        }
        for (int k = 0; k < kQkK / 16; ++k) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += blk.qs[16 * k + l];
            blk.bsums[k] = static_cast<int16_t>(sum);
        }
        blk.d = iscale != 0.0f ? 1.0f / iscale : 0.0f;
    }
}

void quantize_q4_k(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q4_K", n, kQkK);
    auto* blocks = static_cast<BlockQ4_K*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        // Per sub-block: hi = max x, neg = max(0, -min x). The representable range of a
        // sub-block is [-dmin*m, 15*d*sc - dmin*m].
        float hi[8], neg[8];
        for (int s = 0; s < 8; ++s) {
            const float* x = src + 32 * s;
            float lo = x[0];
            hi[s] = x[0];
            for (int l = 1; l < 32; ++l) {
                lo = std::fmin(lo, x[l]);
                hi[s] = std::fmax(hi[s], x[l]);
            }
            neg[s] = lo < 0.0f ? -lo : 0.0f;
        }
        const uint16_t dmin16 = covering_super_scale(neg, nullptr, 8, 1, 63);  // dmin*m >= neg
        const float dmin = fp16_to_fp32(dmin16);
        uint8_t m0[8];
        float dm0[8];
        for (int s = 0; s < 8; ++s) {
            const int m = covering_scale(dmin, 0.0f, neg[s], 1, 63);
            m0[s] = static_cast<uint8_t>(m > 63 ? 63 : m);
            dm0[s] = dmin * static_cast<float>(m0[s]);
        }
        const uint16_t d16 = covering_super_scale(hi, dm0, 8, 15, 63);  // (d*sc)*15 - dm >= hi
        const float d = fp16_to_fp32(d16);

        uint8_t sc_best[8], m_best[8];
        int8_t q_best[kQkK];
        for (int s = 0; s < 8; ++s) {
            const float* x = src + 32 * s;
            float best = INFINITY;
            int8_t q[32];
            for (int m = m0[s]; m <= m0[s] + 1 && m <= 63; ++m) {
                const float dm = dmin * static_cast<float>(m);
                const int sc_min = covering_scale(d, dm, hi[s], 15, 63);
                for (int sc = sc_min; sc <= sc_min + 3 && sc <= 63; ++sc) {
                    const float err = sub_block_error(x, 32, d * static_cast<float>(sc), dm, 0, 15, q);
                    if (err < best) {
                        best = err;
                        sc_best[s] = static_cast<uint8_t>(sc);
                        m_best[s] = static_cast<uint8_t>(m);
                        for (int l = 0; l < 32; ++l) q_best[32 * s + l] = q[l];
                    }
                }
            }
            if (best == INFINITY) {  // unreachable for inputs in range; keep the block well-formed
                sc_best[s] = 63;
                m_best[s] = m0[s];
                sub_block_error(x, 32, d * 63.0f, dmin * static_cast<float>(m0[s]), 0, 15, q_best + 32 * s);
            }
        }
        BlockQ4_K& blk = blocks[b];
        blk.d = d16;
        blk.dmin = dmin16;
        pack_scale_min_k4(blk.scales, sc_best, m_best);
        for (int j = 0; j < 4; ++j) {  // sub-blocks 2j (low nibbles) and 2j+1 (high nibbles)
            for (int l = 0; l < 32; ++l) {
                blk.qs[32 * j + l] = static_cast<uint8_t>(q_best[64 * j + l] | (q_best[64 * j + 32 + l] << 4));
            }
        }
    }
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q6_K", n, kQkK);
    auto* blocks = static_cast<BlockQ6_K*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        float amax[16];
        for (int s = 0; s < 16; ++s) {
            amax[s] = 0.0f;
            for (int l = 0; l < 16; ++l) amax[s] = std::fmax(amax[s], std::fabs(src[16 * s + l]));
        }
        // Symmetric: q in [-31, 31] covers [-amax, amax] once 31*d*sc >= amax; sc <= 127.
        const uint16_t d16 = covering_super_scale(amax, nullptr, 16, 31, 127);
        const float d = fp16_to_fp32(d16);
        int8_t q_best[kQkK];
        BlockQ6_K& blk = blocks[b];
        for (int s = 0; s < 16; ++s) {
            const float* x = src + 16 * s;
            const int sc_min = covering_scale(d, 0.0f, amax[s], 31, 127);
            float best = INFINITY;
            int8_t q[16];
            for (int sc = sc_min; sc <= sc_min + 3 && sc <= 127; ++sc) {
                const float err = sub_block_error(x, 16, d * static_cast<float>(sc), 0.0f, -32, 31, q);
                if (err < best) {
                    best = err;
                    blk.scales[s] = static_cast<int8_t>(sc);
                    for (int l = 0; l < 16; ++l) q_best[16 * s + l] = q[l];
                }
            }
            if (best == INFINITY) {  // unreachable for inputs in range
                blk.scales[s] = 127;
                sub_block_error(x, 16, d * 127.0f, 0.0f, -32, 31, q_best + 16 * s);
            }
        }
        blk.d = d16;
        // Pack: element e = 128*h + 32*k + l -> nibble k/2 of ql[64*h + 32*(k%2) + l] and
        // bits 2k..2k+1 of qh[32*h + l], stored with +32 bias.
        for (int i = 0; i < kQkK / 2; ++i) blk.ql[i] = 0;
        for (int i = 0; i < kQkK / 4; ++i) blk.qh[i] = 0;
        for (int e = 0; e < kQkK; ++e) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int v = q_best[e] + 32;
            blk.ql[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>((v & 0xF) << (4 * (k / 2)));
            blk.qh[32 * h + l] |= static_cast<uint8_t>((v >> 4) << (2 * k));
        }
    }
}

}  // namespace strata

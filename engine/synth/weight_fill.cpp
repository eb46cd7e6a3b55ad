// Random rows in on-disk formats (see weight_fill.h). Block layouts: docs/FORMATS.md §2.1-2.2.
// Every quantized block gets a random per-block scale jitter (×0.75..1.25) and, where the
// format allows, a random sign, so blocks differ the way real ones do.
#include "engine/synth/weight_fill.h"

#include <array>
#include <cmath>
#include <cstring>

#include <vector>

#include "engine/core/error.h"
#include "engine/synth/rng.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

namespace strata {
namespace {

constexpr int kJitterLevels = 16;
constexpr int kNormalBits = 12;
constexpr int kNormalSize = 1 << kNormalBits;

// Standard normal quantiles at (i + 0.5) / 4096, rescaled to exactly unit variance.
const std::array<float, kNormalSize>& normal_table() {
    static const std::array<float, kNormalSize> table = [] {
        std::array<double, kNormalSize> z{};
        double sum_sq = 0.0;
        for (int i = 0; i < kNormalSize; ++i) {
            double p = (i + 0.5) / kNormalSize;
            double lo = -10.0, hi = 10.0;  // bisection on Phi(x) = erfc(-x/sqrt2)/2
            for (int it = 0; it < 80; ++it) {
                double mid = 0.5 * (lo + hi);
                (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
            }
            z[i] = 0.5 * (lo + hi);
            sum_sq += z[i] * z[i];
        }
        double norm = std::sqrt(sum_sq / kNormalSize);
        std::array<float, kNormalSize> out{};
        for (int i = 0; i < kNormalSize; ++i)
            out[i] = static_cast<float>(z[i] / norm);
        return out;
    }();
    return table;
}

double jitter(int k) {
    return 0.75 + 0.5 * (k + 0.5) / kJitterLevels;
}

double jitter_mean_square() {
    double s = 0.0;
    for (int k = 0; k < kJitterLevels; ++k)
        s += jitter(k) * jitter(k);
    return s / kJitterLevels;
}

// Mean of x^2 over the integers lo..hi.
double mean_square(int lo, int hi) {
    double s = 0.0;
    for (int x = lo; x <= hi; ++x)
        s += static_cast<double>(x) * x;
    return s / (hi - lo + 1);
}

void random_bytes(Rng& rng, uint8_t* p, size_t n) {
    while (n >= 8) {
        uint64_t v = rng.next();
        std::memcpy(p, &v, 8);
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t v = rng.next();
        std::memcpy(p, &v, n);
    }
}

void put_half(uint8_t* p, uint16_t h) {
    std::memcpy(p, &h, 2);
}

// The per-block super-scales of one tensor: jitter level k (and sign bit s) -> f16 bits.
struct BlockScales {
    std::array<uint16_t, 2 * kJitterLevels> d{};  // index: k | s << 4
    std::array<uint16_t, kJitterLevels> dmin{};   // K-quants with mins: dmin = ratio * d

    // `quant_ms`: mean square of the dequantized value per unit of d.
    BlockScales(double std, double quant_ms, double dmin_ratio) {
        double d0 = std / std::sqrt(quant_ms * jitter_mean_square());
        for (int k = 0; k < kJitterLevels; ++k) {
            auto dk = static_cast<float>(d0 * jitter(k));
            d[k] = fp32_to_fp16(dk);
            d[k | kJitterLevels] = fp32_to_fp16(-dk);
            dmin[k] = fp32_to_fp16(static_cast<float>(dmin_ratio) * dk);
        }
    }
};

// Q4_K / Q5_K sub-block scales and mins: sc in 16..23, m the rounded value that cancels the
// sub-block mean (mean_q * sc / dmin_ratio), packed into the 12-byte 6-bit layout.
void k_scales(Rng& rng, double mean_q, double dmin_ratio, uint8_t* s12) {
    uint64_t bits = rng.next();
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = static_cast<uint8_t>(16 + ((bits >> (3 * j)) & 7));
        m[j] = static_cast<uint8_t>(std::lround(sc[j] * mean_q / dmin_ratio));
    }
    for (int j = 0; j < 4; ++j) {
        s12[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s12[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        s12[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

void fill_q8_0(Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    for (int64_t b = 0; b < nb; ++b, p += 34) {
        put_half(p, bs.d[rng.below(2 * kJitterLevels)]);
        random_bytes(rng, p + 2, 32);
    }
}

void fill_q5_0(Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    for (int64_t b = 0; b < nb; ++b, p += 22) {
        put_half(p, bs.d[rng.below(2 * kJitterLevels)]);
        random_bytes(rng, p + 2, 20);  // qh[4], qs[16]
    }
}

void fill_q4_k(Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    for (int64_t b = 0; b < nb; ++b, p += 144) {
        uint32_t k = rng.below(kJitterLevels);
        put_half(p, bs.d[k]);
        put_half(p + 2, bs.dmin[k]);
        k_scales(rng, 7.5, 4.0, p + 4);
        random_bytes(rng, p + 16, 128);
    }
}

void fill_q5_k(Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    for (int64_t b = 0; b < nb; ++b, p += 176) {
        uint32_t k = rng.below(kJitterLevels);
        put_half(p, bs.d[k]);
        put_half(p + 2, bs.dmin[k]);
        k_scales(rng, 15.5, 8.0, p + 4);
        random_bytes(rng, p + 16, 160);  // qh[32], qs[128]
    }
}

void fill_q6_k(Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    for (int64_t b = 0; b < nb; ++b, p += 210) {
        random_bytes(rng, p, 192);  // ql[128], qh[64]
        uint64_t bits = rng.next();
        for (int j = 0; j < 16; ++j) {  // scales ±(8..15)
            int v = 8 + static_cast<int>((bits >> (4 * j)) & 7);
            int8_t s = static_cast<int8_t>(((bits >> (4 * j + 3)) & 1) ? -v : v);
            std::memcpy(p + 192 + j, &s, 1);
        }
        put_half(p + 208, bs.d[rng.below(kJitterLevels)]);
    }
}

// n values drawn from `table` (a normal distribution's quantiles), 5 per random word.
template <typename T>
void fill_table(Rng& rng, const std::array<T, kNormalSize>& table, int64_t n, uint8_t* out) {
    int64_t i = 0;
    while (i < n) {
        uint64_t bits = rng.next();
        for (int k = 0; k < 5 && i < n; ++k, ++i) {
            std::memcpy(out + i * sizeof(T),
                        &table[(bits >> (k * kNormalBits)) & (kNormalSize - 1)], sizeof(T));
        }
    }
}

// ---- i-quants and ternary types: every bit pattern of their index and scale fields is a valid
// block, so blocks are random bytes with the f16 d written over its place.
bool is_random_block_type(GgmlType type) {
    return is_iq_lattice(type) || is_ternary(type);
}

void put_block_scale(GgmlType type, uint8_t* block, uint16_t d) {
    switch (type) {
        case GgmlType::TQ1_0:
            put_half(block + 52, d);
            break;
        case GgmlType::TQ2_0:
            put_half(block + 64, d);
            break;
        case GgmlType::IQ1_M:  // nibble i of d tops scale word i (bytes 48..55)
            for (int i = 0; i < 4; ++i) {
                uint16_t w;
                std::memcpy(&w, block + 48 + 2 * i, 2);
                put_half(block + 48 + 2 * i, static_cast<uint16_t>((w & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12)));
            }
            break;
        default:  // the lattice i-quants keep d first
            put_half(block, d);
            break;
    }
}

// TQ2_0's 2-bit fields must stay below 3 (3 would read as +2 and bias the mean): four uniform
// trits per byte.
void random_trit_pairs(Rng& rng, uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        uint32_t r = rng.below(81);
        uint8_t byte = 0;
        for (int k = 0; k < 4; ++k, r /= 3) byte = static_cast<uint8_t>(byte | ((r % 3) << (2 * k)));
        p[i] = byte;
    }
}

void random_block(GgmlType type, Rng& rng, uint8_t* p, size_t bytes) {
    if (type == GgmlType::TQ2_0) {
        random_trit_pairs(rng, p, 64);
    } else {
        random_bytes(rng, p, bytes);
    }
}

void fill_random_blocks(GgmlType type, Rng& rng, const BlockScales& bs, int64_t nb, uint8_t* p) {
    const size_t bytes = type_traits(type).type_size;
    for (int64_t b = 0; b < nb; ++b, p += bytes) {
        random_block(type, rng, p, bytes);
        put_block_scale(type, p, bs.d[rng.below(2 * kJitterLevels)]);
    }
}

// Mean square of the dequantized values of random blocks per unit of d, measured once per type
// with quant/'s reference on 4096 blocks of d = 1 (the grids and scale rules are not worth a
// formula each; the sub-block scales vary, so fewer blocks would leave percent-level noise).
double measure_mean_square(GgmlType type) {
    const TypeTraits& t = type_traits(type);
    constexpr int kBlocks = 4096;
    std::vector<uint8_t> raw(kBlocks * t.type_size);
    Rng rng(0x5EED);
    for (int b = 0; b < kBlocks; ++b) {
        random_block(type, rng, raw.data() + b * t.type_size, t.type_size);
        put_block_scale(type, raw.data() + b * t.type_size, fp32_to_fp16(1.0f));
    }
    std::vector<float> y(static_cast<size_t>(kBlocks * t.block_size));
    t.dequantize(raw.data(), y.data(), kBlocks * t.block_size);
    double s = 0.0;
    for (float v : y) s += static_cast<double>(v) * v;
    return s / static_cast<double>(y.size());
}

double random_block_mean_square(GgmlType type) {
    static const std::array<double, 64> cache = [] {
        std::array<double, 64> c{};
        for (uint32_t id = 0; id < c.size(); ++id) {
            const TypeTraits* t = find_type_traits(id);
            if (t != nullptr && is_random_block_type(t->type)) c[id] = measure_mean_square(t->type);
        }
        return c;
    }();
    return cache[static_cast<uint32_t>(type)];
}

// The block scales that give quantized weights of `type` the standard deviation `std`: the mean
// square of the dequantized value per unit of d, see each format's fill above.
BlockScales block_scales(GgmlType type, float std) {
    double quant_ms = 1.0, dmin_ratio = 0.0;
    switch (type) {
        case GgmlType::Q8_0:
            quant_ms = mean_square(-128, 127);
            break;
        case GgmlType::Q5_0:
            quant_ms = mean_square(-16, 15);
            break;
        case GgmlType::Q4_K:
            quant_ms = mean_square(16, 23) * 255.0 / 12.0;
            dmin_ratio = 4;
            break;
        case GgmlType::Q5_K:
            quant_ms = mean_square(16, 23) * 1023.0 / 12.0;
            dmin_ratio = 8;
            break;
        case GgmlType::Q6_K:
            quant_ms = mean_square(8, 15) * mean_square(-32, 31);
            break;
        default:
            if (is_random_block_type(type)) quant_ms = random_block_mean_square(type);
            break;
    }
    return BlockScales(std, quant_ms, dmin_ratio);
}

}  // namespace

bool can_fill(GgmlType type) {
    if (is_random_block_type(type)) return true;
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::Q5_0:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
            return true;
        default:
            return false;
    }
}

void fill_rows(GgmlType type, WeightDist dist, uint64_t seed, int64_t row0, int64_t n_rows,
               int64_t ne0, uint8_t* out) {
    const TypeTraits& traits = type_traits(type);
    if (!can_fill(type)) {
        throw UnsupportedError(
            cat("synthetic weights of type ", traits.name, " are not supported"));
    }
    if (traits.is_quantized && dist.mean != 0.0f) {
        throw ArgumentError(
            cat("synthetic ", traits.name, " weights need mean 0, got ", dist.mean));
    }
    const size_t rb = row_bytes(type, ne0);
    const int64_t nb = ne0 / traits.block_size;

    std::array<float, kNormalSize> f32{};
    std::array<uint16_t, kNormalSize> f16{};
    if (!traits.is_quantized) {
        const auto& z = normal_table();
        for (int i = 0; i < kNormalSize; ++i) {
            f32[i] = dist.mean + dist.std * z[i];
            f16[i] = type == GgmlType::BF16 ? fp32_to_bf16(f32[i]) : fp32_to_fp16(f32[i]);
        }
    }
    const BlockScales bs = block_scales(type, dist.std);

    for (int64_t r = 0; r < n_rows; ++r) {
        Rng rng(mix_seed(seed, static_cast<uint64_t>(row0 + r)));
        uint8_t* p = out + r * rb;
        switch (type) {
            case GgmlType::F32:
                fill_table(rng, f32, ne0, p);
                break;
            case GgmlType::F16:
            case GgmlType::BF16:
                fill_table(rng, f16, ne0, p);
                break;
            case GgmlType::Q8_0:
                fill_q8_0(rng, bs, nb, p);
                break;
            case GgmlType::Q5_0:
                fill_q5_0(rng, bs, nb, p);
                break;
            case GgmlType::Q4_K:
                fill_q4_k(rng, bs, nb, p);
                break;
            case GgmlType::Q5_K:
                fill_q5_k(rng, bs, nb, p);
                break;
            case GgmlType::Q6_K:
                fill_q6_k(rng, bs, nb, p);
                break;
            default:
                fill_random_blocks(type, rng, bs, nb, p);
                break;
        }
    }
}

}  // namespace strata

// Helpers for the CPU backend tests: owning host tensors, random inputs (never zeros), random
// weights of every type (quantized with quant/'s reference quantizers, else random valid
// blocks) and the normalised mean squared error every op is judged by.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <random>
#include <vector>

#include "engine/core/tensor.h"
#include "quant/ggml_type.h"
#include "quant/half.h"

namespace strata {
// Readable test names in gtest output ("q4_K" rather than bytes).
inline void PrintTo(GgmlType type, std::ostream* os) {
    *os << type_traits(type).name;
}
}  // namespace strata

namespace strata::cpu::test {

// A contiguous host tensor that owns its bytes.
struct HostTensor {
    std::vector<uint8_t> bytes;
    Tensor t;

    HostTensor(GgmlType type, std::initializer_list<int64_t> ne) {
        t = Tensor::contiguous(type, nullptr, ne);
        bytes.assign(t.n_bytes() + 64, 0xA5);  // non-zero fill: unwritten output shows up
        t.data = bytes.data();
    }
    HostTensor(const HostTensor& other) : bytes(other.bytes), t(other.t) { t.data = bytes.data(); }
    HostTensor& operator=(const HostTensor&) = delete;

    float* f32() const { return t.as<float>(); }
    int64_t size() const { return t.n_elements(); }
};

inline std::mt19937_64& rng() {
    static std::mt19937_64 gen(20240611);
    return gen;
}

// Uniform in [lo, hi], redrawn while |x| < 1e-3 so no input is (near) zero.
inline float uniform(float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    float v = 0.0f;
    do
        v = dist(rng());
    while (v > -1e-3f && v < 1e-3f);
    return v;
}

inline void fill_uniform(float* x, int64_t n, float lo = -1.0f, float hi = 1.0f) {
    for (int64_t i = 0; i < n; ++i)
        x[i] = uniform(lo, hi);
}

inline HostTensor random_f32(std::initializer_list<int64_t> ne, float lo = -1.0f, float hi = 1.0f) {
    HostTensor h(GgmlType::F32, ne);
    fill_uniform(h.f32(), h.size(), lo, hi);
    return h;
}

// Offsets of the f16 scale fields of types that have no reference quantizer (facts §2.1).
inline std::vector<size_t> half_fields(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {0, 2};
        case GgmlType::Q2_K:
            return {80, 82};
        case GgmlType::Q3_K:
            return {108};
        case GgmlType::Q6_K:
            return {208};
        default:
            return {0};  // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS: d first
    }
}

// A weight matrix [k, n] of `type`: random floats through the reference quantizer, or random
// bytes with sane f16 scales where the type has none.
inline HostTensor random_weights(GgmlType type, int64_t k, int64_t n) {
    HostTensor w(type, {k, n});
    const TypeTraits& traits = type_traits(type);
    if (traits.quantize != nullptr) {
        std::vector<float> row(static_cast<size_t>(k));
        for (int64_t r = 0; r < n; ++r) {
            fill_uniform(row.data(), k);
            traits.quantize(row.data(), static_cast<uint8_t*>(w.t.data) + r * w.t.nb[1], k);
        }
        return w;
    }
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint64_t i = 0; i < w.t.n_bytes(); ++i)
        w.bytes[i] = static_cast<uint8_t>(byte(rng()));
    const uint64_t n_blocks = w.t.n_bytes() / traits.type_size;
    for (uint64_t b = 0; b < n_blocks; ++b) {
        for (size_t offset : half_fields(type)) {
            const uint16_t h = fp32_to_fp16(uniform(0.005f, 0.05f));
            std::memcpy(w.bytes.data() + b * traits.type_size + offset, &h, sizeof(h));
        }
    }
    return w;
}

// Rows of t dequantized with quant/'s reference: [ne0 * n_rows] floats.
inline std::vector<float> dequantized(const Tensor& t) {
    std::vector<float> out(static_cast<size_t>(t.n_elements()));
    for (int64_t r = 0; r < t.n_rows(); ++r) {
        type_traits(t.type).dequantize(static_cast<const uint8_t*>(t.data) + r * t.nb[1],
                                       out.data() + r * t.ne[0], t.ne[0]);
    }
    return out;
}

// Σ(ref − got)² / Σ ref²
template <typename Ref, typename Got>
double nmse(const Ref& ref, const Got* got, size_t n) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(ref[i]) - static_cast<double>(got[i]);
        err += d * d;
        norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
    }
    return norm > 0.0 ? err / norm : err;
}

}  // namespace strata::cpu::test

// Helpers for the CPU backend tests: owning host tensors, random inputs (never zeros), random
// weights of every type (quantized with quant/'s reference quantizers, else random valid
// blocks) and the normalised mean squared error every op is judged by.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels_cpu/kernel_variant.h"
#include "kernels_cpu/qdot.h"
#include "quant/ggml_type.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

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
    HostTensor(HostTensor&& other) noexcept : bytes(std::move(other.bytes)), t(other.t) {
        t.data = bytes.data();
    }
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

// Offsets of the f16 scale fields of types that have no reference quantizer (docs/FORMATS.md §2.1).
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
        case GgmlType::TQ1_0:
            return {52};
        case GgmlType::TQ2_0:
            return {64};
        case GgmlType::IQ1_M:
            return {};  // d is spread over the top nibbles of its scale words: see random_weights
        default:
            return {0};  // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS, IQ1_S..IQ3_S: d first
    }
}

// Writes the f16 d of an IQ1_M block: nibble i of it tops scale word i (bytes 48..55).
inline void set_iq1_m_scale(uint8_t* block, uint16_t h) {
    for (int i = 0; i < 4; ++i) {
        uint16_t word;
        std::memcpy(&word, block + 48 + 2 * i, sizeof(word));
        word = static_cast<uint16_t>((word & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12));
        std::memcpy(block + 48 + 2 * i, &word, sizeof(word));
    }
}

// True for the lattice i-quants, whose reference quantizers search a grid per group (up to
// ~7 ms a block): tests take random blocks of them, which also reach every grid point.
inline bool slow_quantizer(GgmlType type) {
    return is_iq_lattice(type);
}

// A weight matrix [k, n] of `type`: random floats through the reference quantizer, or random
// bytes with sane f16 scales where the type has none (or a slow one).
inline HostTensor random_weights(GgmlType type, int64_t k, int64_t n) {
    HostTensor w(type, {k, n});
    const TypeTraits& traits = type_traits(type);
    if (traits.quantize != nullptr && !slow_quantizer(type)) {
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
        uint8_t* block = w.bytes.data() + b * traits.type_size;
        for (size_t offset : half_fields(type)) {
            const uint16_t h = fp32_to_fp16(uniform(0.005f, 0.05f));
            std::memcpy(block + offset, &h, sizeof(h));
        }
        if (type == GgmlType::IQ1_M) set_iq1_m_scale(block, fp32_to_fp16(uniform(0.005f, 0.05f)));
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

// y_ref [n, m] = W · x in double over W's dequantized values (x unquantized). With
// `magnitude`, also Σ|w·x| per output: the scale of float rounding errors in that output.
inline std::vector<double> reference_matmul(const Tensor& w, const HostTensor& x,
                                            std::vector<double>* magnitude = nullptr) {
    const std::vector<float> wf = dequantized(w);
    const int64_t k = w.ne[0], n = w.ne[1], m = x.t.ne[1];
    std::vector<double> y(static_cast<size_t>(n * m));
    if (magnitude != nullptr) magnitude->assign(y.size(), 0.0);
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0, a = 0.0;
            for (int64_t e = 0; e < k; ++e) {
                const double t =
                    static_cast<double>(wf[j * k + e]) * static_cast<double>(x.f32()[i * k + e]);
                s += t;
                a += t < 0 ? -t : t;
            }
            y[i * n + j] = s;
            if (magnitude != nullptr) (*magnitude)[i * n + j] = a;
        }
    }
    return y;
}

// NMSE allowed between matmul and reference_matmul on inputs uniform in [-1, 1]. The f32 path
// only rounds; the integer kernels quantize each activation row to Q8_0 / Q8_1 / Q8_K first
// (per-element error <= d/2 with d = amax/127 of its block), which alone gives an NMSE of
// about (1/127)²/12 / E[x²] ≈ 1.5e-5 for such inputs (measured: 1e-5 .. 3e-5).
inline double matmul_nmse_bound(GgmlType type, KernelVariant variant) {
    const bool integer_path = variant != KernelVariant::Dequant &&
                              find_qdot_kernel(type, variant) != nullptr;
    return integer_path ? 1e-4 : 1e-10;
}

// Forces a kernel variant for the lifetime of the object, then restores the default.
class ScopedKernelVariant {
  public:
    explicit ScopedKernelVariant(KernelVariant v) { set_kernel_variant(v); }
    ~ScopedKernelVariant() { set_kernel_variant(KernelVariant::Auto); }
    ScopedKernelVariant(const ScopedKernelVariant&) = delete;
    ScopedKernelVariant& operator=(const ScopedKernelVariant&) = delete;
};

// The variants with their own row-op and attention kernels (row_ops.h) this CPU can run.
inline std::vector<KernelVariant> row_op_variants() {
    std::vector<KernelVariant> out;
    for (KernelVariant v : {KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512}) {
        if (kernel_variant_supported(v)) out.push_back(v);
    }
    return out;
}

// NMSE pooled over many calls: a single output near zero would make a per-call NMSE of a
// handful of outputs meaningless.
struct PooledNmse {
    double err = 0.0;
    double norm = 0.0;

    template <typename Ref, typename Got>
    void add(const Ref& ref, const Got* got, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const double d = static_cast<double>(ref[i]) - static_cast<double>(got[i]);
            err += d * d;
            norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
        }
    }
    double value() const { return norm > 0.0 ? err / norm : err; }
};

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

// Every quantized weight type the CPU kernels compute with.
inline constexpr GgmlType kQuantTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,   GgmlType::Q6_K,
    GgmlType::IQ4_NL, GgmlType::IQ4_XS,
    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0,
};

// Prefill of n_tokens at the end of n_cells: positions n_cells - n_tokens .. n_cells - 1.
inline std::vector<int32_t> tail_positions(int64_t n_cells, int64_t n_tokens) {
    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(n_cells - n_tokens + t);
    return pos;
}

}  // namespace strata::cpu::test

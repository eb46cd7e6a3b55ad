// The backend-ops table's cases (backend_ops.h): inputs, shape classes and error bounds.
//
// Shape classes: tiny (one block, one row, one token), odd (3 blocks, 7 rows, 3 tokens: no size
// a multiple of a SIMD width, tile or thread count), decode (one token over 67 rows) and prefill
// (17 and 64 tokens). Inputs are uniform in [-1, 1] without values near zero (test_util.h).
//
// How the bounds were chosen (NMSE = Σ(ref − got)² / Σ ref² against the Dequant-variant CPU):
// - f32 row ops (rms_norm, add, scale, softcap, gated activations): the CPU variants differ from
//   the scalar row ops only by summation order and polynomial exp/tanh (measured < 1e-13;
//   bound 1e-10, as ops_variants_test.cpp); CUDA's float intrinsics 1e-7 (its ops_test.cpp).
// - rope: float angles at positions < 1000 (|Δθ| ~ 1e-5 rad): 1e-9; CUDA 1e-7.
// - get_rows and kv_store: a dequantize / quantize of the same bytes: bit-identical (0).
// - attention over the same cache bytes: f32 softmax and dots in another order: 1e-9; CUDA 1e-7.
// - matmul: matmul_bound() below, per weight type.
#include "tests/kernels_cpu/backend_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/backend_ops_cases.h"

namespace strata::backend_ops {

Tensor OnBackend::put(const HostTensor& h) {
    Buffer buffer = backend_.allocate(h.t.n_bytes(), "backend-ops tensor");
    Tensor d = h.t;
    d.data = buffer.data();
    d.memory = buffer.memory();
    backend_.copy_in(h.t, d);
    buffers_.push_back(std::move(buffer));
    return d;
}

Tensor OnBackend::nan_f32(std::initializer_list<int64_t> ne) {
    HostTensor h(GgmlType::F32, ne);
    for (int64_t i = 0; i < h.size(); ++i)
        h.f32()[i] = std::numeric_limits<float>::quiet_NaN();
    return put(h);
}

std::vector<float> OnBackend::read(const Tensor& t) {
    HostTensor h(t.type, {t.ne[0], t.ne[1], t.ne[2], t.ne[3]});
    backend_.copy_out(t, h.t);
    return cpu::test::dequantized(h.t);
}

const std::vector<GgmlType>& weight_types() {
    static const std::vector<GgmlType> types = {
        GgmlType::F32,     GgmlType::F16,    GgmlType::BF16,  GgmlType::Q4_0,    GgmlType::Q4_1,
        GgmlType::Q5_0,    GgmlType::Q5_1,   GgmlType::Q8_0,  GgmlType::Q2_K,    GgmlType::Q3_K,
        GgmlType::Q4_K,    GgmlType::Q5_K,   GgmlType::Q6_K,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS,
        GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
        GgmlType::IQ1_S,   GgmlType::IQ1_M,  GgmlType::TQ1_0, GgmlType::TQ2_0,   GgmlType::MXFP4,
    };
    return types;
}

HostTensor random_weights(GgmlType type, int64_t k, int64_t n, std::vector<float>* source) {
    const TypeTraits& traits = type_traits(type);
    if (traits.quantize == nullptr) {
        HostTensor w = cpu::test::random_weights(type, k, n);
        if (type == GgmlType::MXFP4) {  // E8M0 exponents near 2^-5 (the helper wrote an f16 there)
            for (uint64_t b = 0; b < w.t.n_bytes() / traits.type_size; ++b)
                w.bytes[b * traits.type_size] = static_cast<uint8_t>(120 + b % 5);
        }
        return w;
    }
    // Every type with a quantizer goes through it. The lattice i-quants search a grid per
    // group (~5 ms a block), so they quantize one pool of 16 blocks per type and process, and
    // each matrix draws its blocks from it at random: rows still differ, and every value is
    // one the quantizer produced.
    const int64_t bs = traits.block_size, n_blocks = k / bs * n;
    const bool pooled = cpu::test::slow_quantizer(type);
    const int64_t pool = pooled ? 16 : n_blocks;
    static std::map<GgmlType, std::pair<std::vector<float>, std::vector<uint8_t>>> pools;
    auto [floats, blocks] = pooled && pools.count(type)
                                ? pools[type]
                                : std::pair<std::vector<float>, std::vector<uint8_t>>{};
    if (blocks.empty()) {
        floats.resize(static_cast<size_t>(pool * bs));
        blocks.resize(static_cast<size_t>(pool) * traits.type_size);
        cpu::test::fill_uniform(floats.data(), pool * bs);
        traits.quantize(floats.data(), blocks.data(), pool * bs);
        if (pooled) pools[type] = {floats, blocks};
    }
    HostTensor w(type, {k, n});
    std::vector<float> src(static_cast<size_t>(k * n));
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t from = pooled ? static_cast<int64_t>(cpu::test::rng()() % pool) : b;
        std::memcpy(w.bytes.data() + b * traits.type_size, blocks.data() + from * traits.type_size,
                    traits.type_size);
        std::memcpy(src.data() + b * bs, floats.data() + from * bs, sizeof(float) * bs);
    }
    if (source != nullptr) *source = std::move(src);
    return w;
}

// matmul bounds per weight type. The reference multiplies the dequantized weights by the f32
// activations; the fast paths differ from it as follows.
// - f32: only summation order (CPU f32 dot, CUDA f32 GEMV / SGEMM without TF32): 1e-10 / 1e-9.
// - f16, bf16: the CPU dots in f32 (1e-10); CUDA's prefill rounds the activations to f16 for
//   cuBLAS (2^-11 relative per element, NMSE ~1e-7): 1e-6.
// - block types: the integer kernels (CPU scalar/AVX2/AVX-512, CUDA dp4a) first round each 32
//   activations to 8 bits (d = amax/127), an NMSE of (1/127)²/12 / E[x²] ≈ 1.5e-5 for uniform
//   inputs whatever the weight type (measured 0.8e-5 .. 3.5e-5 over the table's types and
//   shapes): 1e-4 leaves a factor 3 for the small tiny/odd shapes, where fewer products average.
Bound matmul_bound(GgmlType type) {
    switch (type) {
        case GgmlType::F32: return {1e-10, 1e-9};
        case GgmlType::F16:
        case GgmlType::BF16: return {1e-10, 1e-6};
        default: return {1e-4, 1e-4};
    }
}

const std::vector<std::string>& families() {
    static const std::vector<std::string> names = {"matmul",   "get_rows",  "row_ops", "rope",
                                                   "kv_store", "attention", "sparse",  "experts",
                                                   "routed_experts", "fused"};
    return names;
}

const std::vector<OpCase>& cases_of(const std::string& family) {
    static std::map<std::string, std::vector<OpCase>> built;
    auto it = built.find(family);
    if (it != built.end()) return it->second;
    static const std::map<std::string, void (*)(std::vector<OpCase>&)> builders = {
        {"matmul", add_matmul_cases},  {"get_rows", add_get_rows_cases},
        {"row_ops", add_row_op_cases}, {"rope", add_rope_cases},
        {"kv_store", add_kv_cases},    {"attention", add_attention_cases},
        {"sparse", add_sparse_cases},  {"experts", add_expert_cases},
        {"routed_experts", add_routed_expert_cases}, {"fused", add_fused_cases},
    };
    cpu::test::rng().seed(16);  // the same inputs whichever families ran before
    std::vector<OpCase>& cases = built[family];
    builders.at(family)(cases);
    return cases;
}

namespace {

// The case's output on the reference backend: a CpuBackend on the Dequant variant.
std::vector<float> reference_output(const OpCase& c) {
    const cpu::test::ScopedKernelVariant scalar(cpu::KernelVariant::Dequant);
    cpu::CpuBackend reference(2);
    OnBackend on(reference);
    return c.run(on);
}

}  // namespace

void check_family(Backend& backend, const std::string& family, bool cuda,
                  cpu::KernelVariant variant) {
    std::map<std::string, cpu::test::PooledNmse> pools;
    std::map<std::string, double> pool_bounds;
    for (const OpCase& c : cases_of(family)) {
        const std::string what = cat(family, "/", c.name, " on ", backend.name());
        std::vector<float> ref = reference_output(c);  // leaves the variant on Auto
        std::vector<float> got;
        try {
            const cpu::test::ScopedKernelVariant under_test(variant);
            OnBackend on(backend);
            got = c.run(on);
        } catch (const UnsupportedError& e) {
            if (!c.sparse) ADD_FAILURE() << what << ": " << e.what();
            continue;  // activation sparsity is optional (backend.h)
        }
        ASSERT_EQ(got.size(), ref.size()) << what;
        if (c.sparse) {
            EXPECT_EQ(got.back(), ref.back()) << what << ": the count";
            got.pop_back();
            ref.pop_back();
        }
        const double err = cpu::test::nmse(ref, got.data(), ref.size());
        const double bound = cuda ? c.bound.cuda : c.bound.cpu;
        EXPECT_LE(err, c.pool.empty() ? bound : kPooledCaseFactor * bound) << what;
        ::testing::Test::RecordProperty(family + "." + c.name, cat(err));
        if (c.pool.empty()) continue;
        pools[c.pool].add(ref, got.data(), ref.size());
        pool_bounds[c.pool] = bound;
    }
    for (const auto& [pool, nmse] : pools) {
        EXPECT_LE(nmse.value(), pool_bounds[pool])
            << family << "/" << pool << " pooled on " << backend.name();
        ::testing::Test::RecordProperty(family + "." + pool + ".pooled", cat(nmse.value()));
    }
}

}  // namespace strata::backend_ops

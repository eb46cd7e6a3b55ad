// kv_store and attention of the CPU backend: a double-precision reference over the same
// (dequantized) cache, GQA head mapping, causal and sliding-window masking, softcap.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

// The reference reads the same dequantized cache values as the kernel, so every cache type
// differs from it by f32 rounding only; 1e-9 holds for all of them.
constexpr double kAttentionNmse = 1e-9;

struct Shape {
    int n_head, n_head_kv, head_dim_k, head_dim_v;
};

struct Cache {
    HostTensor k, v;
    std::vector<float> k_f32, v_f32;  // what was stored, before conversion
};

// A cache of n_cells random f32 rows stored with kv_store (converted to `type`).
Cache make_cache(CpuBackend& backend, GgmlType type, const Shape& s, int64_t n_cells) {
    const int64_t k_row = int64_t{s.head_dim_k} * s.n_head_kv;
    const int64_t v_row = int64_t{s.head_dim_v} * s.n_head_kv;
    Cache c{HostTensor(type, {k_row, n_cells + 3}), HostTensor(type, {v_row, n_cells + 3}), {}, {}};
    const HostTensor k_src = test::random_f32({k_row, n_cells});
    const HostTensor v_src = test::random_f32({v_row, n_cells});
    backend.kv_store(k_src.t, c.k.t, 0);
    backend.kv_store(v_src.t, c.v.t, 0);
    c.k_f32.assign(k_src.f32(), k_src.f32() + k_src.size());
    c.v_f32.assign(v_src.f32(), v_src.f32() + v_src.size());
    return c;
}

// out [head_dim_v, n_head, n_tokens] in double from K/V values [row, cells].
std::vector<double> reference_attention(const float* q, const std::vector<float>& k,
                                        const std::vector<float>& v, const int32_t* pos,
                                        int64_t n_tokens, const AttentionParams& p) {
    const int64_t k_row = int64_t{p.head_dim_k} * p.n_head_kv;
    const int64_t v_row = int64_t{p.head_dim_v} * p.n_head_kv;
    std::vector<double> out(static_cast<size_t>(p.head_dim_v * p.n_head * n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t g = h / (p.n_head / p.n_head_kv);
            const float* qh = q + (t * p.n_head + h) * p.head_dim_k;
            std::vector<double> s;
            std::vector<int64_t> cells;
            for (int64_t c = 0; c <= pos[t]; ++c) {
                if (p.window > 0 && pos[t] - c >= p.window) continue;
                double d = 0.0;
                for (int64_t i = 0; i < p.head_dim_k; ++i) {
                    d += double(qh[i]) * k[c * k_row + g * p.head_dim_k + i];
                }
                d *= p.scale;
                if (p.softcap > 0.0f) d = p.softcap * std::tanh(d / p.softcap);
                s.push_back(d);
                cells.push_back(c);
            }
            double mx = -1e300, sum = 0.0;
            for (double x : s)
                mx = std::max(mx, x);
            for (double& x : s)
                sum += (x = std::exp(x - mx));
            double* o = out.data() + (t * p.n_head + h) * p.head_dim_v;
            for (size_t j = 0; j < s.size(); ++j) {
                for (int64_t i = 0; i < p.head_dim_v; ++i) {
                    o[i] += s[j] / sum * v[cells[j] * v_row + g * p.head_dim_v + i];
                }
            }
        }
    }
    return out;
}

AttentionParams params_of(const Shape& s, int32_t window, float softcap) {
    AttentionParams p;
    p.n_head = s.n_head;
    p.n_head_kv = s.n_head_kv;
    p.head_dim_k = s.head_dim_k;
    p.head_dim_v = s.head_dim_v;
    p.scale = 1.0f / std::sqrt(float(s.head_dim_k));
    p.window = window;
    p.softcap = softcap;
    return p;
}

using test::tail_positions;

class AttentionCacheTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(AttentionCacheTypes, MatchesDoubleReference) {
    const GgmlType type = GetParam();
    CpuBackend backend(2);
    // Bound against the unquantized f32 values: the cache's own quantization error
    // (observed at most ~1e-7 for f16, ~3e-5 for q8_0, ~1e-2 for q4_0).
    const double stored_nmse = type == GgmlType::F32    ? 1e-9
                               : type == GgmlType::F16  ? 1e-6
                               : type == GgmlType::Q8_0 ? 5e-4
                                                        : 5e-2;
    const Shape shapes[] = {{1, 1, 32, 32}, {4, 1, 64, 64}, {8, 2, 32, 64},
                            {6, 3, 64, 32}, {8, 8, 32, 32}, {4, 2, 16, 16}};
    for (const Shape& s : shapes) {
        for (int64_t n_tokens : {1, 5, 17}) {
            const int64_t n_cells = n_tokens + 40;
            const Cache cache = make_cache(backend, type, s, n_cells);
            const std::vector<float> k_dq = test::dequantized(cache.k.t);
            const std::vector<float> v_dq = test::dequantized(cache.v.t);
            const HostTensor q = test::random_f32({s.head_dim_k, s.n_head, n_tokens}, -2.0f, 2.0f);
            const std::vector<int32_t> pos = tail_positions(n_cells, n_tokens);
            for (int32_t window : {0, 7}) {
                for (float softcap : {0.0f, 1.5f}) {
                    const AttentionParams p = params_of(s, window, softcap);
                    HostTensor out(GgmlType::F32, {s.head_dim_v, s.n_head, n_tokens});
                    backend.attention(q.t, cache.k.t, cache.v.t, n_cells, pos.data(), p, out.t);
                    const auto ref =
                        reference_attention(q.f32(), k_dq, v_dq, pos.data(), n_tokens, p);
                    const auto ref_stored = reference_attention(q.f32(), cache.k_f32, cache.v_f32,
                                                                pos.data(), n_tokens, p);
                    const std::string what =
                        std::string(type_traits(type).name) + " heads " + std::to_string(s.n_head) +
                        "/" + std::to_string(s.n_head_kv) + " tokens " + std::to_string(n_tokens) +
                        " window " + std::to_string(window) + " softcap " + std::to_string(softcap);
                    EXPECT_LE(test::nmse(ref, out.f32(), ref.size()), kAttentionNmse) << what;
                    EXPECT_LE(test::nmse(ref_stored, out.f32(), ref.size()), stored_nmse) << what;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, AttentionCacheTypes,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::Q8_0,
                                           GgmlType::Q4_0),
                         [](const auto& info) {
                             return std::string(type_traits(info.param).name);
                         });

// Overwrites K and V of one cell with fresh random values (in the cache's type).
void perturb_cell(CpuBackend& backend, Cache& cache, int64_t cell) {
    const HostTensor k = test::random_f32({cache.k.t.ne[0], 1}, -3.0f, 3.0f);
    const HostTensor v = test::random_f32({cache.v.t.ne[0], 1}, -3.0f, 3.0f);
    backend.kv_store(k.t, cache.k.t, cell);
    backend.kv_store(v.t, cache.v.t, cell);
}

std::vector<float> run(CpuBackend& backend, const HostTensor& q, const Cache& cache,
                       int64_t n_cells, const std::vector<int32_t>& pos, const AttentionParams& p) {
    HostTensor out(GgmlType::F32, {p.head_dim_v, p.n_head, q.t.ne[2]});
    backend.attention(q.t, cache.k.t, cache.v.t, n_cells, pos.data(), p, out.t);
    return std::vector<float>(out.f32(), out.f32() + out.size());
}

TEST(CpuAttention, KeyJustOutsideTheWindowHasNoInfluence) {
    CpuBackend backend(2);
    const Shape s{4, 2, 32, 32};
    const int64_t n_cells = 30;
    const int32_t window = 8;
    const AttentionParams p = params_of(s, window, 0.0f);
    Cache cache = make_cache(backend, GgmlType::Q8_0, s, n_cells);
    const HostTensor q = test::random_f32({32, 4, 1});
    const std::vector<int32_t> pos = {25};
    const std::vector<float> base = run(backend, q, cache, n_cells, pos, p);

    perturb_cell(backend, cache, 25 - window);  // p1 - p0 = window: outside
    EXPECT_EQ(base, run(backend, q, cache, n_cells, pos, p));
    perturb_cell(backend, cache, 26);  // a future cell: masked by causality
    EXPECT_EQ(base, run(backend, q, cache, n_cells, pos, p));
    perturb_cell(backend, cache, 25 - window + 1);  // just inside: must matter
    EXPECT_NE(base, run(backend, q, cache, n_cells, pos, p));
}

TEST(CpuAttention, GqaHeadsReadTheirKvHead) {
    CpuBackend backend(2);
    const Shape s{6, 3, 32, 16};  // q heads {0,1}->kv 0, {2,3}->kv 1, {4,5}->kv 2
    const int64_t n_cells = 12;
    const AttentionParams p = params_of(s, 0, 0.0f);
    Cache cache = make_cache(backend, GgmlType::F32, s, n_cells);
    const HostTensor q = test::random_f32({32, 6, 3});
    const std::vector<int32_t> pos = tail_positions(n_cells, 3);
    const std::vector<float> base = run(backend, q, cache, n_cells, pos, p);
    // Change kv head 1 only, in every cell.
    for (int64_t c = 0; c < n_cells; ++c) {
        float* k = cache.k.f32() + c * cache.k.t.ne[0] + 1 * 32;
        float* v = cache.v.f32() + c * cache.v.t.ne[0] + 1 * 16;
        for (int i = 0; i < 32; ++i)
            k[i] = test::uniform(-1.0f, 1.0f);
        for (int i = 0; i < 16; ++i)
            v[i] = test::uniform(-1.0f, 1.0f);
    }
    const std::vector<float> after = run(backend, q, cache, n_cells, pos, p);
    for (int64_t t = 0; t < 3; ++t) {
        for (int64_t h = 0; h < 6; ++h) {
            const size_t at = (t * 6 + h) * 16;
            const bool same =
                std::equal(base.begin() + at, base.begin() + at + 16, after.begin() + at);
            EXPECT_EQ(same, h / 2 != 1) << "token " << t << " head " << h;
        }
    }
}

TEST(CpuAttention, RejectsPositionsOutsideTheCacheAndBadGroups) {
    CpuBackend backend(1);
    const Shape s{4, 2, 32, 32};
    Cache cache = make_cache(backend, GgmlType::F16, s, 8);
    const HostTensor q = test::random_f32({32, 4, 1});
    HostTensor out(GgmlType::F32, {32, 4, 1});
    const int32_t pos[1] = {8};
    EXPECT_THROW(backend.attention(q.t, cache.k.t, cache.v.t, 8, pos, params_of(s, 0, 0.0f), out.t),
                 ArgumentError);
    const int32_t ok[1] = {7};
    AttentionParams bad = params_of(s, 0, 0.0f);
    bad.n_head_kv = 3;
    EXPECT_THROW(backend.attention(q.t, cache.k.t, cache.v.t, 8, ok, bad, out.t), ArgumentError);
}

TEST(CpuKvStore, ConvertsWithTheReferenceQuantizer) {
    CpuBackend backend(2);
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        const TypeTraits& traits = type_traits(type);
        const int64_t row = 96, n = 5, first = 3;
        const HostTensor src = test::random_f32({row, n});
        HostTensor cache(type, {row, 11});
        const std::vector<uint8_t> before = cache.bytes;
        backend.kv_store(src.t, cache.t, first);
        const uint64_t rb = cache.t.nb[1];
        std::vector<uint8_t> expect(rb);
        for (int64_t i = 0; i < n; ++i) {
            traits.quantize(src.f32() + i * row, expect.data(), row);
            EXPECT_EQ(0, std::memcmp(expect.data(), cache.bytes.data() + (first + i) * rb, rb))
                << traits.name << " cell " << first + i;
        }
        EXPECT_EQ(0, std::memcmp(before.data(), cache.bytes.data(), first * rb)) << traits.name;
        EXPECT_EQ(0, std::memcmp(before.data() + (first + n) * rb,
                                 cache.bytes.data() + (first + n) * rb, (11 - first - n) * rb));
        // Rows past the last cell wrap (a ring: attention_ring_test.cpp); more rows than cells
        // or a negative position are refused.
        const HostTensor too_many = test::random_f32({row, 12});
        EXPECT_THROW(backend.kv_store(too_many.t, cache.t, 0), ArgumentError) << traits.name;
        EXPECT_THROW(backend.kv_store(src.t, cache.t, -1), ArgumentError) << traits.name;
    }
}

}  // namespace
}  // namespace strata::cpu

// Sliding-window attention over a ring cache (position p in cell p % cells, backend.h): kv_store
// wraps rows around the ring, and attention over a ring of window + batch cells gives output
// bit-identical to the same keys in a full cache, for every CPU KV type, for prompt batches and
// decode steps at positions far past the ring's size, and close to a double-precision reference;
// a ring too small for its batch is refused.
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

constexpr GgmlType kKvTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};

TEST(CpuKvStore, WrapsAroundARing) {
    CpuBackend backend(2);
    for (GgmlType type : kKvTypes) {
        const TypeTraits& traits = type_traits(type);
        const int64_t row = 64, cells = 11, first = 30, n = 5;  // positions 30..34 -> cells 8, 9, 10, 0, 1
        const HostTensor src = test::random_f32({row, n});
        HostTensor cache(type, {row, cells});
        const std::vector<uint8_t> before = cache.bytes;
        backend.kv_store(src.t, cache.t, first);
        const uint64_t rb = cache.t.nb[1];
        std::vector<uint8_t> expect(rb);
        std::vector<bool> written(cells, false);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t cell = (first + i) % cells;
            written[static_cast<size_t>(cell)] = true;
            if (type == GgmlType::F32) {
                std::memcpy(expect.data(), src.f32() + i * row, rb);
            } else {
                traits.quantize(src.f32() + i * row, expect.data(), row);
            }
            EXPECT_EQ(0, std::memcmp(expect.data(), cache.bytes.data() + cell * rb, rb)) << traits.name << " cell " << cell;
        }
        for (int64_t c = 0; c < cells; ++c) {
            if (written[static_cast<size_t>(c)]) continue;
            EXPECT_EQ(0, std::memcmp(before.data() + c * rb, cache.bytes.data() + c * rb, rb)) << traits.name << " cell " << c;
        }
    }
}

struct RingCase {
    int n_head, n_head_kv, head_dim;
    int32_t window;
    int64_t batch;
};

AttentionParams params_of(const RingCase& rc) {
    AttentionParams p;
    p.n_head = rc.n_head;
    p.n_head_kv = rc.n_head_kv;
    p.head_dim_k = rc.head_dim;
    p.head_dim_v = rc.head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(rc.head_dim));
    p.window = rc.window;
    return p;
}

// out [dv, n_head, n] in double over f32 K/V rows of every position so far ([row, positions]).
std::vector<double> reference(const float* q, const std::vector<float>& k, const std::vector<float>& v,
                              int64_t pos0, int64_t n, const AttentionParams& p) {
    const int64_t row = int64_t{p.head_dim_k} * p.n_head_kv;
    std::vector<double> out(static_cast<size_t>(p.head_dim_v * p.n_head * n), 0.0);
    for (int64_t t = 0; t < n; ++t) {
        const int64_t pos = pos0 + t;
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t g = h / (p.n_head / p.n_head_kv);
            std::vector<double> s;
            const int64_t first = std::max<int64_t>(0, pos - p.window + 1);
            for (int64_t c = first; c <= pos; ++c) {
                double d = 0;
                for (int64_t i = 0; i < p.head_dim_k; ++i)
                    d += double(q[(t * p.n_head + h) * p.head_dim_k + i]) * k[c * row + g * p.head_dim_k + i];
                s.push_back(d * p.scale);
            }
            double mx = -1e300, sum = 0;
            for (double x : s) mx = std::max(mx, x);
            for (double& x : s) sum += (x = std::exp(x - mx));
            for (size_t j = 0; j < s.size(); ++j)
                for (int64_t i = 0; i < p.head_dim_v; ++i)
                    out[(t * p.n_head + h) * p.head_dim_v + i] +=
                        s[j] / sum * v[(first + static_cast<int64_t>(j)) * row + g * p.head_dim_v + i];
        }
    }
    return out;
}

class RingAttention : public ::testing::TestWithParam<GgmlType> {};

// A sequence of `total` positions fed in batches; after each batch both caches answer the
// batch's queries.
TEST_P(RingAttention, MatchesAFullCacheBitForBit) {
    const GgmlType type = GetParam();
    CpuBackend backend(2);
    const double stored_nmse = type == GgmlType::F32 ? 1e-9 : type == GgmlType::F16 ? 1e-6
                               : type == GgmlType::Q8_0 ? 5e-4 : 5e-2;
    // Windows below, at and above the 128-position attention chunk; decode and prompt batches.
    const RingCase cases[] = {{4, 2, 32, 5, 1}, {4, 2, 32, 40, 7}, {8, 1, 64, 130, 33}, {2, 2, 32, 128, 128}};
    for (const RingCase& rc : cases) {
        const AttentionParams p = params_of(rc);
        const int64_t row = int64_t{rc.head_dim} * rc.n_head_kv;
        const int64_t total = 3 * (rc.window + rc.batch) + 17;  // wraps the ring several times
        const int64_t ring = rc.window + rc.batch;
        HostTensor full_k(type, {row, total}), full_v(type, {row, total});
        HostTensor ring_k(type, {row, ring}), ring_v(type, {row, ring});
        std::vector<float> k_all, v_all;  // f32 rows of every position, for the reference
        const std::string what = std::string(type_traits(type).name) + " window " + std::to_string(rc.window) +
                                 " batch " + std::to_string(rc.batch);
        for (int64_t pos0 = 0; pos0 < total; pos0 += rc.batch) {
            const int64_t n = std::min(rc.batch, total - pos0);
            const HostTensor k = test::random_f32({row, n}, -2.0f, 2.0f);
            const HostTensor v = test::random_f32({row, n}, -2.0f, 2.0f);
            k_all.insert(k_all.end(), k.f32(), k.f32() + k.size());
            v_all.insert(v_all.end(), v.f32(), v.f32() + v.size());
            backend.kv_store(k.t, full_k.t, pos0);
            backend.kv_store(v.t, full_v.t, pos0);
            backend.kv_store(k.t, ring_k.t, pos0);
            backend.kv_store(v.t, ring_v.t, pos0);
            const HostTensor q = test::random_f32({rc.head_dim, rc.n_head, n}, -2.0f, 2.0f);
            std::vector<int32_t> pos(static_cast<size_t>(n));
            for (int64_t t = 0; t < n; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(pos0 + t);
            HostTensor out_full(GgmlType::F32, {rc.head_dim, rc.n_head, n});
            HostTensor out_ring(GgmlType::F32, {rc.head_dim, rc.n_head, n});
            backend.attention(q.t, full_k.t, full_v.t, pos0 + n, pos.data(), p, out_full.t);
            backend.attention(q.t, ring_k.t, ring_v.t, pos0 + n, pos.data(), p, out_ring.t);
            ASSERT_EQ(0, std::memcmp(out_full.f32(), out_ring.f32(), out_full.size() * sizeof(float)))
                << what << " positions " << pos0 << ".." << pos0 + n - 1;
            const std::vector<double> ref = reference(q.f32(), k_all, v_all, pos0, n, p);
            EXPECT_LE(test::nmse(ref, out_ring.f32(), ref.size()), stored_nmse) << what << " at " << pos0;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, RingAttention, ::testing::ValuesIn(kKvTypes),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(CpuRingAttention, RefusesARingTooSmallForTheBatch) {
    CpuBackend backend(1);
    const RingCase rc{4, 2, 32, 16, 8};
    const AttentionParams p = params_of(rc);
    const int64_t row = 64;
    // The batch's first query sees window - 1 earlier keys: window + batch - 1 cells are needed.
    for (int64_t cells : {rc.window + rc.batch - 2, rc.window + rc.batch - 1}) {
        HostTensor kc(GgmlType::F16, {row, cells}), vc(GgmlType::F16, {row, cells});
        const int64_t pos0 = 100;
        const HostTensor k = test::random_f32({row, rc.batch});
        backend.kv_store(k.t, kc.t, pos0);
        backend.kv_store(k.t, vc.t, pos0);
        const HostTensor q = test::random_f32({32, 4, rc.batch});
        std::vector<int32_t> pos(static_cast<size_t>(rc.batch));
        for (int64_t t = 0; t < rc.batch; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(pos0 + t);
        HostTensor out(GgmlType::F32, {32, 4, rc.batch});
        if (cells < rc.window + rc.batch - 1) {
            EXPECT_THROW(backend.attention(q.t, kc.t, vc.t, pos0 + rc.batch, pos.data(), p, out.t), ArgumentError);
        } else {
            EXPECT_NO_THROW(backend.attention(q.t, kc.t, vc.t, pos0 + rc.batch, pos.data(), p, out.t));
        }
    }
    // Full attention over a cache smaller than the positions is refused too.
    HostTensor kc(GgmlType::F16, {row, 8}), vc(GgmlType::F16, {row, 8});
    const HostTensor q = test::random_f32({32, 4, 1});
    HostTensor out(GgmlType::F32, {32, 4, 1});
    const int32_t pos[1] = {9};
    AttentionParams full = p;
    full.window = 0;
    EXPECT_THROW(backend.attention(q.t, kc.t, vc.t, 10, pos, full, out.t), ArgumentError);
}

}  // namespace
}  // namespace strata::cpu

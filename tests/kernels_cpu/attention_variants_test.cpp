// Attention of every kernel variant (scalar, AVX2, AVX-512) against a double reference over the
// same dequantized cache, at the head sizes of real models (64, 80, 128, 256), GQA groups wider
// than one register pass (12), contexts spanning several chunks, windows and softcap, every KV
// type; plus the CpuBackend contract: the same bits for any thread count (split decode vs one
// thread) and for a token whether it runs alone or inside a prefill batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

// Same bound as attention_test.cpp: the reference reads the same dequantized values, so only
// f32 rounding and exp's 2e-7 relative error remain (observed NMSE ~1e-13).
constexpr double kNmse = 1e-9;

struct Case {
    int n_head, n_head_kv, head_dim;
};

struct Kv {
    HostTensor k, v;
    std::vector<float> k_dq, v_dq;  // [row, cells] as the kernel sees them
};

Kv make_kv(GgmlType type, const Case& c, int64_t n_cells) {
    CpuBackend backend(2);
    const int64_t row = int64_t{c.head_dim} * c.n_head_kv;
    Kv kv{HostTensor(type, {row, n_cells}), HostTensor(type, {row, n_cells}), {}, {}};
    const HostTensor k = test::random_f32({row, n_cells});
    const HostTensor v = test::random_f32({row, n_cells});
    backend.kv_store(k.t, kv.k.t, 0);
    backend.kv_store(v.t, kv.v.t, 0);
    kv.k_dq = test::dequantized(kv.k.t);
    kv.v_dq = test::dequantized(kv.v.t);
    return kv;
}

AttentionParams params_of(const Case& c, int32_t window, float softcap) {
    AttentionParams p;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_head_kv;
    p.head_dim_k = p.head_dim_v = c.head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    p.window = window;
    p.softcap = softcap;
    return p;
}

// out [d, n_head, n_tokens] in double.
std::vector<double> reference(const float* q, const Kv& kv, const std::vector<int32_t>& pos,
                              const AttentionParams& p) {
    const int64_t d = p.head_dim_k, row = d * p.n_head_kv;
    const int64_t n_tokens = static_cast<int64_t>(pos.size());
    std::vector<double> out(static_cast<size_t>(d * p.n_head * n_tokens), 0.0);
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t g = h / (p.n_head / p.n_head_kv);
            const float* qh = q + (t * p.n_head + h) * d;
            const int64_t first = p.window > 0 ? std::max<int64_t>(0, pos[t] - p.window + 1) : 0;
            std::vector<double> s;
            for (int64_t c = first; c <= pos[t]; ++c) {
                double dot = 0.0;
                for (int64_t i = 0; i < d; ++i)
                    dot += double(qh[i]) * kv.k_dq[c * row + g * d + i];
                dot *= p.scale;
                if (p.softcap > 0.0f) dot = p.softcap * std::tanh(dot / p.softcap);
                s.push_back(dot);
            }
            double mx = -1e300, sum = 0.0;
            for (double x : s)
                mx = std::max(mx, x);
            for (double& x : s)
                sum += (x = std::exp(x - mx));
            double* o = out.data() + (t * p.n_head + h) * d;
            for (size_t j = 0; j < s.size(); ++j) {
                for (int64_t i = 0; i < d; ++i)
                    o[i] += s[j] / sum * kv.v_dq[(first + j) * row + g * d + i];
            }
        }
    }
    return out;
}

std::vector<float> run(int n_threads, const HostTensor& q, const Kv& kv, int64_t n_cells,
                       const std::vector<int32_t>& pos, const AttentionParams& p) {
    CpuBackend backend(n_threads);
    HostTensor out(GgmlType::F32, {p.head_dim_v, p.n_head, q.t.ne[2]});
    backend.attention(q.t, kv.k.t, kv.v.t, n_cells, pos.data(), p, out.t);
    return std::vector<float>(out.f32(), out.f32() + out.size());
}

using test::tail_positions;

class AttentionVariants : public ::testing::TestWithParam<KernelVariant> {
  protected:
    void SetUp() override {
        if (!kernel_variant_supported(GetParam())) GTEST_SKIP() << "CPU lacks this variant";
    }
};

TEST_P(AttentionVariants, MatchesDoubleReferenceAtModelShapes) {
    test::ScopedKernelVariant force(GetParam());
    const Case cases[] = {{32, 8, 128}, {4, 1, 256}, {12, 1, 64}, {6, 2, 80}, {4, 4, 64}};
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        for (const Case& c : cases) {
            // q8_0 / q4_0 need whole 32-element blocks per row: 80 · 2 heads = 160 is.
            for (int64_t n_cells : {1, 300}) {
                const Kv kv = make_kv(type, c, n_cells);
                for (int64_t n_tokens : {1, 7}) {
                    if (n_tokens > n_cells) continue;
                    const HostTensor q =
                        test::random_f32({c.head_dim, c.n_head, n_tokens}, -2.0f, 2.0f);
                    const std::vector<int32_t> pos = tail_positions(n_cells, n_tokens);
                    for (int32_t window : {0, 100}) {
                        for (float softcap : {0.0f, 2.5f}) {
                            const AttentionParams p = params_of(c, window, softcap);
                            const auto got = run(2, q, kv, n_cells, pos, p);
                            const auto ref = reference(q.f32(), kv, pos, p);
                            EXPECT_LE(test::nmse(ref, got.data(), ref.size()), kNmse)
                                << type_traits(type).name << " heads " << c.n_head << "/"
                                << c.n_head_kv << " d " << c.head_dim << " cells " << n_cells
                                << " tokens " << n_tokens << " window " << window << " softcap "
                                << softcap;
                        }
                    }
                }
            }
        }
    }
}

TEST_P(AttentionVariants, SameBitsForAnyThreadCountAndBatch) {
    test::ScopedKernelVariant force(GetParam());
    const Case c{8, 2, 64};
    for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0}) {
        const int64_t n_cells = 700;  // 6 chunks: decode splits them over threads
        const Kv kv = make_kv(type, c, n_cells);
        const int64_t n_tokens = 5;
        const HostTensor q = test::random_f32({c.head_dim, c.n_head, n_tokens}, -2.0f, 2.0f);
        const std::vector<int32_t> pos = tail_positions(n_cells, n_tokens);
        for (int32_t window : {0, 333}) {
            const AttentionParams p = params_of(c, window, window > 0 ? 3.0f : 0.0f);
            const std::vector<float> batch = run(1, q, kv, n_cells, pos, p);
            for (int threads : {2, 3, 5})
                EXPECT_EQ(batch, run(threads, q, kv, n_cells, pos, p)) << threads << " threads";
            // Each token alone (decode, split over threads) gives its rows of the batch.
            const int64_t per_token = int64_t{c.head_dim} * c.n_head;
            for (int64_t t = 0; t < n_tokens; ++t) {
                HostTensor qt(GgmlType::F32, {c.head_dim, c.n_head, 1});
                std::memcpy(qt.f32(), q.f32() + t * per_token, per_token * sizeof(float));
                for (int threads : {1, 4}) {
                    const std::vector<float> alone = run(threads, qt, kv, n_cells, {pos[t]}, p);
                    EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * per_token,
                                             per_token * sizeof(float)))
                        << type_traits(type).name << " token " << t << " threads " << threads;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, AttentionVariants,
                         ::testing::Values(KernelVariant::Scalar, KernelVariant::Avx2,
                                           KernelVariant::Avx512),
                         [](const auto& info) {
                             return std::string(kernel_variant_name(info.param));
                         });

}  // namespace
}  // namespace strata::cpu

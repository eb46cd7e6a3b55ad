// The fused expert FFN of one decode token (cpu::expert_ffn) against two oracles: a double
// reference over quant/'s dequantized weights (the math), and the separate ops it replaces
// (matmul, gated_activation, matmul, a weighted add per expert), for the types real MoE files
// use, small and odd shapes, every kernel variant this CPU runs,
// and 1-3 threads. Bad arguments throw.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/ops.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;
using test::random_f32;
using test::random_weights;

struct ExpertTypeCase {
    GgmlType gate_up, down;
    int64_t n_embd, width;
};

void PrintTo(const ExpertTypeCase& c, std::ostream* os) {
    *os << type_traits(c.gate_up).name << "/" << type_traits(c.down).name << " " << c.n_embd << "x" << c.width;
}

struct Experts {
    std::vector<HostTensor> gate, up, down;
    std::vector<float> weight;
    std::vector<ExpertRef> refs() const {
        std::vector<ExpertRef> r;
        for (size_t j = 0; j < gate.size(); ++j) r.push_back({&gate[j].t, &up[j].t, &down[j].t, weight[j]});
        return r;
    }
};

Experts make_experts(int n, GgmlType gate_up, GgmlType down, int64_t n_embd, int64_t width) {
    Experts e;
    for (int j = 0; j < n; ++j) {
        e.gate.push_back(random_weights(gate_up, n_embd, width));
        e.up.push_back(random_weights(gate_up, n_embd, width));
        e.down.push_back(random_weights(down, width, n_embd));
        e.weight.push_back(test::uniform(0.05f, 1.0f));
    }
    return e;
}

double ref_silu(double v) { return v / (1.0 + std::exp(-v)); }

// y0 + Σ_j w_j · down_j(ref_silu(gate_j·x) ⊙ up_j·x), in double over the dequantized weights.
std::vector<double> expert_reference(const Experts& e, const HostTensor& x, const HostTensor& y0) {
    const int64_t n_embd = x.t.ne[0];
    std::vector<double> y(y0.f32(), y0.f32() + n_embd);
    for (size_t j = 0; j < e.gate.size(); ++j) {
        const std::vector<double> g = test::reference_matmul(e.gate[j].t, x);
        const std::vector<double> u = test::reference_matmul(e.up[j].t, x);
        HostTensor h(GgmlType::F32, {e.gate[j].t.ne[1], 1});
        for (size_t i = 0; i < g.size(); ++i) h.f32()[i] = static_cast<float>(ref_silu(g[i]) * u[i]);
        const std::vector<double> o = test::reference_matmul(e.down[j].t, h);
        for (int64_t i = 0; i < n_embd; ++i) y[static_cast<size_t>(i)] += e.weight[j] * o[static_cast<size_t>(i)];
    }
    return y;
}

// The separate ops the fused op replaces, in the same order.
std::vector<float> as_separate_ops(const Experts& e, const HostTensor& x, const HostTensor& y0, bool quantize) {
    const int64_t n_embd = x.t.ne[0];
    std::vector<float> y(y0.f32(), y0.f32() + n_embd);
    for (size_t j = 0; j < e.gate.size(); ++j) {
        const int64_t width = e.gate[j].t.ne[1];
        HostTensor g(GgmlType::F32, {width, 1}), u(GgmlType::F32, {width, 1}), o(GgmlType::F32, {n_embd, 1});
        matmul(e.gate[j].t, x.t, g.t, 2, quantize);
        matmul(e.up[j].t, x.t, u.t, 2, quantize);
        gated_activation(g.t, u.t, Activation::Silu, g.t, 2);
        matmul(e.down[j].t, g.t, o.t, 2, quantize);
        for (int64_t i = 0; i < n_embd; ++i) y[static_cast<size_t>(i)] += e.weight[j] * o.f32()[i];
    }
    return y;
}

std::vector<KernelVariant> expert_variants() {
    std::vector<KernelVariant> out;
    for (KernelVariant v : {KernelVariant::Dequant, KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512})
        if (kernel_variant_supported(v)) out.push_back(v);
    return out;
}

class ExpertFfn : public ::testing::TestWithParam<ExpertTypeCase> {};

TEST_P(ExpertFfn, MatchesTheReferenceAndTheSeparateOps) {
    const ExpertTypeCase c = GetParam();
    const Experts e = make_experts(5, c.gate_up, c.down, c.n_embd, c.width);
    const HostTensor x = random_f32({c.n_embd, 1});
    const HostTensor y0 = random_f32({c.n_embd, 1});  // the op adds to y
    const std::vector<double> ref = expert_reference(e, x, y0);
    const std::vector<ExpertRef> refs = e.refs();
    for (KernelVariant v : expert_variants()) {
        test::ScopedKernelVariant scoped(v);
        const bool quantize = v != KernelVariant::Dequant;
        const std::vector<float> ops = as_separate_ops(e, x, y0, quantize);
        // Both carry the quantized activations' error twice (x, then h; NMSE up to ~1e-3 for
        // the 64-wide case, where few terms per dot cancel); the f32 path only rounds.
        const bool integer = quantize && (find_qdot_kernel(c.gate_up, v) || find_qdot_kernel(c.down, v));
        const double bound = integer ? 5e-3 : 1e-9;
        double scale = 0.0;
        for (float o : ops) scale = std::max(scale, static_cast<double>(std::fabs(o)));
        for (int threads : {1, 2, 3}) {
            HostTensor y = y0;
            expert_ffn({&x.t, refs, Activation::Silu}, y.t, threads, quantize);
            EXPECT_LT(test::nmse(ref, y.f32(), ref.size()), bound) << kernel_variant_name(v) << " threads " << threads;
            for (int64_t i = 0; i < c.n_embd; ++i) {
                // The same dots in the same order; at most the last multiply-add's rounding apart.
                ASSERT_NEAR(y.f32()[i], ops[static_cast<size_t>(i)], 1e-6 * scale)
                    << kernel_variant_name(v) << " threads " << threads << " row " << i;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, ExpertFfn,
                         ::testing::Values(ExpertTypeCase{GgmlType::Q4_K, GgmlType::Q6_K, 512, 768},  // Q4_K_M MoE files
                                           ExpertTypeCase{GgmlType::Q5_K, GgmlType::Q8_0, 256, 512},
                                           ExpertTypeCase{GgmlType::Q8_0, GgmlType::Q8_0, 544, 352},
                                           ExpertTypeCase{GgmlType::Q4_0, GgmlType::Q5_1, 96, 64},
                                           ExpertTypeCase{GgmlType::IQ4_XS, GgmlType::Q4_K, 256, 256},
                                           ExpertTypeCase{GgmlType::F16, GgmlType::F16, 64, 48}));  // no integer kernel

TEST(ExpertFfnMixed, ExpertsOfDifferentTypesAddInOrder) {
    // One expert takes the fused path, one (f32) the separate ops, one fused again.
    Experts a = make_experts(1, GgmlType::Q4_K, GgmlType::Q6_K, 256, 256);
    Experts b = make_experts(1, GgmlType::F32, GgmlType::F32, 256, 256);
    Experts c = make_experts(1, GgmlType::Q8_0, GgmlType::Q4_0, 256, 256);
    Experts all;
    for (Experts* p : {&a, &b, &c}) {
        all.gate.push_back(p->gate[0]);
        all.up.push_back(p->up[0]);
        all.down.push_back(p->down[0]);
        all.weight.push_back(p->weight[0]);
    }
    const HostTensor x = random_f32({256, 1});
    const HostTensor y0 = random_f32({256, 1});
    const std::vector<double> ref = expert_reference(all, x, y0);
    const std::vector<ExpertRef> refs = all.refs();
    HostTensor y = y0;
    expert_ffn({&x.t, refs, Activation::Silu}, y.t, 2);
    EXPECT_LT(test::nmse(ref, y.f32(), ref.size()), 1e-3);
}

TEST(ExpertFfnMixed, NoExpertsLeavesYAsItWas) {
    const HostTensor x = random_f32({64, 1});
    HostTensor y = random_f32({64, 1});
    const HostTensor before = y;
    expert_ffn({&x.t, {}, Activation::Silu}, y.t, 2);
    for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(y.f32()[i], before.f32()[i]);
}

TEST(ExpertFfnMixed, BadArgumentsThrow) {
    const Experts e = make_experts(1, GgmlType::Q8_0, GgmlType::Q8_0, 64, 32);
    const HostTensor x = random_f32({64, 1});
    HostTensor y = random_f32({64, 1});
    // down [32, 64] given as gate: shapes disagree with x.
    const std::vector<ExpertRef> swapped{{&e.down[0].t, &e.down[0].t, &e.gate[0].t, 1.0f}};
    EXPECT_THROW(expert_ffn({&x.t, swapped, Activation::Silu}, y.t, 2), ArgumentError);
    const std::vector<ExpertRef> missing{{&e.gate[0].t, &e.up[0].t, nullptr, 1.0f}};
    EXPECT_THROW(expert_ffn({&x.t, missing, Activation::Silu}, y.t, 2), ArgumentError);
    const HostTensor two = random_f32({64, 2});
    HostTensor y2 = random_f32({64, 2});
    const std::vector<ExpertRef> ok = e.refs();
    EXPECT_THROW(expert_ffn({&two.t, ok, Activation::Silu}, y2.t, 2), ArgumentError);
    HostTensor short_y = random_f32({32, 1});
    EXPECT_THROW(expert_ffn({&x.t, ok, Activation::Silu}, short_y.t, 2), ArgumentError);
    EXPECT_THROW(expert_ffn({nullptr, ok, Activation::Silu}, y.t, 2), ArgumentError);
}

}  // namespace
}  // namespace strata::cpu

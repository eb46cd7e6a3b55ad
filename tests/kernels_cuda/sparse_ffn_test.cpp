// The CUDA sparse FFN (kernels_cuda/backend_sparse.cpp, sparse_ffn.cu) against the CPU backend's
// op with the same mask: Llama-like shapes whose n_embd is not a multiple of the down kernel's
// 1024-element slice, every down_t type the runtime makes (Q8_0, Q4_0, Q4_K, F32), device counts
// inside a recorded graph (each launch counts again), the active up rows alone (ffn_down read
// whole), and the batched thresholded activation.
// The backend-ops table (backend_ops_cuda_test.cpp) runs the small shared cases too.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

constexpr float kThreshold = 0.4f;

// Gate values whose |silu| lies within 1e-3 of the threshold move away from it, so that the CPU's
// and the GPU's activation (each rounded its own way) pick the same mask.
HostTensor clear_gate(int64_t n_ff, int64_t n) {
    HostTensor g = cpu::test::random_f32({n_ff, n}, -3.0f, 3.0f);
    for (int64_t i = 0; i < g.size(); ++i) {
        float& v = g.f32()[i];
        while (std::fabs(std::fabs(v / (1.0f + std::exp(-v))) - kThreshold) < 1e-3f) v += 0.01f;
    }
    return g;
}

struct Case {
    int64_t n_embd, n_ff, n;
    GgmlType up, down;
};

class CudaSparseFfn : public ::testing::TestWithParam<Case> {};

TEST_P(CudaSparseFfn, MatchesTheCpuBackendWithTheSameMask) {
    STRATA_SKIP_WITHOUT_GPU();
    const Case c = GetParam();
    CudaBackend gpu(test::test_options());
    const HostTensor gate = clear_gate(c.n_ff, c.n);
    const HostTensor x = cpu::test::random_f32({c.n_embd, c.n});
    const HostTensor up = cpu::test::random_weights(c.up, c.n_embd, c.n_ff);
    const HostTensor down = cpu::test::random_weights(c.down, c.n_embd, c.n_ff);

    HostTensor y_ref(GgmlType::F32, {c.n_embd, c.n});
    const SparseFfnArgs host_args{&gate.t, &x.t, &up.t, &down.t, Activation::Silu, kThreshold};
    const int64_t ref_active = test::cpu_backend().sparse_gated_ffn(host_args, y_ref.t);
    ASSERT_GT(ref_active, 0);
    ASSERT_LT(ref_active, c.n_ff * c.n);

    const DeviceTensor g = test::to_device(gpu, gate), xd = test::to_device(gpu, x), ud = test::to_device(gpu, up),
                       dd = test::to_device(gpu, down);
    DeviceTensor y = test::nan_device(gpu, {c.n_embd, c.n});
    const SparseFfnArgs args{&g.tensor, &xd.tensor, &ud.tensor, &dd.tensor, Activation::Silu, kThreshold};
    EXPECT_EQ(gpu.sparse_gated_ffn(args, y.tensor), ref_active);
    // Both round x to 8 bits for the up rows (the CPU per its own kernel): the matmul bound.
    EXPECT_LE(test::device_nmse(gpu, y.tensor, y_ref), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaSparseFfn,
    ::testing::Values(Case{1280, 3456, 1, GgmlType::Q4_K, GgmlType::Q8_0}, Case{1280, 3456, 1, GgmlType::Q6_K, GgmlType::Q4_0},
                      Case{1280, 3456, 1, GgmlType::Q4_K, GgmlType::Q4_K}, Case{1056, 1000, 3, GgmlType::Q8_0, GgmlType::Q8_0},
                      Case{1056, 1000, 2, GgmlType::F16, GgmlType::F32}));

// The runtime's decode step: counts on the device, the op recorded in a graph and launched again.
TEST(CudaSparseFfnGraph, CountsOnTheDeviceInsideAGraphAndEveryLaunchCounts) {
    STRATA_SKIP_WITHOUT_GPU();
    const int64_t n_embd = 1024, n_ff = 2816;
    CudaBackend gpu(test::test_options());
    const HostTensor gate = clear_gate(n_ff, 1);
    const HostTensor x = cpu::test::random_f32({n_embd, 1});
    const HostTensor up = cpu::test::random_weights(GgmlType::Q4_K, n_embd, n_ff);
    const HostTensor down = cpu::test::random_weights(GgmlType::Q8_0, n_embd, n_ff);
    HostTensor y_ref(GgmlType::F32, {n_embd, 1});
    const SparseFfnArgs host_args{&gate.t, &x.t, &up.t, &down.t, Activation::Silu, kThreshold};
    const auto active = static_cast<uint64_t>(test::cpu_backend().sparse_gated_ffn(host_args, y_ref.t));

    const DeviceTensor g = test::to_device(gpu, gate), xd = test::to_device(gpu, x), ud = test::to_device(gpu, up),
                       dd = test::to_device(gpu, down);
    DeviceTensor y = test::nan_device(gpu, {n_embd, 1});
    HostTensor zero(GgmlType::I64, {2});
    zero.t.as<int64_t>()[0] = zero.t.as<int64_t>()[1] = 0;
    DeviceTensor counts = test::to_device(gpu, zero);
    SparseFfnArgs args{&g.tensor, &xd.tensor, &ud.tensor, &dd.tensor, Activation::Silu, kThreshold};
    args.counts = static_cast<uint64_t*>(counts.tensor.data);
    for (int run = 0; run < 3; ++run) {  // eager, recorded, launched again
        gpu.begin_graph();
        EXPECT_EQ(gpu.sparse_gated_ffn(args, y.tensor), -1);
        gpu.end_graph();
    }
    gpu.synchronize();
    EXPECT_LE(test::device_nmse(gpu, y.tensor, y_ref), 1e-4);
    const HostTensor got = test::to_host(gpu, counts.tensor);
    EXPECT_EQ(static_cast<uint64_t>(got.t.as<int64_t>()[0]), 3 * static_cast<uint64_t>(n_ff));
    EXPECT_EQ(static_cast<uint64_t>(got.t.as<int64_t>()[1]), 3 * active);
    EXPECT_GE(gpu.graph_launches(), 1u);
}

// The active up rows alone (ffn_down read whole by the runtime): the masked activations match the
// CPU op's, eagerly and inside a recorded graph with the counts on the device.
TEST(CudaSparseFfnGraph, SparseGatedActivationMatchesTheCpuInAndOutOfAGraph) {
    STRATA_SKIP_WITHOUT_GPU();
    const int64_t n_embd = 1024, n_ff = 2816;
    CudaBackend gpu(test::test_options());
    ASSERT_TRUE(gpu.capabilities().sparse_activation);
    for (GgmlType up_type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F16}) {
        const HostTensor gate = clear_gate(n_ff, 2);
        const HostTensor x = cpu::test::random_f32({n_embd, 2});
        const HostTensor up = cpu::test::random_weights(up_type, n_embd, n_ff);
        HostTensor h_ref(GgmlType::F32, {n_ff, 2});
        const SparseFfnArgs host_args{&gate.t, &x.t, &up.t, nullptr, Activation::Silu, kThreshold};
        const int64_t active = test::cpu_backend().sparse_gated_activation(host_args, h_ref.t);
        ASSERT_GT(active, 0);
        ASSERT_LT(active, 2 * n_ff);
        const DeviceTensor g = test::to_device(gpu, gate), xd = test::to_device(gpu, x), ud = test::to_device(gpu, up);
        DeviceTensor h = test::nan_device(gpu, {n_ff, 2});
        SparseFfnArgs args{&g.tensor, &xd.tensor, &ud.tensor, nullptr, Activation::Silu, kThreshold};
        EXPECT_EQ(gpu.sparse_gated_activation(args, h.tensor), active) << type_traits(up_type).name;
        EXPECT_LE(test::device_nmse(gpu, h.tensor, h_ref), 1e-4) << type_traits(up_type).name;
        HostTensor zero(GgmlType::I64, {2});
        zero.t.as<int64_t>()[0] = zero.t.as<int64_t>()[1] = 0;
        DeviceTensor counts = test::to_device(gpu, zero);
        args.counts = static_cast<uint64_t*>(counts.tensor.data);
        DeviceTensor h2 = test::nan_device(gpu, {n_ff, 2});
        for (int run = 0; run < 2; ++run) {  // recorded, launched again
            gpu.begin_graph();
            EXPECT_EQ(gpu.sparse_gated_activation(args, h2.tensor), -1);
            gpu.end_graph();
        }
        gpu.synchronize();
        EXPECT_LE(test::device_nmse(gpu, h2.tensor, h_ref), 1e-4);
        const HostTensor got = test::to_host(gpu, counts.tensor);
        EXPECT_EQ(got.t.as<int64_t>()[0], 2 * 2 * n_ff);
        EXPECT_EQ(got.t.as<int64_t>()[1], 2 * active);
    }
}

TEST(CudaSparseFfnGraph, ThresholdedActivationMatchesTheCpu) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    const int64_t n_ff = 3000, n = 37;
    const HostTensor gate = clear_gate(n_ff, n);
    const HostTensor up = cpu::test::random_f32({n_ff, n});
    HostTensor y_ref(GgmlType::F32, {n_ff, n});
    const int64_t kept = test::cpu_backend().thresholded_gated_activation(gate.t, up.t, Activation::Silu, kThreshold, y_ref.t);
    const DeviceTensor g = test::to_device(gpu, gate), u = test::to_device(gpu, up);
    DeviceTensor y = test::nan_device(gpu, {n_ff, n});
    EXPECT_EQ(gpu.thresholded_gated_activation(g.tensor, u.tensor, Activation::Silu, kThreshold, y.tensor), kept);
    EXPECT_LE(test::device_nmse(gpu, y.tensor, y_ref), 1e-10);
}

TEST(CudaSparseFfnGraph, RefusesCountsOutsideTheArenaAndMismatchedShapes) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    const DeviceTensor g = test::nan_device(gpu, {64, 1}), x = test::nan_device(gpu, {32, 1});
    const DeviceTensor up = test::to_device(gpu, cpu::test::random_weights(GgmlType::Q8_0, 32, 64));
    const DeviceTensor down = test::to_device(gpu, cpu::test::random_weights(GgmlType::Q8_0, 32, 32));
    DeviceTensor y = test::nan_device(gpu, {32, 1});
    SparseFfnArgs args{&g.tensor, &x.tensor, &up.tensor, &down.tensor, Activation::Silu, kThreshold};
    EXPECT_THROW(gpu.sparse_gated_ffn(args, y.tensor), ArgumentError);  // down_t has 32 neurons, not 64
    uint64_t host_counts[2] = {0, 0};
    args.down_t = &up.tensor;
    args.counts = host_counts;
    EXPECT_THROW(gpu.sparse_gated_ffn(args, y.tensor), ArgumentError);
}

}  // namespace
}  // namespace strata::cuda

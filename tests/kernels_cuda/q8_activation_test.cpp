// The q8 activations of the GEMV: the warp-per-block quantizer writes exactly quantize_q8_act's
// bytes, and the backend's reuse of a quantized x across matmuls (also one quantized by the
// RMSNorm or gated activation that wrote it) gives the same products as quantizing every time,
// and never outlives an op that rewrote x.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "kernels_cuda/codec.cuh"
#include "kernels_cuda/launch.h"
#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

// Odd row and block counts; rows of zeros, of huge and of tiny values (|x| stays above 4e-37 so
// 1/d is finite: past it float -> int of inf is undefined on the host), and exact .5 ties.
HostTensor quantizer_input(int64_t k, int64_t m) {
    HostTensor x = cpu::test::random_f32({k, m}, -3.0f, 3.0f);
    float* v = x.f32();
    if (m > 1) std::memset(v + k, 0, static_cast<size_t>(k) * sizeof(float));  // row 1: zeros
    for (int64_t j = 0; j < 32; ++j) {
        v[j] *= 1e-30f;                                                   // block 0: tiny
        v[32 + j] = (j % 2 ? -1.0f : 1.0f) * (j == 5 ? 3.0e38f : 1e30f);  // block 1: huge
        v[64 + j] = j == 0 ? 127.0f : static_cast<float>(j - 16) + 0.5f;  // block 2: d = 1, ties
        v[96 + j] = j == 7 ? -5.0f : 0.0f;                                // block 3: one non-zero
    }
    return x;
}

TEST(CudaQ8Activations, QuantizerMatchesHostBitForBit) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    for (int64_t m : {1, 3, 7}) {
        const int64_t k = 32 * 13;
        const HostTensor x = quantizer_input(k, m);
        std::vector<int8_t> want_q(static_cast<size_t>(k * m));
        std::vector<float> want_ds(static_cast<size_t>(k * m / 32) * 2);
        for (int64_t b = 0; b < k * m / 32; ++b) {
            quantize_q8_act(x.f32() + b * 32, &want_q[static_cast<size_t>(b * 32)],
                            want_ds[static_cast<size_t>(2 * b)], want_ds[static_cast<size_t>(2 * b + 1)]);
        }
        // x on the device with a padded row stride, so rows are found through the view.
        const int64_t ld = k + 32;
        HostTensor padded = cpu::test::random_f32({ld, m});
        for (int64_t r = 0; r < m; ++r) std::memcpy(padded.f32() + r * ld, x.f32() + r * k, k * sizeof(float));
        DeviceTensor xd = test::to_device(gpu, padded);
        Tensor view = xd.tensor;
        view.ne = {k, m, 1, 1};
        Buffer q = gpu.allocate(want_q.size(), "test xq");
        Buffer ds = gpu.allocate(want_ds.size() * sizeof(float), "test xds");
        gpu.synchronize();  // the upload ran on the backend's stream; the quantizer runs on stream 0
        quantize_rows_q8(f32_view(view), static_cast<int8_t*>(q.data()), static_cast<float*>(ds.data()), nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<int8_t> got_q(want_q.size());
        std::vector<float> got_ds(want_ds.size());
        ASSERT_EQ(cudaMemcpy(got_q.data(), q.data(), got_q.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got_ds.data(), ds.data(), got_ds.size() * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        EXPECT_EQ(0, std::memcmp(got_q.data(), want_q.data(), want_q.size())) << "xq, m = " << m;
        EXPECT_EQ(0, std::memcmp(got_ds.data(), want_ds.data(), want_ds.size() * sizeof(float)))
            << "xds, m = " << m;
    }
}

// Runs the same op sequence on a backend that reuses quantized x and one that never does; the
// GEMV is deterministic, so every product must match bit for bit.
struct ReusePair {
    CudaBackend reuse{options(true)}, fresh{options(false)};
    static CudaBackendOptions options(bool reuse) {
        CudaBackendOptions o = test::test_options();
        o.reuse_quantized_activations = reuse;
        return o;
    }
};

bool same_bits(const HostTensor& a, const HostTensor& b) {
    return a.t.ne == b.t.ne && std::memcmp(a.f32(), b.f32(), static_cast<size_t>(a.size()) * sizeof(float)) == 0;
}

TEST(CudaQ8Activations, ReusedQuantizationMatchesFreshAndFollowsRewrites) {
    STRATA_SKIP_WITHOUT_GPU();
    const int64_t k = 256, m = 3;
    const HostTensor w1 = cpu::test::random_weights(GgmlType::Q4_0, k, 33);
    const HostTensor w2 = cpu::test::random_weights(GgmlType::Q8_0, k, 65);
    const HostTensor x = cpu::test::random_f32({k, m});
    const HostTensor noise = cpu::test::random_f32({k, m}, -2.0f, 2.0f);
    const HostTensor x_new = cpu::test::random_f32({k, m}, -5.0f, 5.0f);

    ReusePair p;
    // Each backend's results of the steps below, in order.
    std::vector<HostTensor> out[2];
    int side = 0;
    for (CudaBackend* b : {&p.reuse, &p.fresh}) {
        const DeviceTensor w1d = b->upload(w1.t), w2d = b->upload(w2.t), nd = b->upload(noise.t);
        DeviceTensor xd = b->upload(x.t);
        const auto product = [&](const DeviceTensor& w, const Tensor& xv) {
            DeviceTensor y = test::nan_device(*b, {w.tensor.ne[1], xv.ne[1]});
            b->matmul(w.tensor, xv, y.tensor);
            out[side].push_back(test::to_host(*b, y.tensor));
        };
        product(w1d, xd.tensor);  // 0: quantizes x
        product(w2d, xd.tensor);  // 1: reuses it
        b->scale(xd.tensor, -1.7f);
        product(w1d, xd.tensor);  // 2: after x was scaled in place
        b->add(xd.tensor, nd.tensor, xd.tensor);
        product(w2d, xd.tensor);  // 3: after an in-place add
        b->copy_to_device(x_new.t, xd.tensor);
        product(w1d, xd.tensor);  // 4: after x was overwritten from the host
        Tensor even = xd.tensor;  // 5: the same first byte, rows 0 and 2
        even.ne = {k, 2, 1, 1};
        even.nb = {4, 2 * k * 4, 4 * k * 4, 4 * k * 4};
        product(w2d, even);
        // 6: a recording that is discarded never ran its quantization.
        DeviceTensor yg = test::nan_device(*b, {33, m});
        b->rms_norm(xd.tensor, nullptr, 1e-6f, xd.tensor);
        b->begin_graph();
        b->matmul(w1d.tensor, xd.tensor, yg.tensor);
        b->abort_graph();
        product(w2d, xd.tensor);
        // 7, 8: a recorded and launched graph, the second product reusing the first's x.
        DeviceTensor y7 = test::nan_device(*b, {33, m}), y8 = test::nan_device(*b, {65, m});
        b->scale(xd.tensor, 0.3f);
        b->begin_graph();
        b->matmul(w1d.tensor, xd.tensor, y7.tensor);
        b->matmul(w2d.tensor, xd.tensor, y8.tensor);
        b->end_graph();
        out[side].push_back(test::to_host(*b, y7.tensor));
        out[side].push_back(test::to_host(*b, y8.tensor));
        product(w1d, xd.tensor);  // 9: after the graph
        ++side;
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    for (size_t i = 0; i < out[0].size(); ++i) {
        EXPECT_TRUE(same_bits(out[0][i], out[1][i])) << "step " << i << " differs with reuse on";
    }
    // The rewrites changed the products, so a stale quantization would have been caught.
    EXPECT_FALSE(same_bits(out[0][0], out[0][2]));
    EXPECT_FALSE(same_bits(out[0][1], out[0][3]));
    EXPECT_FALSE(same_bits(out[0][0], out[0][4]));
}

// RMSNorm and the gated activation quantize their decode-sized outputs in the same kernel for
// the GEMV after them: the products must match a backend that quantizes for every product,
// bit for bit, for row lengths that take each norm kernel shape (96: a partial warp of 8-lane
// groups, 768, 8192: two float4s a thread) and 1-8 rows.
TEST(CudaQ8Activations, NormAndGateQuantizedInTheirKernelsMatchFresh) {
    STRATA_SKIP_WITHOUT_GPU();
    ReusePair p;
    for (int64_t k : {96, 768, 8192}) {
        const GgmlType wt = k % 256 == 0 ? GgmlType::Q4_K : GgmlType::Q8_0;
        for (int64_t m : {1, 3, 8}) {
            const HostTensor w = cpu::test::random_weights(wt, k, 40);
            const HostTensor wd = cpu::test::random_weights(wt, k, 24);
            const HostTensor x = cpu::test::random_f32({k, m}, -3.0f, 3.0f);
            const HostTensor norm = cpu::test::random_f32({k}, 0.5f, 1.5f);
            const HostTensor up = cpu::test::random_f32({k, m}, -2.0f, 2.0f);
            std::vector<HostTensor> out[2];
            int side = 0;
            for (CudaBackend* b : {&p.reuse, &p.fresh}) {
                const DeviceTensor w_d = b->upload(w.t), wd_d = b->upload(wd.t), n_d = b->upload(norm.t);
                const DeviceTensor x_d = b->upload(x.t), up_d = b->upload(up.t);
                DeviceTensor y = test::nan_device(*b, {k, m}), o1 = test::nan_device(*b, {40, m});
                DeviceTensor o2 = test::nan_device(*b, {24, m});
                b->rms_norm(x_d.tensor, &n_d.tensor, 1e-5f, y.tensor);
                b->matmul(w_d.tensor, y.tensor, o1.tensor);
                b->matmul(wd_d.tensor, y.tensor, o2.tensor);  // the same quantized y again
                out[side].push_back(test::to_host(*b, y.tensor));
                out[side].push_back(test::to_host(*b, o1.tensor));
                out[side].push_back(test::to_host(*b, o2.tensor));
                b->gated_activation(y.tensor, up_d.tensor, Activation::Silu, y.tensor);
                b->matmul(wd_d.tensor, y.tensor, o2.tensor);
                out[side].push_back(test::to_host(*b, o2.tensor));
                ++side;
            }
            for (size_t i = 0; i < out[0].size(); ++i) {
                EXPECT_TRUE(same_bits(out[0][i], out[1][i])) << "k " << k << " m " << m << " result " << i;
            }
        }
    }
}

// The decode attention's combine quantizes its output for the output projection: the product
// must equal the one over a fresh quantization, for 1 token, a 3-token pass and 8 sequences
// (attention_rows), head dims 64 and 128, short and long histories.
TEST(CudaQ8Activations, AttentionQuantizedInItsCombineMatchesFresh) {
    STRATA_SKIP_WITHOUT_GPU();
    ReusePair p;
    cpu::CpuBackend& cpu = test::cpu_backend();
    for (int d : {64, 128}) {
        for (int32_t span : {40, 1000}) {
            const int n_head = 8, n_head_kv = 2, seqs = 8;
            const int64_t row = int64_t{d} * n_head_kv, k = int64_t{d} * n_head, cap = 1024;
            const GgmlType wt = k % 256 == 0 ? GgmlType::Q4_K : GgmlType::Q8_0;
            const HostTensor w = cpu::test::random_weights(wt, k, 48);
            std::vector<HostTensor> kc, vc;
            for (int i = 0; i < seqs; ++i) {
                kc.emplace_back(GgmlType::F16, std::initializer_list<int64_t>{row, cap});
                vc.emplace_back(GgmlType::F16, std::initializer_list<int64_t>{row, cap});
                cpu.kv_store(cpu::test::random_f32({row, span}, -2.0f, 2.0f).t, kc.back().t, 0);
                cpu.kv_store(cpu::test::random_f32({row, span}, -2.0f, 2.0f).t, vc.back().t, 0);
            }
            AttentionParams ap;
            ap.n_head = n_head;
            ap.n_head_kv = n_head_kv;
            ap.head_dim_k = ap.head_dim_v = d;
            ap.scale = 0.125f;
            const HostTensor q = cpu::test::random_f32({d, n_head, seqs}, -2.0f, 2.0f);
            std::vector<HostTensor> out[2];
            int side = 0;
            for (CudaBackend* b : {&p.reuse, &p.fresh}) {
                const DeviceTensor w_d = b->upload(w.t), q_d = b->upload(q.t);
                std::vector<DeviceTensor> kd, vd;
                std::vector<SequenceKv> sk;
                for (int i = 0; i < seqs; ++i) {
                    kd.push_back(b->upload(kc[static_cast<size_t>(i)].t));
                    vd.push_back(b->upload(vc[static_cast<size_t>(i)].t));
                }
                for (int i = 0; i < seqs; ++i) sk.push_back(SequenceKv{&kd[static_cast<size_t>(i)].tensor, &vd[static_cast<size_t>(i)].tensor, span - 1 - i});
                for (int64_t n : {1, 3}) {  // one sequence: a token, a 3-token pass
                    DeviceTensor attn = test::nan_device(*b, {k, n}), y = test::nan_device(*b, {48, n});
                    const Tensor q3 = Tensor::contiguous(GgmlType::F32, q_d.tensor.data, {d, n_head, n}, q_d.tensor.memory);
                    Tensor a3 = Tensor::contiguous(GgmlType::F32, attn.tensor.data, {d, n_head, n}, attn.tensor.memory);
                    std::vector<int32_t> pos;
                    for (int64_t t = 0; t < n; ++t) pos.push_back(static_cast<int32_t>(span - n + t));
                    b->attention(q3, kd[0].tensor, vd[0].tensor, span, pos.data(), ap, a3);
                    b->matmul(w_d.tensor, attn.tensor, y.tensor);
                    out[side].push_back(test::to_host(*b, y.tensor));
                }
                DeviceTensor attn = test::nan_device(*b, {k, seqs}), y = test::nan_device(*b, {48, seqs});
                Tensor a3 = Tensor::contiguous(GgmlType::F32, attn.tensor.data, {d, n_head, seqs}, attn.tensor.memory);
                b->attention_rows(q_d.tensor, sk, ap, a3);
                b->matmul(w_d.tensor, attn.tensor, y.tensor);
                out[side].push_back(test::to_host(*b, attn.tensor));
                out[side].push_back(test::to_host(*b, y.tensor));
                ++side;
            }
            for (size_t i = 0; i < out[0].size(); ++i) {
                EXPECT_TRUE(same_bits(out[0][i], out[1][i])) << "head dim " << d << " span " << span << " result " << i;
            }
        }
    }
}

}  // namespace
}  // namespace strata::cuda

// A decode token's attention does not depend on the tokens launched beside it: bit for bit the
// same alone, among other sequences' tokens (attention_rows: a batched serve step) and inside a
// multi-token pass over one sequence (a speculative check). Its keys must be split the same way
// in each; before, the decode splits were planned per launch, so a sequence decoded in a batch of
// 8 cut its keys into fewer splits than alone and its greedy output changed (H200, 7B serve).
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

struct BatchHeads {
    int n_head, n_head_kv, d;
    GgmlType cache;
};

AttentionParams batch_params(const BatchHeads& h) {
    AttentionParams p;
    p.n_head = h.n_head;
    p.n_head_kv = h.n_head_kv;
    p.head_dim_k = p.head_dim_v = h.d;
    p.scale = 1.0f / std::sqrt(static_cast<float>(h.d));
    return p;
}

// Whether token i of a batched result holds the same bytes as the token alone.
bool same_token(const HostTensor& batched, int64_t i, const HostTensor& alone) {
    const Tensor token = batched.t.plane(i);
    return token.n_bytes() == alone.t.n_bytes() && std::memcmp(token.data, alone.t.data, alone.t.n_bytes()) == 0;
}

// One token of q over a cache alone: the reference every batched result must equal.
HostTensor attend_alone(CudaBackend& gpu, const Tensor& q_token, DeviceTensor& kd, DeviceTensor& vd, int32_t pos,
                        const AttentionParams& p) {
    DeviceTensor qd = gpu.upload(q_token, "test q");
    DeviceTensor out = test::nan_device(gpu, {p.head_dim_v, p.n_head, 1});
    gpu.attention(qd.tensor, kd.tensor, vd.tensor, int64_t{pos} + 1, &pos, p, out.tensor);
    return test::to_host(gpu, out.tensor);
}

TEST(CudaAttentionBatch, DecodeTokenDoesNotDependOnTheBatch) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    cpu::CpuBackend& cpu = test::cpu_backend();
    // Head dim 256 takes splits of 16 keys, the others of 32 (backend_attention.cpp).
    const BatchHeads configs[] = {{32, 32, 128, GgmlType::F16}, {8, 2, 64, GgmlType::Q8_0}, {4, 1, 128, GgmlType::F16},
                                  {4, 1, 256, GgmlType::F16}};
    // Histories from one key to several thousand: from 1 active split to the most.
    const std::vector<int32_t> spans = {1, 20, 33, 100, 257, 700, 1500, 3000};
    const int64_t cap = 3002;  // one capacity: the slots of a server share n_ctx
    for (const BatchHeads& h : configs) {
        const AttentionParams p = batch_params(h);
        const int64_t row = int64_t{h.d} * h.n_head_kv, n = static_cast<int64_t>(spans.size());
        std::vector<DeviceTensor> kd, vd;
        for (int32_t span : spans) {
            HostTensor kc(h.cache, {row, cap}), vc(h.cache, {row, cap});
            cpu.kv_store(cpu::test::random_f32({row, span}, -2.0f, 2.0f).t, kc.t, 0);
            cpu.kv_store(cpu::test::random_f32({row, span}, -2.0f, 2.0f).t, vc.t, 0);
            kd.push_back(gpu.upload(kc.t, "test k"));
            vd.push_back(gpu.upload(vc.t, "test v"));
        }
        const HostTensor q = cpu::test::random_f32({h.d, h.n_head, n}, -2.0f, 2.0f);
        DeviceTensor qd = gpu.upload(q.t, "test q");
        DeviceTensor out = test::nan_device(gpu, {h.d, h.n_head, n});
        std::vector<SequenceKv> seqs;
        for (size_t i = 0; i < spans.size(); ++i) seqs.push_back(SequenceKv{&kd[i].tensor, &vd[i].tensor, spans[i] - 1});
        gpu.attention_rows(qd.tensor, seqs, p, out.tensor);
        const HostTensor batched = test::to_host(gpu, out.tensor);
        for (int64_t i = 0; i < n; ++i) {
            const auto si = static_cast<size_t>(i);
            const HostTensor alone = attend_alone(gpu, q.t.plane(i), kd[si], vd[si], spans[si] - 1, p);
            EXPECT_TRUE(same_token(batched, i, alone))
                << "heads " << h.n_head << "/" << h.n_head_kv << " " << type_traits(h.cache).name << ": the token over "
                << spans[si] << " keys differs in a batch of " << n;
        }
        // Five tokens of one sequence in one pass (a speculative check), each against itself alone.
        const size_t last = spans.size() - 1;
        const int32_t first_pos = spans[last] - 5;
        const HostTensor q5 = cpu::test::random_f32({h.d, h.n_head, 5}, -2.0f, 2.0f);
        DeviceTensor q5d = gpu.upload(q5.t, "test q5");
        DeviceTensor out5 = test::nan_device(gpu, {h.d, h.n_head, 5});
        const std::vector<int32_t> pos5 = {first_pos, first_pos + 1, first_pos + 2, first_pos + 3, first_pos + 4};
        gpu.attention(q5d.tensor, kd[last].tensor, vd[last].tensor, spans[last], pos5.data(), p, out5.tensor);
        const HostTensor pass = test::to_host(gpu, out5.tensor);
        for (int64_t t = 0; t < 5; ++t) {
            const HostTensor alone = attend_alone(gpu, q5.t.plane(t), kd[last], vd[last], pos5[static_cast<size_t>(t)], p);
            EXPECT_TRUE(same_token(pass, t, alone))
                << "heads " << h.n_head << "/" << h.n_head_kv << ": token " << t << " of a 5-token pass differs";
        }
    }
}

}  // namespace
}  // namespace strata::cuda

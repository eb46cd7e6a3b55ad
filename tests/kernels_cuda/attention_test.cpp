// CUDA kv_store and attention against the CPU backend: caches in f32/f16/bf16/q8_0/q4_0/q5_0
// written by both backends (bytes must match), attention with GQA and MQA head configs, sliding
// windows, softcap, 1/5/17 query tokens over short and long histories, on the flash-decoding and
// the tiled kernel. f32 arithmetic on identical dequantized K/V: NMSE <= 1e-7.
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;


TEST(CudaKvStore, WritesTheSameBytesAsTheCpu) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                          GgmlType::Q5_0}) {
        for (int64_t n : {1, 5, 17}) {
            const int64_t row = 256, cells = 40, first = 3;
            const HostTensor src = cpu::test::random_f32({row, n}, -4.0f, 4.0f);
            HostTensor cache(type, {row, cells});  // 0xA5 bytes everywhere else
            DeviceTensor cache_d = gpu.upload(cache.t), src_d = test::to_device(gpu, src);
            test::cpu_backend().kv_store(src.t, cache.t, first);
            gpu.kv_store(src_d.tensor, cache_d.tensor, first);
            const HostTensor got = test::to_host(gpu, cache_d.tensor);
            size_t differing = 0;
            for (uint64_t i = 0; i < cache.t.n_bytes(); ++i) differing += got.bytes[i] != cache.bytes[i];
            EXPECT_EQ(differing, 0u) << type_traits(type).name << " n=" << n;
        }
    }
}

struct HeadConfig {
    int n_head, n_head_kv, dk, dv;
};

TEST(CudaAttention, MatchesCpuOnBothKernels) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackendOptions decode_opts = test::test_options(), tiled_opts = test::test_options();
    decode_opts.attention_decode_max_tokens = 64;
    tiled_opts.attention_decode_max_tokens = 0;
    CudaBackendOptions mma_opts = tiled_opts;
    tiled_opts.attention_tensor_cores = false;
    const CudaBackendOptions opts[] = {test::test_options(), decode_opts, tiled_opts, mma_opts};
    CudaBackend auto_gpu(opts[0]), decode_gpu(opts[1]), tiled_gpu(opts[2]), mma_gpu(opts[3]);
    CudaBackend* gpus[] = {&auto_gpu, &decode_gpu, &tiled_gpu, &mma_gpu};
    const char* gpu_names[] = {"auto", "decode", "tiled", "tensor cores"};
    cpu::CpuBackend& cpu = test::cpu_backend();

    const HeadConfig configs[] = {{4, 1, 256, 256}, {8, 2, 128, 128}, {7, 7, 64, 64},
                                  {16, 1, 64, 64},  {32, 2, 64, 64},  {4, 2, 80, 48}};
    const std::pair<GgmlType, GgmlType> caches[] = {{GgmlType::F16, GgmlType::F16},
                                                    {GgmlType::Q8_0, GgmlType::Q8_0},
                                                    {GgmlType::Q4_0, GgmlType::Q4_0},
                                                    {GgmlType::F32, GgmlType::Q5_0}};
    for (const HeadConfig& hc : configs) {
        for (const auto& [kt, vt] : caches) {
            const int64_t k_row = int64_t{hc.dk} * hc.n_head_kv, v_row = int64_t{hc.dv} * hc.n_head_kv;
            if (k_row % type_traits(kt).block_size != 0 || v_row % type_traits(vt).block_size != 0) continue;
            for (int64_t n_tokens : {1, 5, 17, 130}) {
                for (int64_t past : {0, 40, 200, 3000}) {
                    const int64_t n_cells = past + n_tokens, cap = n_cells + 3;
                    HostTensor kc(kt, {k_row, cap}), vc(vt, {v_row, cap});
                    const HostTensor k_all = cpu::test::random_f32({k_row, n_cells}, -2.0f, 2.0f);
                    const HostTensor v_all = cpu::test::random_f32({v_row, n_cells}, -2.0f, 2.0f);
                    cpu.kv_store(k_all.t, kc.t, 0);
                    cpu.kv_store(v_all.t, vc.t, 0);
                    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
                    for (int64_t t = 0; t < n_tokens; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(past + t);
                    const HostTensor q = cpu::test::random_f32({hc.dk, hc.n_head, n_tokens}, -2.0f, 2.0f);
                    for (int variant = 0; variant < 2; ++variant) {
                        AttentionParams p;
                        p.n_head = hc.n_head;
                        p.n_head_kv = hc.n_head_kv;
                        p.head_dim_k = hc.dk;
                        p.head_dim_v = hc.dv;
                        p.scale = 1.0f / std::sqrt(static_cast<float>(hc.dk));
                        p.window = variant == 1 ? 64 : 0;
                        p.softcap = variant == 1 ? 20.0f : 0.0f;
                        HostTensor ref(GgmlType::F32, {hc.dv, hc.n_head, n_tokens});
                        cpu.attention(q.t, kc.t, vc.t, n_cells, pos.data(), p, ref.t);
                        for (int g = 0; g < 4; ++g) {
                            CudaBackend& gpu = *gpus[g];
                            DeviceTensor kd = gpu.upload(kc.t), vd = gpu.upload(vc.t), qd = gpu.upload(q.t);
                            DeviceTensor out = test::nan_device(gpu, {hc.dv, hc.n_head, n_tokens});
                            gpu.attention(qd.tensor, kd.tensor, vd.tensor, n_cells, pos.data(), p, out.tensor);
                            EXPECT_LE(test::device_nmse(gpu, out.tensor, ref), test::attention_nmse_bound(opts[g], n_tokens))
                                << gpu_names[g] << " heads " << hc.n_head << "/" << hc.n_head_kv << " d "
                                << hc.dk << "/" << hc.dv << " " << type_traits(kt).name << "/"
                                << type_traits(vt).name << " tokens " << n_tokens << " past " << past
                                << " variant " << variant;
                        }
                    }
                }
            }
        }
    }
}

TEST(CudaAttention, RejectsPositionsOutsideTheCache) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    DeviceTensor kc = gpu.allocate(GgmlType::F16, {64, 8}), vc = gpu.allocate(GgmlType::F16, {64, 8});
    DeviceTensor q = test::nan_device(gpu, {64, 1, 1}), out = test::nan_device(gpu, {64, 1, 1});
    AttentionParams p;
    p.n_head = p.n_head_kv = 1;
    p.head_dim_k = p.head_dim_v = 64;
    const int32_t pos = 4;
    EXPECT_THROW(gpu.attention(q.tensor, kc.tensor, vc.tensor, 4, &pos, p, out.tensor), ArgumentError);
}

}  // namespace
}  // namespace strata::cuda

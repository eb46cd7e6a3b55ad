// Sliding-window rings on the device (position p in cell p % cells, backend.h) against the CPU
// backend: kv_store wrapping around the ring writes the same bytes as the CPU for every device KV
// type, and attention over a ring of window + batch cells, at positions that have wrapped it
// several times, matches the CPU's on the flash-decoding (generic and vectorized), the tensor-core
// and the f32 tiled kernel. f32 arithmetic on identical dequantized K/V: NMSE <= 1e-7; tensor
// cores round Q, K, V and P to f16: 1e-6 (test::attention_nmse_bound).
#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

TEST(CudaKvStore, WrapsAroundARingLikeTheCpu) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                          GgmlType::Q5_0}) {
        for (int64_t n : {1, 5, 17}) {
            const int64_t row = 256, cells = 19, first = 3 * cells - 2;  // wraps after 2 rows
            const HostTensor src = cpu::test::random_f32({row, n}, -4.0f, 4.0f);
            HostTensor cache(type, {row, cells});
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

struct RingConfig {
    int n_head, n_head_kv, d;
    int32_t window;
    int64_t batch;
};

TEST(CudaAttention, MatchesCpuOverARing) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackendOptions decode_opts = test::test_options(), tiled_opts = test::test_options();
    decode_opts.attention_decode_max_tokens = 64;
    tiled_opts.attention_decode_max_tokens = 0;
    CudaBackendOptions f32_tiled_opts = tiled_opts;
    f32_tiled_opts.attention_tensor_cores = false;
    const CudaBackendOptions opts[] = {test::test_options(), decode_opts, tiled_opts, f32_tiled_opts};
    CudaBackend auto_gpu(opts[0]), decode_gpu(opts[1]), tiled_gpu(opts[2]), f32_tiled_gpu(opts[3]);
    CudaBackend* gpus[] = {&auto_gpu, &decode_gpu, &tiled_gpu, &f32_tiled_gpu};
    const char* gpu_names[] = {"auto", "decode", "tensor cores", "f32 tiled"};
    cpu::CpuBackend& cpu = test::cpu_backend();

    // Gemma 3's shape (head dim 256, MQA, window 512) and smaller ones; decode and prompt batches.
    const RingConfig configs[] = {{4, 1, 256, 512, 1}, {4, 1, 256, 512, 64}, {8, 2, 128, 100, 17},
                                  {7, 7, 64, 33, 5}};
    for (const RingConfig& rc : configs) {
        for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
            const int64_t row = int64_t{rc.d} * rc.n_head_kv, cells = rc.window + rc.batch;
            HostTensor kc(type, {row, cells}), vc(type, {row, cells});
            // Positions [0, pos0) stored in batches, wrapping the ring; then the tested batch.
            const int64_t pos0 = 3 * cells + 7;
            for (int64_t p0 = 0; p0 < pos0 + rc.batch; p0 += rc.batch) {
                const int64_t n = std::min(rc.batch, pos0 + rc.batch - p0);
                const HostTensor k = cpu::test::random_f32({row, n}, -2.0f, 2.0f);
                const HostTensor v = cpu::test::random_f32({row, n}, -2.0f, 2.0f);
                cpu.kv_store(k.t, kc.t, p0);
                cpu.kv_store(v.t, vc.t, p0);
            }
            std::vector<int32_t> pos(static_cast<size_t>(rc.batch));
            for (int64_t t = 0; t < rc.batch; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(pos0 + t);
            const HostTensor q = cpu::test::random_f32({rc.d, rc.n_head, rc.batch}, -2.0f, 2.0f);
            AttentionParams p;
            p.n_head = rc.n_head;
            p.n_head_kv = rc.n_head_kv;
            p.head_dim_k = p.head_dim_v = rc.d;
            p.scale = 1.0f / std::sqrt(static_cast<float>(rc.d));
            p.window = rc.window;
            HostTensor ref(GgmlType::F32, {rc.d, rc.n_head, rc.batch});
            cpu.attention(q.t, kc.t, vc.t, pos0 + rc.batch, pos.data(), p, ref.t);
            for (int g = 0; g < 4; ++g) {
                CudaBackend& gpu = *gpus[g];
                DeviceTensor kd = gpu.upload(kc.t), vd = gpu.upload(vc.t), qd = gpu.upload(q.t);
                DeviceTensor out = test::nan_device(gpu, {rc.d, rc.n_head, rc.batch});
                gpu.attention(qd.tensor, kd.tensor, vd.tensor, pos0 + rc.batch, pos.data(), p, out.tensor);
                EXPECT_LE(test::device_nmse(gpu, out.tensor, ref), test::attention_nmse_bound(opts[g], rc.batch))
                    << gpu_names[g] << " heads " << rc.n_head << "/" << rc.n_head_kv << " d " << rc.d << " window "
                    << rc.window << " batch " << rc.batch << " " << type_traits(type).name;
            }
        }
    }
}

TEST(CudaAttention, RefusesARingTooSmallForTheBatch) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    // Window 16 and a batch of 4 need 19 cells; 18 would have lost the first query's oldest key.
    DeviceTensor kc = gpu.allocate(GgmlType::F16, {64, 18}), vc = gpu.allocate(GgmlType::F16, {64, 18});
    DeviceTensor q = test::nan_device(gpu, {64, 1, 4}), out = test::nan_device(gpu, {64, 1, 4});
    AttentionParams p;
    p.n_head = p.n_head_kv = 1;
    p.head_dim_k = p.head_dim_v = 64;
    p.window = 16;
    const int32_t pos[4] = {40, 41, 42, 43};
    EXPECT_THROW(gpu.attention(q.tensor, kc.tensor, vc.tensor, 44, pos, p, out.tensor), ArgumentError);
}

}  // namespace
}  // namespace strata::cuda

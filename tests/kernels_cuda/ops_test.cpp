// CUDA rms_norm (per row and per head), add, scale, softcap, gated activations and RoPE against the
// CPU backend on random inputs at odd sizes. All are f32 ops with f32 accumulation: NMSE <= 1e-7.
#include <random>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

constexpr double kFloatOps = 1e-7;

TEST(CudaOps, RmsNormMatchesCpuPerRowAndPerHead) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    cpu::CpuBackend& cpu = test::cpu_backend();
    for (int64_t rows : {1, 7, 33, 4097}) {
        // Float4 rows of 1, 2, 4 and 8 vectors per thread (36 ... 20000), and two-pass ones (4097).
        for (int64_t ne0 : {36, 64, 768, 4096, 4097, 5120, 8192, 20000}) {
            if (rows * ne0 > (int64_t{1} << 25)) continue;  // the test's memory, not a limit of the op
            const HostTensor x = cpu::test::random_f32({ne0, rows}, -3.0f, 3.0f);
            const HostTensor w = cpu::test::random_f32({ne0});
            HostTensor ref(GgmlType::F32, {ne0, rows}), ref_plain(GgmlType::F32, {ne0, rows});
            cpu.rms_norm(x.t, &w.t, 1e-6f, ref.t);
            cpu.rms_norm(x.t, nullptr, 1e-6f, ref_plain.t);
            DeviceTensor xd = test::to_device(gpu, x), wd = test::to_device(gpu, w);
            DeviceTensor yd = test::nan_device(gpu, {ne0, rows});
            gpu.rms_norm(xd.tensor, &wd.tensor, 1e-6f, yd.tensor);
            EXPECT_LE(test::device_nmse(gpu, yd.tensor, ref), kFloatOps) << ne0 << "x" << rows;
            gpu.rms_norm(xd.tensor, nullptr, 1e-6f, xd.tensor);  // in place, no weight
            EXPECT_LE(test::device_nmse(gpu, xd.tensor, ref_plain), kFloatOps) << ne0 << "x" << rows;
        }
    }
    // Per head: [head_dim, n_head * n_tokens] over a [n_head * head_dim, n_tokens] activation.
    const int64_t hd = 128, n_head = 7, n_tokens = 5;
    HostTensor q = cpu::test::random_f32({hd * n_head, n_tokens}, -3.0f, 3.0f);
    const HostTensor w = cpu::test::random_f32({hd});
    DeviceTensor qd = test::to_device(gpu, q), wd = test::to_device(gpu, w);
    Tensor qh = q.t, qdh = qd.tensor;
    qh.ne = {hd, n_head * n_tokens, 1, 1};
    qh.nb = {4, hd * 4, hd * 4 * n_head * n_tokens, hd * 4 * n_head * n_tokens};
    qdh.ne = qh.ne;
    qdh.nb = qh.nb;
    cpu.rms_norm(qh, &w.t, 1e-6f, qh);
    gpu.rms_norm(qdh, &wd.tensor, 1e-6f, qdh);
    EXPECT_LE(test::device_nmse(gpu, qd.tensor, q), kFloatOps) << "per head";
}

TEST(CudaOps, ElementwiseOpsMatchCpu) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    cpu::CpuBackend& cpu = test::cpu_backend();
    for (int64_t rows : {1, 7, 33, 4097}) {
        for (int64_t ne0 : {33, 768}) {
            const std::string at = cat(ne0, "x", rows);
            const HostTensor a = cpu::test::random_f32({ne0, rows}, -8.0f, 8.0f);
            const HostTensor b = cpu::test::random_f32({ne0, rows}, -8.0f, 8.0f);
            const HostTensor bias = cpu::test::random_f32({ne0});
            DeviceTensor ad = test::to_device(gpu, a), bd = test::to_device(gpu, b);
            DeviceTensor biasd = test::to_device(gpu, bias);

            HostTensor ref(GgmlType::F32, {ne0, rows});
            cpu.add(a.t, b.t, ref.t);
            DeviceTensor yd = test::nan_device(gpu, {ne0, rows});
            gpu.add(ad.tensor, bd.tensor, yd.tensor);
            EXPECT_LE(test::device_nmse(gpu, yd.tensor, ref), kFloatOps) << "add " << at;
            cpu.add(a.t, bias.t, ref.t);
            gpu.add(ad.tensor, biasd.tensor, yd.tensor);
            EXPECT_LE(test::device_nmse(gpu, yd.tensor, ref), kFloatOps) << "add broadcast " << at;

            for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
                HostTensor g(a);
                cpu.gated_activation(g.t, b.t, act, g.t);
                DeviceTensor gd = test::to_device(gpu, a);
                gpu.gated_activation(gd.tensor, bd.tensor, act, gd.tensor);  // in place on gate
                EXPECT_LE(test::device_nmse(gpu, gd.tensor, g), kFloatOps)
                    << (act == Activation::Silu ? "silu " : "gelu ") << at;
            }

            HostTensor s(a);
            cpu.scale(s.t, 0.37f);
            cpu.softcap(s.t, 5.0f);
            gpu.scale(ad.tensor, 0.37f);
            gpu.softcap(ad.tensor, 5.0f);
            EXPECT_LE(test::device_nmse(gpu, ad.tensor, s), kFloatOps) << "scale + softcap " << at;
        }
    }
}

TEST(CudaOps, RopeMatchesCpuBothStyles) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    cpu::CpuBackend& cpu = test::cpu_backend();
    std::mt19937 gen(11);
    const int64_t hd = 128;
    std::vector<float> factors(hd / 2);
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i % 9) * 0.75f;
    HostTensor factors_host(GgmlType::F32, {hd / 2});
    for (int64_t i = 0; i < hd / 2; ++i) factors_host.f32()[i] = factors[static_cast<size_t>(i)];
    const DeviceTensor factors_dev = test::to_device(gpu, factors_host);

    for (RopeStyle style : {RopeStyle::Norm, RopeStyle::Neox}) {
        for (int n_rot : {128, 64}) {
            for (int64_t n_heads : {1, 7}) {
                for (int64_t n_tokens : {1, 5, 17}) {
                    for (int variant = 0; variant < 4; ++variant) {
                        RopeParams p;
                        p.n_rot = n_rot;
                        p.style = style;
                        p.freq_base = variant == 1 ? 1e6f : 10000.0f;
                        p.freq_scale = variant == 1 ? 0.125f : variant == 3 ? 0.25f : 1.0f;
                        if (variant == 3) {  // YaRN (Qwen2.5 long context): ramp and magnitude
                            p.ext_factor = 1.0f;
                            p.attn_factor = 1.0f;
                            p.n_ctx_orig = 2048;
                        }
                        std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
                        for (auto& v : pos) v = static_cast<int32_t>(gen() % 8000);
                        HostTensor x = cpu::test::random_f32({hd, n_heads, n_tokens}, -2.0f, 2.0f);
                        DeviceTensor xd = test::to_device(gpu, x);
                        p.freq_factors = variant == 2 ? factors.data() : nullptr;
                        cpu.rope(x.t, pos.data(), p);
                        // The device run reads the factors from the arena (as a loaded rope_freqs
                        // tensor would be), the host run above from host memory.
                        if (variant == 2) p.freq_factors = factors_dev.tensor.as<const float>();
                        gpu.rope(xd.tensor, pos.data(), p);
                        EXPECT_LE(test::device_nmse(gpu, xd.tensor, x), kFloatOps)
                            << (style == RopeStyle::Neox ? "neox" : "norm") << " n_rot=" << n_rot
                            << " heads=" << n_heads << " tokens=" << n_tokens << " variant=" << variant;
                    }
                }
            }
        }
    }
    // Host freq_factors reach the device through the argument ring as well.
    RopeParams p;
    p.n_rot = static_cast<int>(hd);
    p.freq_factors = factors.data();
    const std::vector<int32_t> pos = {3, 4000, 77};
    HostTensor x = cpu::test::random_f32({hd, 2, 3});
    DeviceTensor xd = test::to_device(gpu, x);
    cpu.rope(x.t, pos.data(), p);
    gpu.rope(xd.tensor, pos.data(), p);
    EXPECT_LE(test::device_nmse(gpu, xd.tensor, x), kFloatOps) << "host freq_factors";
}

}  // namespace
}  // namespace strata::cuda

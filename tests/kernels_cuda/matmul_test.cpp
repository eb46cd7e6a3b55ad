// CUDA matmul and get_rows on random inputs, every weight type, odd sizes (rows 1, 7, 33, 4097;
// tokens 1, 2, 3, 5, 8, 9, 17), every path: q8-activation GEMV (dp4a; int8 tensor cores for 2-8
// tokens; chunks of 8 columns above 8), f32 GEMV, cuBLAS on dequantized f16 tiles, SGEMM. Tight bounds are against a double-precision product over quant/'s
// dequantized weights; the CPU backend (whichever kernel it picks) is checked with a loose one.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels_cuda/codec.cuh"
#include "kernels_cuda/device_info.h"
#include "kernels_cuda/launch.h"
#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

// NMSE bounds against the double-precision product:
constexpr double kExactGemv = 1e-9;   // f32 GEMV: only float rounding
constexpr double kSgemm = 1e-9;       // f32 weights through cuBLAS SGEMM (no TF32)
constexpr double kF16Gemm = 1e-6;     // weights and activations rounded to f16, f32 accumulation
// q8 activations (d = amax/127 per 32 values): rounding x alone gives an NMSE of about 1.5e-5
// for uniform inputs; against the product over the same rounded x only float error remains.
constexpr double kQ8VsF32 = 1e-4;
constexpr double kQ8VsQ8Ref = 1e-8;
// Against the CPU backend, which may quantize activations itself (its integer kernels).
constexpr double kVsCpuBackend = 1e-4;

const GgmlType kWeightTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,   GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
    GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,   GgmlType::Q3_K,   GgmlType::Q4_K,  GgmlType::Q5_K,
    GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4,
    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0,
};

HostTensor random_weights(GgmlType type, int64_t k, int64_t n) {
    HostTensor w = cpu::test::random_weights(type, k, n);
    if (type == GgmlType::MXFP4) {  // sane E8M0 exponents (the helper writes an f16 over them)
        for (uint64_t b = 0; b < w.t.n_bytes() / 17; ++b) w.bytes[b * 17] = static_cast<uint8_t>(120 + b % 9);
    }
    return w;
}

// x as the dp4a GEMV sees it: each 32 values rounded to q8 and back.
HostTensor q8_roundtrip(const HostTensor& x) {
    HostTensor out(x);
    for (int64_t b = 0; b < x.size() / 32; ++b) {
        int8_t q[32];
        float d = 0.0f, s = 0.0f;
        quantize_q8_act(x.f32() + b * 32, q, d, s);
        for (int j = 0; j < 32; ++j) out.f32()[b * 32 + j] = static_cast<float>(q[j]) * d;
    }
    return out;
}

// y [n, m] = W · x in double over quant/'s dequantized W.
std::vector<double> double_matmul(const HostTensor& w, const HostTensor& x) {
    const std::vector<float> wf = cpu::test::dequantized(w.t);
    const int64_t k = w.t.ne[0], n = w.t.ne[1], m = x.t.ne[1];
    std::vector<double> y(static_cast<size_t>(n * m));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t e = 0; e < k; ++e) s += double{wf[j * k + e]} * double{x.f32()[i * k + e]};
            y[static_cast<size_t>(i * n + j)] = s;
        }
    }
    return y;
}

double nmse_vs(const std::vector<double>& ref, const HostTensor& got) {
    return test::nmse(ref, got.f32(), ref.size());
}

// NMSE summed over many calls: the statistical bounds (activation rounding) say nothing about a
// single output, and the odd sizes include n = m = 1.
struct Pooled {
    double err = 0.0, norm = 0.0;
    template <typename Ref>
    void add(const Ref& ref, const float* got, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            const double d = static_cast<double>(ref[i]) - static_cast<double>(got[i]);
            err += d * d;
            norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
        }
    }
    double value() const { return norm > 0.0 ? err / norm : err; }
};

class CudaMatmul : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CudaMatmul, MatchesCpuOnEveryPath) {
    STRATA_SKIP_WITHOUT_GPU();
    const GgmlType type = GetParam();
    // The q8 GEMV with 1, 2 and 4 weight rows per warp (small n falls back to fewer), 2-8 tokens
    // on tensor cores, up to 24 tokens in chunks of 8; the last one keeps the defaults (dp4a at
    // every token count, chunks up to 24 tokens).
    std::vector<std::unique_ptr<CudaBackend>> q8s;
    for (int rows_per_warp : {1, 2, 4, 0}) {
        CudaBackendOptions o = test::test_options();
        o.gemv_rows_per_warp = rows_per_warp == 0 ? 4 : rows_per_warp;
        o.gemv_mma_min_tokens = rows_per_warp == 0 ? 0 : 2;
        if (rows_per_warp != 0) o.gemv_chunk_max_tokens = 24;
        q8s.push_back(std::make_unique<CudaBackend>(o));
    }
    CudaBackendOptions exact_opts = test::test_options();
    exact_opts.quantize_activations = false;
    CudaBackend exact(exact_opts);
    const bool dp4a = type != GgmlType::F32 && type != GgmlType::F16 && type != GgmlType::BF16 &&
                      type != GgmlType::Q2_K && type != GgmlType::Q3_K && type != GgmlType::IQ4_NL &&
                      type != GgmlType::IQ4_XS && type != GgmlType::MXFP4;
    const int64_t block = type_traits(type).block_size;
    Pooled q8_vs_f32, exact_vs_cpu, q8_vs_cpu;
    const int64_t k_small = block == 1 ? 77 : block * 3, k_large = block == 1 ? 1024 : block * 11;
    for (int64_t k : {k_small, k_large}) {
        for (int64_t n : k == k_small ? std::vector<int64_t>{1, 7, 33, 4097} : std::vector<int64_t>{7, 33}) {
            const HostTensor w = random_weights(type, k, n);
            const DeviceTensor we = exact.upload(w.t);
            // The f32 GEMV (m <= 8) pooled over m: one output alone can sit near cancellation
            // (q2_K, n = m = 1 drew 6e-9 under another test order's random draws).
            Pooled exact_gemv;
            for (int64_t m : {1, 2, 3, 5, 8, 9, 17}) {
                const HostTensor x = cpu::test::random_f32({k, m});
                const std::vector<double> ref = double_matmul(w, x);
                const std::string at = cat(type_traits(type).name, " k=", k, " n=", n, " m=", m);

                DeviceTensor xe = test::to_device(exact, x), ye = test::nan_device(exact, {n, m});
                exact.matmul(we.tensor, xe.tensor, ye.tensor);
                const HostTensor exact_y = test::to_host(exact, ye.tensor);
                if (m <= 8) {
                    exact_gemv.add(ref, exact_y.f32(), ref.size());
                } else {
                    const double bound = type == GgmlType::F32 ? kSgemm : kF16Gemm;
                    EXPECT_LE(nmse_vs(ref, exact_y), bound) << at << " (f32 activations)";
                }

                HostTensor cpu_y(GgmlType::F32, {n, m});
                test::cpu_backend().matmul(w.t, x.t, cpu_y.t);
                exact_vs_cpu.add(cpu_y.f32(), exact_y.f32(), static_cast<size_t>(cpu_y.size()));

                if (!dp4a || k % 32 != 0) continue;
                const std::vector<double> ref_q8 = double_matmul(w, q8_roundtrip(x));
                for (size_t v = 0; v < q8s.size(); ++v) {
                    CudaBackend& q8 = *q8s[v];
                    if (m > std::max(8, q8.options().gemv_chunk_max_tokens)) continue;  // the cuBLAS path
                    const DeviceTensor wq = q8.upload(w.t);
                    DeviceTensor xq = test::to_device(q8, x), yq = test::nan_device(q8, {n, m});
                    q8.matmul(wq.tensor, xq.tensor, yq.tensor);
                    const HostTensor got = test::to_host(q8, yq.tensor);
                    EXPECT_LE(nmse_vs(ref_q8, got), kQ8VsQ8Ref)
                        << at << " rows/warp " << q8.options().gemv_rows_per_warp << " tensor cores from "
                        << q8.options().gemv_mma_min_tokens << " tokens, chunks up to "
                        << q8.options().gemv_chunk_max_tokens
                        << " (q8 activations vs the same rounded x)";
                    q8_vs_f32.add(ref, got.f32(), ref.size());
                    q8_vs_cpu.add(cpu_y.f32(), got.f32(), static_cast<size_t>(cpu_y.size()));
                }
            }
            EXPECT_LE(exact_gemv.value(), kExactGemv)
                << type_traits(type).name << " k=" << k << " n=" << n << " m=1..8 (f32 activations)";
        }
    }
    const char* name = type_traits(type).name.data();
    EXPECT_LE(exact_vs_cpu.value(), kVsCpuBackend) << name << ": f32-activation paths against the CPU backend";
    EXPECT_LE(q8_vs_f32.value(), kQ8VsF32) << name << ": q8 activations against the product over f32 x";
    EXPECT_LE(q8_vs_cpu.value(), kVsCpuBackend) << name << ": q8 activations against the CPU backend";
    std::printf("[ nmse ] %-7s f32 paths vs CPU backend %.2e, q8 GEMV vs f32 x %.2e, vs CPU backend %.2e\n", name,
                exact_vs_cpu.value(), q8_vs_f32.value(), q8_vs_cpu.value());
}

TEST_P(CudaMatmul, GetRowsMatchesCpuBitForBit) {
    STRATA_SKIP_WITHOUT_GPU();
    const GgmlType type = GetParam();
    CudaBackend gpu(test::test_options());
    const int64_t block = type_traits(type).block_size;
    const int64_t ne0 = block == 1 ? 77 : block * 3, n_rows = 33;
    const HostTensor table = random_weights(type, ne0, n_rows);
    const DeviceTensor dt = gpu.upload(table.t);
    for (const std::vector<int32_t>& ids : {std::vector<int32_t>{32}, std::vector<int32_t>{6, 0, 3, 3, 5},
                                            std::vector<int32_t>(17, 1)}) {
        const auto n = static_cast<int64_t>(ids.size());
        HostTensor ref(GgmlType::F32, {ne0, n});
        test::cpu_backend().get_rows(table.t, ids.data(), n, ref.t);
        DeviceTensor out = test::nan_device(gpu, {ne0, n});
        gpu.get_rows(dt.tensor, ids.data(), n, out.tensor);
        const HostTensor got = test::to_host(gpu, out.tensor);
        EXPECT_EQ(0, std::memcmp(got.f32(), ref.f32(), static_cast<size_t>(ref.size()) * sizeof(float)))
            << type_traits(type).name << " with " << n << " ids";
    }
}

// A batched decode step (strata serve) or a speculative check must give each token the result it
// gets alone: every column of a 2-8 column product, on the dp4a GEMV (any rows per warp the
// column count takes) and on the tensor-core GEMV, and of a 9-17 column product in chunks of 8,
// is bit-identical to that column's product alone (one column: the dp4a kernel).
TEST_P(CudaMatmul, ColumnsDoNotDependOnTheBatch) {
    STRATA_SKIP_WITHOUT_GPU();
    const GgmlType type = GetParam();
    if (!gemv_q8_supported(type)) GTEST_SKIP() << "no q8 GEMV for this type";
    const std::vector<DeviceInfo> devices = list_devices();
    const bool tensor_cores = !devices.empty() && devices.front().compute_major >= 8;
    const int64_t block = type_traits(type).block_size;
    // A partial last span of 32 items and a partial last 16-row block; then several spans.
    for (const int64_t k : {block * (block == 32 ? 33 : 5), block * (block == 32 ? 200 : 17)}) {
        const int64_t n = 77;
        const HostTensor w = random_weights(type, k, n);
        constexpr int64_t kWide = 17;
        const HostTensor wide = cpu::test::random_f32({k, kWide});
        CudaBackend alone(test::test_options());
        const DeviceTensor wa = alone.upload(w.t);
        std::vector<std::vector<float>> cols;  // column c's product alone
        for (int64_t c = 0; c < kWide; ++c) {
            HostTensor x = cpu::test::random_f32({k, 1});
            std::memcpy(x.f32(), wide.f32() + c * k, static_cast<size_t>(k) * sizeof(float));
            DeviceTensor xd = test::to_device(alone, x), yd = test::nan_device(alone, {n, 1});
            alone.matmul(wa.tensor, xd.tensor, yd.tensor);
            const HostTensor y = test::to_host(alone, yd.tensor);
            cols.emplace_back(y.f32(), y.f32() + n);
        }
        for (int mma_from : {0, 2}) {
            if (mma_from > 0 && !tensor_cores) continue;
            CudaBackendOptions o = test::test_options();
            o.gemv_mma_min_tokens = mma_from;
            o.gemv_chunk_max_tokens = kWide;
            CudaBackend gpu(o);
            const DeviceTensor wd = gpu.upload(w.t);
            for (int64_t m : {2, 3, 5, 8, 9, 12, 17}) {
                HostTensor x = cpu::test::random_f32({k, m});
                std::memcpy(x.f32(), wide.f32(), static_cast<size_t>(k * m) * sizeof(float));
                DeviceTensor xd = test::to_device(gpu, x), yd = test::nan_device(gpu, {n, m});
                gpu.matmul(wd.tensor, xd.tensor, yd.tensor);
                const HostTensor y = test::to_host(gpu, yd.tensor);
                for (int64_t c = 0; c < m; ++c) {
                    EXPECT_EQ(0, std::memcmp(cols[static_cast<size_t>(c)].data(), y.f32() + c * n,
                                             static_cast<size_t>(n) * sizeof(float)))
                        << type_traits(type).name << " k=" << k << (mma_from > 0 ? " (tensor cores)" : " (dp4a)")
                        << ": column " << c << " of " << m << " differs from its product alone";
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CudaMatmul, ::testing::ValuesIn(kWeightTypes));

// Out-of-range GEMV options are refused when the backend is made (before any device call, so
// this runs without a GPU too).
TEST(CudaMatmulChecks, RejectsBadGemvOptions) {
    for (int bad : {-1, kGemvChunkMaxTokens + 1}) {
        CudaBackendOptions o = test::test_options();
        o.gemv_chunk_max_tokens = bad;
        EXPECT_THROW(CudaBackend{o}, ArgumentError) << "gemv_chunk_max_tokens = " << bad;
    }
    CudaBackendOptions o = test::test_options();
    o.gemv_max_tokens = kGemvMaxCols + 1;
    EXPECT_THROW(CudaBackend{o}, ArgumentError) << "gemv_max_tokens = " << o.gemv_max_tokens;
}

TEST(CudaMatmulChecks, RejectsHostTensorsAndBadShapes) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    const HostTensor w = random_weights(GgmlType::Q4_0, 64, 8);
    const HostTensor x = cpu::test::random_f32({64, 1});
    HostTensor y(GgmlType::F32, {8, 1});
    EXPECT_THROW(gpu.matmul(w.t, x.t, y.t), ArgumentError) << "host tensors are refused";
    DeviceTensor wd = gpu.upload(w.t), xd = gpu.upload(x.t), bad = test::nan_device(gpu, {7, 1});
    EXPECT_THROW(gpu.matmul(wd.tensor, xd.tensor, bad.tensor), ArgumentError);
    const std::vector<int32_t> ids = {8};
    DeviceTensor rows = test::nan_device(gpu, {64, 1});
    EXPECT_THROW(gpu.get_rows(wd.tensor, ids.data(), 1, rows.tensor), ArgumentError) << "id out of range";
}

}  // namespace
}  // namespace strata::cuda

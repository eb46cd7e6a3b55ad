// The input-major Q4_K copy (quant/input_major.h) and its product (Backend::input_major_matvec)
// against quant/'s reference dequantizer of the original rows (itself tested against the gguf
// package): every value of the copy equals the original's bit for bit, and the product over a
// sparse input matches a double-precision product of the dequantized matrix, on every kernel
// variant this CPU runs, at shapes that take the full row tiles, the 32-row tails and both.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels_cpu/ops.h"
#include "kernels_cpu/sparse_rows.h"
#include "quant/input_major.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

std::vector<KernelVariant> simd_variants() {
    std::vector<KernelVariant> out;
    for (KernelVariant v : {KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512})
        if (kernel_variant_supported(v)) out.push_back(v);
    return out;
}

struct InputMajorCopy {
    std::vector<uint8_t> bytes;
    InputMajorQ4K w;
};

InputMajorCopy make_copy(const HostTensor& q4k, int64_t n_in, int64_t n_out) {
    InputMajorCopy c;
    c.bytes.assign(input_major_q4k_bytes(n_in, n_out), 0xA5);  // every byte must be written
    make_input_major_q4k(q4k.t.data, n_in, n_out, c.bytes.data(), 0, n_out / 2 / 32 * 32);
    make_input_major_q4k(q4k.t.data, n_in, n_out, c.bytes.data(), n_out / 2 / 32 * 32, n_out);
    c.w = InputMajorQ4K{c.bytes.data(), n_in, n_out};
    return c;
}

// x with about `zero_share` of its values zero (whole chunks among them), the rest in [-1, 1].
std::vector<float> sparse_x(int64_t n, double zero_share) {
    std::vector<float> x(static_cast<size_t>(n));
    test::fill_uniform(x.data(), n);
    for (int64_t j = 0; j < n; ++j)
        if (static_cast<double>(test::rng()() % 1000) < 1000 * zero_share || (j / 32) % 7 == 3) x[static_cast<size_t>(j)] = 0;
    return x;
}

TEST(InputMajorQ4K, HoldsTheOriginalValuesExactly) {
    for (const auto& [n_in, n_out] : {std::pair<int64_t, int64_t>{256, 32}, {512, 160}, {768, 96}}) {
        const HostTensor q = test::random_weights(GgmlType::Q4_K, n_in, n_out);
        const std::vector<float> ref = test::dequantized(q.t);
        const InputMajorCopy c = make_copy(q, n_in, n_out);
        for (int64_t r = 0; r < n_out; ++r)
            for (int64_t j = 0; j < n_in; ++j)
                ASSERT_EQ(input_major_q4k_value(c.w, r, j), ref[static_cast<size_t>(r * n_in + j)])
                    << "row " << r << " column " << j << " of " << n_out << " x " << n_in;
    }
}

TEST(InputMajorQ4K, RefusesShapesAndRowRangesThatDoNotFit) {
    EXPECT_FALSE(input_major_q4k_fits(256, 48));
    EXPECT_FALSE(input_major_q4k_fits(320, 64));
    EXPECT_THROW(input_major_q4k_bytes(256, 48), std::invalid_argument);
    std::vector<uint8_t> dst(input_major_q4k_bytes(256, 64));
    const HostTensor q = test::random_weights(GgmlType::Q4_K, 256, 64);
    EXPECT_THROW(make_input_major_q4k(q.t.data, 256, 64, dst.data(), 16, 64), std::invalid_argument);
    EXPECT_THROW(make_input_major_q4k(q.t.data, 256, 64, dst.data(), 0, 96), std::invalid_argument);
}

TEST(InputMajorQ4K, ProductMatchesADoubleReferenceOverTheNonzeroInputs) {
    // 4,352 rows: AVX-512's 128-row tiles and a 32-row tail, 16 groups of one chunk; 96 rows:
    // tails only, 24 chunks in 16 groups; 4,096 inputs: 16 groups of 8 chunks.
    for (const auto& [n_in, n_out] : {std::pair<int64_t, int64_t>{512, 4352}, {768, 96}, {4096, 160}}) {
        const HostTensor q = test::random_weights(GgmlType::Q4_K, n_in, n_out);
        const std::vector<float> wf = test::dequantized(q.t);
        const InputMajorCopy c = make_copy(q, n_in, n_out);
        for (const double zero_share : {0.0, 0.5, 0.95}) {
            const std::vector<float> x = sparse_x(n_in, zero_share);
            std::vector<double> ref(static_cast<size_t>(n_out), 0.0), mag(static_cast<size_t>(n_out), 0.0);
            for (int64_t r = 0; r < n_out; ++r)
                for (int64_t j = 0; j < n_in; ++j) {
                    const double t = static_cast<double>(wf[static_cast<size_t>(r * n_in + j)]) * x[static_cast<size_t>(j)];
                    ref[static_cast<size_t>(r)] += t;
                    mag[static_cast<size_t>(r)] += std::fabs(t);
                }
            for (KernelVariant v : simd_variants()) {
                test::ScopedKernelVariant scoped(v);
                std::vector<float> y1(static_cast<size_t>(n_out), NAN);
                input_major_matvec(c.w, x.data(), y1.data(), 1);
                for (int64_t r = 0; r < n_out; ++r) {
                    const size_t i = static_cast<size_t>(r);
                    ASSERT_NEAR(y1[i], ref[i], 2e-6 * mag[i] + 1e-6)
                        << kernel_variant_name(v) << " row " << r << " of " << n_out << " x " << n_in << ", zeros " << zero_share;
                }
                for (int threads : {2, 5}) {
                    std::vector<float> y2(static_cast<size_t>(n_out), NAN);
                    input_major_matvec(c.w, x.data(), y2.data(), threads);
                    ASSERT_EQ(y1, y2) << threads << " threads changed the result (" << kernel_variant_name(v) << ")";
                }
            }
        }
    }
}

TEST(InputMajorQ4K, TheOpChecksItsArguments) {
    const HostTensor q = test::random_weights(GgmlType::Q4_K, 256, 64);
    const InputMajorCopy c = make_copy(q, 256, 64);
    HostTensor x = test::random_f32({256}), y = test::random_f32({64}), bad = test::random_f32({128});
    EXPECT_NO_THROW(input_major_matvec(c.w, x.t, y.t, 1));
    EXPECT_THROW(input_major_matvec(c.w, bad.t, y.t, 1), ArgumentError);
    EXPECT_THROW(input_major_matvec(c.w, x.t, bad.t, 1), ArgumentError);
    EXPECT_THROW(input_major_matvec(InputMajorQ4K{}, x.t, y.t, 1), ArgumentError);
}

}  // namespace
}  // namespace strata::cpu

// Gathered-row GEMV and sparse row accumulate (sparse_rows.h).
#include "kernels_cpu/sparse_rows.h"

#include <algorithm>
#include <vector>

#include "kernels_cpu/op_args.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kMinParallelRows = 64;      // fewer gathered rows run on one thread
constexpr int64_t kMinParallelElements = 1 << 15;  // rows × k below this: one thread

// The calling thread's scratch of at least n bytes, kept between calls (decode calls these
// every layer of every token).
// Prefetches the first kPrefetchHead bytes of a row (the qdot kernels prefetch ahead inside it).
constexpr uint64_t kPrefetchHead = 2048;
inline void prefetch_head(const uint8_t* row, uint64_t row_bytes) {
    const uint64_t n = std::min(row_bytes, kPrefetchHead);
    for (uint64_t b = 0; b < n; b += 64) __builtin_prefetch(row + b, 0, 3);
}

uint8_t* scratch(size_t n) {
    thread_local std::vector<uint8_t> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

}  // namespace

void gather_matvec(const Tensor& w, const float* x, const int32_t* rows, int64_t n_rows, float* y,
                   int n_threads, bool quantize_activations) {
    const int64_t k = w.ne[0];
    if (n_rows == 0) return;
    const bool parallel = n_threads > 1 && n_rows >= kMinParallelRows && n_rows * k >= kMinParallelElements;
    const KernelVariant variant = quantize_activations ? active_kernel_variant() : KernelVariant::Dequant;
    if (const QDotKernel* kernel = find_qdot_kernel(w.type, variant)) {
        // x quantized once to the kernel's partner type, as matmul does.
        const TypeTraits& at = type_traits(kernel->act_type);
        const int64_t n_blocks = k / type_traits(w.type).block_size;
        const size_t q_bytes = (row_bytes(kernel->act_type, k) + 63) / 64 * 64;
        uint8_t* xq = scratch(q_bytes + static_cast<size_t>(n_blocks) * sizeof(float));
        auto* xd = reinterpret_cast<float*>(xq + q_bytes);
        kernel->quantize(x, xq, k);
        expand_act_scales(kernel->act_type, xq, k / at.block_size, xd);
        const QDotActs acts{xq, 0, xd, 0};
        const uint64_t row_bytes = w.row_bytes();
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
        for (int64_t j = 0; j < n_rows; ++j) {
            // The rows are scattered: the hardware prefetcher restarts cold at each one, so the
            // next row's head is fetched while this one is dotted.
            if (j + 1 < n_rows) prefetch_head(row_ptr(w, rows[j + 1]), row_bytes);
            kernel->dot(row_ptr(w, rows[j]), acts, n_blocks, 1, y + j);
        }
        return;
    }
    // matmul's f32 path: a dequantized row dotted in f32.
    const DequantizeFn dequantize = type_traits(w.type).dequantize;
#pragma omp parallel num_threads(n_threads) if (parallel)
    {
        auto* wf = reinterpret_cast<float*>(scratch(static_cast<size_t>(k) * sizeof(float)));
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n_rows; ++j) {
            dequantize(row_ptr(w, rows[j]), wf, k);
            y[j] = dot_f32(wf, x, k);
        }
    }
}

void accumulate_rows(const Tensor& w, const float* coef, const int32_t* rows, int64_t n_rows, float* y,
                     int n_threads) {
    const int64_t k = w.ne[0];
    const TypeTraits& wt = type_traits(w.type);
    const int64_t n_blocks = k / wt.block_size;
    // Each thread owns a range of whole blocks of y (and of every row), so no two threads write
    // the same element and the sum over rows runs in the same order for any thread count.
    const int n_parts = n_threads > 1 && n_rows * k >= kMinParallelElements
                            ? static_cast<int>(std::min<int64_t>(n_threads, n_blocks)) : 1;
    const AxpyQ8Fn axpy_q8 = w.type == GgmlType::Q8_0 ? find_axpy_q8_0(active_kernel_variant()) : nullptr;
    const DequantizeFn dequantize = wt.dequantize;
#pragma omp parallel for num_threads(n_parts) schedule(static, 1) if (n_parts > 1)
    for (int part = 0; part < n_parts; ++part) {
        const int64_t b0 = n_blocks * part / n_parts, b1 = n_blocks * (part + 1) / n_parts;
        float* yp = y + b0 * wt.block_size;
        const int64_t len = (b1 - b0) * wt.block_size;
        std::fill(yp, yp + len, 0.0f);
        if (axpy_q8 != nullptr) {
            const uint8_t* group[kAxpyRows];
            for (int64_t j = 0; j < n_rows; j += kAxpyRows) {
                const int n = static_cast<int>(std::min<int64_t>(kAxpyRows, n_rows - j));
                for (int r = 0; r < n; ++r) group[r] = row_ptr(w, rows[j + r]) + static_cast<size_t>(b0) * wt.type_size;
                axpy_q8(group, coef + j, n, b1 - b0, yp);
            }
            continue;
        }
        auto* seg = reinterpret_cast<float*>(scratch(static_cast<size_t>(len) * sizeof(float)));
        for (int64_t j = 0; j < n_rows; ++j) {
            dequantize(row_ptr(w, rows[j]) + static_cast<size_t>(b0) * wt.type_size, seg, len);
            axpy_f32(yp, seg, coef[j], len);
        }
    }
}

}  // namespace strata::cpu

// Gathered-row GEMV and sparse row accumulate (sparse_rows.h).
#include "kernels_cpu/sparse_rows.h"

#include <omp.h>

#include <algorithm>

#include "kernels_cpu/op_args.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/thread_scratch.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kMinParallelRows = 64;      // fewer gathered rows run on one thread
constexpr int64_t kMinParallelElements = 1 << 15;  // rows × k below this: one thread

// The calling thread's scratch of at least n bytes, kept between calls (decode calls these
// every layer of every token).
// Several gathered rows in flight per thread: while row j is dotted, row j + 1's head is
// fetched into L1 and the whole of rows j + 2 .. j + kRowsAhead into L2 (the hardware prefetcher
// restarts cold at every scattered row, so without this one row at a time is in flight).
constexpr uint64_t kPrefetchHead = 2048;  // the qdot kernels prefetch ahead inside a row
inline void prefetch_bytes(const uint8_t* p, uint64_t n, bool to_l1) {
    for (uint64_t b = 0; b < n; b += 64) {
        if (to_l1) __builtin_prefetch(p + b, 0, 3);
        else __builtin_prefetch(p + b, 0, 2);
    }
}
// Called before row j of the list [0, n_rows) is read; row j + ahead enters L2 (the rows
// between were asked for on earlier calls), row j + 1's head L1.
inline void prefetch_ahead(const Tensor& w, const int32_t* rows, int64_t j, int64_t n_rows, uint64_t row_bytes,
                           int64_t ahead) {
    if (j == 0) {
        for (int64_t a = 2; a < ahead && a < n_rows; ++a) prefetch_bytes(row_ptr(w, rows[a]), row_bytes, false);
    }
    if (ahead >= 2 && j + ahead < n_rows) prefetch_bytes(row_ptr(w, rows[j + ahead]), row_bytes, false);
    if (j + 1 < n_rows) prefetch_bytes(row_ptr(w, rows[j + 1]), std::min(row_bytes, kPrefetchHead), true);
}

uint8_t* scratch(size_t n) {
    thread_local ThreadScratch buf;
    return buf.get(n);
}

}  // namespace

void gather_matvec(const Tensor& w, const float* x, const int32_t* rows, int64_t n_rows, float* y,
                   int n_threads, bool quantize_activations, int rows_ahead) {
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
#pragma omp parallel num_threads(n_threads) if (parallel)
        {
            // Each thread takes one contiguous range of the list, so its look-ahead stays its own.
            const int n_parts = parallel ? omp_get_num_threads() : 1, part = parallel ? omp_get_thread_num() : 0;
            const int64_t j0 = n_rows * part / n_parts, j1 = n_rows * (part + 1) / n_parts;
            for (int64_t j = j0; j < j1; ++j) {
                prefetch_ahead(w, rows + j0, j - j0, j1 - j0, row_bytes, rows_ahead);
                kernel->dot(row_ptr(w, rows[j]), acts, n_blocks, 1, y + j);
            }
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
    const AxpyFn axpy = find_axpy(w.type, active_kernel_variant());
    const DequantizeFn dequantize = wt.dequantize;
#pragma omp parallel for num_threads(n_parts) schedule(static, 1) if (n_parts > 1)
    for (int part = 0; part < n_parts; ++part) {
        const int64_t b0 = n_blocks * part / n_parts, b1 = n_blocks * (part + 1) / n_parts;
        float* yp = y + b0 * wt.block_size;
        const int64_t len = (b1 - b0) * wt.block_size;
        std::fill(yp, yp + len, 0.0f);
        if (axpy != nullptr) {
            const uint8_t* group[kAxpyRows];
            for (int64_t j = 0; j < n_rows; j += kAxpyRows) {
                const int n = static_cast<int>(std::min<int64_t>(kAxpyRows, n_rows - j));
                for (int r = 0; r < n; ++r) group[r] = row_ptr(w, rows[j + r]) + static_cast<size_t>(b0) * wt.type_size;
                axpy(group, coef + j, n, b1 - b0, yp);
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

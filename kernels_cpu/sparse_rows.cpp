// Gathered-row GEMV and sparse row accumulate (sparse_rows.h).
#include "kernels_cpu/sparse_rows.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels_cpu/op_args.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/row_ops.h"
#include "kernels_cpu/thread_scratch.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kMinParallelRows = 64;      // fewer gathered rows run on one thread
constexpr int64_t kMinParallelElements = 1 << 15;  // rows × k below this: one thread

// Several gathered rows in flight per thread: while row j is dotted, row j + 1's head is
// fetched into L1 and the whole of rows j + 2 .. j + kRowsAhead into L2 (the hardware prefetcher
// restarts cold at every scattered row, so without this one row at a time is in flight).
// always_inline (and prefetch_ahead's): GCC 12's IPA mod/ref analysis finds a function that only
// prefetches free of side effects and deletes the calls to it, prefetches and all, wherever it is
// not inlined (it was not, into the OpenMP bodies: objdump showed no prefetch in them).
constexpr uint64_t kPrefetchHead = 2048;  // the qdot kernels prefetch ahead inside a row
__attribute__((always_inline)) inline void prefetch_bytes(const uint8_t* p, uint64_t n, bool to_l1) {
    for (uint64_t b = 0; b < n; b += 64) {
        if (to_l1) __builtin_prefetch(p + b, 0, 3);
        else __builtin_prefetch(p + b, 0, 2);
    }
}

// Called before row j of the list [0, n_rows) is read; row j + ahead enters L2 (the rows
// between were asked for on earlier calls), row j + 1's head L1.
__attribute__((always_inline)) inline void prefetch_ahead(const Tensor& w, const int32_t* rows, int64_t j,
                                                          int64_t n_rows, uint64_t row_bytes, int64_t ahead) {
    if (j == 0) {
        for (int64_t a = 2; a < ahead && a < n_rows; ++a) prefetch_bytes(row_ptr(w, rows[a]), row_bytes, false);
    }
    if (ahead >= 2 && j + ahead < n_rows) prefetch_bytes(row_ptr(w, rows[j + ahead]), row_bytes, false);
    // A next row that follows this one in memory is what the dot kernel's own look-ahead reads.
    if (j + 1 < n_rows && rows[j + 1] != rows[j] + 1)
        prefetch_bytes(row_ptr(w, rows[j + 1]), std::min(row_bytes, kPrefetchHead), true);
}

// The calling thread's scratch of at least n bytes, kept between calls (decode calls these
// every layer of every token).
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
        const size_t q_bytes = (act_row_bytes(*kernel, k) + 63) / 64 * 64;
        uint8_t* xq = scratch(q_bytes + static_cast<size_t>(n_blocks) * sizeof(float));
        auto* xd = reinterpret_cast<float*>(xq + q_bytes);
        kernel->quantize(x, xq, k);
        if (reads_expanded_scales(*kernel)) expand_act_scales(kernel->act_type, xq, k / at.block_size, xd);
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

namespace {

// accumulate_rows sums its rows in groups whose size depends on the row count alone: each group
// into its own partial (group 0 into y), then y += the partials in group order. So the order of
// the sum, and the result, do not depend on the thread count, and a thread reads whole rows (a
// long stream each) where a split of y would give every thread a short slice of every row.
constexpr int64_t kMinRowGroup = 64;
constexpr int64_t kMaxRowGroups = 128;  // bounds the partials' bytes (128 × k floats)
int64_t row_group_size(int64_t n_rows) { return std::max(kMinRowGroup, (n_rows + kMaxRowGroups - 1) / kMaxRowGroups); }

// The calling thread's partials (apart from scratch(), which the threads of its team use too).
float* partials(size_t n_floats) {
    thread_local ThreadScratch buf;
    return reinterpret_cast<float*>(buf.get(n_floats * sizeof(float)));
}

// y[0..k) += the n_parts partials [n_parts][k] in order. Called inside a parallel region: the
// threads split y into spans (an orphaned omp for), so each element's sum order is fixed.
void add_partials(float* y, const float* part, int64_t n_parts, int64_t k) {
    constexpr int64_t kSpan = 1024;  // elements of y one thread sums the partials of at a time
#pragma omp for schedule(static)
    for (int64_t e0 = 0; e0 < k; e0 += kSpan) {
        const int64_t e1 = std::min(k, e0 + kSpan);
        for (int64_t g = 0; g < n_parts; ++g) {
            const float* p = part + g * k;
            for (int64_t e = e0; e < e1; ++e) y[e] += p[e];
        }
    }
}

// y[0..k) = Σ_j coef[j] · w[rows[j]] over n rows, in list order (kAxpyRows at a time).
void accumulate_group(const Tensor& w, AxpyFn axpy, const float* coef, const int32_t* rows, int64_t n, float* y) {
    const int64_t k = w.ne[0];
    std::fill(y, y + k, 0.0f);
    if (axpy != nullptr) {
        const int64_t n_blocks = k / type_traits(w.type).block_size;
        // The first group's rows are fetched whole; each call then prefetches the next group's
        // as it reads its own (a short last group: its first row stands in for the missing ones).
        for (int64_t j = 0; j < std::min<int64_t>(n, kAxpyRows); ++j)
            prefetch_bytes(row_ptr(w, rows[j]), w.row_bytes(), true);
        const uint8_t* group[kAxpyRows];
        const uint8_t* next[kAxpyRows];
        for (int64_t j = 0; j < n; j += kAxpyRows) {
            const int m = static_cast<int>(std::min<int64_t>(kAxpyRows, n - j));
            for (int r = 0; r < m; ++r) group[r] = row_ptr(w, rows[j + r]);
            const int64_t j_next = j + kAxpyRows, m_next = std::min<int64_t>(kAxpyRows, n - j_next);
            for (int r = 0; r < m; ++r)
                next[r] = m_next > 0 ? row_ptr(w, rows[j_next + (r < m_next ? r : 0)]) : nullptr;
            axpy(group, coef + j, m, n_blocks, y, m_next > 0 ? next : nullptr);
        }
        return;
    }
    const DequantizeFn dequantize = type_traits(w.type).dequantize;
    auto* seg = reinterpret_cast<float*>(scratch(static_cast<size_t>(k) * sizeof(float)));
    for (int64_t j = 0; j < n; ++j) {
        dequantize(row_ptr(w, rows[j]), seg, k);
        axpy_f32(y, seg, coef[j], k);
    }
}

}  // namespace

void accumulate_rows(const Tensor& w, const float* coef, const int32_t* rows, int64_t n_rows, float* y,
                     int n_threads) {
    const int64_t k = w.ne[0];
    const AxpyFn axpy = find_axpy(w.type, active_kernel_variant());
    const int64_t group = row_group_size(n_rows);
    const int64_t n_groups = std::max<int64_t>(1, (n_rows + group - 1) / group);
    if (n_groups == 1) {
        accumulate_group(w, axpy, coef, rows, n_rows, y);
        return;
    }
    float* part = partials(static_cast<size_t>((n_groups - 1) * k));  // groups 1.. (group 0: y)
    const bool parallel = n_threads > 1 && n_rows * k >= kMinParallelElements;
#pragma omp parallel num_threads(n_threads) if (parallel)
    {
#pragma omp for schedule(dynamic, 1)
        for (int64_t g = 0; g < n_groups; ++g) {
            const int64_t j0 = g * group, n = std::min(group, n_rows - j0);
            accumulate_group(w, axpy, coef + j0, rows + j0, n, g == 0 ? y : part + (g - 1) * k);
        }
        add_partials(y, part, n_groups - 1, k);
    }
}

void input_major_matvec(const InputMajorQ4K& w, const float* x, float* y, int n_threads, int64_t ahead) {
    const int64_t n_chunks = w.n_chunks();
    // The calling thread's masks, kept between calls; the team reads them through `mk` (a
    // thread_local named inside the parallel region would be each thread's own).
    thread_local std::vector<uint32_t> masks;
    masks.assign(static_cast<size_t>(n_chunks), 0);
    const uint32_t* mk = masks.data();
    int64_t n_nonzero = 0;
    for (int64_t j = 0; j < w.n_in; ++j) {
        if (x[j] != 0.0f) {
            masks[static_cast<size_t>(j / 32)] |= 1u << (j % 32);
            ++n_nonzero;
        }
    }
    const auto kernel = row_ops().input_major_q4k;
    // At most kInputMajorGroups groups of whole chunks, each summed by one thread into its own
    // partial (group 0 into y): every thread reads whole columns, long streams.
    constexpr int64_t kInputMajorGroups = 16;
    const int64_t n_groups = std::min(n_chunks, kInputMajorGroups);
    if (n_groups <= 1) {
        kernel(w, x, mk, 0, n_chunks, ahead, y);
        return;
    }
    float* part = partials(static_cast<size_t>((n_groups - 1) * w.n_out));
    const bool parallel = n_threads > 1 && n_nonzero * w.n_out >= kMinParallelElements;
#pragma omp parallel num_threads(n_threads) if (parallel)
    {
#pragma omp for schedule(dynamic, 1)
        for (int64_t g = 0; g < n_groups; ++g) {
            const int64_t c0 = n_chunks * g / n_groups, c1 = n_chunks * (g + 1) / n_groups;
            kernel(w, x, mk, c0, c1, ahead, g == 0 ? y : part + (g - 1) * w.n_out);
        }
        add_partials(y, part, n_groups - 1, w.n_out);
    }
}

}  // namespace strata::cpu

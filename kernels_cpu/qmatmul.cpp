// Quantized matmul driver (qmatmul.h). Work unit = a chunk of W rows (at most kChunkBytes, so
// it stays in L2) × a block of up to kColBlock activation rows; units are handed out
// dynamically, W-chunk-major so the threads stream W from memory about once. Inside a unit each
// W row meets kQDotMaxCols activation rows per kernel call; rows of a kernel with decoded rows
// (the i-quants) are decoded once per unit when it has more activation rows than that.
#include "kernels_cpu/qmatmul.h"

#include <algorithm>
#include <cstdint>

#include "kernels_cpu/op_args.h"
#include "kernels_cpu/thread_scratch.h"

namespace strata::cpu {
namespace {

constexpr int64_t kColBlock = 8 * kQDotMaxCols;  // activation rows per unit
constexpr uint64_t kChunkBytes = 64 * 1024;      // W bytes per unit, at most
constexpr int64_t kUnitsPerThread = 4;           // enough units that no thread idles long
constexpr int64_t kMinParallelWork = 1 << 16;    // k·n·m below this runs on one thread
constexpr int64_t kQuantSlice = 512;             // activation elements quantized per work item
constexpr int64_t kLineFloats = 16;              // floats of y per 64-byte cache line

// 64-byte aligned scratch of the calling thread, grown on demand and kept for the next call
// (decode calls matmul hundreds of times per token). The OpenMP workers only read it.
uint8_t* activation_scratch(size_t bytes) {
    thread_local ThreadScratch scratch;
    return scratch.get(bytes);
}

// W rows per unit: as many as fit kChunkBytes, halved until every thread gets several units;
// a multiple of 16 where it can be, so two threads never write the same cache line of y.
int64_t rows_per_unit(uint64_t w_row_bytes, int64_t n, int64_t n_col_units, int n_threads) {
    int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / w_row_bytes));
    rows = std::min(rows, n);
    while (rows > 1 && (n + rows - 1) / rows * n_col_units < kUnitsPerThread * n_threads)
        rows = (rows + 1) / 2;
    return rows >= 2 * kLineFloats ? rows / kLineFloats * kLineFloats : rows;
}

struct Plan {
    int64_t k, n, m;
    int64_t n_blocks;      // weight blocks per row
    size_t xq_stride;      // bytes per quantized activation row
    bool expand_scales;    // Q8_0 / Q8_1: kernels read the block scales as float
    int64_t unit_rows;     // W rows per unit
    int64_t n_row_units;   // units along n
    int64_t n_col_units;   // units along m
};

// One unit: W rows [r0, r1) against activation rows [c0, c1). A kernel with decoded rows
// (QDotKernel::decode_row) decodes the unit's rows once, into this thread's scratch, when they
// meet more activation rows than one call takes.
void run_unit(const Tensor& w, const QDotActs& acts, Tensor& y, const Plan& p,
              const QDotKernel& kernel, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const bool decoded = kernel.decode_row != nullptr && c1 - c0 > kQDotMaxCols;
    const size_t decoded_row_bytes = decoded ? static_cast<size_t>(p.n_blocks) * kernel.decoded_block_bytes : 0;
    uint8_t* rows = nullptr;
    if (decoded) {
        thread_local ThreadScratch scratch;
        rows = scratch.get(decoded_row_bytes * static_cast<size_t>(r1 - r0));
        for (int64_t r = r0; r < r1; ++r)
            kernel.decode_row(row_ptr(w, r), p.n_blocks, rows + static_cast<size_t>(r - r0) * decoded_row_bytes);
    }
    float out[kQDotMaxCols];
    for (int64_t c = c0; c < c1; c += kQDotMaxCols) {
        const int n_cols = static_cast<int>(std::min<int64_t>(kQDotMaxCols, c1 - c));
        const QDotActs xc = acts.from_row(c);
        for (int64_t r = r0; r < r1; ++r) {
            if (decoded) {
                kernel.dot_decoded(rows + static_cast<size_t>(r - r0) * decoded_row_bytes, xc, p.n_blocks, n_cols, out);
            } else {
                kernel.dot(row_ptr(w, r), xc, p.n_blocks, n_cols, out);
            }
            for (int j = 0; j < n_cols; ++j)
                f32_row(y, c + j)[r] = out[j];
        }
    }
}

}  // namespace

void quantized_matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads,
                      const QDotKernel& kernel) {
    Plan p{};
    p.k = w.ne[0];
    p.n = w.ne[1];
    p.m = x.n_rows();
    if (p.n == 0 || p.m == 0) return;
    const TypeTraits& wt = type_traits(w.type);
    const TypeTraits& at = type_traits(kernel.act_type);
    p.n_blocks = p.k / wt.block_size;
    p.xq_stride = act_row_bytes(kernel, p.k);
    p.n_col_units = (p.m + kColBlock - 1) / kColBlock;
    p.unit_rows = rows_per_unit(w.row_bytes(), p.n, p.n_col_units, n_threads);
    p.n_row_units = (p.n + p.unit_rows - 1) / p.unit_rows;
    const int64_t n_units = p.n_row_units * p.n_col_units;
    p.expand_scales = reads_expanded_scales(kernel);
    // Scratch: [m] quantized rows, then (Q8_0 / Q8_1) [m][n_blocks] float scales.
    const size_t q_bytes = (p.xq_stride * static_cast<size_t>(p.m) + 63) / 64 * 64;
    const size_t d_floats = p.expand_scales ? static_cast<size_t>(p.m * p.n_blocks) : 0;
    uint8_t* xq = activation_scratch(q_bytes + d_floats * sizeof(float));
    float* xd = p.expand_scales ? reinterpret_cast<float*>(xq + q_bytes) : nullptr;
    const QDotActs acts{xq, p.xq_stride, xd, static_cast<size_t>(p.n_blocks)};
    const QuantizeFn quantize = kernel.quantize;
    const bool parallel = n_threads > 1 && n_units > 1 && p.k * p.n * p.m >= kMinParallelWork;

    // Quantizing a row takes µs (tens with the scalar reference), so even a single decode row
    // is split into slices of whole partner blocks, one per thread.
    const int64_t slice = std::max<int64_t>(1, kQuantSlice / at.block_size) * at.block_size;
    const int64_t n_slices = (p.k + slice - 1) / slice;

#pragma omp parallel num_threads(n_threads) if (parallel)
    {
        // [k, m] f32 -> [m] rows of partner blocks, once per call.
#pragma omp for schedule(static)
        for (int64_t t = 0; t < p.m * n_slices; ++t) {
            const int64_t i = t / n_slices;
            const int64_t e0 = t % n_slices * slice;
            uint8_t* dst = xq + static_cast<size_t>(i) * p.xq_stride +
                           act_offset(kernel, e0);
            const int64_t len = std::min(slice, p.k - e0);
            quantize(f32_row(x, i) + e0, dst, len);
            if (p.expand_scales) {
                expand_act_scales(kernel.act_type, dst, len / at.block_size,
                                  xd + i * p.n_blocks + e0 / at.block_size);
            }
        }

#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < n_units; ++u) {
            const int64_t ru = u / p.n_col_units;
            const int64_t cu = u % p.n_col_units;
            const int64_t r0 = ru * p.unit_rows;
            const int64_t c0 = cu * kColBlock;
            run_unit(w, acts, y, p, kernel, r0, std::min(p.n, r0 + p.unit_rows), c0,
                     std::min(p.m, c0 + kColBlock));
        }
    }
}

}  // namespace strata::cpu

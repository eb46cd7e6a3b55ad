// matmul on weights of any dequantizable type. Prefill-sized batches on quantized W may go to
// oneDNN (dnnl_matmul.h, when the options ask for it); types with an integer kernel in the
// active variant go to quantized_matmul (qmatmul.h); the rest take the f32 path here: each
// thread dequantizes a panel of W rows to f32 once and dots it with every row of x.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/dnnl_matmul.h"
#include "kernels_cpu/kernel_variant.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/qmatmul.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kTile = 4;             // W rows per dot4 call
constexpr int64_t kPanelFloats = 65536;  // dequantized panel budget per thread (256 KiB)
constexpr int64_t kXBlock = 8;           // x rows reused across one panel from L1/L2

// Rows of W dequantized at once: a multiple of kTile, small enough to stay in L2, and small
// enough to give every thread several panels. Depends on the shapes only (never on
// n_threads), so results are identical for any thread count.
int64_t panel_rows(int64_t k, int64_t n) {
    int64_t rows = std::clamp<int64_t>(kPanelFloats / std::max<int64_t>(k, 1), kTile, 16);
    while (rows > kTile && (n + rows - 1) / rows < 8)
        rows -= kTile;
    return rows / kTile * kTile;
}

void check_matmul(const Tensor& w, const Tensor& x, const Tensor& y) {
    check_dequantizable("matmul", "W", w);
    check_f32("matmul", "x", x);
    check_f32("matmul", "y", y);
    if (w.ne[2] != 1 || w.ne[3] != 1) {
        throw ArgumentError(cat("matmul: W must be 2-D [k, n], got ", w.shape_string()));
    }
    if (x.ne[0] != w.ne[0]) {
        throw ArgumentError(cat("matmul: x ", x.shape_string(), " must have k = ", w.ne[0],
                                " elements per row to match W ", w.shape_string()));
    }
    if (y.ne[0] != w.ne[1] || y.ne[1] != x.ne[1] || y.ne[2] != x.ne[2] || y.ne[3] != x.ne[3]) {
        throw ArgumentError(cat("matmul: y ", y.shape_string(), " must be [", w.ne[1],
                                ", rows of x] for W ", w.shape_string(), " and x ",
                                x.shape_string()));
    }
}

}  // namespace

// y [n, m] = W [k, n] · x [k, m]
void matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads,
            const MatmulOptions& options) {
    check_matmul(w, x, y);
    const int64_t k = w.ne[0];
    const int64_t n = w.ne[1];
    const int64_t m = x.n_rows();
    if (n == 0 || m == 0) return;
    const KernelVariant variant =
        options.quantize_activations ? active_kernel_variant() : KernelVariant::Dequant;
    const QDotKernel* kernel = find_qdot_kernel(w.type, variant);
    // The Dequant variant is the reference path: it never rounds x, to bf16 or to 8 bits. Types
    // with decoded rows (the i-quants) take oneDNN from twice the rows: its per-call
    // dequantization is the cost there (H200 host, 16 threads, AMX, 4096 x 4096 at 128 rows:
    // oneDNN 13.3-14.2k tokens/s for iq2_xs/iq2_s/iq3_s, ours 22-23k; bm_prefill_type).
    const bool decoded = kernel != nullptr && kernel->decode_row != nullptr;
    const DnnlPolicy dnnl{.min_rows = decoded ? 2 * options.dnnl_min_rows : options.dnnl_min_rows,
                          .require_amx = options.dnnl_require_amx};
    if (variant != KernelVariant::Dequant && y_rows_uniform(y) &&
        use_dnnl_matmul(w.type, m, dnnl)) {
        dnnl_matmul(w, x, y, n_threads);
        return;
    }
    if (kernel != nullptr) {
        quantized_matmul(w, x, y, n_threads, *kernel);
        return;
    }
    const DequantizeFn dequantize = type_traits(w.type).dequantize;
    const int64_t panel = panel_rows(k, n);
    const int64_t n_panels = (n + panel - 1) / panel;

#pragma omp parallel num_threads(n_threads) if (n_panels > 1 && n * k * m > 65536)
    {
        std::vector<float> wf(static_cast<size_t>(panel * k), 0.0f);  // [k, panel]
#pragma omp for schedule(static)
        for (int64_t p = 0; p < n_panels; ++p) {
            const int64_t row0 = p * panel;
            const int64_t rows = std::min(panel, n - row0);
            for (int64_t r = 0; r < rows; ++r) {
                dequantize(row_ptr(w, row0 + r), wf.data() + r * k, k);
            }
            for (int64_t i0 = 0; i0 < m; i0 += kXBlock) {
                const int64_t i1 = std::min(m, i0 + kXBlock);
                for (int64_t t = 0; t < rows; t += kTile) {
                    const int64_t valid = std::min(kTile, rows - t);
                    for (int64_t i = i0; i < i1; ++i) {
                        float out[kTile];
                        // Rows past `valid` read stale scratch; their outputs are dropped.
                        dot4_f32(wf.data() + t * k, k, f32_row(x, i), k, out);
                        float* yi = f32_row(y, i) + row0 + t;
                        for (int64_t r = 0; r < valid; ++r)
                            yi[r] = out[r];
                    }
                }
            }
        }
    }
}

}  // namespace strata::cpu

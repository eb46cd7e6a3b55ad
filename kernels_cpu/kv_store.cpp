// kv_store: writes f32 K or V rows of new tokens into cache cells (position p in cell p % cells:
// a sliding-window layer's cache is a ring), converting to the cache's type (f16, q8_0, q4_0,
// ...), so the cache stays small: the active variant's quantizer from
// row_ops.h where it has one (bit-identical to quant/'s reference), else the reference.
#include <cstring>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {

// cache [row, cells] cell (first_cell + i) % cells = src [row, n] row i converted
void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell, int n_threads) {
    check_f32("kv_store", "src", src);
    check_host_rows("kv_store", "cache", cache);
    const TypeTraits& traits = type_traits(cache.type);
    if (cache.type != GgmlType::F32 && traits.quantize == nullptr) {
        throw UnsupportedError(cat("kv_store: cache type ", traits.name,
                                   " is not supported on the CPU backend (no quantizer for it)"));
    }
    check_kv_store_shapes(src, cache, first_cell);
    const int64_t n = src.n_rows();
    const int64_t cells = cache.ne[1];
    const int64_t ne0 = src.ne[0];
    const QuantizeFn fast = row_ops().find_quantize(cache.type);
    const QuantizeFn quantize = fast != nullptr ? fast : traits.quantize;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n * ne0 > 65536)
    for (int64_t i = 0; i < n; ++i) {
        const float* s = f32_row(src, i);
        uint8_t* dst = row_ptr(cache, (first_cell + i) % cells);
        if (cache.type == GgmlType::F32) {
            std::memcpy(dst, s, static_cast<size_t>(ne0) * sizeof(float));
        } else {
            quantize(s, dst, ne0);
        }
    }
}

}  // namespace strata::cpu

// kv_store: writes f32 K or V rows of new tokens into cache cells, converting to the cache's
// type (f16, q8_0, q4_0, ...), so the cache stays small: the active variant's quantizer from
// row_ops.h where it has one (bit-identical to quant/'s reference), else the reference.
#include <cstring>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {

// cache [row, n_cells] rows [first_cell, first_cell + n) = src [row, n] converted
void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell, int n_threads) {
    check_f32("kv_store", "src", src);
    check_host_rows("kv_store", "cache", cache);
    const TypeTraits& traits = type_traits(cache.type);
    if (cache.type != GgmlType::F32 && traits.quantize == nullptr) {
        throw UnsupportedError(cat("kv_store: cache type ", traits.name,
                                   " is not supported on the CPU backend (no quantizer for it)"));
    }
    if (cache.ne[2] != 1 || cache.ne[3] != 1 || src.ne[0] != cache.ne[0]) {
        throw ArgumentError(cat("kv_store: src ", src.shape_string(), " rows must match cache ",
                                cache.shape_string(), " rows (cache is 2-D [row, n_cells])"));
    }
    const int64_t n = src.n_rows();
    if (first_cell < 0 || first_cell + n > cache.ne[1]) {
        throw ArgumentError(cat("kv_store: cells [", first_cell, ", ", first_cell + n,
                                ") are outside the cache's ", cache.ne[1], " cells"));
    }
    const int64_t ne0 = src.ne[0];
    const QuantizeFn fast = row_ops().find_quantize(cache.type);
    const QuantizeFn quantize = fast != nullptr ? fast : traits.quantize;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n * ne0 > 65536)
    for (int64_t i = 0; i < n; ++i) {
        const float* s = f32_row(src, i);
        uint8_t* dst = row_ptr(cache, first_cell + i);
        if (cache.type == GgmlType::F32) {
            std::memcpy(dst, s, static_cast<size_t>(ne0) * sizeof(float));
        } else {
            quantize(s, dst, ne0);
        }
    }
}

}  // namespace strata::cpu

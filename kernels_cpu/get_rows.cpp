// get_rows: token embeddings (and any row lookup) from a table of any dequantizable type, as f32
// rows; f16 / q8_0 / q4_0 rows convert with the active variant's SIMD loops (row_ops.h), which
// give the same values as quant/'s reference dequantizers.
#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {

// out [ne0, n] = table [ne0, n_rows] rows ids[0..n), as f32
void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out, int n_threads) {
    check_dequantizable("get_rows", "table", table);
    check_f32("get_rows", "out", out);
    if (table.ne[2] != 1 || table.ne[3] != 1) {
        throw ArgumentError(cat("get_rows: table must be 2-D, got ", table.shape_string()));
    }
    if (n < 0 || out.ne[0] != table.ne[0] || out.n_rows() != n) {
        throw ArgumentError(cat("get_rows: out ", out.shape_string(), " must be [", table.ne[0],
                                ", ", n, "] for ", n, " ids of table ", table.shape_string()));
    }
    if (n > 0 && ids == nullptr) throw ArgumentError("get_rows: ids is null");
    const int64_t n_rows = table.ne[1];
    for (int64_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= n_rows) {
            throw ArgumentError(cat("get_rows: id ", ids[i], " at index ", i,
                                    " is outside the table's ", n_rows, " rows (",
                                    table.shape_string(), ")"));
        }
    }
    const DequantizeFn fast = row_ops().find_dequantize(table.type);
    const DequantizeFn dequantize = fast != nullptr ? fast : type_traits(table.type).dequantize;
    const int64_t ne0 = table.ne[0];
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n * ne0 > 65536)
    for (int64_t i = 0; i < n; ++i) {
        dequantize(row_ptr(table, ids[i]), f32_row(out, i), ne0);
    }
}

}  // namespace strata::cpu

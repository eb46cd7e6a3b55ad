// Shared argument checks of the CPU ops (op_args.h).
#include "kernels_cpu/op_args.h"

#include "engine/core/error.h"
#include "kernels_cpu/cpu_features.h"

namespace strata::cpu {

void check_host_rows(std::string_view op, std::string_view what, const Tensor& t) {
    if (t.data == nullptr) throw ArgumentError(cat(op, ": ", what, " has no data"));
    if (t.memory == MemoryKind::Device) {
        throw ArgumentError(cat(op, ": ", what, " ", t.shape_string(),
                                " lives in device memory; the CPU backend reads host memory only"));
    }
    const TypeTraits& traits = type_traits(t.type);
    if (t.ne[0] % traits.block_size != 0 || t.nb[0] != traits.type_size) {
        throw ArgumentError(cat(op, ": ", what, " ", t.shape_string(),
                                " needs contiguous rows of whole blocks (nb[0] = ", t.nb[0],
                                ", block of ", traits.block_size, " elements in ", traits.type_size,
                                " bytes)"));
    }
    for (int d = 0; d < 4; ++d) {
        if (t.ne[d] < 0) throw ArgumentError(cat(op, ": ", what, " has ne[", d, "] = ", t.ne[d]));
    }
}

void check_f32(std::string_view op, std::string_view what, const Tensor& t) {
    if (t.type != GgmlType::F32) {
        throw ArgumentError(cat(op, ": ", what, " must be f32, got ", t.shape_string()));
    }
    check_host_rows(op, what, t);
}

void check_dequantizable(std::string_view op, std::string_view what, const Tensor& t) {
    if (type_traits(t.type).dequantize == nullptr) {
        throw UnsupportedError(cat(op, ": ", what, " of type ", type_traits(t.type).name,
                                   " is not supported on the CPU backend (no dequantizer for it)"));
    }
    check_host_rows(op, what, t);
}

int resolve_threads(int n_threads) {
    if (n_threads < 0)
        throw ArgumentError(cat("CPU backend: n_threads = ", n_threads, ", expected >= 0"));
    return n_threads == 0 ? cpu_features().physical_cores : n_threads;
}

}  // namespace strata::cpu

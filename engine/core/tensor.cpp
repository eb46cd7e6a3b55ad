// Tensor view helpers (tensor.h).
#include "engine/core/tensor.h"

#include <cstring>

#include "engine/core/error.h"

namespace strata {

Tensor Tensor::contiguous(GgmlType type, void* data, std::initializer_list<int64_t> ne,
                          MemoryKind memory) {
    if (ne.size() == 0 || ne.size() > 4) {
        throw ArgumentError(cat("a tensor has 1 to 4 dimensions, got ", ne.size()));
    }
    Tensor t;
    t.type = type;
    t.data = data;
    t.memory = memory;
    size_t i = 0;
    for (int64_t n : ne) t.ne[i++] = n;
    const TypeTraits& traits = type_traits(type);
    if (t.ne[0] % traits.block_size != 0) {
        throw ArgumentError(cat("row of ", t.ne[0], " elements is not a multiple of the ",
                                traits.name, " block size ", traits.block_size));
    }
    t.nb[0] = traits.type_size;
    t.nb[1] = traits.type_size * static_cast<uint64_t>(t.ne[0] / traits.block_size);
    t.nb[2] = t.nb[1] * static_cast<uint64_t>(t.ne[1]);
    t.nb[3] = t.nb[2] * static_cast<uint64_t>(t.ne[2]);
    return t;
}

uint64_t Tensor::row_bytes() const {
    const TypeTraits& traits = type_traits(type);
    return traits.type_size * static_cast<uint64_t>(ne[0] / traits.block_size);
}

uint64_t Tensor::n_bytes() const { return row_bytes() * static_cast<uint64_t>(n_rows()); }

bool Tensor::is_contiguous() const {
    return nb[1] == row_bytes() && nb[2] == nb[1] * static_cast<uint64_t>(ne[1]) &&
           nb[3] == nb[2] * static_cast<uint64_t>(ne[2]);
}

Tensor Tensor::row(int64_t r) const { return rows(r, 1); }

Tensor Tensor::rows(int64_t first, int64_t count) const {
    STRATA_INVARIANT(ne[2] == 1 && ne[3] == 1);
    if (first < 0 || count < 0 || first + count > ne[1]) {
        throw ArgumentError(cat("rows [", first, ", ", first + count, ") outside a tensor of ",
                                ne[1], " rows"));
    }
    Tensor t = *this;
    t.ne[1] = count;
    t.data = static_cast<uint8_t*>(data) + nb[1] * static_cast<uint64_t>(first);
    t.nb[2] = t.nb[1] * static_cast<uint64_t>(count);
    t.nb[3] = t.nb[2];
    return t;
}

Tensor Tensor::plane(int64_t i) const {
    STRATA_INVARIANT(ne[3] == 1);
    if (i < 0 || i >= ne[2]) throw ArgumentError(cat("plane ", i, " outside a tensor of ", ne[2], " planes"));
    Tensor t = *this;
    t.ne[2] = 1;
    t.data = static_cast<uint8_t*>(data) + nb[2] * static_cast<uint64_t>(i);
    t.nb[3] = t.nb[2];
    return t;
}

Tensor Tensor::columns(int64_t first, int64_t count) const {
    STRATA_INVARIANT(ne[2] == 1 && ne[3] == 1);
    const TypeTraits& traits = type_traits(type);
    if (first < 0 || count < 0 || first + count > ne[0] || first % traits.block_size != 0 ||
        count % traits.block_size != 0) {
        throw ArgumentError(cat("columns [", first, ", ", first + count, ") of ", shape_string(),
                                ": need whole ", traits.name, " blocks of ", traits.block_size,
                                " inside the row"));
    }
    Tensor t = *this;
    t.ne[0] = count;
    t.data = static_cast<uint8_t*>(data) + traits.type_size * static_cast<uint64_t>(first / traits.block_size);
    return t;
}

void copy_host_tensor(const Tensor& src, Tensor& dst) {
    if (src.memory == MemoryKind::Device || dst.memory == MemoryKind::Device) {
        throw ArgumentError(cat("copy_host_tensor: ", src.shape_string(), " -> ", dst.shape_string(),
                                " needs host memory on both sides"));
    }
    if (src.type != dst.type || src.ne != dst.ne || !dst.is_contiguous() ||
        src.nb[0] != type_traits(src.type).type_size) {
        throw ArgumentError(cat("copy_host_tensor: ", src.shape_string(), " -> ", dst.shape_string(),
                                " needs one type and shape, whole-block rows and a contiguous destination"));
    }
    const uint64_t rb = src.row_bytes();
    if (src.is_contiguous()) {
        if (src.n_bytes() > 0) std::memcpy(dst.data, src.data, src.n_bytes());
        return;
    }
    auto* out = static_cast<uint8_t*>(dst.data);
    for (int64_t i3 = 0; i3 < src.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < src.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < src.ne[1]; ++i1) {
                const auto* in = static_cast<const uint8_t*>(src.data) + i1 * src.nb[1] +
                                 i2 * src.nb[2] + i3 * src.nb[3];
                std::memcpy(out, in, rb);
                out += rb;
            }
}

std::string Tensor::shape_string() const {
    std::string s = std::string(type_traits(type).name) + " [";
    int dims = 4;
    while (dims > 1 && ne[dims - 1] == 1) --dims;
    for (int i = 0; i < dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

}  // namespace strata

// Tensor view helpers (tensor.h).
#include "engine/core/tensor.h"

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

std::string Tensor::shape_string() const {
    std::string s = std::string(type_traits(type).name) + " [";
    int dims = 4;
    while (dims > 1 && ne[dims - 1] == 1) --dims;
    for (int i = 0; i < dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

}  // namespace strata

// Tensor: a non-owning view of typed data somewhere in memory (host, pinned host, device).
// Shapes follow ggml: ne[0] is the innermost, contiguous dimension (the quantized axis);
// a "row" is ne[0] elements. Activations are f32 [.., n_tokens] with one token per row.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "quant/ggml_type.h"

namespace strata {

// Where the bytes of a tensor live; a backend only touches memory it can address.
enum class MemoryKind : uint8_t { Host, PinnedHost, Device, File };

struct Tensor {
    GgmlType type = GgmlType::F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // elements per dimension, ne[0] innermost
    std::array<uint64_t, 4> nb{0, 0, 0, 0};  // byte strides; nb[0] = bytes per block
    void* data = nullptr;
    MemoryKind memory = MemoryKind::Host;

    // A contiguous tensor of `type` with up to 4 dims, ne[0] first.
    static Tensor contiguous(GgmlType type, void* data, std::initializer_list<int64_t> ne,
                             MemoryKind memory = MemoryKind::Host);

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    uint64_t row_bytes() const;  // bytes of one ne[0] row
    uint64_t n_bytes() const;    // bytes of the whole tensor if contiguous
    bool is_contiguous() const;

    // Row r of a 2-D view (ne[1] rows), as a 1-row tensor.
    Tensor row(int64_t r) const;
    // Rows [first, first + count) of a 2-D view.
    Tensor rows(int64_t first, int64_t count) const;
    // Plane i of a 3-D view (index i of ne[2]: one token of [head_dim, heads, tokens]), as
    // [ne0, ne1, 1] with the view's strides.
    Tensor plane(int64_t i) const;

    // Elements [first, first + count) of every row of a 2-D view (a column slice: rows keep
    // their stride); first and count are multiples of the type's block size.
    Tensor columns(int64_t first, int64_t count) const;

    template <typename T>
    T* as() const { return static_cast<T*>(data); }

    std::string shape_string() const;  // "q4_K [640, 2048]"
};

// Copies src into dst, both in host memory, of one type and shape; src's rows may be strided,
// dst is contiguous. ArgumentError otherwise.
void copy_host_tensor(const Tensor& src, Tensor& dst);

}  // namespace strata

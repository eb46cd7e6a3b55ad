// One tensor's entry in a GGUF tensor table, resolved against its file mapping.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "quant/ggml_type.h"

namespace strata {

// The longest tensor name a GGUF file may hold: ggml's GGML_MAX_NAME is 64 with the terminator.
inline constexpr uint64_t kMaxTensorNameBytes = 63;
// The fewest bytes one tensor-table entry takes (empty name: length, n_dims, one dimension,
// type, offset); bounds a declared tensor count by the bytes left in the file.
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

struct TensorInfo {
    std::string name;
    GgmlType type = GgmlType::F32;
    int n_dims = 0;                     // as stored (1..4)
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] innermost (the quantized axis); missing dims 1
    uint64_t offset = 0;                // relative to the shard's data section
    uint64_t file_offset = 0;           // absolute offset in its shard file
    uint64_t n_bytes = 0;               // exact size of the data (no padding)
    int shard = 0;                      // index of the file that holds it
    const uint8_t* data = nullptr;      // into the read-only mapping; null for writer-side infos

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    // "[640, 262144]" with n_dims entries.
    std::string shape_string() const;
};

}  // namespace strata

// One GGUF file (v2 or v3), memory-mapped read-only and validated completely when opened:
// header, every metadata value, the tensor table and the bounds, alignment and non-overlap of
// the tensor data (in any order: ggml's stricter table-order contiguity is not required).
// Any malformed input throws FormatError carrying the offending values; nothing in a file can
// make the reader crash, hang, or allocate more than the file could describe.
//
// Thread safety: immutable after construction; any thread may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_value.h"
#include "engine/gguf/tensor_info.h"

namespace strata {

namespace gguf_detail {
class ByteReader;
}

class GgufFile {
public:
    static constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
    static constexpr uint32_t kDefaultAlignment = 32;

    // Maps and parses the file at `path`. Throws SystemError if it cannot be opened or mapped,
    // FormatError if it is not a valid GGUF file.
    explicit GgufFile(const std::string& path, int shard_index = 0);
    // Parses bytes in memory (tests, fuzzing). The bytes must outlive the object.
    static GgufFile from_memory(const uint8_t* data, size_t size, std::string name = "<memory>");

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    uint64_t size() const { return size_; }
    const uint8_t* bytes() const { return base_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;

    // Tensors in file order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;

private:
    GgufFile() = default;
    void parse();
    // Tensor infos, data offset and data bounds (gguf_tensor_table.cpp).
    void parse_tensor_table(gguf_detail::ByteReader& r, uint64_t n_tensors);

    std::string path_;
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    void* mapping_ = nullptr;  // non-null when this object owns an mmap of size_ bytes
    int guard_slot_ = -1;      // mapping_guard.h: a SIGBUS in the mapping is a clear error
    int shard_index_ = 0;
    uint32_t version_ = 0;
    uint32_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<TensorInfo> tensors_;
};

}  // namespace strata

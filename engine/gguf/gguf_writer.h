// Writes GGUF v3 files as a stream: metadata and tensor infos first, then tensor data in the
// order the tensors were declared, in chunks of any size, so a 40 GB file needs little RAM.
// Offsets and padding follow the format (each tensor aligned, zero padding).
//
// Usage: set() and add_tensor() as often as needed, then write_header(), then
// write_tensor_data() until every declared byte is written, then finish().
// Not thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/safe_write.h"
#include "engine/gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace strata {

class GgufWriter {
public:
    // Writes to a file through safe_write.h: the target is replaced only by finish(), complete;
    // a writer destroyed before that leaves the target as it was. Throws SystemError if the
    // folder cannot be written, ArgumentError for a refused target (an input of the run).
    explicit GgufWriter(const std::string& path, uint32_t alignment = 32);
    // Writes to a caller-owned stream (tests build files in memory this way).
    explicit GgufWriter(std::ostream& out, uint32_t alignment = 32);
    ~GgufWriter();

    // Metadata key/value; a duplicate key throws ArgumentError. general.alignment is written
    // automatically when the alignment is not the default.
    void set(const std::string& key, GgufValue value);
    // Declares a tensor; ne[0] innermost, at most 4 dims, ne[0] a multiple of the block size.
    void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne);

    void write_header();
    // Appends data of the declared tensors, in declaration order; chunks may span tensors.
    void write_tensor_data(const void* data, size_t n_bytes);
    // Checks every declared byte was written and flushes. Throws if not.
    void finish();

    uint64_t total_bytes() const;  // size of the finished file, known after add_tensor()s

private:
    struct PendingTensor {
        std::string name;
        GgmlType type;
        std::vector<int64_t> ne;
        uint64_t offset;
        uint64_t n_bytes;
    };
    void write_raw(const void* data, size_t n);
    void write_zeros(uint64_t n);
    // Header, metadata, tensor infos and the padding before the data section.
    std::string encode_header() const;

    std::unique_ptr<AtomicFileWriter> file_;
    std::ostream* out_ = nullptr;
    uint32_t alignment_;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<PendingTensor> tensors_;
    bool header_written_ = false;
    size_t current_tensor_ = 0;
    uint64_t written_in_tensor_ = 0;
    uint64_t position_ = 0;
};

}  // namespace strata

// Internal to engine/gguf: a bounds-checked little-endian cursor over the bytes of a GGUF file.
// Every read checks the bytes that remain first, so a truncated or hostile file becomes a
// FormatError naming the file, the offset and what was being read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace strata::gguf_detail {

class ByteReader {
  public:
    ByteReader(const uint8_t* data, uint64_t size, const std::string& file_name)
        : data_(data), size_(size), file_name_(file_name) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    // What is being parsed ("key 'general.name'", "tensor #3"); named in truncation errors.
    void set_context(std::string context) { context_ = std::move(context); }

    template <typename T>
    T read(std::string_view what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }

    // Returns a pointer to the next n bytes and advances past them.
    const uint8_t* take(uint64_t n, std::string_view what) {
        if (n > remaining()) {
            throw FormatError(cat(file_name_, ": file is truncated: ", what, " of ", context_,
                                  " at offset ", pos_, " needs ", n, " bytes but only ",
                                  remaining(), " remain (file size ", size_, ")"));
        }
        const uint8_t* p = data_ + pos_;
        pos_ += n;
        return p;
    }

    // A GGUF string: u64 length, then that many bytes (no terminator). The length is checked
    // against the bytes that remain before anything is allocated.
    std::string read_string(std::string_view what) {
        const uint64_t len = read<uint64_t>(what);
        if (len > remaining()) {
            throw FormatError(cat(file_name_, ": ", what, " of ", context_, " at offset ", pos_ - 8,
                                  " has length ", len, " but only ", remaining(),
                                  " bytes remain in the file"));
        }
        return std::string(reinterpret_cast<const char*>(take(len, what)), len);
    }

  private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& file_name_;
    std::string context_ = "the header";
};

}  // namespace strata::gguf_detail

// Helpers for the GGUF tests: a raw byte builder independent of GgufWriter (for files the
// writer refuses to produce), a sample file made with GgufWriter, and field locators.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace strata::test {

// Little-endian byte builder for hand-made GGUF files.
struct Raw {
    std::string b;

    template <typename T>
    Raw& put(T v) {
        b.append(reinterpret_cast<const char*>(&v), sizeof(T));
        return *this;
    }
    Raw& u32(uint32_t v) { return put(v); }
    Raw& i32(int32_t v) { return put(v); }
    Raw& u64(uint64_t v) { return put(v); }
    Raw& i64(int64_t v) { return put(v); }
    Raw& str(const std::string& s) {
        u64(s.size());
        b += s;
        return *this;
    }
    Raw& header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
        b += "GGUF";
        return u32(version).i64(n_tensors).i64(n_kv);
    }
    Raw& kv_u32(const std::string& key, uint32_t v) {
        return str(key).i32(static_cast<int32_t>(GgufType::UINT32)).u32(v);
    }
    Raw& tensor_info(const std::string& name, const std::vector<int64_t>& ne, uint32_t type,
                     uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(ne.size()));
        for (int64_t n : ne)
            i64(n);
        return u32(type).u64(offset);
    }
    Raw& pad_to(size_t alignment) {
        b.resize((b.size() + alignment - 1) / alignment * alignment, '\0');
        return *this;
    }
    Raw& zeros(size_t n) {
        b.append(n, '\0');
        return *this;
    }
};

// Parses bytes copied into an exactly sized heap buffer, so reading past the end is caught by
// AddressSanitizer.
inline GgufFile parse_exact(const std::string& bytes, std::vector<uint8_t>* storage) {
    storage->assign(bytes.begin(), bytes.end());
    return GgufFile::from_memory(storage->data(), storage->size(), "model.gguf");
}

// Expects FormatError whose message contains every one of `parts`.
inline void expect_format_error(const std::string& bytes, const std::vector<std::string>& parts) {
    std::vector<uint8_t> storage;
    try {
        parse_exact(bytes, &storage);
        ADD_FAILURE() << "expected FormatError, the file parsed";
    } catch (const FormatError& e) {
        const std::string msg = e.what();
        for (const std::string& p : parts) {
            EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
        }
    }
}

// Deterministic, non-zero tensor bytes: different for every tensor and position.
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> out(n);
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        out[i] = static_cast<uint8_t>(x >> 24);
    }
    return out;
}

// Offset of the first byte after the length-prefixed string `s` in `file` (which must occur
// exactly once); fails the test otherwise.
inline size_t after_string(const std::string& file, const std::string& s) {
    Raw r;
    r.str(s);
    const size_t pos = file.find(r.b);
    EXPECT_NE(pos, std::string::npos) << "string '" << s << "' not found";
    EXPECT_EQ(file.find(r.b, pos + 1), std::string::npos) << "string '" << s << "' not unique";
    return pos == std::string::npos ? 0 : pos + r.b.size();
}

template <typename T>
void patch(std::string& file, size_t offset, T v) {
    std::memcpy(file.data() + offset, &v, sizeof(T));
}

// Where the fields of one tensor info lie in a file.
struct InfoPos {
    size_t n_dims, ne, type, offset;
};
inline InfoPos locate_tensor(const std::string& file, const std::string& name, int n_dims) {
    const size_t p = after_string(file, name);
    return InfoPos{p, p + 4, p + 4 + 8 * static_cast<size_t>(n_dims),
                   p + 8 + 8 * static_cast<size_t>(n_dims)};
}

// A unique empty directory under the system temp dir, removed at scope exit.
class TempDir {
  public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = "strata_gguf_" + std::to_string(::getpid());
        if (info != nullptr)
            name += std::string("_") + info->test_suite_name() + "_" + info->name();
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

// A small valid file: a few keys and tensors of three types. The last tensor's size is a
// multiple of the alignment, so the file has no trailing padding: every strict prefix of it
// is invalid.
inline std::string sample_file(uint32_t alignment = 32) {
    std::ostringstream out;
    GgufWriter w(out, alignment);
    w.set("general.architecture", GgufValue::string("llama"));
    w.set("llama.block_count", GgufValue::u32(2));
    w.set("test.dup.aaa", GgufValue::i16(-7));
    w.set("test.dup.bbb", GgufValue::i16(9));
    w.set("tokenizer.ggml.tokens", GgufValue::strings({"<pad>", "<eos>", "hello"}));
    w.set("tokenizer.ggml.scores", GgufValue::f32s({0.5f, -1.25f, 3.0f}));
    w.set("test.f64", GgufValue::f64(2.5));
    w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, {32, 3});
    w.add_tensor("blk.0.attn_k.weight", GgmlType::F16, {8, 2});
    w.add_tensor("output_norm.weight", GgmlType::F32, {16});
    w.write_header();
    for (int i = 0; i < 3; ++i) {
        const std::vector<uint8_t> data = pattern_bytes(i == 0 ? 34 * 3 : i == 1 ? 32 : 64, i);
        w.write_tensor_data(data.data(), data.size());
    }
    w.finish();
    return out.str();
}

}  // namespace strata::test

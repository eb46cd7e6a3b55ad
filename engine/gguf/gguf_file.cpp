// GgufFile: maps a file read-only and parses the header and metadata; the tensor table is
// parsed and validated in gguf_tensor_table.cpp. See docs/FORMATS.md §1.1 for the layout.
#include "engine/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/gguf/mapping_guard.h"
#include "engine/gguf/byte_reader.h"

namespace strata {

using gguf_detail::ByteReader;

namespace {

// Smallest encodings, used to reject counts the remaining bytes cannot hold before anything
// is reserved: a key/value is a length, a one-byte key, a type and a one-byte value; a tensor
// info is an empty name, n_dims, one dimension, a type and an offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;

std::string magic_string(const uint8_t* p) {
    std::string out;
    for (int i = 0; i < 4; ++i) {
        const char c = static_cast<char>(p[i]);
        out += (c >= 0x20 && c < 0x7F) ? c : '?';
    }
    return out;
}

GgufValue read_value(ByteReader& r, GgufType type, const std::string& key,
                     const std::string& file) {
    if (type == GgufType::STRING) return GgufValue::string(r.read_string("string value"));
    if (type != GgufType::ARRAY) {
        const size_t n = gguf_scalar_size(type);
        const uint8_t* p = r.take(n, "value");
        return GgufValue::raw_scalar(type, std::vector<uint8_t>(p, p + n));
    }
    const int32_t elem_id = r.read<int32_t>("array element type");
    if (!gguf_type_valid(elem_id)) {
        throw FormatError(cat(file, ": key '", key, "' is an array with invalid element type ",
                              elem_id, " (valid types are 0 to 12)"));
    }
    const auto elem = static_cast<GgufType>(elem_id);
    if (elem == GgufType::ARRAY) {
        throw FormatError(
            cat(file, ": key '", key, "' is an array of arrays; nested arrays are not supported"));
    }
    const uint64_t count = r.read<uint64_t>("array length");
    // Each string needs at least its 8-byte length, each scalar its size.
    const uint64_t min_elem = elem == GgufType::STRING ? 8 : gguf_scalar_size(elem);
    if (count > r.remaining() / min_elem) {
        throw FormatError(cat(file, ": key '", key, "' is an array of ", count, " ",
                              gguf_type_name(elem), " elements, but only ", r.remaining(),
                              " bytes remain in the file"));
    }
    if (elem == GgufType::STRING) {
        std::vector<std::string> items;
        items.reserve(count);
        for (uint64_t i = 0; i < count; ++i)
            items.push_back(r.read_string("array string"));
        return GgufValue::strings(std::move(items));
    }
    const uint8_t* p = r.take(count * min_elem, "array data");
    return GgufValue::scalar_array(elem, std::vector<uint8_t>(p, p + count * min_elem), count);
}

}  // namespace

GgufFile::GgufFile(const std::string& path, int shard_index)
    : path_(path), shard_index_(shard_index) {
    // Checked before the open, which would block forever on a fifo.
    check_regular_file(path, "model file");
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw SystemError(cat("cannot open '", path, "': ", std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw SystemError(cat("cannot stat '", path, "': ", std::strerror(err)));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw SystemError(cat("'", path, "' is not a regular file"));
    }
    if (st.st_size == 0) {
        ::close(fd);
        throw FormatError(cat(path, ": file is empty, not a GGUF file"));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    // Shared, not private: the pages are the page cache's either way (nothing writes them), but a
    // read-only long-term pin of a private mapping (`--pin-weights`: cudaHostRegister) makes
    // Linux copy every page to anonymous memory first, to keep the pin reliable against
    // copy-on-write: for a 34 GiB RAM tier that never finished, and doubled the memory.
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file referenced
    if (p == MAP_FAILED) {
        throw SystemError(
            cat("cannot mmap '", path, "' (", size_, " bytes): ", std::strerror(err)));
    }
    mapping_ = p;
    base_ = static_cast<const uint8_t*>(p);
    guard_slot_ = guard_mapping(p, size_, path);
    try {
        parse();
    } catch (...) {
        unguard_mapping(guard_slot_);
        ::munmap(mapping_, size_);  // the destructor does not run for a failed constructor
        throw;
    }

}

GgufFile GgufFile::from_memory(const uint8_t* data, size_t size, std::string name) {
    GgufFile f;
    f.path_ = std::move(name);
    f.base_ = data;
    f.size_ = size;
    f.parse();
    return f;
}

GgufFile::GgufFile(GgufFile&& o) noexcept {
    *this = std::move(o);
}

GgufFile& GgufFile::operator=(GgufFile&& o) noexcept {
    if (this == &o) return *this;
    unguard_mapping(guard_slot_);
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
    guard_slot_ = std::exchange(o.guard_slot_, -1);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapping_ = std::exchange(o.mapping_, nullptr);
    shard_index_ = o.shard_index_;
    version_ = o.version_;
    alignment_ = o.alignment_;
    data_offset_ = o.data_offset_;
    metadata_ = std::move(o.metadata_);
    tensors_ = std::move(o.tensors_);
    return *this;
}

GgufFile::~GgufFile() {
    unguard_mapping(guard_slot_);
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

const GgufValue* GgufFile::find(std::string_view key) const {
    for (const auto& [k, v] : metadata_) {
        if (k == key) return &v;
    }
    return nullptr;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
    for (const auto& t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

void GgufFile::parse() {
    if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0) {
        if (size_ < 4) {
            throw FormatError(cat(path_, ": not a GGUF file: ", size_,
                                  " bytes is too small for the magic 'GGUF'"));
        }
        throw FormatError(
            cat(path_, ": not a GGUF file: magic is '", magic_string(base_), "', expected 'GGUF'"));
    }
    ByteReader r(base_, size_, path_);
    r.take(4, "magic");
    version_ = r.read<uint32_t>("version");
    if (version_ == 0) throw FormatError(cat(path_, ": invalid GGUF version 0"));
    if ((version_ & 0xFFFF) == 0) {
        throw FormatError(cat(path_, ": file appears to be big-endian (version field reads 0x",
                              std::hex, version_, std::dec,
                              "); only little-endian GGUF files are supported"));
    }
    if (version_ == 1) {
        throw FormatError(cat(path_, ": GGUFv1 is no longer supported; convert the model again"));
    }
    if (version_ > 3) {
        throw FormatError(cat(path_, ": GGUF version ", version_,
                              " is newer than this reader supports (2 and 3)"));
    }
    const int64_t n_tensors = r.read<int64_t>("tensor count");
    const int64_t n_kv = r.read<int64_t>("metadata count");
    if (n_tensors < 0 || static_cast<uint64_t>(n_tensors) > r.remaining() / kMinTensorInfoBytes) {
        throw FormatError(cat(path_, ": tensor count ", n_tensors,
                              " is impossible: the file has only ", r.remaining(),
                              " bytes after the header"));
    }
    if (n_kv < 0 || static_cast<uint64_t>(n_kv) > r.remaining() / kMinKvBytes) {
        throw FormatError(cat(path_, ": metadata count ", n_kv,
                              " is impossible: the file has only ", r.remaining(),
                              " bytes after the header"));
    }

    std::unordered_map<std::string_view, int64_t> key_index;
    metadata_.reserve(static_cast<size_t>(n_kv));
    for (int64_t i = 0; i < n_kv; ++i) {
        r.set_context(cat("metadata entry #", i));
        std::string key = r.read_string("key");
        if (key.empty())
            throw FormatError(cat(path_, ": metadata entry #", i, " has an empty key"));
        r.set_context(cat("key '", key, "'"));
        const int32_t type_id = r.read<int32_t>("value type");
        if (!gguf_type_valid(type_id)) {
            throw FormatError(cat(path_, ": key '", key, "' has invalid value type ", type_id,
                                  " (valid types are 0 to 12)"));
        }
        GgufValue value = read_value(r, static_cast<GgufType>(type_id), key, path_);
        metadata_.emplace_back(std::move(key), std::move(value));
        // metadata_ was reserved, so the views into its keys stay valid.
        const auto [it, inserted] = key_index.emplace(metadata_.back().first, i);
        if (!inserted) {
            throw FormatError(cat(path_, ": duplicate key '", metadata_.back().first,
                                  "' (metadata entries #", it->second, " and #", i, ")"));
        }
    }

    if (const GgufValue* a = find("general.alignment")) {
        if (a->type() != GgufType::UINT32) {
            throw FormatError(cat(path_, ": key 'general.alignment' has type ", a->type_string(),
                                  ", expected u32"));
        }
        const auto align = static_cast<uint32_t>(a->as_int("general.alignment"));
        if (align == 0 || (align & (align - 1)) != 0) {
            throw FormatError(
                cat(path_, ": general.alignment = ", align, " is not a nonzero power of two"));
        }
        alignment_ = align;
    }
    parse_tensor_table(r, static_cast<uint64_t>(n_tensors));
}

}  // namespace strata

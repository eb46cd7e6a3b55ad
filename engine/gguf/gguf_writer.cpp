// GgufWriter: streams a GGUF v3 file (little-endian): header, metadata, tensor infos, zero
// padding to the alignment, then each tensor's data padded with zeros to the alignment.
#include "engine/gguf/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/error.h"
#include "engine/gguf/tensor_info.h"

namespace strata {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

template <typename T>
void put(std::string& buf, T v) {
    buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& buf, const std::string& s) {
    put<uint64_t>(buf, s.size());
    buf += s;
}

void put_value(std::string& buf, const GgufValue& v) {
    put<int32_t>(buf, static_cast<int32_t>(v.type()));
    if (v.type() == GgufType::STRING) {
        put_string(buf, v.as_string(""));
        return;
    }
    if (v.is_array()) {
        put<int32_t>(buf, static_cast<int32_t>(v.array_type()));
        put<uint64_t>(buf, v.array_size());
        if (v.array_type() == GgufType::STRING) {
            for (const std::string& s : v.as_strings(""))
                put_string(buf, s);
            return;
        }
    }
    const auto& packed = v.packed();
    buf.append(reinterpret_cast<const char*>(packed.data()), packed.size());
}

}  // namespace

GgufWriter::GgufWriter(const std::string& path, uint32_t alignment) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        throw ArgumentError(cat("GGUF alignment ", alignment, " is not a nonzero power of two"));
    }
    file_ = std::make_unique<AtomicFileWriter>(path, "GGUF file");
    out_ = &file_->stream();
}

GgufWriter::GgufWriter(std::ostream& out, uint32_t alignment) : out_(&out), alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        throw ArgumentError(cat("GGUF alignment ", alignment, " is not a nonzero power of two"));
    }
}

GgufWriter::~GgufWriter() = default;

void GgufWriter::set(const std::string& key, GgufValue value) {
    if (header_written_) throw ArgumentError(cat("set('", key, "') after write_header()"));
    if (key.empty()) throw ArgumentError("GGUF metadata key must not be empty");
    for (const auto& [k, v] : metadata_) {
        if (k == key) throw ArgumentError(cat("duplicate GGUF metadata key '", key, "'"));
    }
    if (key == "general.alignment" &&
        (value.type() != GgufType::UINT32 || value.as_int(key) != alignment_)) {
        throw ArgumentError(cat("general.alignment must be the u32 ", alignment_,
                                " given to the writer, not ", value.type_string(), " ",
                                value.to_display_string()));
    }
    metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type,
                            const std::vector<int64_t>& ne) {
    if (header_written_) throw ArgumentError(cat("add_tensor('", name, "') after write_header()"));
    if (name.size() > kMaxTensorNameBytes) {
        throw ArgumentError(cat("tensor name '", name, "' is ", name.size(),
                                " bytes long, the maximum is ", kMaxTensorNameBytes));
    }
    for (const PendingTensor& t : tensors_) {
        if (t.name == name) throw ArgumentError(cat("duplicate tensor name '", name, "'"));
    }
    const TypeTraits* traits = find_type_traits(static_cast<uint32_t>(type));
    if (traits == nullptr) {
        throw ArgumentError(
            cat("tensor '", name, "' has unknown ggml type ", static_cast<uint32_t>(type)));
    }
    if (ne.empty() || ne.size() > 4) {
        throw ArgumentError(cat("tensor '", name, "' has ", ne.size(), " dims, expected 1 to 4"));
    }
    for (size_t d = 0; d < ne.size(); ++d) {
        if (ne[d] <= 0) {
            throw ArgumentError(
                cat("tensor '", name, "' has ne[", d, "] = ", ne[d], ", expected a positive size"));
        }
    }
    if (ne[0] % traits->block_size != 0) {
        throw ArgumentError(cat("tensor '", name, "' of type ", traits->name, " has ne[0] = ",
                                ne[0], ", not a multiple of the block size ", traits->block_size));
    }
    uint64_t n_bytes = static_cast<uint64_t>(ne[0] / traits->block_size);
    bool overflow = __builtin_mul_overflow(n_bytes, uint64_t{traits->type_size}, &n_bytes);
    for (size_t d = 1; d < ne.size(); ++d) {
        overflow |= __builtin_mul_overflow(n_bytes, static_cast<uint64_t>(ne[d]), &n_bytes);
    }
    if (overflow) throw ArgumentError(cat("tensor '", name, "' byte size overflows 64 bits"));
    const uint64_t offset =
        tensors_.empty() ? 0
                         : tensors_.back().offset + align_up(tensors_.back().n_bytes, alignment_);
    tensors_.push_back(PendingTensor{name, type, ne, offset, n_bytes});
}

std::string GgufWriter::encode_header() const {
    const bool add_alignment = alignment_ != kDefaultAlignment &&
                               std::none_of(metadata_.begin(), metadata_.end(), [](const auto& kv) {
                                   return kv.first == "general.alignment";
                               });
    std::string buf;
    buf.append("GGUF", 4);
    put<uint32_t>(buf, kVersion);
    put<int64_t>(buf, static_cast<int64_t>(tensors_.size()));
    put<int64_t>(buf, static_cast<int64_t>(metadata_.size() + (add_alignment ? 1 : 0)));
    for (const auto& [key, value] : metadata_) {
        put_string(buf, key);
        put_value(buf, value);
    }
    if (add_alignment) {
        put_string(buf, "general.alignment");
        put_value(buf, GgufValue::u32(alignment_));
    }
    for (const PendingTensor& t : tensors_) {
        put_string(buf, t.name);
        put<uint32_t>(buf, static_cast<uint32_t>(t.ne.size()));
        for (int64_t n : t.ne)
            put<int64_t>(buf, n);
        put<uint32_t>(buf, static_cast<uint32_t>(t.type));
        put<uint64_t>(buf, t.offset);
    }
    if (!tensors_.empty()) buf.resize(align_up(buf.size(), alignment_), '\0');
    return buf;
}

void GgufWriter::write_header() {
    if (header_written_) throw ArgumentError("write_header() called twice");
    const std::string header = encode_header();
    write_raw(header.data(), header.size());
    header_written_ = true;
}

void GgufWriter::write_tensor_data(const void* data, size_t n_bytes) {
    if (!header_written_) throw ArgumentError("write_tensor_data() before write_header()");
    const auto* p = static_cast<const uint8_t*>(data);
    while (n_bytes > 0) {
        if (current_tensor_ >= tensors_.size()) {
            throw ArgumentError(cat("write_tensor_data(): ", n_bytes,
                                    " bytes more than the declared tensors hold"));
        }
        const PendingTensor& t = tensors_[current_tensor_];
        const size_t take =
            static_cast<size_t>(std::min<uint64_t>(n_bytes, t.n_bytes - written_in_tensor_));
        write_raw(p, take);
        p += take;
        n_bytes -= take;
        written_in_tensor_ += take;
        if (written_in_tensor_ == t.n_bytes) {
            write_zeros(align_up(t.n_bytes, alignment_) - t.n_bytes);
            ++current_tensor_;
            written_in_tensor_ = 0;
        }
    }
}

void GgufWriter::finish() {
    if (!header_written_) write_header();
    if (current_tensor_ < tensors_.size()) {
        const PendingTensor& t = tensors_[current_tensor_];
        throw ArgumentError(cat("finish(): tensor '", t.name, "' has ", written_in_tensor_,
                                " of its ", t.n_bytes, " bytes written (",
                                tensors_.size() - current_tensor_, " tensors incomplete)"));
    }
    out_->flush();
    if (!*out_) throw SystemError(cat("writing the GGUF file failed: ", std::strerror(errno)));
    if (file_) file_->commit();
}

uint64_t GgufWriter::total_bytes() const {
    uint64_t total = encode_header().size();
    if (!tensors_.empty()) {
        total += tensors_.back().offset + align_up(tensors_.back().n_bytes, alignment_);
    }
    return total;
}

void GgufWriter::write_zeros(uint64_t n) {
    static const char zeros[4096] = {};
    while (n > 0) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof(zeros)));
        write_raw(zeros, k);
        n -= k;
    }
}

void GgufWriter::write_raw(const void* data, size_t n) {
    out_->write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!*out_) {
        throw SystemError(
            cat("writing the GGUF file failed at byte ", position_, ": ", std::strerror(errno)));
    }
    position_ += n;
}

}  // namespace strata

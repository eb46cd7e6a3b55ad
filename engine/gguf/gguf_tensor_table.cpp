// GgufFile's tensor table: parses each tensor info, checks its shape and type, places the data
// section, and checks that every tensor's data is aligned, inside the file and overlaps no other.
// We relax ggml's rule that tensors are contiguous in table order: any order is accepted.
#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/byte_reader.h"
#include "engine/gguf/gguf_file.h"

namespace strata {

namespace {


std::string shape_of(const int64_t* ne, uint32_t n_dims) {
    std::string out = "[";
    for (uint32_t d = 0; d < n_dims; ++d)
        out += cat(d ? ", " : "", ne[d]);
    return out + "]";
}

// Dims and element count of tensor `name` (r positioned at n_dims).
void read_shape(gguf_detail::ByteReader& r, const std::string& path, TensorInfo& t) {
    const std::string& name = t.name;
    const uint32_t n_dims = r.read<uint32_t>("n_dims");
    if (n_dims == 0 || n_dims > 4) {
        throw FormatError(cat(path, ": tensor '", name, "' has n_dims = ", n_dims, ", expected 1 to 4"));
    }
    t.n_dims = static_cast<int>(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
        t.ne[d] = r.read<int64_t>("dimension");
        if (t.ne[d] <= 0) {
            throw FormatError(cat(path, ": tensor '", name, "' has ne[", d, "] = ", t.ne[d],
                                  ", expected a positive size"));
        }
    }
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements)) {
            throw FormatError(cat(path, ": tensor '", name, "' shape ", shape_of(t.ne.data(), n_dims),
                                  " has more elements than fit in 64 bits"));
        }
    }
}

// Type and byte size of tensor t, whose shape is read (r positioned at the type).
void read_type(gguf_detail::ByteReader& r, const std::string& path, TensorInfo& t) {
    const std::string& name = t.name;
    const uint32_t type_id = r.read<uint32_t>("type");
    const TypeTraits* traits = find_type_traits(type_id);
    if (traits == nullptr || traits->block_size <= 0 || traits->type_size == 0) {
        throw FormatError(cat(path, ": tensor '", name, "' has unknown or removed ggml type ",
                              static_cast<int32_t>(type_id)));
    }
    t.type = traits->type;
    if (t.ne[0] % traits->block_size != 0) {
        throw FormatError(cat(path, ": tensor '", name, "' of type ", traits->name, " has ne[0] = ", t.ne[0],
                              ", not a multiple of the block size ", traits->block_size));
    }
    uint64_t n_bytes = static_cast<uint64_t>(t.ne[0] / traits->block_size);
    bool overflow = __builtin_mul_overflow(n_bytes, uint64_t{traits->type_size}, &n_bytes);
    for (int d = 1; d < t.n_dims; ++d) {
        overflow |= __builtin_mul_overflow(n_bytes, static_cast<uint64_t>(t.ne[d]), &n_bytes);
    }
    if (overflow) {
        throw FormatError(cat(path, ": tensor '", name, "' of type ", traits->name, " and shape ",
                              shape_of(t.ne.data(), static_cast<uint32_t>(t.n_dims)), " has a byte size beyond 64 bits"));
    }
    t.n_bytes = n_bytes;
}

// Tensor info #i: name, shape, type and data offset.
TensorInfo read_tensor_info(gguf_detail::ByteReader& r, const std::string& path, uint64_t i) {
    r.set_context(cat("tensor #", i));
    TensorInfo t;
    t.name = r.read_string("name");
    if (t.name.size() > kMaxTensorNameBytes) {
        throw FormatError(cat(path, ": tensor #", i, " name '", t.name.substr(0, 80), t.name.size() > 80 ? "…" : "",
                              "' is ", t.name.size(), " bytes long, the maximum is ", kMaxTensorNameBytes));
    }
    r.set_context(cat("tensor '", t.name, "'"));
    read_shape(r, path, t);
    read_type(r, path, t);
    t.offset = r.read<uint64_t>("data offset");
    return t;
}

// No two tensors' data may overlap (they may come in any order).
void check_no_overlap(const std::vector<TensorInfo>& tensors, const std::string& path) {
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return tensors[a].file_offset < tensors[b].file_offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& prev = tensors[order[k - 1]];
        const TensorInfo& next = tensors[order[k]];
        if (next.file_offset < prev.file_offset + prev.n_bytes) {
            throw FormatError(cat(path, ": tensors '", prev.name, "' [", prev.file_offset, ", ",
                                  prev.file_offset + prev.n_bytes, ") and '", next.name, "' [", next.file_offset,
                                  ", ", next.file_offset + next.n_bytes, ") overlap"));
        }
    }
}

}  // namespace

void GgufFile::parse_tensor_table(gguf_detail::ByteReader& r, uint64_t n_tensors) {
    if (n_tensors > r.remaining() / kMinTensorInfoBytes) {
        throw FormatError(cat(path_, ": tensor count ", n_tensors, " is impossible: only ",
                              r.remaining(), " bytes remain after the metadata"));
    }
    tensors_.reserve(n_tensors);
    std::unordered_map<std::string_view, uint64_t> name_index;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        TensorInfo t = read_tensor_info(r, path_, i);
        t.shard = shard_index_;
        tensors_.push_back(std::move(t));
        // tensors_ was reserved, so the views into its names stay valid.
        const auto [it, inserted] = name_index.emplace(tensors_.back().name, i);
        if (!inserted) {
            throw FormatError(cat(path_, ": duplicate tensor name '", tensors_.back().name,
                                  "' (tensors #", it->second, " and #", i, ")"));
        }
    }

    const uint64_t end_of_infos = r.pos();
    data_offset_ = end_of_infos;
    if (n_tensors == 0) return;
    data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;

    for (TensorInfo& t : tensors_) {
        if (t.offset % alignment_ != 0) {
            throw FormatError(cat(path_, ": tensor '", t.name, "' has data offset ", t.offset,
                                  ", not a multiple of the alignment ", alignment_));
        }
        uint64_t begin = 0, end = 0;
        if (__builtin_add_overflow(data_offset_, t.offset, &begin) ||
            __builtin_add_overflow(begin, t.n_bytes, &end)) {
            throw FormatError(cat(path_, ": tensor '", t.name, "' data at offset ", t.offset, " + ",
                                  t.n_bytes, " bytes (after the data section start ", data_offset_,
                                  ") lies past the end of the file (", size_, " bytes)"));
        }
        if (end > size_) {
            throw FormatError(cat(path_, ": tensor '", t.name, "' data [", begin, ", ", end,
                                  ") extends past the end of the file (", size_, " bytes)"));
        }
        t.file_offset = begin;
        t.data = base_ + begin;
    }
    check_no_overlap(tensors_, path_);
}

}  // namespace strata

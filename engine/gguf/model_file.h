// A model as GGUF files: one file, or every shard of a split model
// (NAME-00001-of-0000N.gguf). Metadata comes from the first shard; tensors are gathered by
// name across shards. Cross-shard checks (split.count, duplicate names) happen at open.
// Architecture-level checks (hyperparameters, tensor shapes) live in engine/model.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace strata {

class ModelFile {
public:
    // Opens `path`; if its name matches NAME-0000i-of-0000N.gguf, opens all N shards.
    explicit ModelFile(const std::string& path);

    const std::string& path() const { return path_; }
    int n_shards() const { return static_cast<int>(shards_.size()); }
    const GgufFile& shard(int i) const { return shards_.at(i); }

    // Metadata of the first shard.
    const GgufValue* find(std::string_view key) const;
    // Typed getters; the get_ forms throw FormatError when the key is missing or of the wrong
    // type, the find_ forms return nullopt when missing and throw only on a wrong type.
    int64_t get_int(std::string_view key) const;
    std::optional<int64_t> find_int(std::string_view key) const;
    double get_float(std::string_view key) const;
    std::optional<double> find_float(std::string_view key) const;
    const std::string& get_string(std::string_view key) const;
    std::optional<std::string> find_string(std::string_view key) const;
    std::optional<bool> find_bool(std::string_view key) const;

    // general.architecture (required).
    const std::string& architecture() const;

    // All tensors of all shards, shard by shard in file order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;
    const TensorInfo& tensor(std::string_view name) const;  // throws FormatError if absent
    uint64_t total_tensor_bytes() const;
    uint64_t total_file_bytes() const;

private:
    // Lets index_ be searched with a string_view without building a std::string.
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    void check_split_keys() const;
    const GgufValue& require(std::string_view key) const;  // FormatError when missing
    // Runs f, prefixing the file name to a FormatError it throws.
    template <typename F>
    auto with_path(F&& f) const -> decltype(f());

    std::string path_;
    std::vector<GgufFile> shards_;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> index_;  // into tensors_
};

}  // namespace strata

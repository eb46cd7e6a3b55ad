// ModelFile: opens one GGUF file or every shard of a split model, checks the split keys
// (split.no, split.count, split.tensors.count) and gathers the tensors of all shards by name.
#include "engine/gguf/model_file.h"

#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"

namespace strata {

namespace {

constexpr std::string_view kSplitNo = "split.no";
constexpr std::string_view kSplitCount = "split.count";
constexpr std::string_view kSplitTensors = "split.tensors.count";

struct SplitName {
    std::string prefix;  // everything before "-0000i-of-0000N.gguf", directory included
    int index = 0;       // 1-based, as in the name
    int count = 0;
};

bool parse_digits5(std::string_view s, int* out) {
    if (s.size() != 5) return false;
    int v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

// NAME-00001-of-00003.gguf (llama.cpp's "%s-%05d-of-%05d.gguf"); nullopt for other names.
std::optional<SplitName> parse_split_name(const std::string& path) {
    constexpr size_t kSuffix = 20;  // "-00001-of-00003.gguf"
    if (path.size() <= kSuffix) return std::nullopt;
    const std::string_view tail = std::string_view(path).substr(path.size() - kSuffix);
    SplitName s;
    if (tail[0] != '-' || tail.substr(6, 4) != "-of-" || tail.substr(15) != ".gguf" ||
        !parse_digits5(tail.substr(1, 5), &s.index) ||
        !parse_digits5(tail.substr(10, 5), &s.count)) {
        return std::nullopt;
    }
    s.prefix = path.substr(0, path.size() - kSuffix);
    return s;
}

std::string shard_path(const SplitName& s, int index) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "-%05d-of-%05d.gguf", index, s.count);
    return s.prefix + buf;
}

// An integer split key of a shard; nullopt when absent.
std::optional<int64_t> split_key(const GgufFile& f, std::string_view key) {
    const GgufValue* v = f.find(key);
    if (v == nullptr) return std::nullopt;
    try {
        return v->as_int(key);
    } catch (const FormatError& e) {
        throw FormatError(cat(f.path(), ": ", e.what()));
    }
}

}  // namespace

ModelFile::ModelFile(const std::string& path) : path_(path) {
    const std::optional<SplitName> split = parse_split_name(path);
    if (!split) {
        shards_.emplace_back(path, 0);
        const std::optional<int64_t> count = split_key(shards_[0], kSplitCount);
        if (count && *count != 1) {
            throw FormatError(cat(path,
                                  ": file is one shard of a split model (split.count = ", *count,
                                  ") but its name does not follow "
                                  "NAME-0000i-of-0000N.gguf, so the other shards cannot be found"));
        }
    } else {
        if (split->count < 1 || split->index < 1 || split->index > split->count) {
            throw FormatError(cat(path, ": shard number ", split->index, " of ", split->count,
                                  " in the file name is out of range"));
        }
        for (int i = 0; i < split->count; ++i) {
            const std::string p = i + 1 == split->index ? path : shard_path(*split, i + 1);
            if (!std::filesystem::exists(p)) {
                throw FormatError(cat(path, ": split model has ", split->count,
                                      " shards but shard ", i + 1, " '", p, "' is missing"));
            }
            shards_.emplace_back(p, i);
        }
    }
    check_split_keys();

    for (const GgufFile& shard : shards_) {
        for (const TensorInfo& t : shard.tensors()) {
            const auto [it, inserted] = index_.emplace(t.name, tensors_.size());
            if (!inserted) {
                const TensorInfo& first = tensors_[it->second];
                throw FormatError(cat(path_, ": tensor '", t.name, "' appears in shard ",
                                      first.shard + 1, " '", shards_[first.shard].path(),
                                      "' and again in shard ", t.shard + 1, " '", shard.path(),
                                      "'"));
            }
            tensors_.push_back(t);
        }
    }
}

void ModelFile::check_split_keys() const {
    const int64_t n = static_cast<int64_t>(shards_.size());
    uint64_t n_tensors = 0;
    for (int64_t i = 0; i < n; ++i) {
        const GgufFile& f = shards_[i];
        n_tensors += f.tensors().size();
        const std::optional<int64_t> count = split_key(f, kSplitCount);
        const std::optional<int64_t> no = split_key(f, kSplitNo);
        if (n > 1 && (!count || !no)) {
            throw FormatError(cat(f.path(), ": shard ", i + 1, " of ", n, " lacks the key '",
                                  !count ? kSplitCount : kSplitNo, "'"));
        }
        if (count && *count != n) {
            throw FormatError(cat(f.path(), ": split.count = ", *count, " but the model has ", n,
                                  n == 1 ? " file" : " shard files"));
        }
        if (no && *no != i) {
            throw FormatError(cat(f.path(), ": split.no = ", *no, " but this is shard ", i + 1,
                                  " of ", n, " (split.no ", i, " expected)"));
        }
    }
    const std::optional<int64_t> total = split_key(shards_[0], kSplitTensors);
    if (n > 1 && !total) {
        throw FormatError(
            cat(shards_[0].path(), ": first shard of ", n, " lacks the key '", kSplitTensors, "'"));
    }
    if (total && (*total < 0 || static_cast<uint64_t>(*total) != n_tensors)) {
        throw FormatError(cat(shards_[0].path(), ": split.tensors.count = ", *total, " but the ", n,
                              " shard(s) hold ", n_tensors, " tensors"));
    }
}

const GgufValue* ModelFile::find(std::string_view key) const {
    return shards_[0].find(key);
}

const GgufValue& ModelFile::require(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) throw FormatError(cat(shards_[0].path(), ": missing key '", key, "'"));
    return *v;
}

template <typename F>
auto ModelFile::with_path(F&& f) const -> decltype(f()) {
    try {
        return f();
    } catch (const FormatError& e) {
        throw FormatError(cat(shards_[0].path(), ": ", e.what()));
    }
}

int64_t ModelFile::get_int(std::string_view key) const {
    const GgufValue& v = require(key);
    return with_path([&] { return v.as_int(key); });
}

std::optional<int64_t> ModelFile::find_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return with_path([&] { return v->as_int(key); });
}

double ModelFile::get_float(std::string_view key) const {
    const GgufValue& v = require(key);
    return with_path([&] { return v.as_float(key); });
}

std::optional<double> ModelFile::find_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return with_path([&] { return v->as_float(key); });
}

const std::string& ModelFile::get_string(std::string_view key) const {
    const GgufValue& v = require(key);
    return with_path([&]() -> const std::string& { return v.as_string(key); });
}

std::optional<std::string> ModelFile::find_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return with_path([&] { return v->as_string(key); });
}

std::optional<bool> ModelFile::find_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return with_path([&] { return v->as_bool(key); });
}

const std::string& ModelFile::architecture() const {
    return get_string("general.architecture");
}

const TensorInfo* ModelFile::find_tensor(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& ModelFile::tensor(std::string_view name) const {
    const TensorInfo* t = find_tensor(name);
    if (t == nullptr) throw FormatError(cat(path_, ": missing tensor '", name, "'"));
    return *t;
}

uint64_t ModelFile::total_tensor_bytes() const {
    uint64_t total = 0;
    for (const TensorInfo& t : tensors_)
        total += t.n_bytes;
    return total;
}

uint64_t ModelFile::total_file_bytes() const {
    uint64_t total = 0;
    for (const GgufFile& f : shards_)
        total += f.size();
    return total;
}

}  // namespace strata

// Typed, validating access to a model's metadata keys for the config reader. Integers may be
// stored as any integer type (friendlier than llama.cpp's exact-type rule, docs/FORMATS.md §1.8);
// a key of the wrong kind or a per-layer array of the wrong length is a FormatError that
// names the file, the key, the stored type and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class GgufValue;
class ModelFile;

class KeyReader {
  public:
    KeyReader(const ModelFile& file, std::string arch);

    const std::string& arch() const { return arch_; }
    // "<arch>.<suffix>"
    std::string key(std::string_view suffix) const;

    const GgufValue* find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    int64_t require_int(std::string_view key) const;
    std::optional<int64_t> find_int(std::string_view key) const;
    double require_float(std::string_view key) const;
    std::optional<double> find_float(std::string_view key) const;  // floats or integers
    std::optional<bool> find_bool(std::string_view key) const;
    std::optional<std::string> find_string(std::string_view key) const;
    // Length of an array key of the given element kind ("string", "float", "integer"), or
    // nullopt when absent. Throws when present but not such an array.
    std::optional<uint64_t> find_array_size(std::string_view key, std::string_view kind) const;

    // A scalar integer (the same for every layer) or an integer array with one entry per
    // layer. nullopt when absent.
    std::optional<std::vector<int64_t>> find_per_layer(std::string_view key, int64_t n_layer) const;
    // A per-layer boolean array of length n_layer; nullopt when absent or a scalar.
    std::optional<std::vector<bool>> find_per_layer_bools(std::string_view key,
                                                          int64_t n_layer) const;

    // Throws FormatError "<file>: <message>".
    [[noreturn]] void fail(const std::string& message) const;

  private:
    [[noreturn]] void wrong_type(std::string_view key, const GgufValue& value,
                                 std::string_view expected) const;

    const ModelFile& file_;
    std::string arch_;
};

}  // namespace strata

// Typed, validating access to a model's metadata keys (see key_reader.h).
#include "engine/model/key_reader.h"

#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/gguf_value.h"
#include "engine/gguf/model_file.h"

namespace strata {
namespace {

bool is_integer_type(GgufType t) {
    switch (t) {
        case GgufType::UINT8:
        case GgufType::INT8:
        case GgufType::UINT16:
        case GgufType::INT16:
        case GgufType::UINT32:
        case GgufType::INT32:
        case GgufType::UINT64:
        case GgufType::INT64:
            return true;
        default:
            return false;
    }
}

bool is_float_type(GgufType t) {
    return t == GgufType::FLOAT32 || t == GgufType::FLOAT64;
}

std::string type_description(const GgufValue& v) {
    if (v.is_array()) return cat("array of ", gguf_type_name(v.array_type()));
    return gguf_type_name(v.type());
}

}  // namespace

KeyReader::KeyReader(const ModelFile& file, std::string arch)
    : file_(file), arch_(std::move(arch)) {}

std::string KeyReader::key(std::string_view suffix) const {
    return cat(arch_, ".", suffix);
}

const GgufValue* KeyReader::find(std::string_view key) const {
    return file_.find(key);
}

void KeyReader::fail(const std::string& message) const {
    throw FormatError(cat(file_.path(), ": ", message));
}

void KeyReader::wrong_type(std::string_view key, const GgufValue& value,
                           std::string_view expected) const {
    fail(cat("key '", key, "' has type ", type_description(value), ", expected ", expected));
}

std::optional<int64_t> KeyReader::find_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!is_integer_type(v->type())) wrong_type(key, *v, "an integer");
    return v->as_int(key);
}

int64_t KeyReader::require_int(std::string_view key) const {
    std::optional<int64_t> v = find_int(key);
    if (!v) fail(cat("missing required key '", key, "' (integer)"));
    return *v;
}

std::optional<double> KeyReader::find_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!is_float_type(v->type()) && !is_integer_type(v->type())) wrong_type(key, *v, "a number");
    if (is_integer_type(v->type())) return static_cast<double>(v->as_int(key));
    return v->as_float(key);
}

double KeyReader::require_float(std::string_view key) const {
    std::optional<double> v = find_float(key);
    if (!v) fail(cat("missing required key '", key, "' (float)"));
    return *v;
}

std::optional<bool> KeyReader::find_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type() != GgufType::BOOL) wrong_type(key, *v, "bool");
    return v->as_bool(key);
}

std::optional<std::string> KeyReader::find_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type() != GgufType::STRING) wrong_type(key, *v, "string");
    return v->as_string(key);
}

std::optional<uint64_t> KeyReader::find_array_size(std::string_view key,
                                                   std::string_view kind) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    bool ok = false;
    if (v->is_array()) {
        GgufType t = v->array_type();
        if (kind == "string") ok = t == GgufType::STRING;
        if (kind == "float") ok = t == GgufType::FLOAT32;
        if (kind == "integer") ok = is_integer_type(t);
    }
    if (!ok) wrong_type(key, *v, cat("an array of ", kind));
    return v->array_size();
}

std::optional<std::vector<int64_t>> KeyReader::find_per_layer(std::string_view key,
                                                              int64_t n_layer) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (is_integer_type(v->type())) {
        return std::vector<int64_t>(static_cast<size_t>(n_layer), v->as_int(key));
    }
    if (!v->is_array() || !is_integer_type(v->array_type())) {
        wrong_type(key, *v, "an integer or an integer array with one entry per layer");
    }
    if (v->array_size() != static_cast<uint64_t>(n_layer)) {
        fail(cat("key '", key, "' has ", v->array_size(), " entries, expected one per layer (",
                 n_layer, ")"));
    }
    return v->as_ints(key);
}

std::optional<std::vector<bool>> KeyReader::find_per_layer_bools(std::string_view key,
                                                                 int64_t n_layer) const {
    const GgufValue* v = find(key);
    if (v == nullptr || !v->is_array()) return std::nullopt;
    if (v->array_type() != GgufType::BOOL) wrong_type(key, *v, "an array of bool");
    if (v->array_size() != static_cast<uint64_t>(n_layer)) {
        fail(cat("key '", key, "' has ", v->array_size(), " entries, expected one per layer (",
                 n_layer, ")"));
    }
    return v->as_bools(key);
}

}  // namespace strata

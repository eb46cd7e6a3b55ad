// Reading and writing the FFN predictor file (predictor_file.h).
#include "predictor/predictor_file.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"

namespace strata {
namespace {

static_assert(std::endian::native == std::endian::little, "the predictor file stores little-endian f32");

using Json = nlohmann::ordered_json;
constexpr size_t kMaxHeaderBytes = 1 << 20;
constexpr int64_t kMaxDim = 1 << 20;  // n_embd, n_ff
constexpr int64_t kMaxRank = 4096;

uint64_t layer_floats(const LayerPredictor& l) {
    return static_cast<uint64_t>(l.rank * l.n_embd + l.rank + l.n_ff * l.rank + l.n_ff);
}

void append(std::string& out, const std::vector<float>& v) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Copies n floats from data + offset into v, advancing offset (bounds checked by the caller).
void take(std::string_view data, uint64_t& offset, size_t n, std::vector<float>& v) {
    v.resize(n);
    std::memcpy(v.data(), data.data() + offset, n * sizeof(float));
    offset += n * sizeof(float);
}

// The header's value at `key`, of type T, or FormatError naming the file and the key.
template <typename T, typename J>
T field(const J& j, const char* key, const std::string& what, const std::string& where) {
    const auto it = j.find(key);
    if (it == j.end()) throw FormatError(cat("predictor file '", what, "': ", where, ".", key, " is missing"));
    try {
        return it->template get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw FormatError(cat("predictor file '", what, "': ", where, ".", key, " has the wrong type (", e.what(), ")"));
    }
}

LayerPredictor layer_header(const nlohmann::json& lj, const std::string& what, const std::string& where) {
    LayerPredictor l;
    l.n_embd = field<int64_t>(lj, "n_embd", what, where);
    l.n_ff = field<int64_t>(lj, "n_ff", what, where);
    l.rank = field<int64_t>(lj, "rank", what, where);
    if (l.n_embd < 1 || l.n_embd > kMaxDim || l.n_ff < 1 || l.n_ff > kMaxDim || l.rank < 1 || l.rank > kMaxRank) {
        throw FormatError(cat("predictor file '", what, "': ", where, " has n_embd ", l.n_embd, ", n_ff ", l.n_ff, ", rank ",
                              l.rank, " (expected 1..", kMaxDim, " and rank 1..", kMaxRank, ")"));
    }
    l.threshold = field<float>(lj, "threshold", what, where);
    l.recall = field<double>(lj, "recall", what, where);
    l.predicted_fraction = field<double>(lj, "predicted_fraction", what, where);
    l.active_fraction = field<double>(lj, "active_fraction", what, where);
    if (!std::isfinite(l.threshold)) throw FormatError(cat("predictor file '", what, "': ", where, ".threshold is not finite"));
    return l;
}

}  // namespace

std::string predictors_to_bytes(const FfnPredictors& p) {
    Json j;
    j["format"] = kPredictorFormat;
    j["version"] = kPredictorFileVersion;
    j["model"] = Json{{"name", p.model_name}, {"file_bytes", p.model_file_bytes}, {"header_hash", p.model_header_hash}};
    j["text"] = p.text_name;
    j["n_tokens"] = p.n_tokens;
    j["sparsity"] = p.sparsity;
    j["target_recall"] = p.target_recall;
    std::string data;
    Json layers = Json::array();
    for (const LayerPredictor& l : p.layers) {
        l.check_shapes("predictor to write");
        layers.push_back(Json{{"n_embd", l.n_embd}, {"n_ff", l.n_ff}, {"rank", l.rank}, {"threshold", l.threshold},
                              {"recall", l.recall}, {"predicted_fraction", l.predicted_fraction},
                              {"active_fraction", l.active_fraction}, {"offset", data.size()}});
        append(data, l.w1);
        append(data, l.b1);
        append(data, l.w2);
        append(data, l.b2);
    }
    j["data_bytes"] = data.size();
    j["layers"] = std::move(layers);
    return j.dump() + "\n" + data;
}

FfnPredictors predictors_from_bytes(std::string_view bytes, const std::string& what) {
    const size_t eol = bytes.substr(0, kMaxHeaderBytes).find('\n');
    if (eol == std::string_view::npos || bytes.substr(0, 1) != "{") {
        throw FormatError(cat("'", what, "' is not a predictor file (expected a JSON header line with \"format\": \"",
                              kPredictorFormat, "\"; make one with `strata profile --predictor-out`)"));
    }
    const nlohmann::json j = parse_json_bounded(bytes.substr(0, eol), cat("predictor file '", what, "'"));
    if (!j.is_object() || j.value("format", "") != kPredictorFormat) {
        throw FormatError(cat("'", what, "' is not a predictor file (no \"format\": \"", kPredictorFormat, "\")"));
    }
    const int64_t version = field<int64_t>(j, "version", what, "$");
    if (version != kPredictorFileVersion) {
        throw FormatError(cat("predictor file '", what, "' has version ", version, "; this strata reads version ",
                              kPredictorFileVersion, " (train it again with `strata profile --predictor-out`)"));
    }
    FfnPredictors p;
    const nlohmann::json model = field<nlohmann::json>(j, "model", what, "$");
    p.model_name = field<std::string>(model, "name", what, "$.model");
    p.model_file_bytes = field<uint64_t>(model, "file_bytes", what, "$.model");
    p.model_header_hash = field<std::string>(model, "header_hash", what, "$.model");
    p.text_name = field<std::string>(j, "text", what, "$");
    p.n_tokens = field<uint64_t>(j, "n_tokens", what, "$");
    p.sparsity = field<double>(j, "sparsity", what, "$");
    p.target_recall = field<double>(j, "target_recall", what, "$");
    const std::string_view data = bytes.substr(eol + 1);
    const uint64_t data_bytes = field<uint64_t>(j, "data_bytes", what, "$");
    if (data.size() != data_bytes) {
        throw FormatError(cat("predictor file '", what, "' has ", data.size(), " bytes of weights, its header says ", data_bytes,
                              data.size() < data_bytes ? " (truncated)" : ""));
    }
    const nlohmann::json layers = field<nlohmann::json>(j, "layers", what, "$");
    if (!layers.is_array() || layers.empty()) throw FormatError(cat("predictor file '", what, "': $.layers is not a non-empty array"));
    for (size_t il = 0; il < layers.size(); ++il) {
        const std::string where = cat("$.layers[", il, "]");
        LayerPredictor l = layer_header(layers[il], what, where);
        uint64_t offset = field<uint64_t>(layers[il], "offset", what, where);
        if (offset % sizeof(float) != 0 || offset > data_bytes || layer_floats(l) * sizeof(float) > data_bytes - offset) {
            throw FormatError(cat("predictor file '", what, "': ", where, "'s ", layer_floats(l) * sizeof(float),
                                  " bytes at offset ", offset, " are outside the ", data_bytes, " bytes of weights"));
        }
        take(data, offset, static_cast<size_t>(l.rank * l.n_embd), l.w1);
        take(data, offset, static_cast<size_t>(l.rank), l.b1);
        take(data, offset, static_cast<size_t>(l.n_ff * l.rank), l.w2);
        take(data, offset, static_cast<size_t>(l.n_ff), l.b2);
        p.layers.push_back(std::move(l));
    }
    return p;
}

}  // namespace strata

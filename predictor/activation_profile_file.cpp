// Reading and writing the activation statistics file (activation_profile_file.h).
#include "predictor/activation_profile_file.h"

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kFormat = "strata-activation-stats";

Json histogram_json(const MagnitudeHistogram& h) {
    const std::vector<uint64_t>& c = h.counts();
    size_t first = 0, end = c.size();
    while (first < end && c[first] == 0) ++first;
    while (end > first && c[end - 1] == 0) --end;
    return Json{{"first", first}, {"counts", std::vector<uint64_t>(c.begin() + static_cast<long>(first), c.begin() + static_cast<long>(end))}};
}

// Reads with the JSON path in every error.
class Reader {
  public:
    explicit Reader(std::string what) : what_(std::move(what)) {}
    [[noreturn]] void fail(const std::string& path, const std::string& expected) const {
        throw FormatError(cat("activation stats '", what_, "' ", path, ": expected ", expected));
    }
    const Json& at(const Json& j, const std::string& path, const char* key) const {
        if (!j.is_object()) fail(path, "an object");
        const auto it = j.find(key);
        if (it == j.end()) fail(path + "." + key, "a value (missing)");
        return *it;
    }
    uint64_t u64(const Json& j, const std::string& path) const {
        if (!j.is_number_unsigned()) fail(path, "a non-negative integer");
        return j.get<uint64_t>();
    }
    double number(const Json& j, const std::string& path) const {
        if (!j.is_number()) fail(path, "a number");
        return j.get<double>();
    }
    std::string str(const Json& j, const std::string& path) const {
        if (!j.is_string()) fail(path, "a string");
        return j.get<std::string>();
    }
    const Json& array(const Json& j, const std::string& path, size_t size) const {
        if (!j.is_array() || (size != SIZE_MAX && j.size() != size)) {
            fail(path, size == SIZE_MAX ? std::string("an array") : cat("an array of ", size));
        }
        return j;
    }

  private:
    std::string what_;
};

MagnitudeHistogram read_histogram(const Reader& r, const Json& j, const std::string& path) {
    const uint64_t first = r.u64(r.at(j, path, "first"), path + ".first");
    const Json& counts = r.array(r.at(j, path, "counts"), path + ".counts", SIZE_MAX);
    if (first + counts.size() > static_cast<uint64_t>(MagnitudeHistogram::kBins)) {
        r.fail(path, cat("at most ", MagnitudeHistogram::kBins, " bins"));
    }
    std::vector<uint64_t> all(MagnitudeHistogram::kBins, 0);
    for (size_t i = 0; i < counts.size(); ++i) all[first + i] = r.u64(counts[i], cat(path, ".counts[", i, "]"));
    MagnitudeHistogram h;
    h.set_counts(std::move(all));
    return h;
}

LayerActivationStats read_layer(const Reader& r, const Json& j, const std::string& path) {
    LayerActivationStats l;
    l.n_ff = static_cast<int64_t>(r.u64(r.at(j, path, "n_ff"), path + ".n_ff"));
    const std::string hp = path + ".histograms";
    const Json& hs = r.at(j, path, "histograms");
    for (int s = 0; s < kActivationSites; ++s) {
        const std::string name(activation_site_name(static_cast<ActivationSite>(s)));
        l.histograms[static_cast<size_t>(s)] = read_histogram(r, r.at(hs, hp, name.c_str()), hp + "." + name);
    }
    const size_t grid = kNeuronCountSparsity.size();
    const Json& th = r.array(r.at(j, path, "neuron_thresholds"), path + ".neuron_thresholds", grid);
    for (size_t g = 0; g < grid; ++g) l.neuron_thresholds.push_back(r.number(th[g], cat(path, ".neuron_thresholds[", g, "]")));
    l.neuron_tokens = r.u64(r.at(j, path, "neuron_tokens"), path + ".neuron_tokens");
    const Json& nc = r.array(r.at(j, path, "neuron_counts"), path + ".neuron_counts", grid);
    for (size_t g = 0; g < grid; ++g) {
        const std::string gp = cat(path, ".neuron_counts[", g, "]");
        const Json& row = r.array(nc[g], gp, static_cast<size_t>(l.n_ff));
        std::vector<uint32_t> counts(row.size());
        for (size_t i = 0; i < row.size(); ++i) {
            const uint64_t v = r.u64(row[i], cat(gp, "[", i, "]"));
            if (v > l.neuron_tokens) r.fail(cat(gp, "[", i, "]"), cat("at most neuron_tokens = ", l.neuron_tokens));
            counts[i] = static_cast<uint32_t>(v);
        }
        l.neuron_counts.push_back(std::move(counts));
    }
    return l;
}

// The optional routing section: one row of counts per layer, each at most `tokens`.
void read_experts(const Reader& r, const Json& j, ActivationProfile& p) {
    p.expert_tokens = r.u64(r.at(j, "$.experts", "tokens"), "$.experts.tokens");
    const Json& rows = r.array(r.at(j, "$.experts", "counts"), "$.experts.counts", p.layers.size());
    for (size_t l = 0; l < rows.size(); ++l) {
        const std::string lp = cat("$.experts.counts[", l, "]");
        const Json& row = r.array(rows[l], lp, SIZE_MAX);
        std::vector<uint64_t>& counts = p.expert_counts.emplace_back();
        for (size_t e = 0; e < row.size(); ++e) {
            counts.push_back(r.u64(row[e], cat(lp, "[", e, "]")));
            if (counts.back() > p.expert_tokens) r.fail(cat(lp, "[", e, "]"), cat("at most tokens = ", p.expert_tokens));
        }
    }
}

}  // namespace

std::string activation_profile_to_json(const ActivationProfile& p) {
    Json j;
    j["format"] = kFormat;
    j["version"] = kActivationProfileVersion;
    j["model"] = Json{{"name", p.model_name}, {"file_bytes", p.model_file_bytes}, {"header_hash", p.model_header_hash}};
    j["text"] = p.text_name;
    j["n_tokens"] = p.n_tokens;
    j["histogram"] = Json{{"bins_per_decade", MagnitudeHistogram::kBinsPerDecade},
                          {"min_log10", MagnitudeHistogram::kMinLog10},
                          {"max_log10", MagnitudeHistogram::kMaxLog10}};
    j["neuron_count_sparsity"] = kNeuronCountSparsity;
    Json layers = Json::array();
    for (const LayerActivationStats& l : p.layers) {
        Json hs = Json::object();
        for (int s = 0; s < kActivationSites; ++s) {
            hs[std::string(activation_site_name(static_cast<ActivationSite>(s)))] = histogram_json(l.histograms[static_cast<size_t>(s)]);
        }
        layers.push_back(Json{{"n_ff", l.n_ff}, {"histograms", hs}, {"neuron_thresholds", l.neuron_thresholds},
                              {"neuron_tokens", l.neuron_tokens}, {"neuron_counts", l.neuron_counts}});
    }
    j["layers"] = std::move(layers);
    if (!p.expert_counts.empty()) j["experts"] = Json{{"tokens", p.expert_tokens}, {"counts", p.expert_counts}};
    return j.dump() + "\n";
}

ActivationProfile activation_profile_from_json(const std::string& text, const std::string& what) {
    check_json_depth(text, what);  // before the parser recurses
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw FormatError(cat("activation stats '", what, "' is not valid JSON"));
    const Reader r(what);
    if (!j.is_object() || !j.contains("format") || j["format"] != kFormat) {
        throw FormatError(cat("'", what, "' is not an activation stats file (no \"format\": \"", kFormat, "\")"));
    }
    const uint64_t version = r.u64(r.at(j, "$", "version"), "$.version");
    if (version != kActivationProfileVersion) {
        throw FormatError(cat("activation stats '", what, "' has version ", version, "; this strata reads version ",
                              kActivationProfileVersion, " (run `strata profile` again)"));
    }
    const Json& h = r.at(j, "$", "histogram");
    if (r.u64(r.at(h, "$.histogram", "bins_per_decade"), "$.histogram.bins_per_decade") !=
            static_cast<uint64_t>(MagnitudeHistogram::kBinsPerDecade) ||
        r.number(r.at(h, "$.histogram", "min_log10"), "$.histogram.min_log10") != MagnitudeHistogram::kMinLog10 ||
        r.number(r.at(h, "$.histogram", "max_log10"), "$.histogram.max_log10") != MagnitudeHistogram::kMaxLog10) {
        r.fail("$.histogram", cat(MagnitudeHistogram::kBinsPerDecade, " bins per decade from 1e", MagnitudeHistogram::kMinLog10,
                                  " to 1e", MagnitudeHistogram::kMaxLog10));
    }
    const Json& grid = r.array(r.at(j, "$", "neuron_count_sparsity"), "$.neuron_count_sparsity", kNeuronCountSparsity.size());
    for (size_t g = 0; g < grid.size(); ++g) {
        if (r.number(grid[g], cat("$.neuron_count_sparsity[", g, "]")) != kNeuronCountSparsity[g]) {
            r.fail(cat("$.neuron_count_sparsity[", g, "]"), cat(kNeuronCountSparsity[g]));
        }
    }
    ActivationProfile p;
    const Json& m = r.at(j, "$", "model");
    p.model_name = r.str(r.at(m, "$.model", "name"), "$.model.name");
    p.model_file_bytes = r.u64(r.at(m, "$.model", "file_bytes"), "$.model.file_bytes");
    p.model_header_hash = r.str(r.at(m, "$.model", "header_hash"), "$.model.header_hash");
    p.text_name = r.str(r.at(j, "$", "text"), "$.text");
    p.n_tokens = r.u64(r.at(j, "$", "n_tokens"), "$.n_tokens");
    const Json& layers = r.array(r.at(j, "$", "layers"), "$.layers", SIZE_MAX);
    for (size_t i = 0; i < layers.size(); ++i) p.layers.push_back(read_layer(r, layers[i], cat("$.layers[", i, "]")));
    if (j.contains("experts")) read_experts(r, j["experts"], p);
    return p;
}

}  // namespace strata

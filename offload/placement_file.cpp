// Placement JSON file (placement_file.h). The writer lays the file out by hand (one tensor per
// line) so that a 700-tensor plan stays readable and diffable; the reader is strict and names the
// JSON path of anything it refuses.
#include "offload/placement_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"

namespace strata {

namespace {

using Json = nlohmann::ordered_json;

// ---- writing ----

Json tier_json(Tier tier) {
    return std::string(tier_name(tier));
}

std::string json_list(const std::vector<Json>& items) {
    if (items.empty()) return "[]";
    std::string out = "[\n";
    for (size_t i = 0; i < items.size(); ++i) {
        out += "    " + items[i].dump() + (i + 1 < items.size() ? ",\n" : "\n");
    }
    return out + "  ]";
}

Json bytes_summary(const Placement& p, const TensorTable& table) {
    const TierBytes weights = placement_bytes(p, table);
    uint64_t kv_gpu = 0, kv_ram = 0;
    for (size_t layer = 0; layer < p.kv.size(); ++layer) {
        const uint64_t n = kv_bytes_per_layer(table, static_cast<int>(layer), p.n_ctx, p.kv_type);
        (p.kv[layer] == Tier::Gpu ? kv_gpu : kv_ram) += n;
    }
    return Json{{"gpu", weights.gpu},
                {"ram", weights.ram},
                {"disk", weights.disk},
                {"kv_gpu", kv_gpu},
                {"kv_ram", kv_ram}};
}

// ---- reading ----

// A JSON value with its path from the document root, for error messages.
class Node {
  public:
    Node(const Json& value, std::string path) : value_(value), path_(std::move(path)) {}

    Node operator[](const char* key) const {
        if (!value_.is_object()) fail("an object");
        const auto it = value_.find(key);
        if (it == value_.end()) {
            throw FormatError(cat("placement ", path_, ": missing field \"", key, "\""));
        }
        return Node(*it, path_ + "." + key);
    }
    bool has(const char* key) const { return value_.is_object() && value_.contains(key); }
    std::vector<Node> items() const {
        if (!value_.is_array()) fail("an array");
        std::vector<Node> out;
        for (size_t i = 0; i < value_.size(); ++i) {
            out.emplace_back(value_[i], cat(path_, "[", i, "]"));
        }
        return out;
    }
    uint64_t u64() const {
        if (!value_.is_number_unsigned()) fail("a non-negative integer");
        return value_.get<uint64_t>();
    }
    int64_t i64(int64_t min, int64_t max) const {
        const bool integer = value_.is_number_integer();
        if (!integer ||
            (value_.is_number_unsigned() && value_.get<uint64_t>() > static_cast<uint64_t>(max))) {
            fail(cat("an integer in [", min, ", ", max, "]"));
        }
        const int64_t v = value_.get<int64_t>();
        if (v < min || v > max) fail(cat("an integer in [", min, ", ", max, "]"));
        return v;
    }
    double rate() const {
        if (!value_.is_number() || !std::isfinite(value_.get<double>()) ||
            value_.get<double>() < 0) {
            fail("a non-negative number");
        }
        return value_.get<double>();
    }
    std::string string() const {
        if (!value_.is_string()) fail("a string");
        return value_.get<std::string>();
    }
    Tier tier() const {
        const std::string name = string();
        try {
            return parse_tier(name);
        } catch (const ArgumentError&) {
            throw FormatError(cat("placement ", path_, ": unknown tier \"", name,
                                  "\" (expected gpu, ram or disk)"));
        }
    }
    GgmlType type() const {
        const std::string name = string();
        const TypeTraits* traits = find_type_traits_by_name(name);
        if (!traits) {
            throw FormatError(cat("placement ", path_, ": unknown ggml type \"", name,
                                  "\" (expected a name such as f16, q8_0)"));
        }
        return traits->type;
    }

  private:
    [[noreturn]] void fail(const std::string& expected) const {
        std::string got = value_.dump();
        if (got.size() > 40) got = got.substr(0, 37) + "...";
        throw FormatError(cat("placement ", path_, ": expected ", expected, ", got ",
                              value_.type_name(), " ", got));
    }

    const Json& value_;
    std::string path_;
};

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

}  // namespace

std::string placement_to_json(const Placement& p, const TensorTable* table) {
    std::vector<Json> tensors, splits;
    for (const TensorPlacement& t : p.tensors) {
        tensors.push_back(Json{{"name", t.name}, {"tier", tier_json(t.tier)}});
    }
    for (const FfnSplit& s : p.ffn_splits) {
        splits.push_back(Json{{"layer", s.layer}, {"gpu_end", s.gpu_end}, {"ram_end", s.ram_end}});
    }
    std::vector<Json> experts;
    for (const ExpertTiers& x : p.expert_tiers) {
        Json tiers = Json::array();
        for (Tier t : x.tiers) tiers.push_back(tier_json(t));
        experts.push_back(Json{{"layer", x.layer}, {"tiers", tiers}});
    }
    Json kv = Json::array();
    for (Tier t : p.kv)
        kv.push_back(tier_json(t));
    const HardwareSummary& h = p.hardware;

    std::string out = "{\n";
    auto field = [&](const char* key, const std::string& value, bool last = false) {
        out += cat("  \"", key, "\": ", value, last ? "\n" : ",\n");
    };
    field("schema_version", std::to_string(p.hot_neurons.empty() ? 1 : Placement::kSchemaVersion));
    field("model",
          Json{{"file_bytes", p.model.file_bytes}, {"header_hash", p.model.header_hash}}.dump());
    field("budgets",
          Json{{"gpu_bytes", p.budgets.gpu_bytes}, {"ram_bytes", p.budgets.ram_bytes}}.dump());
    field("n_ctx", std::to_string(p.n_ctx));
    field("kv_type", Json(std::string(type_traits(p.kv_type).name)).dump());
    field("hardware", Json{{"gpu_name", h.gpu_name},
                           {"gpu_total_bytes", h.gpu_total_bytes},
                           {"cpu_name", h.cpu_name},
                           {"cpu_threads", h.cpu_threads},
                           {"ram_total_bytes", h.ram_total_bytes}}
                          .dump());
    // JSON has no infinity: a prediction that is not a finite speed is a bug upstream (the fit
    // refuses degenerate calibrations), never a "null" in the file.
    STRATA_INVARIANT(std::isfinite(p.predicted.prefill_tok_s) && std::isfinite(p.predicted.decode_tok_s));
    field("predicted", Json{{"prefill_tok_s", p.predicted.prefill_tok_s},
                            {"decode_tok_s", p.predicted.decode_tok_s}}
                           .dump());
    if (table) field("bytes", bytes_summary(p, *table).dump());
    field("kv", kv.dump());
    field("ffn_splits", json_list(splits));
    if (!p.hot_neurons.empty()) field("hot_neurons", Json(p.hot_neurons).dump());
    if (!experts.empty()) field("expert_tiers", json_list(experts));
    field("tensors", json_list(tensors), true);
    return out + "}\n";
}

Placement placement_from_json(std::string_view text) {
    check_json_depth(text, "placement");
    Json doc;
    try {
        doc = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
        throw FormatError(cat("placement: invalid JSON: ", e.what()));
    }
    const Node root(doc, "$");
    const uint64_t version = root["schema_version"].u64();
    if (version < 1 || version > Placement::kSchemaVersion) {
        throw FormatError(cat("placement $.schema_version: version ", version,
                              " is not supported (this Strata reads versions 1 to ",
                              Placement::kSchemaVersion, ")"));
    }

    Placement p;
    p.model.file_bytes = root["model"]["file_bytes"].u64();
    p.model.header_hash = root["model"]["header_hash"].string();
    p.budgets.gpu_bytes = root["budgets"]["gpu_bytes"].u64();
    p.budgets.ram_bytes = root["budgets"]["ram_bytes"].u64();
    p.n_ctx = root["n_ctx"].i64(1, kMaxInt64);
    p.kv_type = root["kv_type"].type();

    const Node hw = root["hardware"];
    p.hardware.gpu_name = hw["gpu_name"].string();
    p.hardware.gpu_total_bytes = hw["gpu_total_bytes"].u64();
    p.hardware.cpu_name = hw["cpu_name"].string();
    p.hardware.cpu_threads = static_cast<int>(hw["cpu_threads"].i64(0, kMaxInt));
    p.hardware.ram_total_bytes = hw["ram_total_bytes"].u64();

    p.predicted.prefill_tok_s = root["predicted"]["prefill_tok_s"].rate();
    p.predicted.decode_tok_s = root["predicted"]["decode_tok_s"].rate();

    for (const Node& t : root["tensors"].items()) {
        TensorPlacement& out = p.tensors.emplace_back();
        out.name = t["name"].string();
        if (out.name.empty()) throw FormatError("placement $.tensors: empty tensor name");
        out.tier = t["tier"].tier();
    }
    for (const Node& s : root["ffn_splits"].items()) {
        FfnSplit& out = p.ffn_splits.emplace_back();
        out.layer = static_cast<int>(s["layer"].i64(0, kMaxInt));
        out.gpu_end = s["gpu_end"].i64(0, kMaxInt64);
        out.ram_end = s["ram_end"].i64(0, kMaxInt64);
    }
    // Optional: files without MoE layers placed per expert leave it out.
    if (root.has("expert_tiers")) {
        for (const Node& x : root["expert_tiers"].items()) {
            ExpertTiers& out = p.expert_tiers.emplace_back();
            out.layer = static_cast<int>(x["layer"].i64(0, kMaxInt));
            for (const Node& t : x["tiers"].items()) out.tiers.push_back(t.tier());
        }
    }
    for (const Node& k : root["kv"].items())
        p.kv.push_back(k.tier());
    if (version >= 2) {
        for (const Node& h : root["hot_neurons"].items()) p.hot_neurons.push_back(h.i64(0, kMaxInt64));
    }
    return p;
}

void write_placement(const Placement& placement, const std::string& path,
                     const TensorTable* table) {
    write_file_atomic(path, placement_to_json(placement, table), "placement file");
}

Placement read_placement(const std::string& path) {
    const std::string text = read_bounded_file(path, "placement file");
    try {
        return placement_from_json(text);
    } catch (const FormatError& e) {
        throw FormatError(cat(path, ": ", e.what()));
    }
}

}  // namespace strata

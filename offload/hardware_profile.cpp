// The hardware profile file: JSON in and out, validation, the per-thread-count views, where it
// is kept (hardware_profile.h). The measurements are in hardware_measure.cpp.
#include "offload/hardware_profile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"

namespace strata {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// ---- JSON ----

class Reader {
  public:
    // prefix: the path of `root` in the file ("cpu_at_threads.8."), for the messages.
    Reader(const Json& root, std::string_view source, std::string prefix = "")
        : root_(root), source_(source), prefix_(std::move(prefix)) {}

    const Json& field(const char* key, bool (Json::*is)() const, const char* what) const {
        const auto it = root_.find(key);
        if (it == root_.end()) fail(key, "missing");
        if (!((*it).*is)()) fail(key, cat("must be ", what));
        return *it;
    }
    std::string str(const char* key) const {
        return field(key, &Json::is_string, "a string").get<std::string>();
    }
    uint64_t u64(const char* key) const {
        return field(key, &Json::is_number_unsigned, "a non-negative integer").get<uint64_t>();
    }
    double rate(const char* key) const { return non_negative(key, field(key, &Json::is_number, "a number")); }
    bool has(const char* key) const { return root_.contains(key); }
    int64_t integer(std::string_view key, const Json& v) const {
        if (!v.is_number_integer()) fail(key, "must be an integer");
        return v.get<int64_t>();
    }
    std::map<std::string, double> rates(const char* key) const {
        std::map<std::string, double> out;
        for (const auto& [type, value] : field(key, &Json::is_object, "an object").items()) {
            const std::string path = cat(key, ".", type);
            if (!value.is_number()) fail(path, "must be a number");
            if (find_type_traits_by_name(type) == nullptr) fail(path, "is not a ggml type name");
            out[type] = non_negative(path, value);
        }
        return out;
    }
    // An object of ggml type names to kernel revisions (>= 1); absent: none recorded (a profile
    // written before revisions were: every rate counts as revision 1).
    std::map<std::string, int> revisions(const char* key) const {
        std::map<std::string, int> out;
        if (!has(key)) return out;
        for (const auto& [type, value] : field(key, &Json::is_object, "an object").items()) {
            const std::string path = cat(key, ".", type);
            if (find_type_traits_by_name(type) == nullptr) fail(path, "is not a ggml type name");
            const int64_t v = integer(path, value);
            if (v < 1 || v > 1000000) fail(path, cat("must be a revision from 1, got ", v));
            out[type] = static_cast<int>(v);
        }
        return out;
    }
    // An object of attention shapes ("32x8x128") to non-negative numbers.
    std::map<std::string, double> per_shape(const char* key) const {
        std::map<std::string, double> out;
        for (const auto& [shape, value] : field(key, &Json::is_object, "an object").items()) {
            const std::string path = cat(key, ".", shape);
            AttentionShape s;
            char tail = 0;
            if (std::sscanf(shape.c_str(), "%dx%dx%d%c", &s.n_head, &s.n_head_kv, &s.head_dim, &tail) != 3 ||
                attention_key(s) != shape) {
                fail(path, "is not an attention shape (heads x KV heads x head dim)");
            }
            if (!value.is_number()) fail(path, "must be a number");
            out[shape] = non_negative(path, value);
        }
        return out;
    }
    [[noreturn]] void fail(std::string_view key, const std::string& why) const {
        throw FormatError(cat("hardware profile ", source_, " $.", prefix_, key, ": ", why,
                              "; delete the file to measure again"));
    }
    std::string_view source() const { return source_; }

  private:
    double non_negative(std::string_view key, const Json& v) const {
        const double x = v.get<double>();
        if (!(x >= 0)) fail(key, cat("must be >= 0, got ", x));
        return x;
    }
    const Json& root_;
    std::string_view source_;
    std::string prefix_;
};

void put_rates(Json& j, const CpuRates& r) {
    j["host_read_gbs"] = r.host_read_gbs;
    j["cpu_gemv_gbs"] = r.cpu_gemv_gbs;
    j["cpu_gemv_revisions"] = r.cpu_gemv_revisions;
    j["cpu_op_us"] = r.cpu_op_us;
    j["cpu_gemv_floor_us"] = r.cpu_gemv_floor_us;
    j["cpu_gemv_tiny_floor_us"] = r.cpu_gemv_tiny_floor_us;
    j["cpu_attention_us"] = r.cpu_attention_us;
    j["cpu_attention_long_us"] = r.cpu_attention_long_us;
    j["cpu_prefill_gflops"] = r.cpu_prefill_gflops;
    j["cpu_prefill_wide_gflops"] = r.cpu_prefill_grid.wide;
    j["cpu_prefill_small_gflops"] = r.cpu_prefill_grid.small;
    j["cpu_prefill_small_wide_gflops"] = r.cpu_prefill_grid.small_wide;
    j["cpu_prefill_type_gflops"] = r.cpu_prefill_grid.by_type;
}

CpuRates read_rates(const Reader& r) {
    CpuRates c;
    c.host_read_gbs = r.rate("host_read_gbs");
    c.cpu_gemv_gbs = r.rates("cpu_gemv_gbs");
    c.cpu_gemv_revisions = r.revisions("cpu_gemv_revisions");
    c.cpu_op_us = r.rate("cpu_op_us");
    c.cpu_gemv_floor_us = r.rate("cpu_gemv_floor_us");
    c.cpu_gemv_tiny_floor_us = r.rate("cpu_gemv_tiny_floor_us");
    c.cpu_attention_us = r.per_shape("cpu_attention_us");
    c.cpu_attention_long_us = r.per_shape("cpu_attention_long_us");
    c.cpu_prefill_gflops = r.rate("cpu_prefill_gflops");
    c.cpu_prefill_grid.wide = r.rate("cpu_prefill_wide_gflops");
    c.cpu_prefill_grid.small = r.rate("cpu_prefill_small_gflops");
    c.cpu_prefill_grid.small_wide = r.rate("cpu_prefill_small_wide_gflops");
    c.cpu_prefill_grid.by_type = r.rates("cpu_prefill_type_gflops");
    return c;
}

void set_cpu_rates(HardwareProfile& p, const CpuRates& c) {
    p.host_read_gbs = c.host_read_gbs;
    p.cpu_gemv_gbs = c.cpu_gemv_gbs;
    p.cpu_gemv_revisions = c.cpu_gemv_revisions;
    p.cpu_op_us = c.cpu_op_us;
    p.cpu_gemv_floor_us = c.cpu_gemv_floor_us;
    p.cpu_gemv_tiny_floor_us = c.cpu_gemv_tiny_floor_us;
    p.cpu_attention_us = c.cpu_attention_us;
    p.cpu_attention_long_us = c.cpu_attention_long_us;
    p.cpu_prefill_gflops = c.cpu_prefill_gflops;
    p.cpu_prefill_grid = c.cpu_prefill_grid;
}

constexpr int kMaxThreads = 1 << 20;

// Queue depth 1..4096 and a block of a positive multiple of 4096 up to 1 GiB, as DiskStream
// takes them; FormatError naming `key` else.
void check_disk_config(const Reader& r, const std::string& key, int64_t queue_depth, int64_t block) {
    if (queue_depth < 1 || queue_depth > 4096) {
        r.fail(cat(key, "queue_depth"), cat("must be 1 to 4096, got ", queue_depth));
    }
    if (block < 4096 || block % 4096 != 0 || block > (1ll << 30)) {
        r.fail(cat(key, "block_bytes"), cat("must be a positive multiple of 4096 up to 1 GiB, got ", block));
    }
}

// $.disk_sweep, $.disk_queue_depth and $.disk_block_bytes: O_DIRECT points with positive rates,
// the chosen one among them; none (and 0, 0) otherwise.
void read_disk_config(const Reader& r, HardwareProfile& p) {
    for (const auto& [index, point] : r.field("disk_sweep", &Json::is_array, "an array").items()) {
        const std::string at = cat("disk_sweep[", index, "].");
        if (!point.is_object()) r.fail(cat("disk_sweep[", index, "]"), "must be an object");
        const auto get = [&](const char* key) -> const Json& {
            if (!point.contains(key)) r.fail(cat(at, key), "missing");
            return point.at(key);
        };
        DiskPoint d;
        const int64_t queue_depth = r.integer(cat(at, "queue_depth"), get("queue_depth"));
        const int64_t block = r.integer(cat(at, "block_bytes"), get("block_bytes"));
        check_disk_config(r, at, queue_depth, block);
        d.queue_depth = static_cast<int>(queue_depth);
        d.block_bytes = static_cast<uint64_t>(block);
        const Json& gbs = get("gbs");
        if (!gbs.is_number()) r.fail(cat(at, "gbs"), "must be a number");
        d.gbs = gbs.get<double>();
        if (!(d.gbs > 0)) r.fail(cat(at, "gbs"), cat("must be > 0, got ", d.gbs));
        p.disk_sweep.push_back(d);
    }
    const int64_t queue_depth = r.integer("disk_queue_depth", r.field("disk_queue_depth", &Json::is_number, "a number"));
    const int64_t block = r.integer("disk_block_bytes", r.field("disk_block_bytes", &Json::is_number, "a number"));
    if (p.disk_sweep.empty()) {
        if (queue_depth != 0) r.fail("disk_queue_depth", cat("must be 0 when disk_sweep is empty, got ", queue_depth));
        if (block != 0) r.fail("disk_block_bytes", cat("must be 0 when disk_sweep is empty, got ", block));
        return;
    }
    if (!p.disk_direct_io) r.fail("disk_sweep", "has points, but disk_direct_io is false (a sweep is O_DIRECT only)");
    check_disk_config(r, "disk_", queue_depth, block);
    p.disk_queue_depth = static_cast<int>(queue_depth);
    p.disk_block_bytes = static_cast<uint64_t>(block);
    const bool listed = std::any_of(p.disk_sweep.begin(), p.disk_sweep.end(), [&](const DiskPoint& d) {
        return d.queue_depth == p.disk_queue_depth && d.block_bytes == p.disk_block_bytes;
    });
    if (!listed) {
        r.fail("disk_queue_depth", cat(queue_depth, " x ", block, " bytes is not a point of disk_sweep"));
    }
}

}  // namespace

// ---- file ----

std::string profile_to_json(const HardwareProfile& p) {
    Json j;
    j["schema_version"] = p.schema_version;
    j["cpu_name"] = p.cpu_name;
    j["cpu_threads"] = p.cpu_threads;
    j["ram_total_bytes"] = p.ram_total_bytes;
    put_rates(j, cpu_rates(p));
    j["cpu_at_threads"] = Json::object();
    for (const auto& [threads, rates] : p.cpu_at_threads) put_rates(j["cpu_at_threads"][std::to_string(threads)], rates);
    j["disk_read_gbs"] = p.disk_read_gbs;
    j["disk_direct_io"] = p.disk_direct_io;
    j["disk_queue_depth"] = p.disk_queue_depth;
    j["disk_block_bytes"] = p.disk_block_bytes;
    j["disk_sweep"] = Json::array();
    for (const DiskPoint& d : p.disk_sweep) {
        j["disk_sweep"].push_back({{"queue_depth", d.queue_depth}, {"block_bytes", d.block_bytes}, {"gbs", d.gbs}});
    }
    j["gpu_name"] = p.gpu_name;
    j["gpu_total_bytes"] = p.gpu_total_bytes;
    j["gpu_read_gbs"] = p.gpu_read_gbs;
    j["gpu_gemv_gbs"] = p.gpu_gemv_gbs;
    j["h2d_gbs"] = p.h2d_gbs;
    j["h2d_staged_gbs"] = p.h2d_staged_gbs;
    j["d2h_gbs"] = p.d2h_gbs;
    j["transfer_latency_us"] = p.transfer_latency_us;
    j["gpu_op_us"] = p.gpu_op_us;
    j["gpu_gemv_floor_us"] = p.gpu_gemv_floor_us;
    j["gpu_gemv_tiny_floor_us"] = p.gpu_gemv_tiny_floor_us;
    j["gpu_graph_node_us"] = p.gpu_graph_node_us;
    j["gpu_attention_us"] = p.gpu_attention_us;
    j["gpu_attention_long_us"] = p.gpu_attention_long_us;
    j["gpu_prefill_gflops"] = p.gpu_prefill_gflops;
    return j.dump(2) + "\n";
}

HardwareProfile profile_from_json(std::string_view text, std::string_view source) {
    Json root;
    try {
        root = parse_json_bounded(text, cat("hardware profile ", source));
    } catch (const FormatError& e) {
        throw FormatError(cat(e.what(), "; delete the file to measure again"));
    }
    if (!root.is_object()) {
        throw FormatError(cat("hardware profile ", source, " must be a JSON object"));
    }
    const Reader r(root, source);
    HardwareProfile p;
    const uint64_t version = r.u64("schema_version");
    if (version != HardwareProfile::kSchemaVersion) {
        r.fail("schema_version", cat("is ", version, "; this Strata reads ",
                                     HardwareProfile::kSchemaVersion));
    }
    p.cpu_name = r.str("cpu_name");
    const uint64_t threads = r.u64("cpu_threads");
    if (threads > kMaxThreads) r.fail("cpu_threads", cat("is implausible: ", threads));
    p.cpu_threads = static_cast<int>(threads);
    p.ram_total_bytes = r.u64("ram_total_bytes");
    set_cpu_rates(p, read_rates(r));
    p.disk_read_gbs = r.rate("disk_read_gbs");
    p.disk_direct_io = r.field("disk_direct_io", &Json::is_boolean, "true or false").get<bool>();
    read_disk_config(r, p);
    p.gpu_name = r.str("gpu_name");
    p.gpu_total_bytes = r.u64("gpu_total_bytes");
    p.gpu_read_gbs = r.rate("gpu_read_gbs");
    p.gpu_gemv_gbs = r.rates("gpu_gemv_gbs");
    p.h2d_gbs = r.rate("h2d_gbs");
    p.h2d_staged_gbs = r.has("h2d_staged_gbs") ? r.rate("h2d_staged_gbs") : 0.0;  // absent before it was measured
    p.d2h_gbs = r.rate("d2h_gbs");
    p.transfer_latency_us = r.rate("transfer_latency_us");
    p.gpu_op_us = r.rate("gpu_op_us");
    p.gpu_gemv_floor_us = r.rate("gpu_gemv_floor_us");
    p.gpu_gemv_tiny_floor_us = r.rate("gpu_gemv_tiny_floor_us");
    p.gpu_graph_node_us = r.rate("gpu_graph_node_us");
    p.gpu_attention_us = r.per_shape("gpu_attention_us");
    p.gpu_attention_long_us = r.per_shape("gpu_attention_long_us");
    p.gpu_prefill_gflops = r.rate("gpu_prefill_gflops");
    for (const auto& [key, rates] : r.field("cpu_at_threads", &Json::is_object, "an object").items()) {
        const std::string path = cat("cpu_at_threads.", key);
        int n = 0;
        char tail = 0;
        if (std::sscanf(key.c_str(), "%d%c", &n, &tail) != 1 || std::to_string(n) != key || n < 1 || n > kMaxThreads) {
            r.fail(path, "is not a thread count");
        }
        if (n == p.cpu_threads) r.fail(path, "is cpu_threads, whose rates are the top-level ones");
        if (!rates.is_object()) r.fail(path, "must be an object");
        p.cpu_at_threads[n] = read_rates(Reader(rates, r.source(), path + "."));
    }
    return p;
}

CpuRates cpu_rates(const HardwareProfile& p) {
    return {.host_read_gbs = p.host_read_gbs,
            .cpu_gemv_gbs = p.cpu_gemv_gbs,
            .cpu_gemv_revisions = p.cpu_gemv_revisions,
            .cpu_op_us = p.cpu_op_us,
            .cpu_gemv_floor_us = p.cpu_gemv_floor_us,
            .cpu_gemv_tiny_floor_us = p.cpu_gemv_tiny_floor_us,
            .cpu_attention_us = p.cpu_attention_us,
            .cpu_attention_long_us = p.cpu_attention_long_us,
            .cpu_prefill_gflops = p.cpu_prefill_gflops,
            .cpu_prefill_grid = p.cpu_prefill_grid};
}

std::optional<HardwareProfile> at_threads(const HardwareProfile& p, int threads) {
    if (threads <= 0 || threads == p.cpu_threads) return p;
    const auto it = p.cpu_at_threads.find(threads);
    if (it == p.cpu_at_threads.end()) return std::nullopt;
    HardwareProfile view = p;
    view.cpu_threads = threads;
    set_cpu_rates(view, it->second);
    return view;
}

void keep_view(HardwareProfile& p, const HardwareProfile& view) {
    if (view.cpu_threads == p.cpu_threads) {
        set_cpu_rates(p, cpu_rates(view));
    } else {
        p.cpu_at_threads[view.cpu_threads] = cpu_rates(view);
    }
    p.gpu_attention_us = view.gpu_attention_us;
    p.gpu_attention_long_us = view.gpu_attention_long_us;
    p.gpu_gemv_gbs = view.gpu_gemv_gbs;
}

void save_profile(const HardwareProfile& profile, const std::string& path) {
    const fs::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    if (ec) throw SystemError(cat("cannot create ", target.parent_path().string(), ": ", ec.message()));
    write_file_atomic(path, profile_to_json(profile), "hardware profile");
}

HardwareProfile load_profile(const std::string& path) {
    const std::string text =
        read_bounded_file(path, "hardware profile", ReadOptions{kMaxJsonFileBytes, /*note_input=*/false});
    HardwareProfile p = profile_from_json(text, path);
    check_measured_profile(p, path);
    return p;
}

std::string default_profile_path() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg != nullptr && xdg[0] == '/') return cat(xdg, "/strata/hardware.json");
    const char* home = std::getenv("HOME");
    if (home == nullptr || home[0] == '\0') {
        throw ArgumentError("cannot place the hardware profile: set HOME or XDG_CACHE_HOME");
    }
    return cat(home, "/.cache/strata/hardware.json");
}

bool profile_matches(const HardwareProfile& profile, std::string_view gpu_name,
                     std::string_view cpu_name) {
    return profile.schema_version == HardwareProfile::kSchemaVersion &&
           profile.gpu_name == gpu_name && profile.cpu_name == cpu_name;
}

std::string attention_key(const AttentionShape& s) {
    if (s.n_head <= 0 || s.n_head_kv <= 0 || s.head_dim <= 0) return "";
    return cat(s.n_head, "x", s.n_head_kv, "x", s.head_dim);
}

double cpu_prefill_rate(double gflops, const CpuPrefillGrid& grid, std::string_view type, int64_t inputs,
                        double tokens) {
    const auto or_base = [&](double v) { return v > 0 ? v : gflops; };
    const double wide = or_base(grid.wide), small = or_base(grid.small);
    const double small_wide = grid.small_wide > 0 ? grid.small_wide : (gflops > 0 ? wide * small / gflops : 0.0);
    const auto share = [](double x, double lo, double hi) {
        return std::clamp(std::log2(std::max(x, 1.0) / lo) / std::log2(hi / lo), 0.0, 1.0);
    };
    const double fw = share(static_cast<double>(inputs), kPrefillInputs, kPrefillWideInputs);
    const double fb = share(tokens, kPrefillSmallBatch, kPrefillBatch);
    const double at_small = small + fw * (small_wide - small), at_full = gflops + fw * (wide - gflops);
    const auto t = grid.by_type.find(std::string(type));
    const double by_type = t != grid.by_type.end() && t->second > 0 && gflops > 0 ? t->second / gflops : 1.0;
    return (at_small + fb * (at_full - at_small)) * by_type * 1e9;
}

}  // namespace strata

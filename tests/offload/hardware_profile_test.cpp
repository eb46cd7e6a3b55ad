// Hardware profile: its JSON file (round trip, refusals naming the field), the cache path,
// matching, and that each CPU-side measurement returns a plausible number (never a speed
// threshold: the machine is shared).
#include "offload/hardware_profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

HardwareProfile sample_profile() {
    HardwareProfile p;
    p.cpu_name = "AMD Ryzen 7 7840HS w/ Radeon 780M Graphics";
    p.cpu_threads = 8;
    p.ram_total_bytes = 33554432000;
    p.host_read_gbs = 61.25;
    p.cpu_gemv_gbs = {{"q4_K", 48.5}, {"q6_K", 41.0}, {"f16", 30.125}};
    p.cpu_gemv_revisions = {{"q4_K", 1}, {"iq2_xs", 2}};
    p.cpu_op_us = 2.75;
    p.cpu_gemv_floor_us = 6.5;
    p.cpu_gemv_tiny_floor_us = 3.5;
    p.cpu_attention_us = {{"32x8x128", 21.25}, {"4x1x256", 9.5}};
    p.cpu_attention_long_us = {{"32x8x128", 61.25}, {"4x1x256", 19.5}};
    p.disk_read_gbs = 3.2;
    p.disk_direct_io = true;
    p.disk_sweep = {{4, 1u << 20, 2.875}, {16, 1u << 20, 3.2}, {8, 256u << 10, 1.5}};
    p.disk_queue_depth = 16;
    p.disk_block_bytes = 1u << 20;
    p.gpu_name = "NVIDIA GeForce RTX 4060 Laptop GPU";
    p.gpu_total_bytes = 8585216000;
    p.gpu_read_gbs = 230.5;
    p.gpu_gemv_gbs = {{"q4_K", 190.0}};
    p.h2d_gbs = 12.5;
    p.d2h_gbs = 13.25;
    p.transfer_latency_us = 18.5;
    p.gpu_op_us = 3.25;
    p.gpu_gemv_floor_us = 4.5;
    p.gpu_gemv_tiny_floor_us = 4.25;
    p.gpu_graph_node_us = 2.5;
    p.gpu_attention_us = {{"32x8x128", 11.75}};
    p.gpu_attention_long_us = {{"32x8x128", 14.5}};
    p.cpu_prefill_gflops = 310.0;
    p.cpu_prefill_grid = {.wide = 225.5, .small = 280.25, .small_wide = 240.0, .by_type = {{"q6_K", 270.75}}};
    p.gpu_prefill_gflops = 14000.0;
    // At 4 threads: half the bandwidth, other shapes measured.
    CpuRates four = cpu_rates(p);
    four.host_read_gbs = 40.5;
    four.cpu_gemv_gbs = {{"q4_K", 30.25}, {"f16", 20.0}};
    four.cpu_gemv_revisions = {{"f16", 3}};
    four.cpu_attention_us = {{"32x8x128", 35.5}};
    four.cpu_prefill_gflops = 160.0;
    p.cpu_at_threads[4] = four;
    return p;
}

// The sample's JSON with `key` replaced by `value` (raw JSON text) or removed (empty value).
std::string edited(const std::string& key, const std::string& value) {
    std::string text = profile_to_json(sample_profile());
    const size_t at = text.find("\"" + key + "\"");
    EXPECT_NE(at, std::string::npos) << key;
    const size_t colon = text.find(':', at);
    size_t end = colon + 1;
    int depth = 0;
    for (; end < text.size(); ++end) {
        const char c = text[end];
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') {
            if (depth == 0) break;
            --depth;
        }
        if (c == ',' && depth == 0) break;
    }
    if (value.empty()) {
        const size_t line = text.rfind('\n', at);
        return text.substr(0, line) + text.substr(end + (text[end] == ',' ? 1 : 0));
    }
    return text.substr(0, colon + 1) + " " + value + text.substr(end);
}

void expect_format_error(const std::string& text, const std::string& needle) {
    try {
        profile_from_json(text, "test.json");
        FAIL() << "accepted: " << text;
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(HardwareProfile, JsonRoundTrip) {
    const HardwareProfile p = sample_profile();
    EXPECT_EQ(profile_from_json(profile_to_json(p)), p);
    const HardwareProfile empty;
    EXPECT_EQ(profile_from_json(profile_to_json(empty)), empty);
}

TEST(HardwareProfile, SaveLoadRoundTrip) {
    test::ScratchDir dir;
    const std::string path = dir.file("sub/dir/hardware.json");
    save_profile(sample_profile(), path);
    EXPECT_EQ(load_profile(path), sample_profile());
    EXPECT_THROW(load_profile(dir.file("missing.json")), SystemError);
}

TEST(HardwareProfile, RefusesCorruptFiles) {
    const std::string good = profile_to_json(sample_profile());
    expect_format_error(good.substr(0, good.size() / 2), "not valid JSON");
    expect_format_error("[1, 2]", "JSON object");
    expect_format_error(edited("host_read_gbs", ""), "$.host_read_gbs: missing");
    expect_format_error(edited("host_read_gbs", "\"fast\""), "$.host_read_gbs: must be a number");
    expect_format_error(edited("disk_read_gbs", "-1.5"), "$.disk_read_gbs: must be >= 0");
    expect_format_error(edited("schema_version", "4"), "this Strata reads 5");
    expect_format_error(edited("cpu_prefill_small_wide_gflops", ""), "$.cpu_prefill_small_wide_gflops: missing");
    expect_format_error(edited("cpu_prefill_type_gflops", "{\"q6_K\": -1}"), "$.cpu_prefill_type_gflops.q6_K: must be >= 0");
    expect_format_error(edited("cpu_prefill_type_gflops", "{\"q9_K\": 1}"), "$.cpu_prefill_type_gflops.q9_K");
    expect_format_error(edited("gpu_op_us", ""), "$.gpu_op_us: missing");
    expect_format_error(edited("cpu_gemv_floor_us", "-2"), "$.cpu_gemv_floor_us: must be >= 0");
    expect_format_error(edited("gpu_attention_us", "{\"32x8\": 3}"), "$.gpu_attention_us.32x8: is not an attention shape");
    expect_format_error(edited("cpu_attention_us", "{\"32x8x128x\": 3}"), "is not an attention shape");
    expect_format_error(edited("cpu_attention_us", "{\"32x8x128\": -3}"), "$.cpu_attention_us.32x8x128: must be >= 0");
    expect_format_error(edited("cpu_gemv_gbs", "{\"q4_Z\": 3}"), "$.cpu_gemv_gbs.q4_Z");
    expect_format_error(edited("gpu_gemv_gbs", "{\"q4_K\": null}"), "$.gpu_gemv_gbs.q4_K");
    expect_format_error(edited("disk_direct_io", "1"), "true or false");
    expect_format_error(edited("gpu_total_bytes", "-5"), "non-negative integer");
    // Rates at other thread counts: keyed by a count other than cpu_threads, the same fields.
    expect_format_error(edited("cpu_at_threads", ""), "$.cpu_at_threads: missing");
    expect_format_error(edited("cpu_at_threads", "[]"), "$.cpu_at_threads: must be an object");
    expect_format_error(edited("cpu_at_threads", "{\"four\": {}}"), "$.cpu_at_threads.four: is not a thread count");
    expect_format_error(edited("cpu_at_threads", "{\"04\": {}}"), "$.cpu_at_threads.04: is not a thread count");
    expect_format_error(edited("cpu_at_threads", "{\"0\": {}}"), "$.cpu_at_threads.0: is not a thread count");
    expect_format_error(edited("cpu_at_threads", "{\"8\": {}}"), "$.cpu_at_threads.8: is cpu_threads");
    expect_format_error(edited("cpu_at_threads", "{\"4\": 3}"), "$.cpu_at_threads.4: must be an object");
    expect_format_error(edited("cpu_at_threads", "{\"4\": {}}"), "$.cpu_at_threads.4.host_read_gbs: missing");
    HardwareProfile bad = sample_profile();
    bad.cpu_at_threads[4].cpu_op_us = -1;
    expect_format_error(profile_to_json(bad), "$.cpu_at_threads.4.cpu_op_us: must be >= 0");
    test::ScratchDir dir;
    const std::string path = dir.file("hardware.json");
    std::ofstream(path) << "{\"schema_version\": 3,";
    try {
        load_profile(path);
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

// h2d_staged_gbs (measured since the twenty-seventh session) may be absent: an older profile
// reads as 0, which the cost model takes as h2d_gbs. Present, it is checked like every rate.
TEST(HardwareProfile, StagedCopyRateIsOptionalButChecked) {
    EXPECT_EQ(profile_from_json(edited("h2d_staged_gbs", "")).h2d_staged_gbs, 0.0);
    EXPECT_EQ(profile_from_json(edited("h2d_staged_gbs", "31.5")).h2d_staged_gbs, 31.5);
    expect_format_error(edited("h2d_staged_gbs", "-1"), "$.h2d_staged_gbs: must be >= 0");
    expect_format_error(edited("h2d_staged_gbs", "\"fast\""), "$.h2d_staged_gbs: must be a number");
}

// cpu_gemv_revisions (kept since the thirty-first session) may be absent: an older profile
// reads as no revisions, which count as 1. Present, each is a type name to a revision >= 1.
TEST(HardwareProfile, KernelRevisionsAreOptionalButChecked) {
    EXPECT_TRUE(profile_from_json(edited("cpu_gemv_revisions", "")).cpu_gemv_revisions.empty());
    EXPECT_EQ(profile_from_json(edited("cpu_gemv_revisions", "{\"iq1_m\": 4}")).cpu_gemv_revisions,
              (std::map<std::string, int>{{"iq1_m", 4}}));
    expect_format_error(edited("cpu_gemv_revisions", "{\"iq1_m\": 0}"), "$.cpu_gemv_revisions.iq1_m: must be a revision from 1");
    expect_format_error(edited("cpu_gemv_revisions", "{\"iq1_m\": 1.5}"), "$.cpu_gemv_revisions.iq1_m: must be an integer");
    expect_format_error(edited("cpu_gemv_revisions", "{\"q4_Z\": 1}"), "$.cpu_gemv_revisions.q4_Z: is not a ggml type name");
    expect_format_error(edited("cpu_gemv_revisions", "[1]"), "$.cpu_gemv_revisions: must be an object");
}

TEST(HardwareProfile, RatesAtOtherThreadCounts) {
    const HardwareProfile p = sample_profile();
    EXPECT_EQ(at_threads(p, 0), p);
    EXPECT_EQ(at_threads(p, 8), p);
    EXPECT_EQ(at_threads(p, 2), std::nullopt);
    const std::optional<HardwareProfile> four = at_threads(p, 4);
    ASSERT_TRUE(four);
    EXPECT_EQ(four->cpu_threads, 4);
    EXPECT_EQ(cpu_rates(*four), p.cpu_at_threads.at(4));
    EXPECT_EQ(four->gpu_gemv_gbs, p.gpu_gemv_gbs);  // the GPU half is the same
    EXPECT_EQ(four->disk_read_gbs, p.disk_read_gbs);

    // What a run at 4 threads measures further goes back under 4; the GPU's attention and a
    // model's weight type on the GPU too.
    HardwareProfile view = *four;
    view.cpu_attention_us["4x1x256"] = 12.5;
    view.gpu_attention_us["4x1x256"] = 30.0;
    view.cpu_gemv_gbs["iq2_xs"] = 11.5;
    view.gpu_gemv_gbs["iq2_xs"] = 950.0;
    HardwareProfile kept = p;
    keep_view(kept, view);
    EXPECT_EQ(kept.cpu_at_threads.at(4).cpu_attention_us.at("4x1x256"), 12.5);
    EXPECT_EQ(kept.gpu_attention_us.at("4x1x256"), 30.0);
    EXPECT_EQ(kept.cpu_at_threads.at(4).cpu_gemv_gbs.at("iq2_xs"), 11.5);
    EXPECT_FALSE(kept.cpu_gemv_gbs.contains("iq2_xs"));
    EXPECT_EQ(kept.gpu_gemv_gbs.at("iq2_xs"), 950.0);
    EXPECT_EQ(cpu_rates(kept), cpu_rates(p));  // the 8-thread rates untouched
    EXPECT_EQ(cpu_rates(*at_threads(kept, 4)), cpu_rates(view));
    // A view at the profile's own count writes the top-level rates.
    HardwareProfile own = p;
    own.cpu_op_us = 1.5;
    HardwareProfile kept8 = p;
    keep_view(kept8, own);
    EXPECT_EQ(kept8, own);
}

TEST(HardwareProfile, RefusesBadDiskSweeps) {
    // The chosen configuration: positive, DiskStream's limits, one of the sweep's points.
    expect_format_error(edited("disk_queue_depth", "-3"), "$.disk_queue_depth: must be 1 to 4096, got -3");
    expect_format_error(edited("disk_queue_depth", "0"), "$.disk_queue_depth: must be 1 to 4096, got 0");
    expect_format_error(edited("disk_queue_depth", "2.5"), "$.disk_queue_depth: must be an integer");
    expect_format_error(edited("disk_queue_depth", "\"16\""), "$.disk_queue_depth: must be a number");
    expect_format_error(edited("disk_queue_depth", "32"), "$.disk_queue_depth: 32 x 1048576 bytes is not a point");
    expect_format_error(edited("disk_block_bytes", "0"), "$.disk_block_bytes: must be a positive multiple of 4096");
    expect_format_error(edited("disk_block_bytes", "1000"), "$.disk_block_bytes: must be a positive multiple of 4096 up to 1 GiB, got 1000");
    expect_format_error(edited("disk_block_bytes", ""), "$.disk_block_bytes: missing");
    // The points.
    expect_format_error(edited("disk_sweep", ""), "$.disk_sweep: missing");
    expect_format_error(edited("disk_sweep", "{}"), "$.disk_sweep: must be an array");
    expect_format_error(edited("disk_sweep", "[5]"), "$.disk_sweep[0]: must be an object");
    const std::string chosen = R"({"queue_depth": 16, "block_bytes": 1048576, "gbs": 3.2})";
    const auto sweep = [&](const std::string& point) { return "[" + chosen + ", " + point + "]"; };
    const std::pair<const char*, const char*> bad_points[] = {
        {R"({"queue_depth": 4, "block_bytes": 1048576, "gbs": 0})", "$.disk_sweep[1].gbs: must be > 0, got 0"},
        {R"({"queue_depth": 4, "block_bytes": 1048576, "gbs": -2})", "$.disk_sweep[1].gbs: must be > 0, got -2"},
        {R"({"queue_depth": 4, "block_bytes": 1048576, "gbs": "x"})", "$.disk_sweep[1].gbs: must be a number"},
        {R"({"queue_depth": 0, "block_bytes": 1048576, "gbs": 1})", "$.disk_sweep[1].queue_depth: must be 1 to 4096, got 0"},
        {R"({"queue_depth": 4, "block_bytes": -4096, "gbs": 1})",
         "$.disk_sweep[1].block_bytes: must be a positive multiple of 4096 up to 1 GiB, got -4096"},
        {R"({"queue_depth": 4, "gbs": 1})", "$.disk_sweep[1].block_bytes: missing"},
    };
    for (const auto& [point, error] : bad_points) expect_format_error(edited("disk_sweep", sweep(point)), error);
    // No sweep: no chosen point; a sweep: O_DIRECT only.
    expect_format_error(edited("disk_sweep", "[]"), "$.disk_queue_depth: must be 0 when disk_sweep is empty, got 16");
    expect_format_error(edited("disk_direct_io", "false"), "$.disk_sweep: has points, but disk_direct_io is false");
    EXPECT_EQ(profile_from_json(edited("disk_sweep", sweep(chosen))).disk_sweep.size(), 2u);
}

TEST(HardwareProfile, DefaultPathAndMatching) {
    const char* old_xdg = std::getenv("XDG_CACHE_HOME");
    const std::string saved = old_xdg ? old_xdg : "";
    setenv("XDG_CACHE_HOME", "/var/cache/u", 1);
    EXPECT_EQ(default_profile_path(), "/var/cache/u/strata/hardware.json");
    unsetenv("XDG_CACHE_HOME");
    if (const char* home = std::getenv("HOME")) {
        EXPECT_EQ(default_profile_path(), std::string(home) + "/.cache/strata/hardware.json");
    }
    if (old_xdg) setenv("XDG_CACHE_HOME", saved.c_str(), 1);

    const HardwareProfile p = sample_profile();
    EXPECT_TRUE(profile_matches(p, p.gpu_name, p.cpu_name));
    EXPECT_FALSE(profile_matches(p, "NVIDIA H100", p.cpu_name));
    EXPECT_FALSE(profile_matches(p, "", p.cpu_name));
    EXPECT_FALSE(profile_matches(p, p.gpu_name, "Intel Xeon"));
}

TEST(HardwareProfile, ThisMachine) {
    EXPECT_FALSE(cpu_model_name().empty());
    EXPECT_GT(host_ram_total_bytes(), 64ull << 20);
}

TEST(HardwareProfile, HostReadIsPlausible) {
    const double gbs = measure_host_read_gbs(2, std::chrono::duration<double>(0.05), 128ull << 20);
    EXPECT_GT(gbs, 0.05);
    EXPECT_LT(gbs, 10000.0);
}

TEST(HardwareProfile, CpuMatmulRatesArePlausible) {
    cpu::CpuBackend cpu(1);
    MatmulMeasureOptions o;
    o.weight_bytes = 4ull << 20;
    o.budget = std::chrono::duration<double>(0.01);
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F16}) {
        const double gbs = measure_cpu_gemv_gbs(cpu, type, o);
        EXPECT_GT(gbs, 0.01) << type_traits(type).name;
        EXPECT_LT(gbs, 10000.0) << type_traits(type).name;
    }
    o.n_tokens = 16;
    const double gflops = measure_cpu_prefill_gflops(cpu, GgmlType::Q4_K, o);
    EXPECT_GT(gflops, 0.01);
    EXPECT_LT(gflops, 1e6);
}

// The prompt-pass rate of a product: cpu_prefill_gflops at 4096 inputs and 64 tokens, the grid's
// measured corners at 28672 inputs and 8 tokens, on lines in log2 between (clamped outside), by
// the type's rate over q4_K's; corners not measured take cpu_prefill_gflops.
TEST(HardwareProfile, CpuPrefillRateFollowsWidthBatchAndType) {
    const CpuPrefillGrid g{.wide = 100, .small = 200, .small_wide = 50, .by_type = {{"q6_K", 150}}};
    const auto at = [&](std::string_view type, int64_t inputs, double tokens) {
        return cpu_prefill_rate(300, g, type, inputs, tokens) / 1e9;
    };
    EXPECT_DOUBLE_EQ(at("q4_K", 4096, 64), 300);
    EXPECT_DOUBLE_EQ(at("q4_K", 1024, 512), 300);
    EXPECT_DOUBLE_EQ(at("q4_K", 28672, 64), 100);
    EXPECT_DOUBLE_EQ(at("q4_K", 65536, 2048), 100);
    EXPECT_DOUBLE_EQ(at("q4_K", 4096, 8), 200);
    EXPECT_DOUBLE_EQ(at("q4_K", 4096, 2), 200);
    EXPECT_DOUBLE_EQ(at("q4_K", 28672, 8), 50);
    // 4096 * sqrt(7) inputs: halfway in log2; 8 * sqrt(8) tokens: halfway.
    const int64_t mid_k = std::llround(4096 * std::sqrt(7.0));
    EXPECT_NEAR(at("q4_K", mid_k, 64), 200, 0.01);
    EXPECT_NEAR(at("q4_K", 4096, 8 * std::sqrt(8.0)), 250, 1e-9);
    EXPECT_NEAR(at("q4_K", mid_k, 8 * std::sqrt(8.0)), (200 + 125) / 2.0, 0.01);
    // q6_K at half q4_K's narrow rate: half everywhere; an unmeasured type: q4_K's.
    EXPECT_DOUBLE_EQ(at("q6_K", 28672, 8), 25);
    EXPECT_DOUBLE_EQ(at("q8_0", 28672, 8), 50);
    // An empty grid: cpu_prefill_gflops at every shape.
    EXPECT_DOUBLE_EQ(cpu_prefill_rate(300, {}, "q6_K", 28672, 8), 300e9);
    const CpuPrefillGrid only_wide{.wide = 150};
    EXPECT_DOUBLE_EQ(cpu_prefill_rate(300, only_wide, "q4_K", 28672, 8), 150e9);
}

// The profile's prompt-pass grid on this machine: every corner and each multiplied type measured
// and plausible.
TEST(HardwareProfile, CpuPrefillGridIsMeasured) {
    cpu::CpuBackend cpu(2);
    CpuProfileOptions o;
    o.budget_per_step = std::chrono::duration<double>(0.02);
    o.gemv_bytes = 8ull << 20;
    o.types = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
    const HardwareProfile p = measure_cpu_profile(cpu, o);
    for (const double r : {p.cpu_prefill_gflops, p.cpu_prefill_grid.wide, p.cpu_prefill_grid.small,
                           p.cpu_prefill_grid.small_wide}) {
        EXPECT_GT(r, 0.01);
        EXPECT_LT(r, 1e6);
    }
    EXPECT_EQ(p.cpu_prefill_grid.by_type.size(), 2u);
    for (const auto& [type, r] : p.cpu_prefill_grid.by_type) EXPECT_GT(r, 0.01) << type;
}

TEST(HardwareProfile, CpuOpCostsArePlausible) {
    cpu::CpuBackend cpu(2);
    MatmulMeasureOptions o;
    o.weight_bytes = 24ull << 20;  // 10 slices of 2048 q4_K rows
    o.budget = std::chrono::duration<double>(0.01);
    const double gbs = measure_cpu_gemv_gbs(cpu, GgmlType::Q4_K, o);
    const OpCosts c = measure_cpu_op_costs(cpu, gbs, o);
    // An add of 4096 floats takes between a nanosecond per element and a millisecond.
    EXPECT_GT(c.op_us, 0.0);
    EXPECT_LT(c.op_us, 1000.0);
    // (The floors are clamped at 0 by construction; only their upper bounds can slip.)
    // Under a second: on a loaded 2-core machine (ctest -j2) a 2-thread product waits for time
    // slices at its barriers, 18 ms measured; a unit slip (seconds for µs) is 1e6 times off.
    EXPECT_LT(c.gemv_floor_us, 1e6);
    EXPECT_LT(c.gemv_tiny_floor_us, 1e6);
    // Without a rate to subtract, the floor is the whole product: at least its bytes at any
    // plausible speed (4.7 MB at 1 TB/s is 4.7 us; the 256-row slice, 590 KB, 0.59 us).
    const OpCosts whole = measure_cpu_op_costs(cpu, 0, o);
    EXPECT_GT(whole.gemv_floor_us, 4.7);
    EXPECT_GT(whole.gemv_tiny_floor_us, 0.5);
    // 32 heads over 64 cells of 8 x 128 f16 (256 KiB of K and V): far under a second.
    const double attention = measure_attention_us(cpu, {32, 8, 128}, 64, o.budget);
    EXPECT_GT(attention, 0.05);
    EXPECT_LT(attention, 1e6);
    EXPECT_GT(measure_attention_us(cpu, {4, 1, 256}, 16, o.budget), 0.05);
    EXPECT_THROW(measure_attention_us(cpu, {32, 0, 128}, 64, o.budget), ArgumentError);
    EXPECT_THROW(measure_attention_us(cpu, {30, 8, 128}, 64, o.budget), ArgumentError);  // 30 % 8
    EXPECT_THROW(measure_attention_us(cpu, {32, 8, 128}, 0, o.budget), ArgumentError);
    EXPECT_EQ(attention_key({32, 8, 128}), "32x8x128");
    EXPECT_EQ(attention_key({32, 0, 128}), "");
}

}  // namespace
}  // namespace strata

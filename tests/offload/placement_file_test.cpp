// The placement JSON file: round trips, and a FormatError naming the path for each malformed field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/core/error.h"
#include "offload/placement_file.h"
#include "placement_test_util.h"

namespace strata {
namespace {

using Json = nlohmann::json;

Placement sample_placement() {
    Placement p;
    p.model = {41'234'567'890ull, "0123456789abcdeffedcba9876543210"};
    p.budgets = {6ull << 30, 24ull << 30};
    p.n_ctx = 4096;
    p.kv_type = GgmlType::Q8_0;
    p.hardware = {"NVIDIA \"RTX\" 4060 Laptop", 8ull << 30, "AMD Ryzen 7 7840HS", 16, 32ull << 30};
    p.predicted = {123.456, 0.1 + 0.2};
    p.tensors = {{"token_embd.weight", Tier::Ram},
                 {"blk.0.attn_q.weight", Tier::Gpu},
                 {"blk.1.ffn_up.weight", Tier::Disk}};
    p.ffn_splits = {{0, 256, 1024}, {7, 0, 512}};
    p.kv = {Tier::Gpu, Tier::Ram};
    return p;
}

void expect_equal(const Placement& a, const Placement& b) {
    EXPECT_EQ(a.model, b.model);
    EXPECT_EQ(a.budgets, b.budgets);
    EXPECT_EQ(a.n_ctx, b.n_ctx);
    EXPECT_EQ(a.kv_type, b.kv_type);
    EXPECT_EQ(a.hardware.gpu_name, b.hardware.gpu_name);
    EXPECT_EQ(a.hardware.gpu_total_bytes, b.hardware.gpu_total_bytes);
    EXPECT_EQ(a.hardware.cpu_name, b.hardware.cpu_name);
    EXPECT_EQ(a.hardware.cpu_threads, b.hardware.cpu_threads);
    EXPECT_EQ(a.hardware.ram_total_bytes, b.hardware.ram_total_bytes);
    EXPECT_EQ(a.predicted.prefill_tok_s, b.predicted.prefill_tok_s);  // exact: JSON round-trips
    EXPECT_EQ(a.predicted.decode_tok_s, b.predicted.decode_tok_s);
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
        EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
        EXPECT_EQ(a.tensors[i].tier, b.tensors[i].tier);
    }
    ASSERT_EQ(a.ffn_splits.size(), b.ffn_splits.size());
    for (size_t i = 0; i < a.ffn_splits.size(); ++i) {
        EXPECT_EQ(a.ffn_splits[i].layer, b.ffn_splits[i].layer);
        EXPECT_EQ(a.ffn_splits[i].gpu_end, b.ffn_splits[i].gpu_end);
        EXPECT_EQ(a.ffn_splits[i].ram_end, b.ffn_splits[i].ram_end);
    }
    EXPECT_EQ(a.kv, b.kv);
}

TEST(PlacementFile, RoundTrips) {
    const Placement p = sample_placement();
    const std::string text = placement_to_json(p);
    const Placement back = placement_from_json(text);
    expect_equal(p, back);
    EXPECT_EQ(placement_to_json(back), text);
    // One tensor per line, for people reading and diffing plans.
    EXPECT_NE(text.find("\n    {\"name\":\"blk.0.attn_q.weight\",\"tier\":\"gpu\"},\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(Json::parse(text)["kv_type"], "q8_0");
}

TEST(PlacementFile, RoundTripsEmptyLists) {
    Placement p;
    p.n_ctx = 1;
    expect_equal(p, placement_from_json(placement_to_json(p)));
}

TEST(PlacementFile, WritesAByteSummaryThatReadersIgnore) {
    const TensorTable table = test::make_llama_table(test::LlamaShape{});
    Placement p = test::whole_placement(table, Tier::Disk);
    p.tensors[0].tier = Tier::Gpu;  // token_embd
    p.kv = {Tier::Gpu, Tier::Ram};
    const Json doc = Json::parse(placement_to_json(p, &table));
    uint64_t total = 0;
    for (const TensorEntry& e : table.tensors)
        total += e.bytes;
    EXPECT_EQ(doc["bytes"]["gpu"], table.tensors[0].bytes);
    EXPECT_EQ(doc["bytes"]["ram"], 0u);
    EXPECT_EQ(doc["bytes"]["disk"], total - table.tensors[0].bytes);
    EXPECT_EQ(doc["bytes"]["kv_gpu"], kv_bytes_per_layer(table, 0, p.n_ctx, p.kv_type));
    EXPECT_EQ(doc["bytes"]["kv_ram"], kv_bytes_per_layer(table, 1, p.n_ctx, p.kv_type));
    expect_equal(p, placement_from_json(placement_to_json(p, &table)));
}

// Version 2: per-layer hot neuron counts (issue 19); a plan without them stays version 1.
TEST(PlacementFile, HotNeuronCountsMakeVersion2) {
    Placement p = sample_placement();
    EXPECT_EQ(Json::parse(placement_to_json(p))["schema_version"], 1);
    p.hot_neurons.assign(p.kv.size(), 0);
    p.hot_neurons.front() = 512;
    const Json doc = Json::parse(placement_to_json(p));
    EXPECT_EQ(doc["schema_version"], 2);
    const Placement back = placement_from_json(placement_to_json(p));
    EXPECT_EQ(back.hot_neurons, p.hot_neurons);
    expect_equal(p, back);
    Json bad = doc;
    bad["hot_neurons"][0] = -1;
    EXPECT_THROW(placement_from_json(bad.dump()), FormatError);
}

TEST(PlacementFile, WritesAndReadsFiles) {
    test::ScratchDir dir;
    const Placement p = sample_placement();
    write_placement(p, dir.file("plan.json"));
    expect_equal(p, read_placement(dir.file("plan.json")));
    EXPECT_THROW(read_placement(dir.file("absent.json")), SystemError);
    EXPECT_THROW(write_placement(p, dir.file("no/such/dir/plan.json")), SystemError);

    std::ofstream(dir.file("bad.json")) << "{\"schema_version\": 1}";
    try {
        read_placement(dir.file("bad.json"));
        FAIL() << "accepted";
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(dir.file("bad.json") + ": ", 0), 0u) << e.what();
    }
}

struct Malformed {
    const char* pointer;        // JSON pointer of the field to change
    std::optional<Json> value;  // nullopt: remove the field
    const char* message;        // a part of the error message
};

TEST(PlacementFile, RefusesEveryMalformedField) {
    const std::vector<Malformed> cases = {
        {"/schema_version", std::nullopt, "$: missing field \"schema_version\""},
        {"/schema_version", 3, "version 3 is not supported (this Strata reads versions 1 to 2)"},
        {"/schema_version", 0, "version 0 is not supported"},
        {"/schema_version", 2, "$: missing field \"hot_neurons\""},  // version 2 has hot neuron counts
        {"/schema_version", "1", "$.schema_version: expected a non-negative integer"},
        {"/model", std::nullopt, "$: missing field \"model\""},
        {"/model", Json::array(), "$.model: expected an object"},
        {"/model/file_bytes", -1, "$.model.file_bytes: expected a non-negative integer"},
        {"/model/file_bytes", 1.5, "$.model.file_bytes"},
        {"/model/header_hash", 5, "$.model.header_hash: expected a string, got number 5"},
        {"/model/header_hash", std::nullopt, "$.model: missing field \"header_hash\""},
        {"/budgets/gpu_bytes", "6G", "$.budgets.gpu_bytes"},
        {"/budgets/ram_bytes", std::nullopt, "$.budgets: missing field \"ram_bytes\""},
        {"/n_ctx", 0, "$.n_ctx: expected an integer in [1, "},
        {"/n_ctx", -5, "$.n_ctx"},
        {"/n_ctx", 18446744073709551615ull, "$.n_ctx"},
        {"/kv_type", "q9_9", "$.kv_type: unknown ggml type \"q9_9\""},
        {"/kv_type", 1, "$.kv_type: expected a string"},
        {"/hardware", std::nullopt, "$: missing field \"hardware\""},
        {"/hardware/gpu_name", nullptr, "$.hardware.gpu_name: expected a string, got null"},
        {"/hardware/cpu_threads", -1, "$.hardware.cpu_threads"},
        {"/hardware/cpu_threads", 4294967296ull, "$.hardware.cpu_threads"},
        {"/hardware/ram_total_bytes", std::nullopt, "missing field \"ram_total_bytes\""},
        {"/hardware/gpu_total_bytes", true, "$.hardware.gpu_total_bytes"},
        {"/predicted/decode_tok_s", "fast", "$.predicted.decode_tok_s: expected a non-negative"},
        {"/predicted/prefill_tok_s", -1.0, "$.predicted.prefill_tok_s"},
        {"/tensors", Json::object(), "$.tensors: expected an array"},
        {"/tensors", std::nullopt, "$: missing field \"tensors\""},
        {"/tensors/1/tier", "vram", "$.tensors[1].tier: unknown tier \"vram\""},
        {"/tensors/1/tier", 0, "$.tensors[1].tier: expected a string"},
        {"/tensors/0/name", std::nullopt, "$.tensors[0]: missing field \"name\""},
        {"/tensors/0/name", "", "empty tensor name"},
        {"/tensors/2", "blk.1.ffn_up.weight", "$.tensors[2]: expected an object"},
        {"/ffn_splits/0/layer", -1, "$.ffn_splits[0].layer"},
        {"/ffn_splits/1/layer", 4294967296ull, "$.ffn_splits[1].layer"},
        {"/ffn_splits/0/gpu_end", 2.5, "$.ffn_splits[0].gpu_end"},
        {"/ffn_splits/0/ram_end", std::nullopt, "$.ffn_splits[0]: missing field \"ram_end\""},
        {"/ffn_splits", nullptr, "$.ffn_splits: expected an array"},
        {"/kv/0", "floppy", "$.kv[0]: unknown tier \"floppy\""},
        {"/kv", "gpu", "$.kv: expected an array"},
        {"", Json::array(), "$: expected an object"},
    };
    const Json valid = Json::parse(placement_to_json(sample_placement()));
    for (const Malformed& c : cases) {
        Json doc = valid;
        const Json::json_pointer at(c.pointer);
        if (c.value) {
            doc[at] = *c.value;
        } else {
            doc[at.parent_pointer()].erase(at.back());
        }
        try {
            placement_from_json(doc.dump());
            ADD_FAILURE() << c.pointer << ": accepted";
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
                << c.pointer << ": " << e.what();
        }
    }
}

TEST(PlacementFile, RefusesInvalidJson) {
    for (const char* text : {"", "{", "not json", "{\"schema_version\": 1} trailing", "[1,]"}) {
        try {
            placement_from_json(text);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace strata

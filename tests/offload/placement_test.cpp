// Placement look-ups, bytes per tier, and check_placement's refusals.
#include <gtest/gtest.h>

#include <functional>

#include "engine/core/error.h"
#include "offload/placement.h"
#include "placement_test_util.h"

namespace strata {
namespace {

using test::LlamaShape;
using test::make_llama_table;
using test::whole_placement;

// Layer 0's FFN split into three tiers; everything else in RAM.
Placement split_placement(const TensorTable& table, const FfnSplit& split) {
    Placement p = whole_placement(table, Tier::Ram);
    std::erase_if(p.tensors, [&](const TensorPlacement& t) {
        return t.name.starts_with("blk." + std::to_string(split.layer) + ".ffn_") &&
               !t.name.ends_with("norm.weight");
    });
    p.ffn_splits.push_back(split);
    return p;
}

TEST(Placement, LooksUpTiersAndSplits) {
    Placement p;
    p.tensors = {{"a", Tier::Gpu}, {"b", Tier::Disk}};
    p.ffn_splits = {{3, 256, 512}};
    EXPECT_EQ(p.tier_of("a"), Tier::Gpu);
    EXPECT_EQ(p.tier_of("b"), Tier::Disk);
    EXPECT_FALSE(p.tier_of("c").has_value());
    ASSERT_NE(p.ffn_split(3), nullptr);
    EXPECT_EQ(p.ffn_split(3)->ram_end, 512);
    EXPECT_EQ(p.ffn_split(2), nullptr);
}

TEST(Placement, TensorLayer) {
    EXPECT_EQ(tensor_layer("blk.0.attn_q.weight"), 0);
    EXPECT_EQ(tensor_layer("blk.79.ffn_down.weight"), 79);
    EXPECT_EQ(tensor_layer("token_embd.weight"), -1);
    EXPECT_EQ(tensor_layer("blk.x.attn_q.weight"), -1);
    EXPECT_EQ(tensor_layer("blk.12"), -1);
    EXPECT_EQ(tensor_layer("blk..a"), -1);
}

TEST(Placement, FfnSlicesAddUpToTheTensors) {
    // down in Q8_0 (block 32) with n_ff = 544: granule 256 from gate/up, and n_ff itself is a
    // valid boundary although it is no multiple of 256.
    LlamaShape s;
    s.n_ff = 544;
    s.big_type = GgmlType::Q8_0;
    const TensorTable table = make_llama_table(s);
    const auto ffn = find_ffn_tensors(table, 1);
    ASSERT_TRUE(ffn.has_value());
    EXPECT_EQ(ffn->n_ff, 544);
    EXPECT_EQ(ffn->granule, 256);
    const uint64_t whole = ffn->gate->bytes + ffn->up->bytes + ffn->down->bytes;
    EXPECT_EQ(ffn_slice_bytes(*ffn, 0, 544), whole);
    EXPECT_EQ(ffn_slice_bytes(*ffn, 0, 256) + ffn_slice_bytes(*ffn, 256, 512) +
                  ffn_slice_bytes(*ffn, 512, 544),
              whole);
    EXPECT_EQ(ffn_slice_bytes(*ffn, 256, 256), 0u);

    const Placement p = split_placement(table, {1, 256, 512});
    check_placement(p, table, p.model);
    const TierBytes bytes = placement_bytes(p, table);
    uint64_t total = 0;
    for (const TensorEntry& e : table.tensors)
        total += e.bytes;
    EXPECT_EQ(bytes.gpu + bytes.ram + bytes.disk, total);
    EXPECT_EQ(bytes.gpu, ffn_slice_bytes(*ffn, 0, 256));
    EXPECT_EQ(bytes.disk, ffn_slice_bytes(*ffn, 512, 544));
    // The GPU slice holds 256 of 544 neurons: 256/544 of each tensor's bytes.
    EXPECT_EQ(bytes.gpu * 544, whole * 256);
}

TEST(Placement, FfnOfALayerWithoutGateIsNotSplittable) {
    TensorTable table = make_llama_table(LlamaShape{});
    std::erase_if(table.tensors,
                  [](const TensorEntry& e) { return e.name == "blk.1.ffn_gate.weight"; });
    EXPECT_TRUE(find_ffn_tensors(table, 0).has_value());
    EXPECT_FALSE(find_ffn_tensors(table, 1).has_value());
}

TEST(Placement, KvBytesFollowAttnWidths) {
    const TensorTable table = make_llama_table(test::llama2_70b_shape());
    // 8 KV heads of 128: 1024 f16 values per cell for K and for V.
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 4096, GgmlType::F16), 2ull * 4096 * 1024 * 2);
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 4096, GgmlType::Q8_0), 2ull * 4096 * 1024 / 32 * 34);
    EXPECT_THROW(kv_bytes_per_layer(table, 80, 4096, GgmlType::F16), ArgumentError);
}

TEST(Placement, SlidingWindowLayersCountOnlyTheirRing) {
    TensorTable table = make_llama_table(test::llama2_70b_shape());
    const uint64_t cell = 2ull * 1024 * 2;  // K + V f16 bytes of one cell
    table.attn_window.assign(static_cast<size_t>(table.n_layer), 0);
    table.attn_window[5] = 512;
    table.kv_ring_slack = 256;
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 32768, GgmlType::F16), (512 + 256) * cell);
    EXPECT_EQ(kv_bytes_per_layer(table, 4, 32768, GgmlType::F16), 32768 * cell);  // a full layer
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 600, GgmlType::F16), 600 * cell);      // the ring capped by the context
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 1, GgmlType::F16), cell);              // the cost model's per-cell bytes
    // Four sequences of 8192 each keep their own ring.
    table.kv_sequences = 4;
    EXPECT_EQ(kv_bytes_per_layer(table, 5, 4 * 8192, GgmlType::F16), 4 * (512 + 256) * cell);
    EXPECT_EQ(kv_bytes_per_layer(table, 4, 4 * 8192, GgmlType::F16), 4 * 8192 * cell);
    EXPECT_EQ(kv_layer_cells(0, 4096, 256), 4096);
    EXPECT_EQ(kv_layer_cells(1024, 4096, 512), 1536);
    EXPECT_EQ(kv_layer_cells(4096, 4096, 512), 4096);
}

TEST(CheckPlacement, AcceptsAValidPlan) {
    const TensorTable table = make_llama_table(LlamaShape{});
    EXPECT_NO_THROW(check_placement(whole_placement(table, Tier::Disk), table, {}));
    EXPECT_NO_THROW(check_placement(split_placement(table, {0, 0, 512}), table, {}));
    EXPECT_NO_THROW(check_placement(split_placement(table, {0, 256, 256}), table, {}));
}

struct Refusal {
    const char* what;
    std::function<void(Placement&)> mutate;
    const char* message;  // a part of the error message
};

TEST(CheckPlacement, RefusesPlansThatDoNotFitTheModel) {
    const TensorTable table = make_llama_table(LlamaShape{});
    const ModelFingerprint actual{123456, "00ff"};
    auto rename = [](const char* from, const char* to) {
        return [=](Placement& p) {
            for (auto& t : p.tensors) {
                if (t.name == from) t.name = to;
            }
        };
    };
    const std::vector<Refusal> cases = {
        {"other size", [](Placement& p) { p.model.file_bytes = 999; }, "another model file"},
        {"other hash", [](Placement& p) { p.model.header_hash = "00fe"; }, "'00fe'"},
        {"unknown tensor", rename("blk.0.attn_q.weight", "blk.0.attn_qq.weight"),
         "'blk.0.attn_qq.weight', which this model does not have"},
        {"duplicate", rename("blk.0.attn_q.weight", "blk.1.attn_q.weight"),
         "'blk.1.attn_q.weight' twice"},
        {"missing", [](Placement& p) { p.tensors.pop_back(); },
         "does not place 1 tensor(s) of the model: blk.1.ffn_down.weight"},
        {"split also whole",
         [](Placement& p) {
             p.ffn_splits.push_back({1, 256, 512});
         },
         "'blk.1.ffn_gate.weight' is also listed whole"},
        {"two splits",
         [](Placement& p) {
             p.ffn_splits.push_back({0, 0, 256});
         },
         "two ffn splits for layer 0"},
        {"split layer range", [](Placement& p) { p.ffn_splits[0].layer = 2; },
         "ffn split for layer 2; the model has layers 0..1"},
        {"gpu_end > ram_end",
         [](Placement& p) {
             p.ffn_splits[0] = {0, 512, 256};
         },
         "0 <= gpu_end <= ram_end <= n_ff = 512"},
        {"ram_end > n_ff", [](Placement& p) { p.ffn_splits[0].ram_end = 768; }, "n_ff = 512"},
        {"negative", [](Placement& p) { p.ffn_splits[0].gpu_end = -256; }, "gpu_end -256"},
        {"off granule", [](Placement& p) { p.ffn_splits[0].gpu_end = 128; },
         "boundary 128 is not a multiple of 256"},
        {"kv count", [](Placement& p) { p.kv.pop_back(); }, "1 kv entries; the model has 2"},
        {"kv disk", [](Placement& p) { p.kv[1] = Tier::Disk; }, "layer 1 on disk"},
    };
    for (const Refusal& c : cases) {
        Placement p = split_placement(table, {0, 256, 512});
        p.model = actual;
        ASSERT_NO_THROW(check_placement(p, table, actual)) << c.what;
        c.mutate(p);
        try {
            check_placement(p, table, actual);
            ADD_FAILURE() << c.what << ": accepted";
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
                << c.what << ": " << e.what();
        }
    }
}

TEST(CheckPlacement, FingerprintMessageNamesBothFiles) {
    const TensorTable table = make_llama_table(LlamaShape{});
    Placement p = whole_placement(table, Tier::Ram);
    p.model = {1000, "aaaa"};
    try {
        check_placement(p, table, {2000, "bbbb"});
        FAIL() << "accepted";
    } catch (const FormatError& e) {
        const std::string m = e.what();
        for (const char* part : {"1000", "aaaa", "2000", "bbbb", "another model file"}) {
            EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
        }
    }
}

TEST(CheckPlacement, RefusesSplitOfALayerWithoutSplittableFfn) {
    TensorTable table = make_llama_table(LlamaShape{});
    std::erase_if(table.tensors,
                  [](const TensorEntry& e) { return e.name == "blk.0.ffn_gate.weight"; });
    Placement p = split_placement(table, {0, 256, 512});
    EXPECT_THROW(check_placement(p, table, {}), FormatError);
}

}  // namespace
}  // namespace strata

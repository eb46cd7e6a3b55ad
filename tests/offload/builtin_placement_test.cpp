// The built-in placement: budgets kept, everything placed once, and the documented priority
// (attention and KV before FFN neurons, must-stay tensors never on disk).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "offload/builtin_placement.h"
#include "offload/placement_file.h"
#include "placement_test_util.h"

namespace strata {
namespace {

constexpr uint64_t GiB = 1ull << 30;
constexpr uint64_t MiB = 1ull << 20;

struct Case {
    TensorTable table;
    BuiltinPlacementParams params;
};

Case llama70b(uint64_t gpu, uint64_t ram) {
    Case c{test::make_llama_table(test::llama2_70b_shape()), {}};
    c.params.budgets = {gpu, ram};
    c.params.n_ctx = 4096;
    c.params.gpu_reserved_bytes = 700 * MiB;
    c.params.ram_reserved_bytes = 1 * GiB;
    return c;
}

uint64_t kv_bytes(const Case& c, int layer) {
    return kv_bytes_per_layer(c.table, layer, c.params.n_ctx, c.params.kv_type);
}

// Weights and KV per tier.
TierBytes usage(const Placement& p, const Case& c) {
    TierBytes b = placement_bytes(p, c.table);
    for (int l = 0; l < c.table.n_layer; ++l) {
        (p.kv[static_cast<size_t>(l)] == Tier::Gpu ? b.gpu : b.ram) += kv_bytes(c, l);
    }
    return b;
}

// Whether any neuron of layer `l`'s FFN is on the GPU.
bool ffn_on_gpu(const Placement& p, int l) {
    if (const FfnSplit* s = p.ffn_split(l)) return s->gpu_end > 0;
    return p.tier_of("blk." + std::to_string(l) + ".ffn_gate.weight") == Tier::Gpu;
}

bool attention_on_gpu(const Placement& p, int l) {
    const std::string prefix = "blk." + std::to_string(l) + ".attn_";
    for (const TensorPlacement& t : p.tensors) {
        if (t.name.starts_with(prefix) && t.tier != Tier::Gpu) return false;
    }
    return true;
}

// Properties every built-in placement must have; returns its usage.
TierBytes expect_sound(const Placement& p, const Case& c) {
    EXPECT_NO_THROW(check_placement(p, c.table, p.model));
    const TierBytes used = usage(p, c);
    const Budgets& b = c.params.budgets;
    const uint64_t gpu_reserved = b.gpu_bytes > 0 ? c.params.gpu_reserved_bytes : 0;
    EXPECT_LE(used.gpu + gpu_reserved, b.gpu_bytes);
    EXPECT_LE(used.ram + c.params.ram_reserved_bytes, b.ram_bytes);

    uint64_t total = 0;
    for (const TensorEntry& e : c.table.tensors)
        total += e.bytes;
    const TierBytes w = placement_bytes(p, c.table);
    EXPECT_EQ(w.gpu + w.ram + w.disk, total);

    // What every token needs in memory is never on disk.
    for (const TensorEntry& e : c.table.tensors) {
        if (e.ne[1] == 1 || e.name == "token_embd.weight" || e.name == "output.weight") {
            EXPECT_NE(p.tier_of(e.name), Tier::Disk) << e.name;
        }
    }
    // Attention (all layers) and the output before any FFN neuron.
    bool any_ffn_on_gpu = false;
    for (int l = 0; l < c.table.n_layer; ++l)
        any_ffn_on_gpu |= ffn_on_gpu(p, l);
    if (any_ffn_on_gpu) {
        for (int l = 0; l < c.table.n_layer; ++l)
            EXPECT_TRUE(attention_on_gpu(p, l)) << l;
        EXPECT_EQ(p.tier_of("output.weight").value_or(Tier::Gpu), Tier::Gpu);
    }
    // Layers on the GPU are a prefix: layer 0 first.
    for (int l = 1; l < c.table.n_layer; ++l) {
        if (attention_on_gpu(p, l)) {
            EXPECT_TRUE(attention_on_gpu(p, l - 1)) << l;
        }
        if (ffn_on_gpu(p, l)) {
            EXPECT_TRUE(ffn_on_gpu(p, l - 1)) << l;
        }
    }
    for (const FfnSplit& s : p.ffn_splits) {
        EXPECT_EQ(s.gpu_end % 256, 0);
        EXPECT_EQ(s.ram_end % 256, 0);
    }
    // RAM is not left idle while something fits: whatever is on disk is larger than what is left.
    const uint64_t ram_free = b.ram_bytes - c.params.ram_reserved_bytes - used.ram;
    // (A layer's FFN goes to disk only whole: its three tensors move together.)
    for (const TensorPlacement& t : p.tensors) {
        if (t.tier != Tier::Disk) continue;
        const auto ffn = find_ffn_tensors(c.table, tensor_layer(t.name));
        for (const TensorEntry& e : c.table.tensors) {
            if (e.name != t.name) continue;
            const bool in_ffn = ffn && (&e == ffn->gate || &e == ffn->up || &e == ffn->down);
            EXPECT_GT(in_ffn ? ffn_slice_bytes(*ffn, 0, ffn->n_ff) : e.bytes, ram_free)
                << e.name;
        }
    }
    for (const FfnSplit& s : p.ffn_splits) {
        const auto ffn = find_ffn_tensors(c.table, s.layer);
        EXPECT_EQ(s.ram_end, ffn->n_ff) << "layer " << s.layer << ": no neuron range on disk";
    }
    return used;
}

// whole_ffns: where the GPU runs out inside a layer's FFN, that FFN stays whole in RAM instead of
// being split, and the rest of the placement is the same.
TEST(BuiltinPlacement, WholeFfnsLeaveTheFfnThatDoesNotFitInRam) {
    Case split = llama70b(20 * GiB, 64 * GiB);
    const Placement ps = builtin_placement(split.table, split.params);
    ASSERT_EQ(ps.ffn_splits.size(), 1u) << "the GPU should run out inside an FFN at this budget";
    const int layer = ps.ffn_splits.front().layer;
    ASSERT_GT(ps.ffn_splits.front().gpu_end, 0);

    Case whole = split;
    whole.params.whole_ffns = true;
    const Placement pw = builtin_placement(whole.table, whole.params);
    expect_sound(pw, whole);
    EXPECT_TRUE(pw.ffn_splits.empty());
    EXPECT_EQ(pw.tier_of(cat("blk.", layer, ".ffn_gate.weight")), Tier::Ram);
    for (int l = 0; l < layer; ++l) EXPECT_TRUE(ffn_on_gpu(pw, l)) << l;
    for (const TensorPlacement& t : ps.tensors) {
        if (t.name.find("ffn_") != std::string::npos) continue;
        EXPECT_EQ(pw.tier_of(t.name), t.tier) << t.name;
    }
}

TEST(BuiltinPlacement, Llama70bOn6GiBGpuAnd24GiBRam) {
    const Case c = llama70b(6 * GiB, 24 * GiB);
    const Placement p = builtin_placement(c.table, c.params);
    const TierBytes used = expect_sound(p, c);

    // 80 layers of attention (~7 GiB) do not fit 6 GiB: the GPU holds a prefix of them, with
    // their KV, and is full up to less than the next layer.
    int n_gpu_layers = 0;
    while (n_gpu_layers < 80 && attention_on_gpu(p, n_gpu_layers))
        ++n_gpu_layers;
    EXPECT_GT(n_gpu_layers, 40);
    EXPECT_LT(n_gpu_layers, 80);
    for (int l = 0; l < 80; ++l) {
        EXPECT_EQ(p.kv[static_cast<size_t>(l)] == Tier::Gpu, l < n_gpu_layers) << l;
        EXPECT_FALSE(ffn_on_gpu(p, l)) << l;
    }
    uint64_t next_layer = kv_bytes(c, n_gpu_layers);
    const std::string prefix = "blk." + std::to_string(n_gpu_layers) + ".attn_";
    for (const TensorEntry& e : c.table.tensors) {
        if (e.name.starts_with(prefix) && e.ne[1] > 1) next_layer += e.bytes;
    }
    EXPECT_LT(6 * GiB - c.params.gpu_reserved_bytes - used.gpu, next_layer);
    for (const TensorEntry& e : c.table.tensors) {
        if (e.ne[1] == 1) {
            EXPECT_EQ(p.tier_of(e.name), Tier::Gpu) << e.name;
        }
    }
    EXPECT_EQ(p.tier_of("token_embd.weight"), Tier::Ram);
    EXPECT_GT(placement_bytes(p, c.table).disk, 0u);  // ~40 GiB model in 30 GiB of budgets
    EXPECT_EQ(p.n_ctx, 4096);
    EXPECT_EQ(p.budgets, c.params.budgets);
}

TEST(BuiltinPlacement, Llama70bFfnNeuronsFillTheGpuAfterAttention) {
    const Case c = llama70b(12 * GiB, 24 * GiB);
    const Placement p = builtin_placement(c.table, c.params);
    const TierBytes used = expect_sound(p, c);
    int n_ffn_layers = 0;
    while (n_ffn_layers < 80 && ffn_on_gpu(p, n_ffn_layers))
        ++n_ffn_layers;
    EXPECT_GT(n_ffn_layers, 0);
    EXPECT_LT(n_ffn_layers, 80);
    EXPECT_EQ(p.kv, std::vector<Tier>(80, Tier::Gpu));
    EXPECT_EQ(p.tier_of("output.weight"), Tier::Gpu);
    // The GPU is full to within one granule of neurons of the layer where it ran out.
    const auto ffn = find_ffn_tensors(c.table, n_ffn_layers - 1);
    EXPECT_LT(12 * GiB - c.params.gpu_reserved_bytes - used.gpu,
              ffn_slice_bytes(*ffn, 0, ffn->granule));
    EXPECT_LE(p.ffn_splits.size(), 2u);  // the GPU's last layer and RAM's last layer
}

TEST(BuiltinPlacement, IsDeterministic) {
    const Case c = llama70b(10 * GiB, 20 * GiB);
    EXPECT_EQ(placement_to_json(builtin_placement(c.table, c.params)),
              placement_to_json(builtin_placement(c.table, c.params)));
}

TEST(BuiltinPlacement, WithoutGpuEverythingIsRamOrDisk) {
    const Case c = llama70b(0, 24 * GiB);
    const Placement p = builtin_placement(c.table, c.params);
    expect_sound(p, c);
    EXPECT_EQ(placement_bytes(p, c.table).gpu, 0u);
    EXPECT_EQ(p.kv, std::vector<Tier>(80, Tier::Ram));
}

// Bytes that must stay in memory, computed from the table: norms, token_embd, KV.
uint64_t must_stay_bytes(const Case& c) {
    uint64_t n = 0;
    for (const TensorEntry& e : c.table.tensors) {
        // The output matrix too: the executor never streams it.
        if (e.ne[1] == 1 || e.name == "token_embd.weight" || e.name == "output.weight") n += e.bytes;
    }
    for (int l = 0; l < c.table.n_layer; ++l)
        n += kv_bytes(c, l);
    return n;
}

TEST(BuiltinPlacement, TooSmallBudgetsNameTheMinimum) {
    Case c = llama70b(0, 1 * GiB);
    const uint64_t minimum = must_stay_bytes(c) + c.params.ram_reserved_bytes;
    try {
        builtin_placement(c.table, c.params);
        FAIL() << "accepted";
    } catch (const BudgetError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("needs at least " + format_bytes(minimum) + " of RAM+VRAM"),
                  std::string::npos)
            << m;
    }
    // Exactly the minimum is enough: everything else streams from disk.
    c.params.budgets.ram_bytes = minimum;
    const Placement p = builtin_placement(c.table, c.params);
    expect_sound(p, c);
    c.params.budgets.ram_bytes = minimum - 1;
    EXPECT_THROW(builtin_placement(c.table, c.params), BudgetError);
}

TEST(BuiltinPlacement, MustStayTensorsUseTheGpuWhenRamIsShort) {
    Case c = llama70b(0, 0);
    c.params.ram_reserved_bytes = 0;
    c.params.budgets.gpu_bytes = must_stay_bytes(c) + c.params.gpu_reserved_bytes + 2 * GiB;
    const Placement p = builtin_placement(c.table, c.params);
    const TierBytes used = expect_sound(p, c);
    EXPECT_EQ(used.ram, 0u);
    EXPECT_EQ(p.kv, std::vector<Tier>(80, Tier::Gpu));
}

TEST(BuiltinPlacement, GpuBudgetBelowItsReserveIsRefused) {
    Case c = llama70b(512 * MiB, 24 * GiB);
    EXPECT_THROW(builtin_placement(c.table, c.params), BudgetError);
}

TEST(BuiltinPlacement, CallerKvSizesCount) {
    Case c = llama70b(6 * GiB, 24 * GiB);
    const Placement by_table = builtin_placement(c.table, c.params);
    c.params.kv_bytes.assign(80, 64 * MiB);
    const Placement by_caller = builtin_placement(c.table, c.params);
    const auto n_gpu_kv = [](const Placement& p) {
        return std::count(p.kv.begin(), p.kv.end(), Tier::Gpu);
    };
    EXPECT_LT(n_gpu_kv(by_caller), n_gpu_kv(by_table));
    c.params.kv_bytes.pop_back();
    EXPECT_THROW(builtin_placement(c.table, c.params), ArgumentError);
    c.params.kv_bytes.clear();
    c.params.n_ctx = 0;
    EXPECT_THROW(builtin_placement(c.table, c.params), ArgumentError);
}

TEST(BuiltinPlacement, SmallModelGoesWhollyOnTheGpu) {
    for (bool tied : {false, true}) {
        test::LlamaShape shape;
        shape.tied_output = tied;
        Case c{test::make_llama_table(shape), {}};
        c.params.budgets = {1 * GiB, 1 * GiB};
        c.params.n_ctx = 256;
        c.params.gpu_reserved_bytes = 64 * MiB;
        const Placement p = builtin_placement(c.table, c.params);
        expect_sound(p, c);
        EXPECT_TRUE(p.ffn_splits.empty());
        EXPECT_EQ(p.tensors.size(), c.table.tensors.size());
        for (const TensorPlacement& t : p.tensors)
            EXPECT_EQ(t.tier, Tier::Gpu) << t.name;
        EXPECT_EQ(p.kv, std::vector<Tier>(2, Tier::Gpu));
    }
}

TEST(BuiltinPlacement, LayerWithoutSplittableFfnIsPlacedWhole) {
    test::LlamaShape shape;
    shape.n_layer = 4;
    Case c{test::make_llama_table(shape), {}};
    std::erase_if(c.table.tensors,
                  [](const TensorEntry& e) { return e.name == "blk.1.ffn_gate.weight"; });
    c.params.n_ctx = 64;
    c.params.budgets = {0, 0};
    for (uint64_t ram = must_stay_bytes(c); ram < must_stay_bytes(c) + 4 * MiB; ram += 97 * 1024) {
        c.params.budgets.ram_bytes = ram;
        const Placement p = builtin_placement(c.table, c.params);
        expect_sound(p, c);
        EXPECT_EQ(p.ffn_split(1), nullptr);
    }
}

}  // namespace
}  // namespace strata

// strata plan: places a model inside --gpu-mem and --ram-mem, writes the placement file and
// prints where everything goes, per group of layers.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime.h"
#include "offload/placement_file.h"
#include "offload/tier.h"
#include "tools/commands.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct PlanArgs {
    EngineOptions engine;
    std::string output;
};

// One layer's row of the table: where its attention, KV and FFN are.
std::string layer_summary(const Placement& p, const TensorTable& table, int il) {
    auto tier_of = [&](const std::string& suffix) -> std::string {
        const auto t = p.tier_of(cat("blk.", il, ".", suffix));
        return t ? std::string(tier_name(*t)) : "-";
    };
    std::string ffn;
    if (const FfnSplit* s = p.ffn_split(il)) {
        const auto f = find_ffn_tensors(table, il);
        ffn = cat("split gpu ", s->gpu_end, " / ram ", s->ram_end - s->gpu_end, " / disk ",
                  (f ? f->n_ff : s->ram_end) - s->ram_end, " neurons");
    } else {
        ffn = tier_of("ffn_gate.weight");
        if (tier_of("ffn_up.weight") != ffn || tier_of("ffn_down.weight") != ffn) {
            ffn = cat(tier_of("ffn_gate.weight"), "/", tier_of("ffn_up.weight"), "/", tier_of("ffn_down.weight"));
        }
    }
    return cat("attention ", tier_of("attn_q.weight"), ", kv ", tier_name(p.kv.at(static_cast<size_t>(il))),
               ", ffn ", ffn);
}

void plan(const PlanArgs& args) {
    RuntimeOptions ro = args.engine.runtime_options();
    if (!ro.plan_path.empty()) throw ArgumentError("strata plan makes a placement; --plan reads one");
    ro.load_weights = false;
    const Runtime runtime(args.engine.model, ro);
    const TensorTable table = tensor_table(runtime.model());
    Placement p = runtime.placement();
    if (runtime.gpu()) p.hardware.gpu_name = std::string(runtime.gpu()->name());
    write_placement(p, args.output, &table);

    const TierBytes bytes = placement_bytes(p, table);
    std::printf("placement of %s -> %s\n", args.engine.model.c_str(), args.output.c_str());
    std::printf("budgets: gpu %s, ram %s; context %lld tokens, kv %s\n", format_bytes(p.budgets.gpu_bytes).c_str(),
                format_bytes(p.budgets.ram_bytes).c_str(), static_cast<long long>(p.n_ctx),
                std::string(type_traits(p.kv_type).name).c_str());
    std::printf("weights: gpu %s | ram %s | disk %s\n", format_bytes(bytes.gpu).c_str(),
                format_bytes(bytes.ram).c_str(), format_bytes(bytes.disk).c_str());
    // Runs of layers placed alike, one line each.
    const int n_layer = table.n_layer;
    for (int first = 0; first < n_layer;) {
        const std::string s = layer_summary(p, table, first);
        int last = first;
        while (last + 1 < n_layer && layer_summary(p, table, last + 1) == s) ++last;
        std::printf("  layers %3d-%-3d %s\n", first, last, s.c_str());
        first = last + 1;
    }
    for (const char* name : {"token_embd.weight", "output.weight"}) {
        if (const auto t = p.tier_of(name)) std::printf("  %-15s %s\n", name, std::string(tier_name(*t)).c_str());
    }
    if (p.predicted.decode_tok_s > 0) {
        std::printf("predicted: prompt %.1f tok/s, decode %.2f tok/s\n", p.predicted.prefill_tok_s, p.predicted.decode_tok_s);
    }
}

}  // namespace

void add_plan_command(CLI::App& app) {
    auto args = std::make_shared<PlanArgs>();
    CLI::App* cmd = app.add_subcommand("plan", "place a model's weights inside memory budgets and write the placement file");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("-o,--output", args->output, "placement file to write (JSON)")->required();
    cmd->callback([args] { plan(*args); });
}

}  // namespace strata::cli

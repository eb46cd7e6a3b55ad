// strata plan: places a model inside --gpu-mem and --ram-mem, writes the placement file and
// prints where everything goes, per group of layers, with the predicted speed; --explain adds
// what each choice is worth by the cost model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/model/model_summary.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "offload/cost_model.h"
#include "offload/disk_profile.h"
#include "offload/placement_file.h"
#include "offload/tier.h"
#include "tools/commands.h"
#include "tools/plan_table.h"
#include "tools/hot_neuron_report.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct PlanArgs {
    EngineOptions engine;
    std::string output;  // empty: print only
    bool explain = false;
    bool json = false;
};

// What a layer's choices are worth, by the cost model: each group of the layout is moved to the
// other tier and the decode time compared (ms per token, and per GiB moved: the planner's rank).
class Explainer {
  public:
    Explainer(const Runtime& runtime, const TensorTable& table, const Placement& p)
        : table_(table),
          p_(p),
          cm_(table, *runtime.hardware_profile(), runtime.cost_params(), p.kv_type),
          base_(cm_.layout_of(p)),
          base_s_(cm_.estimate(base_).decode_s_per_token),
          has_gpu_(p.budgets.gpu_bytes > 0) {}

    std::vector<std::string> layer(int il) const {
        std::vector<int> attn, ffn;
        for (size_t i = 0; i < cm_.info().size(); ++i) {
            const CostModel::TensorInfo& t = cm_.info()[i];
            if (t.layer != il) continue;
            if (t.role == TensorClass::Attn) attn.push_back(static_cast<int>(i));
            if (t.role == TensorClass::Ffn) ffn.push_back(static_cast<int>(i));
        }
        std::vector<std::string> lines;
        if (!attn.empty()) lines.push_back(attention(il, attn));
        if (!ffn.empty()) lines.push_back(feed_forward(il, ffn));
        return lines;
    }

  private:
    // Decode seconds per token of `l`.
    double seconds(const Layout& l) const { return cm_.estimate(l).decode_s_per_token; }
    static std::string rate(double saved_s, double bytes) {
        return cat(fixed(saved_s * 1e3, 3), " ms/token (", fixed(saved_s * 1e3 / (bytes / kGiB), 3), " ms per GiB)");
    }
    // "saves X over Y" when the move would be slower, else what it would gain instead: a
    // placement whose alternative is faster by the cost model (a layer the GPU cannot take
    // whole, where the transfers cost more than its bytes save) is said as such, never as a
    // negative saving.
    static constexpr double kNoDifference = 5e-7;  // below what "0.001 ms" prints
    static std::string saving(double saved_s, double bytes, const std::string& over) {
        if (std::abs(saved_s) < kNoDifference) return cat("the same time per token as ", over, " (its reads overlap the work)");
        if (saved_s >= 0) return cat("saves ", rate(saved_s, bytes), " over ", over);
        return cat("costs ", fixed(-saved_s * 1e3, 3), " ms/token more than ", over,
                   " (the transfers between processors outweigh the faster reads)");
    }
    static std::string would_save(const std::string& where, double saved_s, double bytes) {
        if (std::abs(saved_s) < kNoDifference) return cat(where, " would take the same time per token");
        if (saved_s > 0) return cat(where, " would save ", rate(saved_s, bytes));
        return cat(where, " would not be faster (", fixed(-saved_s * 1e3, 3), " ms/token slower: transfers)");
    }

    std::string attention(int il, const std::vector<int>& attn) const {
        const size_t l = static_cast<size_t>(il);
        const Tier tier = base_.tier[static_cast<size_t>(attn[0])];
        double bytes = static_cast<double>(kv_bytes_per_layer(table_, il, p_.n_ctx, p_.kv_type));
        for (int i : attn) bytes += static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes);
        const Tier other = tier == Tier::Gpu ? Tier::Ram : (has_gpu_ ? Tier::Gpu : Tier::Ram);
        Layout moved = base_;
        for (int i : attn) moved.tier[static_cast<size_t>(i)] = other;
        moved.kv[l] = other;
        const double delta = seconds(moved) - base_s_;  // > 0: the placement is faster
        if (tier == Tier::Gpu) return cat("attention+KV on GPU: ", saving(delta, bytes, "RAM"));
        if (other == Tier::Gpu) {
            return cat("attention+KV in ", tier_name(tier), ": ", would_save("the GPU", -delta, bytes));
        }
        return cat("attention+KV in ", tier_name(tier), " (no GPU)");
    }

    std::string feed_forward(int il, const std::vector<int>& ffn) const {
        const size_t l = static_cast<size_t>(il);
        double bytes = 0;
        for (int i : ffn) bytes += static_cast<double>(table_.tensors[static_cast<size_t>(i)].bytes);
        Layout all_ram = base_;
        all_ram.split[l].reset();
        for (int i : ffn) all_ram.tier[static_cast<size_t>(i)] = Tier::Ram;
        const double ram_s = seconds(all_ram);
        if (const std::optional<FfnSplit>& s = base_.split[l]) {
            const FfnTensors& f = *cm_.ffn(il);
            const double gpu_bytes = static_cast<double>(ffn_slice_bytes(f, 0, s->gpu_end));
            std::string line = cat("FFN split: GPU share ", s->gpu_end, " of ", f.n_ff, " neurons ",
                                   saving(ram_s - base_s_, gpu_bytes, "all in RAM"));
            if (s->ram_end < f.n_ff) line += cat("; ", f.n_ff - s->ram_end, " neurons on DISK");
            return line;
        }
        const Tier tier = base_.tier[static_cast<size_t>(ffn[0])];
        if (tier == Tier::Gpu) return cat("FFN on GPU: ", saving(ram_s - base_s_, bytes, "RAM"));
        if (tier == Tier::Disk) return cat("FFN on DISK: ", would_save("RAM", base_s_ - ram_s, bytes), "; RAM is full");
        std::string line = "FFN in RAM";
        Layout on_disk = base_;
        for (int i : ffn) on_disk.tier[static_cast<size_t>(i)] = Tier::Disk;
        if (p_.budgets.ram_bytes > 0) line += cat(": ", saving(seconds(on_disk) - base_s_, bytes, "DISK"));
        if (has_gpu_) {
            Layout on_gpu = base_;
            for (int i : ffn) on_gpu.tier[static_cast<size_t>(i)] = Tier::Gpu;
            line += cat("; ", would_save("the GPU", base_s_ - seconds(on_gpu), bytes));
        }
        return line;
    }

    static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    const TensorTable& table_;
    const Placement& p_;
    CostModel cm_;
    Layout base_;
    double base_s_;
    bool has_gpu_;
};

void print_estimate(const std::string& what, const CostEstimate& e) {
    if (e.decode_s_per_token <= 0) return;
    std::printf("  %-16s decode %.3f ms/token", what.c_str(), e.decode_s_per_token * 1e3);
    if (e.prefill_s_per_token > 0) std::printf(", prefill %.3f ms/token", e.prefill_s_per_token * 1e3);
    std::printf("\n");
}

// "disk: 1.9 GB/s (O_DIRECT, 16 x 1 MiB in flight)", and the queue this model streams with
// when its staging ring narrows it.
void print_disk(const Runtime& runtime) {
    if (!runtime.hardware_profile()) return;
    const HardwareProfile& hp = *runtime.hardware_profile();
    std::printf("disk: %s", describe_disk(hp).c_str());
    const DiskStreamOptions& d = runtime.disk_options();
    if (hp.disk_queue_depth > 0 && d.mode != DiskIo::Mmap &&
        (d.queue_depth != hp.disk_queue_depth || d.block_bytes != hp.disk_block_bytes)) {
        std::printf("; this model streams %d x %s (staging %s)", d.queue_depth,
                    format_block_bytes(d.block_bytes).c_str(), format_bytes(d.staging_bytes).c_str());
    }
    std::printf("\n");
}

void print_json(const PlanArgs& args, const Runtime& runtime, const Placement& p, const TensorTable& table,
                const std::vector<PlanRow>& rows) {
    const TierBytes w = placement_bytes(p, table);
    uint64_t kv_gpu = 0, kv_ram = 0;
    for (int il = 0; il < table.n_layer; ++il) {
        (p.kv.at(static_cast<size_t>(il)) == Tier::Gpu ? kv_gpu : kv_ram) += kv_bytes_per_layer(table, il, p.n_ctx, p.kv_type);
    }
    nlohmann::json j = {
        {"model", args.engine.model},
        {"output", args.output.empty() ? nlohmann::json() : nlohmann::json(args.output)},
        {"placed_by", runtime.placement_source()},
        {"budgets", {{"gpu_bytes", p.budgets.gpu_bytes}, {"ram_bytes", p.budgets.ram_bytes}}},
        {"context", p.n_ctx},
        {"kv_type", std::string(type_traits(p.kv_type).name)},
        {"weights", {{"gpu_bytes", w.gpu}, {"ram_bytes", w.ram}, {"disk_bytes", w.disk}}},
        {"kv", {{"gpu_bytes", kv_gpu}, {"ram_bytes", kv_ram}}},
        {"layers", plan_rows_json(rows)},
        {"predicted", {{"prompt_tokens_per_s", p.predicted.prefill_tok_s}, {"decode_tokens_per_s", p.predicted.decode_tok_s}}},
        {"cost_model_runs", runtime.calibration_runs()}};
    std::printf("%s\n", j.dump(2).c_str());
}

// --hot-neurons: the counts chosen for the GPU's room the placement leaves (before the
// activation reserve taken at load; the cost model's cheapest, cheapest_hot_neurons), in
// p.hot_neurons; the estimate priced with them (none without a hardware profile, or one that
// cannot rate the placement).
std::optional<CostEstimate> plan_hot_neurons(const EngineOptions& engine, const Runtime& runtime, Placement& p,
                                             const TensorTable& table, const std::string& stats_path) {
    if (engine.sparsity.sparsity_option == nullptr || engine.sparsity.sparsity_option->count() == 0) {
        throw ArgumentError("--hot-neurons needs --sparsity S (the cold neurons run sparsely on the CPU)");
    }
    const ActivationProfile profile = read_activation_profile(stats_path);
    check_profile_for(profile, runtime.model(), stats_path);
    const TierBytes w = placement_bytes(p, table);
    uint64_t kv_gpu = 0;
    for (int il = 0; il < table.n_layer; ++il) {
        if (p.kv.at(static_cast<size_t>(il)) == Tier::Gpu) kv_gpu += kv_bytes_per_layer(table, il, p.n_ctx, p.kv_type);
    }
    HotNeuronRequest req;
    req.sparsity = engine.sparsity.sparsity;
    req.gpu_bytes = p.budgets.gpu_bytes > w.gpu + kv_gpu ? p.budgets.gpu_bytes - w.gpu - kv_gpu : 0;
    req.skip = gpu_ffn_layers(p, table.n_layer);
    if (!runtime.hardware_profile()) {
        p.hot_neurons = choose_hot_neurons(runtime.model(), profile, req);  // placement schema 2
        return std::nullopt;
    }
    CostParams params = runtime.cost_params();
    p.hot_neurons = cheapest_hot_neurons(runtime.model(), profile, req, [&](const std::vector<HotColdCost>& hot_cold) {
        params.hot_cold = hot_cold;
        return estimate(p, table, *runtime.hardware_profile(), params).decode_s_per_token;
    });
    params.hot_cold = hot_cold_costs(runtime.model(), profile, req.sparsity, p.hot_neurons);
    if (req.gpu_bytes > 0 && std::all_of(p.hot_neurons.begin(), p.hot_neurons.end(), [](int64_t h) { return h == 0; })) {
        std::fprintf(stderr, "note: --hot-neurons: %s\n", kNoHotRangePays);
    }
    try {
        const CostEstimate e = estimate(p, table, *runtime.hardware_profile(), params);
        p.predicted.decode_tok_s = 1.0 / e.decode_s_per_token;
        p.predicted.prefill_tok_s = e.prefill_s_per_token > 0 ? 1.0 / e.prefill_s_per_token : 0.0;
        return e;
    } catch (const Error&) {
        p.predicted = {};
        return std::nullopt;
    }
}

// The hot-neuron lines of --stats (hot_neuron_report.h).
void print_hot_neurons(const EngineOptions& engine, const Runtime& runtime, const Placement& p,
                       const std::string& stats_path, const std::vector<int64_t>& hot) {
    const ActivationProfile profile = read_activation_profile(stats_path);
    check_profile_for(profile, runtime.model(), stats_path);
    const bool given = engine.sparsity.sparsity_option != nullptr && engine.sparsity.sparsity_option->count() > 0;
    print_hot_neuron_report({&p, &runtime.model(), &profile, given ? engine.sparsity.sparsity : 0.5,
                             engine.sparsity.hot_neurons ? &hot : nullptr});
}

// The MoE line: experts per layer, active per token, and the bytes a token reads.
void print_experts(const Runtime& runtime) {
    const ModelConfig& mc = runtime.model().config();
    if (!mc.is_moe()) return;
    const ExpertSummary e = summarize_experts(runtime.model().file().tensors(), mc);
    std::printf("experts: %lld per layer, %lld active per token, %s per expert (gate+up+down); a token reads %s"
                " of %s\n",
                static_cast<long long>(e.n_expert), static_cast<long long>(e.n_expert_used),
                format_bytes(e.bytes_per_expert).c_str(), format_bytes(e.active_bytes).c_str(),
                format_bytes(e.total_bytes).c_str());
}

// --explain: why each row of layers went where it did, by the cost model.
void print_why(const Runtime& runtime, const TensorTable& table, const Placement& p, const std::vector<PlanRow>& rows) {
    const Explainer explainer(runtime, table, p);
    std::printf("\nwhy, by the cost model:\n");
    for (const PlanRow& r : rows) {
        if (r.layers == "output") continue;
        for (const std::string& why : explainer.layer(r.first)) std::printf("  layers %s: %s\n", r.layers.c_str(), why.c_str());
    }
}

// The cost model's constants and the placement's predicted speeds.
void print_cost_model(const Runtime& runtime, const Placement& p) {
    const CostParams& c = runtime.cost_params();
    if (runtime.calibration_runs() > 0) {
        std::printf("cost model: fitted to %d measured run(s): %s\n", runtime.calibration_runs(),
                    describe_fit(c).c_str());
    } else {
        std::printf("cost model: default constants (`strata bench --fit` records runs to fit them to)\n");
    }
    if (p.predicted.decode_tok_s > 0) {
        std::printf("predicted: prompt %.1f tok/s, decode %.2f tok/s\n", p.predicted.prefill_tok_s, p.predicted.decode_tok_s);
    }
}

// --explain: the decode time's terms (of `e`: the runtime's estimate, or the one with hot
// neurons) and the planner's candidates.
void print_explanation(const Runtime& runtime, const std::optional<CostEstimate>& e) {
    if (!e) {
        std::printf("explain: no hardware profile, so no cost model (run with --reprofile)\n");
        return;
    }
    print_disk(runtime);
    std::printf("decode per token: gpu %.3f ms + cpu %.3f ms + exposed disk %.3f ms (of %.3f ms read) +"
                " %d transfers %.3f ms + overhead %.3f ms\n",
                e->gpu_s * 1e3, e->cpu_s * 1e3, e->disk_exposed_s * 1e3, e->disk_s * 1e3, e->transfers,
                e->transfer_s * 1e3, e->overhead_s * 1e3);
    if (const std::optional<PlanReport>& r = runtime.plan_report()) {
        std::printf("candidates (chosen: %s):\n", r->chosen.c_str());
        print_estimate("greedy", r->greedy);
        print_estimate(cat("first ", r->whole_layers_k, " layers"), r->whole_layers);
        print_estimate("built-in", r->builtin);
    }
}

void plan(const PlanArgs& args) {
    EngineOptions engine = args.engine;
    const bool sparse = engine.sparsity.sparsity_option != nullptr && engine.sparsity.sparsity_option->count() > 0;
    const std::string stats_path_given = engine.sparsity.stats;  // the hot-neuron lines read it
    // A mixture of experts' stats give the planner its routing counts, with or without --sparsity.
    if (!engine.sparsity.stats.empty() && !sparse && !Model(args.engine.model).config().is_moe()) {
        std::fprintf(args.json ? stderr : stdout, "note: --stats %s without --sparsity: the placement does not use activation"
                    " statistics (a split FFN computes every neuron); the lines below say what its GPU neurons carry\n",
                    engine.sparsity.stats.c_str());
        engine.sparsity.stats.clear();
    }
    RuntimeOptions ro = engine.runtime_options();
    if (!ro.plan_path.empty()) throw ArgumentError("strata plan makes a placement; --plan reads one");
    ro.load_weights = false;
    ro.want_estimate = args.explain;
    if (!args.output.empty()) check_write_target(args.output, "placement file");  // before measuring and planning
    const Runtime runtime(args.engine.model, ro);
    const TensorTable table = runtime.placement_table();
    Placement p = runtime.placement();
    if (runtime.gpu() && p.hardware.gpu_name.empty()) p.hardware.gpu_name = std::string(runtime.gpu()->name());
    const std::string stats_path = stats_path_given.empty() && args.engine.sparsity.hot_neurons
                                       ? default_stats_path(args.engine.model, false) : stats_path_given;
    std::optional<CostEstimate> estimate = runtime.cost_estimate();
    if (args.engine.sparsity.hot_neurons) estimate = plan_hot_neurons(args.engine, runtime, p, table, stats_path);
    const std::vector<int64_t>& hot = p.hot_neurons;
    if (!args.output.empty()) write_placement(p, args.output, &table);

    std::optional<CostModel> cm;
    if (runtime.hardware_profile()) {
        try {
            cm.emplace(table, *runtime.hardware_profile(), runtime.cost_params(), p.kv_type);
            cm->layout_of(p);
        } catch (const Error&) {
            cm.reset();  // the profile cannot rate this placement: no time shares
        }
    }
    const std::vector<PlanRow> rows = plan_rows(p, table, cm ? &*cm : nullptr);
    if (args.json) {
        print_json(args, runtime, p, table, rows);
        return;
    }
    std::printf("placement of %s%s\n", args.engine.model.c_str(),
                args.output.empty() ? " (printed only: -o FILE saves it for --plan)" : cat(" -> ", args.output).c_str());
    std::printf("placed by the %s; context %lld tokens, KV cache %s\n", runtime.placement_source().c_str(),
                static_cast<long long>(p.n_ctx), std::string(type_traits(p.kv_type).name).c_str());
    print_tier_table(p, table);
    if (!stats_path.empty() && !runtime.model().config().is_moe()) print_hot_neurons(args.engine, runtime, p, stats_path, hot);
    print_experts(runtime);
    std::printf("\n");
    print_plan_table(rows);
    if (args.explain && runtime.cost_estimate()) print_why(runtime, table, p, rows);
    print_cost_model(runtime, p);
    if (args.explain) print_explanation(runtime, estimate);
}

}  // namespace

void add_plan_command(CLI::App& app) {
    auto args = std::make_shared<PlanArgs>();
    CLI::App* cmd = app.add_subcommand("plan", "place a model's weights inside memory budgets and write the placement file");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("-o,--output", args->output, "placement file to write (JSON; default: print only)");
    cmd->add_flag("--json", args->json, "print the summary as JSON");
    cmd->add_flag("--explain", args->explain, "say per group of layers what its placement saves, by the cost model");
    cmd->callback([args] { plan(*args); });
}

}  // namespace strata::cli

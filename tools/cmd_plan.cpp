// strata plan: places a model inside --gpu-mem and --ram-mem, writes the placement file and
// prints where everything goes, per group of layers, with the predicted speed; --explain adds
// what each choice is worth by the cost model.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/model/model_summary.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime.h"
#include "offload/cost_model.h"
#include "offload/disk_profile.h"
#include "offload/placement_file.h"
#include "offload/tier.h"
#include "tools/commands.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct PlanArgs {
    EngineOptions engine;
    std::string output;
    bool explain = false;
};

// One layer's row of the table: where its attention, KV and FFN are.
std::string layer_summary(const Placement& p, const TensorTable& table, int il) {
    auto tier_of = [&](const std::string& suffix) -> std::string {
        const auto t = p.tier_of(cat("blk.", il, ".", suffix));
        return t ? std::string(tier_name(*t)) : "-";
    };
    std::string ffn;
    if (p.tier_of(cat("blk.", il, ".ffn_gate_exps.weight"))) {
        ffn = cat("router ", tier_of("ffn_gate_inp.weight"), ", experts ", tier_of("ffn_gate_exps.weight"));
        if (tier_of("ffn_up_exps.weight") != tier_of("ffn_gate_exps.weight") ||
            tier_of("ffn_down_exps.weight") != tier_of("ffn_gate_exps.weight")) {
            ffn += cat("/", tier_of("ffn_up_exps.weight"), "/", tier_of("ffn_down_exps.weight"));
        }
        if (p.tier_of(cat("blk.", il, ".ffn_gate_shexp.weight"))) ffn += cat(", shared expert ", tier_of("ffn_gate_shexp.weight"));
    } else if (const FfnSplit* s = p.ffn_split(il)) {
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
            if (t.role == TensorRole::Attn) attn.push_back(static_cast<int>(i));
            if (t.role == TensorRole::Ffn) ffn.push_back(static_cast<int>(i));
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
        if (tier == Tier::Gpu) return cat("attention+KV on GPU: saves ", rate(delta, bytes), " over RAM");
        if (other == Tier::Gpu) {
            return cat("attention+KV in ", tier_name(tier), ": the GPU would save ", rate(-delta, bytes));
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
            std::string line = cat("FFN split: GPU share ", s->gpu_end, " of ", f.n_ff, " neurons saves ",
                                   rate(ram_s - base_s_, gpu_bytes), " over all in RAM");
            if (s->ram_end < f.n_ff) line += cat("; ", f.n_ff - s->ram_end, " neurons on DISK");
            return line;
        }
        const Tier tier = base_.tier[static_cast<size_t>(ffn[0])];
        if (tier == Tier::Gpu) return cat("FFN on GPU: saves ", rate(ram_s - base_s_, bytes), " over RAM");
        if (tier == Tier::Disk) {
            return cat("FFN on DISK: RAM would save ", rate(base_s_ - ram_s, bytes), "; RAM is full");
        }
        std::string line = "FFN in RAM";
        Layout on_disk = base_;
        for (int i : ffn) on_disk.tier[static_cast<size_t>(i)] = Tier::Disk;
        if (p_.budgets.ram_bytes > 0) line += cat(": saves ", rate(seconds(on_disk) - base_s_, bytes), " over DISK");
        if (has_gpu_) {
            Layout on_gpu = base_;
            for (int i : ffn) on_gpu.tier[static_cast<size_t>(i)] = Tier::Gpu;
            line += cat("; the GPU would save ", rate(base_s_ - seconds(on_gpu), bytes));
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

void plan(const PlanArgs& args) {
    EngineOptions engine = args.engine;
    const bool sparse = engine.sparsity.sparsity_option != nullptr && engine.sparsity.sparsity_option->count() > 0;
    if (!engine.sparsity.stats.empty() && !sparse) {
        std::printf("note: --stats %s without --sparsity: the planner does not use activation statistics to place neurons"
                    " yet (a split FFN computes every neuron, so its GPU share does its byte share of the work)\n",
                    engine.sparsity.stats.c_str());
        engine.sparsity.stats.clear();
    }
    RuntimeOptions ro = engine.runtime_options();
    if (!ro.plan_path.empty()) throw ArgumentError("strata plan makes a placement; --plan reads one");
    ro.load_weights = false;
    ro.want_estimate = args.explain;
    check_write_target(args.output, "placement file");  // before measuring and planning
    const Runtime runtime(args.engine.model, ro);
    const TensorTable table = tensor_table(runtime.model());
    Placement p = runtime.placement();
    if (runtime.gpu() && p.hardware.gpu_name.empty()) p.hardware.gpu_name = std::string(runtime.gpu()->name());
    write_placement(p, args.output, &table);

    const TierBytes bytes = placement_bytes(p, table);
    std::printf("placement of %s -> %s\n", args.engine.model.c_str(), args.output.c_str());
    std::printf("budgets: gpu %s, ram %s; context %lld tokens, kv %s\n", format_bytes(p.budgets.gpu_bytes).c_str(),
                format_bytes(p.budgets.ram_bytes).c_str(), static_cast<long long>(p.n_ctx),
                std::string(type_traits(p.kv_type).name).c_str());
    std::printf("weights: gpu %s | ram %s | disk %s; placed by the %s\n", format_bytes(bytes.gpu).c_str(),
                format_bytes(bytes.ram).c_str(), format_bytes(bytes.disk).c_str(), runtime.placement_source().c_str());
    if (const ModelConfig& mc = runtime.model().config(); mc.is_moe()) {
        const ExpertSummary e = summarize_experts(runtime.model().file().tensors(), mc);
        std::printf("experts: %lld per layer, %lld active per token, %s per expert (gate+up+down); a token reads %s"
                    " of %s\n",
                    static_cast<long long>(e.n_expert), static_cast<long long>(e.n_expert_used),
                    format_bytes(e.bytes_per_expert).c_str(), format_bytes(e.active_bytes).c_str(),
                    format_bytes(e.total_bytes).c_str());
    }
    std::optional<Explainer> explainer;
    if (args.explain && runtime.cost_estimate()) explainer.emplace(runtime, table, p);
    // Runs of layers placed alike, one line each.
    const int n_layer = table.n_layer;
    for (int first = 0; first < n_layer;) {
        const std::string s = layer_summary(p, table, first);
        int last = first;
        while (last + 1 < n_layer && layer_summary(p, table, last + 1) == s) ++last;
        std::printf("  layers %3d-%-3d %s\n", first, last, s.c_str());
        if (explainer) {
            for (const std::string& why : explainer->layer(first)) std::printf("      %s\n", why.c_str());
        }
        first = last + 1;
    }
    for (const char* name : {"token_embd.weight", "output.weight"}) {
        if (const auto t = p.tier_of(name)) std::printf("  %-15s %s\n", name, std::string(tier_name(*t)).c_str());
    }
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
    if (!args.explain) return;
    const std::optional<CostEstimate>& e = runtime.cost_estimate();
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

}  // namespace

void add_plan_command(CLI::App& app) {
    auto args = std::make_shared<PlanArgs>();
    CLI::App* cmd = app.add_subcommand("plan", "place a model's weights inside memory budgets and write the placement file");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("-o,--output", args->output, "placement file to write (JSON)")->required();
    cmd->add_flag("--explain", args->explain, "say per group of layers what its placement saves, by the cost model");
    cmd->callback([args] { plan(*args); });
}

}  // namespace strata::cli

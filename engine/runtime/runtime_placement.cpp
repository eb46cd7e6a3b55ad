// Where a Runtime's weights go (runtime.h): this machine's hardware profile and the cost model
// fitted to it, then a placement file checked against the budgets, or the planner (falling back
// to the built-in placement), and the speeds the cost model predicts for the result.
#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/calibration.h"
#include "engine/runtime/hardware.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/runtime_budget.h"
#include "offload/builtin_placement.h"
#include "offload/placement_file.h"
#include "offload/planner.h"
#include "offload/tier.h"

namespace strata {

namespace {

// The types of the model's weight matrices (every tensor of more than one row), once each.
std::vector<GgmlType> matrix_types(const TensorTable& table) {
    std::vector<GgmlType> types;
    for (const TensorEntry& t : table.tensors) {
        if (t.ne[1] > 1 && std::find(types.begin(), types.end(), t.type) == types.end()) types.push_back(t.type);
    }
    return types;
}

}  // namespace

void Runtime::find_profile(const std::string& model_path, const TensorTable& table, std::ostream& log) {
    const bool planning = options_.plan_path.empty() && options_.placer == Placer::Plan;
    if (planning || options_.reprofile || options_.want_estimate) {
        try {
            ProfileRequest request{gpu_.get(), model_path, options_.reprofile, false};
            const ModelConfig& c = model_->config();
            request.attention = {static_cast<int>(c.n_head.at(0)), static_cast<int>(c.n_head_kv.at(0)),
                                 static_cast<int>(c.head_dim_k)};
            request.cpu = cpu_.get();
            request.weight_types = matrix_types(table);
            uint64_t n_steps = 0;
            if (options_.progress) {
                request.on_step = [&](std::string_view step) {
                    if (step.empty()) {
                        options_.progress("profiling", "", n_steps, n_steps);  // done: the bar ends
                    } else {
                        options_.progress("profiling", step, ++n_steps, 0);
                    }
                };
            }
            profile_ = load_or_measure_profile(request, log);
        } catch (const Error& e) {
            if (!planning) throw;
            log << "cannot profile this machine (" << e.what() << "): using the built-in placement\n";
        }
    } else {
        profile_ = cached_profile(gpu_.get(), options_.n_threads);
    }
    // The machine as profiled (the GPU too when this run leaves it unused): runs with and
    // without the GPU calibrate one cost model.
    if (profile_) machine_key_ = profile_->cpu_name + " | " + profile_->gpu_name;
    // Without a GPU backend the planner and the cost model must not see a GPU.
    if (profile_ && !gpu_) {
        HardwareProfile& p = *profile_;
        p.gpu_name.clear();
        p.gpu_total_bytes = 0;
        p.gpu_read_gbs = p.h2d_gbs = p.h2d_staged_gbs = p.d2h_gbs = p.transfer_latency_us = p.gpu_prefill_gflops = 0;
        p.gpu_gemv_gbs.clear();
    }
}

void Runtime::calibrate(int64_t n_ctx, std::ostream& log) {
    if (profile_) {
        // The cost model's constants, fitted to the decode runs measured on this machine.
        const std::vector<Observation> runs = load_calibration(default_calibration_path(), machine_key());
        if (!runs.empty()) {
            if (fit(cost_params_, runs)) {
                calibration_runs_ = static_cast<int>(runs.size());
            } else {
                log << "note: the " << runs.size() << " calibration run(s) in " << default_calibration_path()
                    << " cannot be fitted (they would predict no time or infinite time); predicting from the"
                       " hardware profile alone\n";
            }
        }
    }
    cost_params_.n_ctx_used = std::min<int64_t>(n_ctx, cost_params_.n_ctx_used);
    cost_params_.n_prompt = std::max<int64_t>(1, options_.session.n_batch);
    if (options_.sparsity.enabled()) {
        // Decode reads the up rows and the neuron-major down rows of the active neurons only (a
        // layer without a copy reads its ffn_down whole: sparse_down.h).
        const SparseDownPolicy& policy = options_.sparsity.down;
        const TypeTraits& down = type_traits(policy.copy_type);
        cost_params_.ffn_active_fraction = 1.0 - options_.sparsity.sparsity;
        cost_params_.ffn_down_bytes_per_weight = static_cast<double>(down.type_size) / static_cast<double>(down.block_size);
        cost_params_.ffn_down_copy_auto = policy.mode == SparseDownMode::Auto;
        if (policy.mode == SparseDownMode::Whole) cost_params_.ffn_down_bytes_per_weight = 0;
    }
}

void Runtime::place_from_file(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets) {
    const std::string& path = options_.plan_path;
    if (!options_.rules.empty()) {
        throw ArgumentError(cat("-ngl and -ot place the weights; the plan '", path,
                                "' has placed them already (drop one or the other)"));
    }
    placement_ = read_placement(path);
    if (options_.hot_neurons && placement_.hot_neurons.empty()) {
        throw FormatError(cat("the plan '", path, "' is a placement of schema 1 (whole tensors, no hot neuron",
                              " counts): make one with `strata plan -m MODEL --sparsity S --hot-neurons -o FILE`,",
                              " or drop --plan to place the weights now"));
    }
    check_placement_for(placement_, *model_);
    const TierBytes bytes = placement_bytes(placement_, table);
    const KvTierBytes kv = kv_tier_bytes(placement_, table, kv_cells, options_.session.kv_type);
    if ((bytes.gpu > 0 || kv.gpu > 0) && !gpu_) {
        throw BudgetError(cat("the plan '", path, "' puts ", format_bytes(bytes.gpu + kv.gpu),
                              " on the GPU, but this run has no GPU"));
    }
    if (gpu_ && bytes.gpu + kv.gpu > 0 && bytes.gpu + kv.gpu + budgets.gpu_reserved > budgets.gpu_free) {
        throw BudgetError(cat("the plan '", path, "' needs ", format_bytes(bytes.gpu + kv.gpu),
                              " of weights and KV on the GPU plus ~", format_bytes(budgets.gpu_reserved),
                              " of activations; this GPU budget leaves ", format_bytes(budgets.gpu_free),
                              " (raise --gpu-mem or make a plan for this budget)"));
    }
    const uint64_t staging = bytes.disk > 0 ? disk_options_.staging_bytes : 0;
    if (bytes.ram + kv.ram + staging > budgets.ram) {
        throw BudgetError(cat("the plan '", path, "' keeps ", format_bytes(bytes.ram + kv.ram + staging),
                              " in RAM (weights, KV, disk staging); the RAM budget is ", format_bytes(budgets.ram),
                              " (raise --ram-mem or make a plan for this budget)"));
    }
    placement_source_ = "plan " + path;
}

namespace {

// The built-in placement's inputs: the budgets less their reserves, and the -ngl/-ot rules
// (GPU rules are dropped, said on the log, without a GPU).
BuiltinPlacementParams builtin_params(const RuntimeOptions& options, const RuntimeBudgets& budgets, bool has_gpu,
                                      int64_t kv_cells, uint64_t staging_bytes, std::ostream& log) {
    BuiltinPlacementParams params;
    params.budgets.gpu_bytes = has_gpu ? budgets.gpu_free : 0;
    params.budgets.ram_bytes = budgets.ram;
    params.n_ctx = kv_cells;
    params.kv_type = options.session.kv_type;
    params.gpu_reserved_bytes = has_gpu ? std::min(budgets.gpu_reserved, budgets.gpu_free) : 0;
    params.ram_reserved_bytes = std::min(staging_bytes, budgets.ram);
    params.rules = options.rules;
    // --sparsity's FFN ops run each FFN on one backend (with --hot-neurons, the FFNs left on the
    // host are split with the GPU's leftover room afterwards).
    params.whole_ffns = options.sparsity.enabled();
    if (!has_gpu) {  // a llama.cpp command line's "=CUDA0" on a machine without a GPU: nothing to pin
        const size_t before = params.rules.tensors.size();
        std::erase_if(params.rules.tensors, [](const TensorRule& r) { return r.on_gpu; });
        if (params.rules.tensors.size() != before) log << "note: -ot rules for the GPU are ignored: this run has no GPU\n";
    }
    return params;
}

}  // namespace

void Runtime::place_weights(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets,
                            std::ostream& log) {
    const BuiltinPlacementParams params =
        builtin_params(options_, budgets, gpu_ != nullptr, kv_cells, disk_options_.staging_bytes, log);
    // When every weight and KV cache fits on the GPU there is nothing to plan: the GPU is
    // the fastest tier for every byte (a calibrated model that says otherwise is wrong about
    // small ops, not about bytes).
    const Placement all_gpu = gpu_ ? builtin_placement(table, params) : Placement{};
    const TierBytes all_gpu_bytes = gpu_ ? placement_bytes(all_gpu, table) : TierBytes{};
    const bool fits_gpu = gpu_ && all_gpu_bytes.ram == 0 && all_gpu_bytes.disk == 0 &&
                          std::all_of(all_gpu.kv.begin(), all_gpu.kv.end(), [](Tier t) { return t == Tier::Gpu; });
    if (fits_gpu && options_.placer == Placer::Plan) {
        placement_ = all_gpu;
        placement_source_ = "all on the GPU";
    } else if (options_.placer == Placer::Plan && profile_) {
        PlannerParams pp;
        pp.budgets = params.budgets;
        pp.n_ctx = params.n_ctx;
        pp.kv_type = params.kv_type;
        pp.gpu_reserved_bytes = params.gpu_reserved_bytes;
        pp.ram_reserved_bytes = params.ram_reserved_bytes;
        pp.rules = params.rules;
        pp.whole_ffns = params.whole_ffns;
        pp.cost = cost_params_;
        try {
            PlanReport report;
            placement_ = plan_placement(table, *profile_, pp, &report);
            plan_report_ = report;
            placement_source_ = "planner (" + report.chosen + ")";
        } catch (const BudgetError&) {
            throw;
        } catch (const Error& e) {
            log << "the planner failed (" << e.what() << "): using the built-in placement\n";
        }
    }
    if (!plan_report_ && !(fits_gpu && options_.placer == Placer::Plan)) {
        placement_ = builtin_placement(table, params);
        placement_source_ = "built-in";
    }
    placement_.model = model_fingerprint(*model_);
}

void Runtime::predict_speeds(const TensorTable& table) {
    if (plan_report_ && cost_params_.hot_cold.empty()) {  // the planner priced no hot neurons
        estimate_ = plan_report_->estimate;
    } else if (profile_) {
        estimate_.reset();
        try {
            estimate_ = estimate(placement_, table, *profile_, cost_params_);
        } catch (const Error&) {
            // A placement the profile cannot rate (GPU tiers, no GPU rates): no prediction.
        }
    }
    if (estimate_) {
        placement_.predicted.decode_tok_s = 1.0 / estimate_->decode_s_per_token;
        placement_.predicted.prefill_tok_s =
            estimate_->prefill_s_per_token > 0 ? 1.0 / estimate_->prefill_s_per_token : 0.0;
    }
}

}  // namespace strata

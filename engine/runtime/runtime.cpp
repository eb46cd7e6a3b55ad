// Loading a model onto this machine's backends inside its budgets (runtime.h).
#include "engine/runtime/runtime.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/builtin_backends.h"
#include "engine/core/byte_size.h"
#include "engine/core/error.h"
#include "engine/core/host_info.h"
#include "engine/runtime/hardware.h"
#include "engine/runtime/batch_step.h"
#include "engine/runtime/calibration.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/weight_warmup.h"
#include "offload/builtin_placement.h"
#include "offload/disk_profile.h"
#include "offload/placement_file.h"
#include "offload/planner.h"
#include "offload/tier.h"

namespace strata {
namespace {

// A mixture of experts' measured routing for the planner: the experts section of the stats file
// (`strata profile`; --stats, else the default path) when there is one for this model.
void load_expert_use(TensorTable& table, const Model& model, const std::string& model_path,
                     const std::string& stats_path, std::ostream& log) {
    const std::string path = !stats_path.empty() ? stats_path : default_stats_path(model_path, false);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return;
    ActivationProfile profile;
    try {
        profile = read_activation_profile(path);
        check_profile_for(profile, model, path);
    } catch (const Error& e) {  // optional: a stale or broken file only loses the measured routing
        log << "note: routing frequencies not used: " << e.what() << "\n";
        return;
    }
    std::vector<std::vector<double>> use = profile.expert_use();
    if (use.size() != static_cast<size_t>(table.n_layer)) return;  // measured before MoE profiles
    table.expert_use = std::move(use);
    log << "routing: expert use per layer measured in " << path << " (" << profile.expert_tokens << " tokens)\n";
}

constexpr uint64_t kGiB = 1ull << 30;
// Host RAM kept free when --ram-mem is not given.
constexpr uint64_t kRamMargin = 2 * kGiB;

uint64_t available_ram() { return host_ram_available_bytes(); }

// Resident bytes now (/proc/self/statm), 0 when unknown.
uint64_t current_rss_bytes() {
    std::ifstream in("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    if (!(in >> size >> resident)) return 0;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
}

uint64_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// Device bytes for activations and backend scratch at batch n_batch: the executor's slots
// (layer_program.h) of each of n_sequences sessions, the GEMV's quantized input and the f16
// input of batched matmuls, and what the backend's ops keep beyond them (op_scratch_bytes).
uint64_t gpu_scratch_estimate(const ModelConfig& c, int64_t n_batch, int64_t n_vocab, int64_t n_sequences,
                              uint64_t op_scratch_bytes) {
    int64_t width = c.n_embd;
    for (int il = 0; il < c.n_layer; ++il) {
        width = std::max({width, c.n_head[static_cast<size_t>(il)] * c.head_dim_k,
                          c.n_head[static_cast<size_t>(il)] * c.head_dim_v});
    }
    const int64_t n_ff = *std::max_element(c.n_ff.begin(), c.n_ff.end());
    const uint64_t per_token = static_cast<uint64_t>(10 * width + 3 * n_ff) * sizeof(float) +
                               static_cast<uint64_t>(std::max(width, n_ff)) * 4;  // q8 + f16 inputs
    const uint64_t activations = static_cast<uint64_t>(n_sequences) *
        (static_cast<uint64_t>(n_batch) * per_token + static_cast<uint64_t>(n_vocab) * 32 * sizeof(float));
    // Several sequences: the serve scheduler's batch step (batch_step.h) holds one decode row
    // per sequence (in groups of at most BatchStep::kMaxRows) and its logits rows.
    const uint64_t batch_rows = static_cast<uint64_t>(std::min(n_sequences, BatchStep::kMaxRows));
    const uint64_t batch = n_sequences > 1
        ? batch_rows * per_token + static_cast<uint64_t>(n_vocab) * std::min<uint64_t>(batch_rows, 32) * sizeof(float)
        : 0;
    return activations + batch + op_scratch_bytes;
}

// Bytes the GPU backend can still allocate (0 without one).
uint64_t gpu_free_bytes(const Backend* gpu) { return gpu != nullptr ? gpu->memory().allocatable_bytes() : 0; }

// The GPU backend's memory as --verbose prints it: the process budget, what the context and
// the backend's library hold outside its allocations, the allocations' limit, and the device now.
std::string vram_line(const Backend& gpu) {
    const BackendMemory m = gpu.memory();
    const uint64_t held_max = m.context_bytes + m.state_bytes + m.limit_bytes;
    return cat("vram (", gpu.name(), ": ", gpu.capabilities().device_name, "): budget ", format_bytes(m.budget_bytes),
               " | context and others ", format_bytes(m.context_bytes), " | library state ", format_bytes(m.state_bytes),
               " | allocations ", format_bytes(m.limit_bytes), " (in use ", format_bytes(m.used_bytes), ", peak ",
               format_bytes(m.peak_bytes), ") | process bound ", format_bytes(held_max), " | device in use now ",
               format_bytes(m.total_bytes - m.free_bytes), "\n");
}

// The largest tensor that may be streamed from disk (the staging ring holds two of them, so
// one is read while the other is used: disk_stream_options).
uint64_t largest_streamed_bytes(const TensorTable& table) {
    uint64_t largest = 0;
    for (const TensorEntry& t : table.tensors) {
        // Never streamed: the embedding and output matrices, and 1-D weights.
        if (t.name == "token_embd.weight" || t.name == "output.weight" || t.ne[1] == 1) continue;
        largest = std::max(largest, t.bytes);
    }
    return largest;
}

}  // namespace

std::string parse_gpu_choice(std::string_view text) {
    std::string s;
    for (char ch : text) s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "auto") return s;
    if (s == "none" || s == "cpu") return "none";
    const BackendRegistry& backends = builtin_backends();
    const BackendEntry* e = backends.find(s);
    if (e == nullptr || !e->is_device) {
        throw UnsupportedError(cat("--gpu ", text, ": this strata has no GPU backend '", text, "'; --gpu takes auto, none",
                                   " or one of the GPU backends it has: ", backends.names(true)));
    }
    return s;
}

Placer parse_placer(std::string_view text) {
    if (text == "plan") return Placer::Plan;
    if (text == "builtin" || text == "built-in") return Placer::Builtin;
    throw ArgumentError(cat("unknown --placement '", text, "' (plan, builtin)"));
}

Runtime::~Runtime() = default;

std::string Runtime::machine_key() const { return machine_key_; }

TensorTable Runtime::placement_table() const {
    const int64_t n_ctx = options_.session.n_ctx <= 0 ? model_->config().n_ctx_train
                                                      : std::min(options_.session.n_ctx, model_->config().n_ctx_train);
    const int64_t ring_slack = options_.session.swa_full ? n_ctx : options_.session.n_batch;
    return tensor_table(*model_, ring_slack, options_.session.n_sequences);
}

void Runtime::find_profile(const std::string& model_path, std::ostream& log) {
    const bool planning = options_.plan_path.empty() && options_.placer == Placer::Plan;
    if (planning || options_.reprofile || options_.want_estimate) {
        try {
            ProfileRequest request{gpu_.get(), model_path, options_.reprofile, false};
            const ModelConfig& c = model_->config();
            request.attention = {static_cast<int>(c.n_head.at(0)), static_cast<int>(c.n_head_kv.at(0)),
                                 static_cast<int>(c.head_dim_k)};
            request.cpu = cpu_.get();
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
        p.gpu_read_gbs = p.h2d_gbs = p.d2h_gbs = p.transfer_latency_us = p.gpu_prefill_gflops = 0;
        p.gpu_gemv_gbs.clear();
    }
}

void Runtime::make_gpu(const RuntimeOptions& o) {
    const BackendRegistry& backends = builtin_backends();
    const std::string choice = parse_gpu_choice(o.gpu);
    if (choice == "none") {
        if (o.gpu_mem > 0) throw ArgumentError("--gpu-mem was given with --gpu none");
        return;
    }
    std::string name = choice;
    if (choice == "auto") {
        // The first GPU backend auto may pick that can run here; none: CPU only.
        std::string why_not;
        name.clear();
        for (const BackendEntry& e : backends.entries()) {
            if (!e.is_device || !e.auto_choice) continue;
            const std::string why = e.unavailable ? e.unavailable() : std::string();
            if (why.empty()) {
                name = e.name;
                break;
            }
            why_not += cat(why_not.empty() ? "" : "; ", e.name, ": ", why);
        }
        if (name.empty()) {
            if (o.gpu_mem > 0) {
                throw ArgumentError(cat("--gpu-mem was given, but no GPU backend can run here (",
                                        why_not.empty() ? cat("this strata has: ", backends.names(true)) : why_not,
                                        "; use --gpu fake to test)"));
            }
            return;
        }
    }
    gpu_ = backends.create(name, BackendConfig{o.gpu_mem, o.n_threads}, "--gpu");
    gpu_budget_ = gpu_->memory().budget_bytes;
}

Runtime::Runtime(const std::string& model_path, const RuntimeOptions& options)
    : options_(options), rss_before_model_(current_rss_bytes()) {
    model_ = std::make_unique<Model>(model_path);
    cpu_ = builtin_backends().create("cpu", BackendConfig{0, options.n_threads}, "--threads");
    make_gpu(options);

    const ModelConfig& config = model_->config();
    const int64_t n_ctx = options.session.n_ctx <= 0 ? config.n_ctx_train
                                                      : std::min(options.session.n_ctx, config.n_ctx_train);
    // A batch longer than the context is never used; its activations are not reserved.
    options_.session.n_batch = std::min(options_.session.n_batch, n_ctx);
    if (options.session.n_ctx > config.n_ctx_train && options.log != nullptr) {
        *options.log << "note: -c " << options.session.n_ctx << " is more than the model's training context ("
                     << config.n_ctx_train << "); using " << config.n_ctx_train << "\n";
    }
    if (options.session.n_sequences < 1) {
        throw ArgumentError(cat("sessions to hold must be at least 1, got ", options.session.n_sequences));
    }
    // KV cells the budgets hold: n_sequences sessions of n_ctx cells each.
    const int64_t kv_cells = n_ctx * options.session.n_sequences;
    TensorTable table = placement_table();
    // GPU bytes free for the placement: the backend's memory now, less activations and scratch.
    const uint64_t gpu_free = gpu_free_bytes(gpu_.get());
    const uint64_t activation_reserve =
        gpu_ ? gpu_scratch_estimate(config, options_.session.n_batch, model_->weights().output.ne[1],
                                    options.session.n_sequences, gpu_->capabilities().op_scratch_bytes) : 0;
    // Prompt batches ship host weights to the GPU one matrix at a time (layer_program.h). Room
    // for the largest layer matrix is kept out of the placement, else the placement fills the GPU
    // and prefill falls back to the CPU (70B at --gpu-mem 6G on an H100: pp512 7.8 tok/s without
    // the room, 103.8 with it).
    const bool ships = gpu_ && options_.session.gpu_prefill_min_tokens > 0 &&
                       options_.session.n_batch >= options_.session.gpu_prefill_min_tokens;
    const uint64_t staging = ships ? largest_streamed_bytes(table) * static_cast<uint64_t>(options.session.n_sequences) : 0;
    // With slack for what the placement's sum leaves out (allocation rounding, norm copies): a
    // quarter of the matrix, at most 64 MiB (at 70B and 6 GiB the room came out 3.75 MiB short of
    // the largest matrix without it). Kept only where it is a small share of the budget.
    const uint64_t with_slack = staging + std::min<uint64_t>(staging / 4, 64ull << 20);
    const uint64_t staging_reserve = with_slack * 4 <= gpu_free ? with_slack : 0;
    const uint64_t gpu_reserved = activation_reserve + staging_reserve;
    const uint64_t ram = options.ram_mem > 0 ? options.ram_mem
                                             : (available_ram() > kRamMargin ? available_ram() - kRamMargin : 0);

    // Measured after gpu_free was taken: what the GPU measurement keeps in the arena (the
    // matmul's scratch) is within gpu_reserved.
    std::ostream null_log(nullptr);
    std::ostream& log = options.log != nullptr ? *options.log : null_log;
    find_profile(model_path, log);
    if (config.is_moe() && options.placer == Placer::Plan) load_expert_use(table, *model_, model_path, options.sparsity.stats_path, log);
    // The queue depth and block the profile's disk sweep chose, inside a ring counted in RAM.
    disk_options_ = disk_stream_options(options.disk_io, largest_streamed_bytes(table), profile_ ? &*profile_ : nullptr);
    const DiskStreamOptions& disk = disk_options_;
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
    if (options.sparsity.enabled()) {
        // Decode reads the up rows and the neuron-major down rows of the active neurons only.
        const TypeTraits& down = type_traits(options.sparsity.down_type);
        cost_params_.ffn_active_fraction = 1.0 - options.sparsity.sparsity;
        cost_params_.ffn_down_bytes_per_weight = static_cast<double>(down.type_size) / static_cast<double>(down.block_size);
    }

    // --sparsity keeps a neuron-major copy of each ffn_down beside it (sparse_ffn.h): placements
    // leave room for it (the staging and disk sizes above count the matrices alone).
    if (options.sparsity.enabled()) add_neuron_major_bytes(table, options.sparsity.down_type);

    if (!options.plan_path.empty()) {
        if (!options.rules.empty()) {
            throw ArgumentError(cat("-ngl and -ot place the weights; the plan '", options.plan_path,
                                    "' has placed them already (drop one or the other)"));
        }
        placement_ = read_placement(options.plan_path);
        if (options.hot_neurons && placement_.hot_neurons.empty()) {
            throw FormatError(cat("the plan '", options.plan_path, "' is a placement of schema 1 (whole tensors, no hot neuron",
                                  " counts): make one with `strata plan -m MODEL --sparsity S --hot-neurons -o FILE`,",
                                  " or drop --plan to place the weights now"));
        }
        check_placement_for(placement_, *model_);
        const TierBytes bytes = placement_bytes(placement_, table);
        uint64_t kv_gpu = 0, kv_ram = 0;
        for (int il = 0; il < config.n_layer; ++il) {
            const uint64_t b = kv_bytes_per_layer(table, il, kv_cells, options.session.kv_type);
            (placement_.kv[static_cast<size_t>(il)] == Tier::Gpu ? kv_gpu : kv_ram) += b;
        }
        if ((bytes.gpu > 0 || kv_gpu > 0) && !gpu_) {
            throw BudgetError(cat("the plan '", options.plan_path, "' puts ", format_bytes(bytes.gpu + kv_gpu),
                                  " on the GPU, but this run has no GPU"));
        }
        if (gpu_ && bytes.gpu + kv_gpu > 0 && bytes.gpu + kv_gpu + gpu_reserved > gpu_free) {
            throw BudgetError(cat("the plan '", options.plan_path, "' needs ", format_bytes(bytes.gpu + kv_gpu),
                                  " of weights and KV on the GPU plus ~", format_bytes(gpu_reserved),
                                  " of activations; this GPU budget leaves ", format_bytes(gpu_free),
                                  " (raise --gpu-mem or make a plan for this budget)"));
        }
        const uint64_t staging = bytes.disk > 0 ? disk.staging_bytes : 0;
        if (bytes.ram + kv_ram + staging > ram) {
            throw BudgetError(cat("the plan '", options.plan_path, "' keeps ", format_bytes(bytes.ram + kv_ram + staging),
                                  " in RAM (weights, KV, disk staging); the RAM budget is ", format_bytes(ram),
                                  " (raise --ram-mem or make a plan for this budget)"));
        }
        placement_source_ = "plan " + options.plan_path;
    } else {
        BuiltinPlacementParams params;
        params.budgets.gpu_bytes = gpu_ ? gpu_free : 0;
        params.budgets.ram_bytes = ram;
        params.n_ctx = kv_cells;
        params.kv_type = options.session.kv_type;
        params.gpu_reserved_bytes = gpu_ ? std::min(gpu_reserved, gpu_free) : 0;
        params.ram_reserved_bytes = std::min(disk.staging_bytes, ram);
        params.rules = options.rules;
        if (options.hot_neurons) params.rules.tensors.insert(params.rules.tensors.begin(), TensorRule{kFfnOffGpuPattern, false});
        if (!gpu_) {  // a llama.cpp command line's "=CUDA0" on a machine without a GPU: nothing to pin
            const size_t before = params.rules.tensors.size();
            std::erase_if(params.rules.tensors, [](const TensorRule& r) { return r.on_gpu; });
            if (params.rules.tensors.size() != before) log << "note: -ot rules for the GPU are ignored: this run has no GPU\n";
        }
        // When every weight and KV cache fits on the GPU there is nothing to plan: the GPU is
        // the fastest tier for every byte (a calibrated model that says otherwise is wrong about
        // small ops, not about bytes).
        const Placement all_gpu = gpu_ ? builtin_placement(table, params) : Placement{};
        const TierBytes all_gpu_bytes = gpu_ ? placement_bytes(all_gpu, table) : TierBytes{};
        const bool fits_gpu = gpu_ && all_gpu_bytes.ram == 0 && all_gpu_bytes.disk == 0 &&
                              std::all_of(all_gpu.kv.begin(), all_gpu.kv.end(), [](Tier t) { return t == Tier::Gpu; });
        if (fits_gpu && options.placer == Placer::Plan) {
            placement_ = all_gpu;
            placement_source_ = "all on the GPU";
        } else if (options.placer == Placer::Plan && profile_) {
            PlannerParams pp;
            pp.budgets = params.budgets;
            pp.n_ctx = params.n_ctx;
            pp.kv_type = params.kv_type;
            pp.gpu_reserved_bytes = params.gpu_reserved_bytes;
            pp.ram_reserved_bytes = params.ram_reserved_bytes;
            pp.rules = params.rules;
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
        if (!plan_report_ && !(fits_gpu && options.placer == Placer::Plan)) {
            placement_ = builtin_placement(table, params);
            placement_source_ = "built-in";
        }
        placement_.model = model_fingerprint(*model_);
    }
    placement_.n_ctx = kv_cells;
    placement_.kv_type = options.session.kv_type;
    if (plan_report_) {
        estimate_ = plan_report_->estimate;
    } else if (profile_) {
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
    if (!options.load_weights) return;
    std::function<void(int, int)> on_layer;
    if (options.progress) {
        on_layer = [&](int done, int total) {
            options.progress("placing weights", "", static_cast<uint64_t>(done), static_cast<uint64_t>(total));
        };
    }
    placed_ = std::make_unique<PlacedModel>(*model_, placement_,
                                            TierBackends{cpu_.get(), gpu_.get(), options.no_mmap, options.mlock}, disk,
                                            on_layer);
    if (options.progress) {
        warm_up_ram_weights(*model_, placement_, [&](uint64_t done, uint64_t total) {
            options.progress("reading weights", "", done, total);
        });
    }
    const ResidencyStats& placed_stats = placed_->stats();
    if (options.mlock && placed_stats.locked_bytes < placed_stats.ram_weight_bytes) {
        log << "warning: --mlock locked " << format_bytes(placed_stats.locked_bytes) << " of the "
            << format_bytes(placed_stats.ram_weight_bytes) << " of RAM weights (the limit is `ulimit -l`)\n";
    }
    // The neuron-major copies go where their FFNs are (the placement left room for them).
    sparse_ = load_sparse_ffn(*placed_, model_path, options.sparsity);
    options_.session.sparse = sparse_.get();
    // What the placement left on the GPU beyond its weights (and copies), the KV caches and the
    // activation reserve: the most that prefill may take to stage shipped weights, shared by the
    // n_sequences sessions (each stages on its own).
    if (gpu_) {
        uint64_t kv_gpu = 0;
        for (int il = 0; il < config.n_layer; ++il) {
            if (placement_.kv[static_cast<size_t>(il)] == Tier::Gpu) {
                kv_gpu += kv_bytes_per_layer(table, il, kv_cells, options.session.kv_type);
            }
        }
        // Part of the activation reserve may be held already: scratch the backend kept from the
        // hardware measurement (the f16 weight tile), taken after gpu_free was. What the GPU
        // lost beyond the weights counts as held (at 70B and 6 GiB: 73 MiB, which made the room
        // for a 183.75 MiB matrix 174.8 MiB).
        const uint64_t left = gpu_free_bytes(gpu_.get());
        const uint64_t weights = placed_->stats().gpu_weight_bytes + (sparse_ ? sparse_->device_bytes() : 0);
        const uint64_t held = gpu_free > left + weights ? gpu_free - left - weights : 0;
        const uint64_t still = activation_reserve > held ? activation_reserve - held : 0;
        options_.session.gpu_staging_limit =
            (left > kv_gpu + still ? left - kv_gpu - still : 0) / static_cast<uint64_t>(options.session.n_sequences);
        // Prompt batches copy RAM weights to the GPU: with --pin-weights it reads them in place.
        if (options.pin_weights && ships && options_.session.gpu_staging_limit > 0 &&
            placed_->register_ram_weights(*gpu_) == 0) {
            log << "note: --pin-weights: the " << gpu_->name() << " backend registered no RAM weights;"
                << " prompt batches copy them through staging\n";
        }
    }
    if (options.hot_neurons) {
        // The GPU's room after the placement, its KV caches and the activations' reserve.
        const uint64_t room = options_.session.gpu_staging_limit == UINT64_MAX
                                  ? 0 : options_.session.gpu_staging_limit * static_cast<uint64_t>(options.session.n_sequences);
        const std::string stats = options.sparsity.stats_path.empty() ? default_stats_path(model_path, false)
                                                                      : options.sparsity.stats_path;
        hot_cold_ = load_hot_cold_ffn(*placed_, sparse_.get(), gpu_.get(), HotColdLoad{stats, room, placement_.hot_neurons});
        placement_.hot_neurons.clear();
        for (int il = 0; il < hot_cold_->n_layer(); ++il) placement_.hot_neurons.push_back(hot_cold_->layer(il).hot);
        options_.session.hot_cold = hot_cold_.get();
        options_.session.gpu_staging_limit = (room - std::min(room, hot_cold_->hot_bytes())) /
                                             static_cast<uint64_t>(options.session.n_sequences);
    }
}

std::unique_ptr<Session> Runtime::new_session() const {
    return std::make_unique<Session>(*placed_, options_.session);
}

std::string Runtime::accounting(const Session* session) const {
    std::ostringstream out;
    const ResidencyStats& r = placed_->stats();
    out << "placement: " << placement_source_ << "\n";
    out << "weights: gpu " << format_bytes(r.gpu_weight_bytes) << " | ram " << format_bytes(r.ram_weight_bytes)
        << " | disk " << format_bytes(r.disk_weight_bytes);
    if (const DiskStream* s = placed_->disk_stream()) {
        out << " (streamed " << disk_io_name(s->mode());
        if (s->mode() == DiskIo::Direct) {
            out << " " << disk_options_.queue_depth << " x " << format_block_bytes(disk_options_.block_bytes);
        }
        out << ", staging " << format_bytes(s->staging_bytes())
            << ", read " << format_bytes(s->stats().bytes_read) << ", waited " << s->stats().wait_seconds << " s)";
    }
    out << "\n";
    if (options_.no_mmap || options_.mlock) {
        out << "ram weights: " << (options_.no_mmap ? "copied out of the file mapping" : "read through the file mapping");
        if (options_.mlock) out << ", " << format_bytes(r.locked_bytes) << " locked in memory";
        out << "\n";
    }
    if (session != nullptr) {
        const KvCache& kv = session->kv_cache();
        out << "kv cache: gpu " << format_bytes(gpu_ ? kv.bytes_on(gpu_.get()) : 0) << " | ram "
            << format_bytes(kv.bytes_on(cpu_.get())) << "\n";
        out << "activations: gpu " << format_bytes(gpu_ ? session->program().activation_bytes(gpu_.get()) : 0)
            << " | cpu " << format_bytes(session->program().activation_bytes(cpu_.get())) << "\n";
    }
    out << "norm copies: " << format_bytes(r.small_copy_bytes) << "\n";
    if (r.registered_bytes > 0) {
        out << "ram weights: " << format_bytes(r.registered_bytes) << " registered for direct GPU copies in "
            << r.register_seconds << " s\n";
    }
    if (gpu_) {
        out << "prefill staging: up to " << format_bytes(options_.session.gpu_staging_limit)
            << " per session for a shipped weight (largest " << format_bytes(largest_streamed_bytes(tensor_table(*model_)))
            << "; a larger one is computed where it lives)\n";
        if (session != nullptr && session->program().ship_stats().bytes > 0) {
            const LayerProgram::ShipStats& s = session->program().ship_stats();
            out << "prefill shipped " << format_bytes(s.bytes) << " of host weights to the GPU, host copies "
                << s.seconds << " s (" << (s.seconds > 0 ? static_cast<double>(s.bytes) / s.seconds / 1e9 : 0.0)
                << " GB/s" << (r.registered_bytes > 0 ? "; registered weights are only queued" : "") << ")\n";
        }
    }
    if (sparse_) out << sparsity_report(*sparse_, session != nullptr ? &session->program() : nullptr);
    if (hot_cold_) out << hot_cold_report(*hot_cold_);
    if (gpu_) out << vram_line(*gpu_);
    uint64_t ram_held = r.ram_weight_bytes;
    if (const DiskStream* s = placed_->disk_stream()) ram_held += s->staging_bytes();
    if (session != nullptr) ram_held += session->kv_cache().bytes_on(cpu_.get());
    out << "ram: weights + staging + kv " << format_bytes(ram_held) << " (budget "
        << format_bytes(placement_.budgets.ram_bytes > 0 ? placement_.budgets.ram_bytes : options_.ram_mem)
        << ") | peak RSS " << format_bytes(peak_rss_bytes()) << ", of which "
        << format_bytes(rss_before_model_) << " before the model was opened (libraries, runtime)\n";
    return out.str();
}

}  // namespace strata

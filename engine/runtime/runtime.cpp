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
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime_budget.h"
#include "engine/runtime/weight_warmup.h"
#include "offload/disk_profile.h"
#include "offload/tier.h"

namespace strata {
namespace {

// A mixture of experts' measured routing for the planner: the experts section of the stats file
// (`strata profile`; --stats, else the default path) when there is one for this model.
// A file named by --stats must exist and fit the model; the default one is optional (a stale or
// broken file there only loses the measured routing).
void load_expert_use(TensorTable& table, const Model& model, const std::string& model_path,
                     const std::string& stats_path, std::ostream& log) {
    const bool named = !stats_path.empty();
    const std::string path = named ? stats_path : default_stats_path(model_path, false);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        if (named) throw ArgumentError(cat("--stats ", path, ": no such file (write one with `strata profile`)"));
        return;
    }
    ActivationProfile profile;
    try {
        profile = read_activation_profile(path);
        check_profile_for(profile, model, path);
    } catch (const Error& e) {
        if (named) throw;
        log << "note: routing frequencies not used: " << e.what() << "\n";
        return;
    }
    std::vector<std::vector<double>> use = profile.expert_use();
    if (use.size() != static_cast<size_t>(table.n_layer)) return;  // measured before MoE profiles
    table.expert_use = std::move(use);
    log << "routing: expert use per layer measured in " << path << " (" << profile.expert_tokens << " tokens)\n";
}

// The share of decode tokens' expert selections the placement runs on the GPU under the table's
// routing frequencies (expert_use_of: measured, else uniform); nullopt without experts.
std::optional<double> expected_gpu_selections(const Placement& p, const TensorTable& table) {
    double gpu = 0, all = 0;
    for (int l = 0; l < table.n_layer; ++l) {
        const std::optional<ExpertTensors> ex = find_expert_tensors(table, l);
        if (!ex) continue;
        const std::vector<double> use = expert_use_of(table, l, ex->n_expert);
        const ExpertTiers* per = p.experts_of(l);
        const Tier whole = p.tier_of(ex->gate->name).value_or(Tier::Ram);
        for (int64_t e = 0; e < ex->n_expert; ++e) {
            const auto i = static_cast<size_t>(e);
            all += use[i];
            if ((per != nullptr && i < per->tiers.size() ? per->tiers[i] : whole) == Tier::Gpu) gpu += use[i];
        }
    }
    if (!(all > 0)) return std::nullopt;
    return gpu / all;
}

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
    const int64_t n_ctx = session_context(model_->config(), options_.session);
    const int64_t ring_slack = options_.session.swa_full ? n_ctx : options_.session.n_batch;
    TensorTable table = tensor_table(*model_, ring_slack, options_.session.n_sequences);
    table.expert_use = expert_use_;
    return table;
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
    gpu_ = backends.create(name, BackendConfig{o.gpu_mem, o.n_threads, o.batch_invariant}, "--gpu");
    gpu_budget_ = gpu_->memory().budget_bytes;
}

Runtime::Runtime(const std::string& model_path, const RuntimeOptions& options)
    : options_(options), rss_before_model_(current_rss_bytes()) {
    model_ = std::make_unique<Model>(model_path, options.rope);
    if (!options.sparsity.enabled() && !options.sparsity.stats_path.empty() && !model_->config().is_moe()) {
        throw ArgumentError("--stats was given without --sparsity S (a dense model's stats serve --sparsity; a mixture"
                            " of experts' routing counts serve the planner without it)");
    }
    options_.sparsity.down = effective_down_policy(options.sparsity);
    cpu_ = builtin_backends().create("cpu", BackendConfig{0, options.n_threads}, "--threads");
    make_gpu(options);
    const int64_t n_ctx = settle_session();
    // KV cells the budgets hold: n_sequences sessions of n_ctx cells each.
    const int64_t kv_cells = n_ctx * options.session.n_sequences;
    TensorTable table = placement_table();
    const RuntimeBudgets budgets = runtime_budgets(model_->config(), table, options_.session,
                                                   model_->weights().output.ne[1], gpu_.get(), options.ram_mem,
                                                   smallest_shipping_batch(options_.session, options.ship_min_fixed));

    // Measured after gpu_free was taken: what the GPU measurement keeps in the arena (the
    // matmul's scratch) is within gpu_reserved.
    std::ostream null_log(nullptr);
    std::ostream& log = options.log != nullptr ? *options.log : null_log;
    find_profile(model_path, table, log);
    // The routing the placer plans for, and every estimate of the placement (a built-in or
    // file placement's too) assumes.
    if (model_->config().is_moe()) {
        load_expert_use(table, *model_, model_path, options.sparsity.stats_path, log);
        expert_use_ = table.expert_use;
    }
    // The queue depth and block the profile's disk sweep chose, inside a ring counted in RAM.
    disk_options_ = disk_stream_options(options.disk_io, largest_streamed_bytes(table), profile_ ? &*profile_ : nullptr);
    calibrate(n_ctx, log);
    // The planner's guess of the RAM weights: what the GPU's share leaves (set again once placed).
    uint64_t all_weights = 0;
    for (const TensorEntry& t : table.tensors) all_weights += t.bytes;
    const uint64_t gpu_share = budgets.gpu_free > budgets.gpu_reserved ? budgets.gpu_free - budgets.gpu_reserved : 0;
    set_ship_params(budgets, all_weights - std::min(all_weights, gpu_share));
    // --sparsity keeps a neuron-major copy of each ffn_down beside it (sparse_ffn.h), and
    // --predictors each layer's predictor: placements leave room for them (the staging and disk
    // sizes above count the matrices alone).
    if (options.sparsity.enabled()) add_neuron_major_bytes(table, options_.sparsity);
    predictors_ = load_predictors(*model_, model_path, options.sparsity);
    if (predictors_) add_predictor_bytes(table, *predictors_);

    if (!options.plan_path.empty()) {
        place_from_file(table, kv_cells, budgets);
    } else {
        place_weights(table, kv_cells, budgets, log);
    }
    placement_.n_ctx = kv_cells;
    placement_.kv_type = options.session.kv_type;
    set_ship_params(budgets, placement_bytes(placement_, table).ram);
    set_ship_break_even(table);
    predict_speeds(table);
    if (!options.load_weights) return;
    load_placed(model_path, log);
    if (gpu_) {
        set_staging_limit(table, kv_cells, budgets, log);
    } else if (options_.pin_weights == PinWeights::On) {
        log << "note: --pin-weights: no GPU, nothing to register the RAM weights with\n";
    }
    if (options.hot_neurons) load_hot_neurons(model_path, table);
}

int64_t Runtime::settle_session() {
    const ModelConfig& config = model_->config();
    const SessionParams& asked = options_.session;
    const int64_t n_ctx = session_context(config, asked);
    const int64_t covered = rope_context(config);
    // A batch longer than the context is never used; its activations are not reserved.
    options_.session.n_batch = std::min(options_.session.n_batch, n_ctx);
    if (options_.rope.any() && options_.log != nullptr) {
        *options_.log << "note: RoPE from the command line: " << describe_rope(config.rope, config.n_ctx_train)
                      << "; it covers " << covered << " positions\n";
    }
    if (n_ctx > covered && options_.log != nullptr) {
        *options_.log << "note: context " << n_ctx << " is more than the model's training context ("
                      << covered << "): for speed only, text past it degrades\n";
    } else if (asked.n_ctx > n_ctx && options_.log != nullptr) {
        *options_.log << "note: -c " << asked.n_ctx << " is more than the model's training context ("
                      << covered << (covered > config.n_ctx_train ? " with its RoPE scaling" : "") << "); using "
                      << n_ctx << "\n";
    }
    if (asked.n_sequences < 1) {
        throw ArgumentError(cat("sessions to hold must be at least 1, got ", asked.n_sequences));
    }
    return n_ctx;
}

void Runtime::load_placed(const std::string& model_path, std::ostream& log) {
    std::function<void(int, int)> on_layer;
    if (options_.progress) {
        on_layer = [&](int done, int total) {
            options_.progress("placing weights", "", static_cast<uint64_t>(done), static_cast<uint64_t>(total));
        };
    }
    placed_ = std::make_unique<PlacedModel>(*model_, placement_,
                                            TierBackends{cpu_.get(), gpu_.get(), options_.no_mmap, options_.mlock},
                                            disk_options_, on_layer);
    if (options_.progress) {
        warm_up_ram_weights(*model_, placement_, [&](uint64_t done, uint64_t total) {
            options_.progress("reading weights", "", done, total);
        });
    }
    const ResidencyStats& placed_stats = placed_->stats();
    if (options_.mlock && placed_stats.locked_bytes < placed_stats.ram_weight_bytes) {
        log << "warning: --mlock locked " << format_bytes(placed_stats.locked_bytes) << " of the "
            << format_bytes(placed_stats.ram_weight_bytes) << " of RAM weights (the limit is `ulimit -l`)\n";
    }
    // The neuron-major copies go where their FFNs are (the placement left room for them).
    sparse_ = load_sparse_ffn(*placed_, model_path, options_.sparsity, std::move(predictors_));
    predictors_.reset();
    options_.session.sparse = sparse_.get();
}

void Runtime::set_staging_limit(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets,
                                std::ostream& log) {
    // What the placement left on the GPU beyond its weights (and copies), the KV caches and the
    // activation reserve: the most that prefill may take to stage shipped weights, shared by the
    // n_sequences sessions (each stages on its own).
    const uint64_t kv_gpu = kv_tier_bytes(placement_, table, kv_cells, options_.session.kv_type).gpu;
    // Part of the activation reserve may be held already: scratch the backend kept from the
    // hardware measurement (the f16 weight tile), taken after gpu_free was. What the GPU
    // lost beyond the weights counts as held (at 70B and 6 GiB: 73 MiB, which made the room
    // for a 183.75 MiB matrix 174.8 MiB).
    const uint64_t left = gpu_free_bytes(gpu_.get());
    const uint64_t weights = placed_->stats().gpu_weight_bytes + (sparse_ ? sparse_->device_bytes() : 0);
    const uint64_t held = budgets.gpu_free > left + weights ? budgets.gpu_free - left - weights : 0;
    const uint64_t still = budgets.activation_reserve > held ? budgets.activation_reserve - held : 0;
    options_.session.gpu_staging_limit =
        (left > kv_gpu + still ? left - kv_gpu - still : 0) / static_cast<uint64_t>(options_.session.n_sequences);
    // Prompt batches copy RAM weights to the GPU: registered, it reads them in place (70B at
    // 6 GiB on an H200: pp512 550 tok/s against 423 through staging, docs/BENCHMARKS.md).
    const uint64_t ram_bytes = placed_->stats().ram_weight_bytes;
    const bool ships = budgets.ships && options_.session.gpu_staging_limit > 0;
    const bool pin = pins_ram_weights(ships, ram_bytes);
    const uint64_t registered = pin && ships && ram_bytes > 0 ? placed_->register_ram_weights(*gpu_) : 0;
    if (options_.pin_weights == PinWeights::On && registered == 0) {
        log << "note: --pin-weights: no RAM weights registered ("
            << (ram_bytes == 0 ? "none are in RAM"
                : !ships       ? "prompt batches do not ship them to the GPU here"
                               : "the " + std::string(gpu_->name()) + " backend cannot register host memory")
            << "); prompt batches copy them through staging\n";
    }
}

bool Runtime::pins_ram_weights(bool ships, uint64_t ram_bytes) const {
    return options_.pin_weights == PinWeights::On ||
           (options_.pin_weights == PinWeights::Auto && pins_ram_weights_by_default(ships, ram_bytes, host_ram_total_bytes()));
}

void Runtime::set_ship_params(const RuntimeBudgets& budgets, uint64_t ram_bytes) {
    cost_params_.ship_min_tokens = options_.session.gpu_prefill_min_tokens > 0 ? options_.session.gpu_prefill_min_tokens
                                                                               : INT64_MAX;
    // Without a reserve the executor still stages in whatever room the placement left: one slot.
    cost_params_.ship_slots = budgets.ships ? std::max(1, budgets.staging_slots) : 0;
    cost_params_.ship_registered = pins_ram_weights(budgets.ships, ram_bytes);
}

void Runtime::set_ship_break_even(const TensorTable& table) {
    const int64_t current = options_.session.gpu_prefill_min_tokens;
    if (options_.ship_min_fixed || !profile_ || !gpu_ || current <= 2 || cost_params_.ship_slots == 0) return;
    // A pass's seconds for n prompt tokens, host weights shipped to the GPU or multiplied where
    // they are (0: not predicted).
    const auto pass_s = [&](int64_t n, bool ship) {
        CostParams c = cost_params_;
        c.n_prompt = n;
        c.ship_min_tokens = ship ? n : INT64_MAX;
        try {
            return static_cast<double>(n) * estimate(placement_, table, *profile_, c).prefill_s_per_token;
        } catch (const Error&) {
            return 0.0;  // a placement the profile cannot rate
        }
    };
    for (int64_t n : kShipBreakEvenCandidates) {
        if (n >= current) break;
        const double shipped = pass_s(n, true), local = pass_s(n, false);
        if (shipped <= 0 || local <= 0) return;
        if (shipped < local) {
            options_.session.gpu_prefill_min_tokens = n;
            cost_params_.ship_min_tokens = n;
            return;
        }
    }
}

void Runtime::load_hot_neurons(const std::string& model_path, const TensorTable& table) {
    const uint64_t n_sequences = static_cast<uint64_t>(options_.session.n_sequences);
    // The GPU's room after the placement, its KV caches and the activations' reserve.
    const uint64_t room = options_.session.gpu_staging_limit == UINT64_MAX ? 0
                                                                           : options_.session.gpu_staging_limit * n_sequences;
    const std::string stats = options_.sparsity.stats_path.empty() ? default_stats_path(model_path, false)
                                                                   : options_.sparsity.stats_path;
    HotColdLoad load{stats, room, placement_.hot_neurons, {}};
    if (profile_) {  // the counts the cost model prices fastest
        load.price = [&](const std::vector<HotColdCost>& hot_cold) {
            CostParams params = cost_params_;
            params.hot_cold = hot_cold;
            return estimate(placement_, table, *profile_, params).decode_s_per_token;
        };
    }
    hot_cold_ = load_hot_cold_ffn(*placed_, sparse_.get(), gpu_.get(), load);
    placement_.hot_neurons.clear();
    for (int il = 0; il < hot_cold_->n_layer(); ++il) placement_.hot_neurons.push_back(hot_cold_->layer(il).hot);
    if (load.hot.empty() && hot_cold_->hot_bytes() == 0 && room > 0 && options_.log != nullptr) {
        *options_.log << "note: --hot-neurons: " << kNoHotRangePays << "\n";
    }
    options_.session.hot_cold = hot_cold_.get();
    options_.session.gpu_staging_limit = (room - std::min(room, hot_cold_->hot_bytes())) / n_sequences;
    cost_params_.hot_cold = hot_cold_costs(*hot_cold_);
    predict_speeds(table);
}

std::unique_ptr<Session> Runtime::new_session() const {
    return std::make_unique<Session>(*placed_, options_.session);
}

std::unique_ptr<Session> Runtime::new_self_draft_session() const {
    bool gpu_ffn = false, skips = false;  // some FFN work runs in the draft; some is skipped
    for (int il = 0; il < model_->config().n_layer; ++il) {
        if (hot_cold_ != nullptr && hot_cold_->layer(il).split) {
            gpu_ffn = gpu_ffn || hot_cold_->layer(il).hot > 0;
            skips = skips || hot_cold_->layer(il).hot < hot_cold_->layer(il).n_ff;
            continue;
        }
        if (!placed_->layer(il).moe.experts.empty()) {
            throw UnsupportedError("--spec self is not built for a mixture of experts (its draft would run every "
                                   "routed expert, as the target does): use --spec lookup or a draft model (-md)");
        }
        for (const FfnPart& p : placed_->layer(il).ffn) {
            gpu_ffn = gpu_ffn || !is_host(*p.gate.backend);
            skips = skips || is_host(*p.gate.backend);
        }
    }
    if (!skips) {
        throw ArgumentError("--spec self drafts with the FFN work placed on the GPU, and every FFN is there: the draft "
                            "would be the target itself, at its cost. Use --spec lookup or a draft model (-md)");
    }
    if (!gpu_ffn) {
        throw ArgumentError("--spec self drafts with the FFN work placed on the GPU, and this placement keeps none there "
                            "(the draft would be the model without its FFNs): give a GPU room for FFN layers "
                            "(--gpu-mem, -ngl) or hot neurons (--sparsity S --hot-neurons), or use --spec lookup");
    }
    SessionParams params = options_.session;
    params.gpu_ffn_only = true;
    return std::make_unique<Session>(*placed_, params);
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
            << "; a larger one is computed where it lives); prompt batches ";
        if (options_.session.gpu_prefill_min_tokens > 0) {
            out << "of " << options_.session.gpu_prefill_min_tokens << "+ tokens ship host weights\n";
        } else {
            out << "never ship host weights\n";
        }
        if (session != nullptr && session->program().ship_stats().bytes > 0) {
            const LayerProgram::ShipStats& s = session->program().ship_stats();
            out << "prefill shipped " << format_bytes(s.bytes) << " of host weights to the GPU through " << s.slots
                << (s.slots == 1 ? " staging slot" : " staging slots (copies overlap products)") << ", host copies "
                << s.seconds << " s (" << (s.seconds > 0 ? static_cast<double>(s.bytes) / s.seconds / 1e9 : 0.0)
                << " GB/s" << (r.registered_bytes > 0 ? "; registered weights are only queued" : "") << ")\n";
        }
    }
    if (session != nullptr && session->program().moe_host_times().layers > 0) {
        const LayerProgram::MoeHostTimes& m = session->program().moe_host_times();
        const auto us = [&](double s) { return s / static_cast<double>(m.layers) * 1e6; };
        out << "moe layers routed on the host: " << m.layers << " decode layer steps; per layer (us): waiting for "
            << "the router " << us(m.wait_s) << ", routing " << us(m.route_s) << ", queueing device experts "
            << us(m.device_s) << ", host experts " << us(m.host_s) << ", sums " << us(m.sum_s) << "\n";
    }
    if (session != nullptr) {
        const LayerProgram::MoeHostTimes& m = session->program().moe_host_times();
        const uint64_t all = m.gpu_selections + m.host_selections;
        const std::optional<double> expected = expected_gpu_selections(placement_, placement_table());
        if (all > 0 && expected) {
            out << "expert selections in decode: " << 100.0 * static_cast<double>(m.gpu_selections) / static_cast<double>(all)
                << "% ran on the GPU (" << m.gpu_selections << " of " << all << "); the estimates' routing ("
                << (expert_use_.empty() ? "uniform" : "the stats file's") << ") expects " << 100.0 * *expected << "%\n";
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

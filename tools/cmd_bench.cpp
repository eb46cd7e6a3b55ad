// strata bench: llama-bench-style speed table — prompt processing (pp N: N random tokens in
// one prefill from an empty cache) and text generation (tg N: N single-token decode steps) —
// repeated, mean ± stdev of tokens/s, with the plan's prediction beside the measurement; --fit
// adds the cost model's decode terms beside the measured time per token. llama-bench's habits:
// comma lists (-p 128,512 -n 32 -t 4,8 -ngl 0,99 -ctk f16,q8_0: every combination) and
// -o md|csv|json|jsonl. --parallel 1,8 (-np) adds aggregate tg rows of several sequences
// decoded in one pass per step, as `strata serve` batches its slots (bench_parallel.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/timing.h"
#include "engine/runtime/calibration.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/progress_bar.h"
#include "tools/numbers.h"
#include "tools/plan_table.h"
#include "tools/sampling_options.h"
#include "tools/bench_parallel.h"
#include "tools/bench_spec.h"
#include "tools/spec_options.h"
#include "engine/core/bounded_read.h"

namespace strata::cli {
namespace {

struct BenchArgs {
    EngineOptions engine;
    std::vector<int64_t> n_prompt{512};
    std::vector<int64_t> n_gen{128};
    std::vector<int64_t> n_depth{0};       // -d: tokens in the context before each test
    std::vector<int> threads;              // -t list; empty: -t's default
    std::vector<std::string> gpu_layers;   // -ngl list
    std::vector<std::string> kv_types;     // -ctk list
    std::vector<std::string> flash_attn;   // -fa list (accepted)
    std::vector<int64_t> n_parallel{1};    // -np list: sequences decoded at once in tg rows
    int repetitions = 5;
    bool json = false;
    std::string format = "md";  // -o md|csv|json|jsonl
    bool fit = false;
    bool batch_given = false;  // -b: prompts in batches of that size, not one pass each
    std::string mmap = "1";    // -mmp 0: the RAM weights copied out of the file mapping
    SpecFlags spec;            // --spec ...: generation rows with and without speculation
    std::string spec_file;     // --spec-file: their prompt (default: a synthetic repeated one)
};

// One measured test, in llama-bench's terms.
struct BenchRow {
    std::string model, arch, test, type_k, gpu_layers;
    int64_t n_prompt = 0, n_gen = 0, n_batch = 0, n_depth = 0, n_parallel = 1;
    int threads = 0;
    double mean = 0, stdev = 0, predicted = 0;
    std::vector<double> samples;
    uint64_t gpu_bytes = 0, ram_bytes = 0, disk_bytes = 0;
    nlohmann::json sparsity;
    double accepted_per_pass = -1;  // speculation rows only
};

nlohmann::json row_json(const BenchRow& r) {
    std::vector<int64_t> ns;
    for (double ts : r.samples) ns.push_back(static_cast<int64_t>(1e9 * static_cast<double>(r.n_prompt + r.n_gen * r.n_parallel) / ts));
    int64_t avg_ns = 0;
    for (int64_t n : ns) avg_ns += n / static_cast<int64_t>(ns.size());
    nlohmann::json j = {{"model_filename", r.model}, {"model_type", r.arch}, {"n_batch", r.n_batch},
                        {"n_threads", r.threads}, {"n_gpu_layers", r.gpu_layers}, {"type_k", r.type_k},
                        {"type_v", r.type_k}, {"n_prompt", r.n_prompt}, {"n_gen", r.n_gen}, {"n_depth", r.n_depth}, {"n_parallel", r.n_parallel}, {"test", r.test},
                        {"avg_ns", avg_ns}, {"samples_ns", ns}, {"avg_ts", r.mean}, {"stddev_ts", r.stdev},
                        {"samples_ts", r.samples}, {"predicted_ts", r.predicted},
                        {"gpu_bytes", r.gpu_bytes}, {"ram_bytes", r.ram_bytes}, {"disk_bytes", r.disk_bytes}};
    if (!r.sparsity.is_null()) j["sparsity"] = r.sparsity;
    if (r.accepted_per_pass >= 0) j["accepted_per_pass"] = r.accepted_per_pass;
    return j;
}

constexpr const char* kCsvHeader =
    "model_filename,model_type,n_threads,n_gpu_layers,type_k,n_batch,n_prompt,n_gen,test,avg_ts,stddev_ts,predicted_ts,"
    "gpu_bytes,ram_bytes,disk_bytes";

std::string csv_quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

// Prints one row as it is measured (md, csv, jsonl); json prints them all at the end.
void print_row(const BenchArgs& args, const BenchRow& r) {
    if (args.format == "jsonl") {
        std::printf("%s\n", row_json(r).dump().c_str());
    } else if (args.format == "csv") {
        std::printf("%s,%s,%d,%s,%s,%lld,%lld,%lld,%s,%.6f,%.6f,%.6f,%llu,%llu,%llu\n", csv_quote(r.model).c_str(),
                    r.arch.c_str(), r.threads, r.gpu_layers.c_str(), r.type_k.c_str(), static_cast<long long>(r.n_batch),
                    static_cast<long long>(r.n_prompt), static_cast<long long>(r.n_gen), r.test.c_str(), r.mean, r.stdev,
                    r.predicted, static_cast<unsigned long long>(r.gpu_bytes),
                    static_cast<unsigned long long>(r.ram_bytes), static_cast<unsigned long long>(r.disk_bytes));
    } else if (args.format == "md") {
        const std::string test = r.sparsity.is_null()
                                     ? r.test
                                     : cat(r.test, " sparsity ", fixed(r.sparsity["target"].get<double>(), 2), " (achieved ",
                                           fixed(r.sparsity["achieved"].get<double>(), 3), ")");
        std::printf("| %s | %s | %s | %s | %s | %d | %s | %s | %.2f ± %.2f | %s |\n", r.arch.c_str(),
                    format_bytes(r.gpu_bytes).c_str(), format_bytes(r.ram_bytes).c_str(),
                    format_bytes(r.disk_bytes).c_str(), r.gpu_layers.c_str(), r.threads, r.type_k.c_str(), test.c_str(),
                    r.mean, r.stdev, r.predicted > 0 ? cat(r.predicted).c_str() : "-");
    }
    std::fflush(stdout);
}

struct Stat {
    double mean = 0, stdev = 0;
};

Stat stats(const std::vector<double>& v) {
    Stat s;
    for (double x : v) s.mean += x;
    s.mean /= static_cast<double>(v.size());
    for (double x : v) s.stdev += (x - s.mean) * (x - s.mean);
    s.stdev = v.size() > 1 ? std::sqrt(s.stdev / static_cast<double>(v.size() - 1)) : 0.0;
    return s;
}

// Tokens/s of one test: pp (n prompt tokens, one feed) or tg (n decode steps after one token),
// after `depth` untimed tokens already in the context (llama-bench's -d).
double run_once(Session& session, bool prompt, int64_t n, std::mt19937& rng, int64_t n_vocab, int64_t depth = 0) {
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(n_vocab - 1));
    session.clear();
    if (depth > 0) {
        std::vector<TokenId> ids(static_cast<size_t>(depth));
        for (auto& t : ids) t = token(rng);
        session.feed(ids);
    }
    if (prompt) {
        std::vector<TokenId> ids(static_cast<size_t>(n));
        for (auto& t : ids) t = token(rng);
        const auto t0 = std::chrono::steady_clock::now();
        session.feed(ids);
        return static_cast<double>(n) / seconds_since(t0);
    }
    session.feed(std::vector<TokenId>{token(rng)});
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) session.feed(std::vector<TokenId>{token(rng)});
    return static_cast<double>(n) / seconds_since(t0);
}

// One tg test: its cost-model terms at the KV cells it attends to on average (a bench runs at
// the start of the context, not at its end), and the measured time per token.
struct TgRun {
    std::string test;
    CostParams params;                    // n_ctx_used: the test's mean KV cells
    std::optional<CostEstimate> estimate;  // nullopt without a profile that rates the placement
    double measured_s = 0;
};

// Decode steps 1..n after `depth` tokens and one more attend to depth + 2..n+1 cells:
// depth + (n + 3) / 2 on average.
CostParams params_for_tg(const Runtime& runtime, int64_t n, int64_t depth) {
    CostParams c = runtime.cost_params();
    c.n_ctx_used = std::min(c.n_ctx_used, depth + (n + 3) / 2);
    return c;
}

std::optional<CostEstimate> estimate_for(const Runtime& runtime, const TensorTable& table, const CostParams& c) {
    if (!runtime.hardware_profile()) return std::nullopt;
    try {
        return estimate(runtime.placement(), table, *runtime.hardware_profile(), c);
    } catch (const ArgumentError&) {
        return std::nullopt;  // the profile cannot rate this placement (no GPU rates)
    }
}

// Prompt tokens/s the cost model predicts for n tokens fed in passes of at most n_batch (each
// pass at its own size: the batch decides shipping and the bandwidth floor); 0: no estimate.
double predicted_prompt_tok_s(const Runtime& runtime, const TensorTable& table, int64_t n, int64_t n_batch) {
    double seconds = 0;
    const int64_t full = n / n_batch, rest = n % n_batch;
    for (const auto& [size, passes] : {std::pair{n_batch, full}, std::pair{rest, int64_t{1}}}) {
        if (size <= 0 || passes <= 0) continue;
        CostParams c = runtime.cost_params();
        c.n_prompt = size;
        const std::optional<CostEstimate> e = estimate_for(runtime, table, c);
        if (!e || e->prefill_s_per_token <= 0) return 0;
        seconds += static_cast<double>(passes * size) * e->prefill_s_per_token;
    }
    return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

// The cost model's decode terms for this placement beside each measured tg time per token.
void print_fit(const Runtime& runtime, const TgRun& run) {
    const std::optional<CostEstimate>& e = run.estimate;
    if (!e) {
        std::printf("\ncost model: no estimate (%s)\n",
                    runtime.hardware_profile() ? "the profile cannot rate this placement" : "no hardware profile");
        return;
    }
    std::printf("\ncost model, decode per token at %lld KV cells (%s):\n",
                static_cast<long long>(run.params.n_ctx_used), runtime.placement_source().c_str());
    std::printf("| term | ms |\n| --- | ---: |\n");
    std::printf("| gpu | %.3f |\n| cpu | %.3f |\n| disk exposed (of %.3f read) | %.3f |\n", e->gpu_s * 1e3,
                e->cpu_s * 1e3, e->disk_s * 1e3, e->disk_exposed_s * 1e3);
    std::printf("| fixed costs (in gpu and cpu) | %.3f |\n", e->fixed_s * 1e3);
    std::printf("| transfers (%d) | %.3f |\n| overhead | %.3f |\n| **predicted** | %.3f |\n", e->transfers,
                e->transfer_s * 1e3, e->overhead_s * 1e3, e->decode_s_per_token * 1e3);
    std::printf("| measured %s | %.3f (x%.2f) |\n", run.test.c_str(), run.measured_s * 1e3,
                run.measured_s / e->decode_s_per_token);
}

// The skipped fraction of FFN neuron evaluations per layer and overall between two snapshots
// of the program's counts, or null without sparsity.
nlohmann::json achieved_sparsity(const std::vector<LayerProgram::SparsityCount>& before,
                                 const std::vector<LayerProgram::SparsityCount>& after) {
    if (after.empty() || before.size() != after.size()) return nullptr;
    nlohmann::json layers = nlohmann::json::array();
    uint64_t evaluated = 0, active = 0;
    for (size_t i = 0; i < after.size(); ++i) {
        const uint64_t e = after[i].evaluated - before[i].evaluated, a = after[i].active - before[i].active;
        evaluated += e;
        active += a;
        layers.push_back(e > 0 ? 1.0 - static_cast<double>(a) / static_cast<double>(e) : 0.0);
    }
    return {{"target", nullptr}, {"achieved", evaluated > 0 ? 1.0 - static_cast<double>(active) / static_cast<double>(evaluated) : 0.0},
            {"per_layer", layers}};
}

// One test (pp or tg of n tokens after depth tokens): a warm-up, then `repetitions` timed runs;
// the row's name, counts, samples, mean, deviation and achieved sparsity.
BenchRow measure_test(Session& session, bool prompt, int64_t n, int64_t depth, int repetitions, std::mt19937& rng) {
    const int64_t n_vocab = session.program().n_vocab();
    // Warm-up: a whole prompt pass (as llama-bench warms up, so both reach the same state:
    // every weight's pages touched, each GEMM shape's kernels loaded), 16 tokens of decode.
    run_once(session, prompt, prompt ? n : std::min<int64_t>(n, 16), rng, n_vocab, depth);
    BenchRow row;
    const std::vector<LayerProgram::SparsityCount> before = session.program().sparsity_counts();
    row.test = cat(prompt ? "pp" : "tg", n, depth > 0 ? cat(" @ d", depth) : "");
    ProgressBar bar(row.test, ProgressStyle{"runs", 1.0});  // a row over a second
    for (int r = 0; r < repetitions; ++r) {
        bar.update(static_cast<uint64_t>(r), static_cast<uint64_t>(repetitions), "");
        row.samples.push_back(run_once(session, prompt, n, rng, n_vocab, depth));
    }
    bar.clear();  // the row takes its line
    row.sparsity = achieved_sparsity(before, session.program().sparsity_counts());
    const Stat st = stats(row.samples);
    row.mean = st.mean;
    row.stdev = st.stdev;
    row.n_depth = depth;
    (prompt ? row.n_prompt : row.n_gen) = n;
    return row;
}

// tg n of several sequences at once (-np): a warm-up of 16 steps, then `repetitions` timed runs
// of aggregate tokens/s.
BenchRow measure_parallel(BatchStep& step, std::span<Session* const> sessions, int64_t n, int64_t depth,
                          int repetitions, std::mt19937& rng) {
    parallel_once(step, sessions, std::min<int64_t>(n, 16), depth, rng);
    BenchRow row;
    row.test = cat("tg", n, " x", sessions.size(), depth > 0 ? cat(" @ d", depth) : "");
    ProgressBar bar(row.test, ProgressStyle{"runs", 1.0});
    for (int r = 0; r < repetitions; ++r) {
        bar.update(static_cast<uint64_t>(r), static_cast<uint64_t>(repetitions), "");
        row.samples.push_back(parallel_once(step, sessions, n, depth, rng));
    }
    bar.clear();
    const Stat st = stats(row.samples);
    row.mean = st.mean;
    row.stdev = st.stdev;
    row.n_depth = depth;
    row.n_gen = n;
    row.n_parallel = static_cast<int64_t>(sessions.size());
    return row;
}

// Records each measured tg as a calibration run, which later runs fit the cost model to.
void record_fit(const Runtime& runtime, const TensorTable& table, const std::string& model,
                const std::vector<TgRun>& tg_runs, bool quiet) {
    if (!runtime.hardware_profile()) return;
    const ResidencyStats& rs = runtime.placed().stats();
    int recorded = 0;
    for (const TgRun& r : tg_runs) {
        if (!r.estimate) continue;
        const Observation o = observe(runtime.placement(), table, *runtime.hardware_profile(), r.params, r.measured_s);
        const std::string note = append_calibration(default_calibration_path(), runtime.machine_key(), o,
                           cat(model, " ", r.test, " gpu ", format_bytes(rs.gpu_weight_bytes), " ram ",
                               format_bytes(rs.ram_weight_bytes), " disk ", format_bytes(rs.disk_weight_bytes)));
        if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
        ++recorded;
    }
    if (!quiet) {
        std::printf("recorded %d run(s) in %s (the cost model was fitted to %d earlier run(s))\n", recorded,
                    default_calibration_path().c_str(), runtime.calibration_runs());
    }
}

// The prompt of the speculation rows: --spec-file's text, or a synthetic repeated one.
std::vector<TokenId> bench_prompt(const BenchArgs& args, const Model& model) {
    if (args.spec_file.empty()) return repeated_prompt(model.config().n_vocab, 4321);
    const std::string text = read_bounded_file(args.spec_file, "--spec-file", ReadOptions{kMaxTextFileBytes});
    std::vector<TokenId> ids = model.tokenizer().encode(text, /*add_special=*/true, /*parse_special=*/true);
    if (ids.empty()) throw ArgumentError(cat("--spec-file '", args.spec_file, "' holds no tokens"));
    return ids;
}

// "gen N" (greedy generation from the prompt) or "gen N spec MODE": the decode's tokens/s over
// the repetitions and, with speculation, the accepted tokens per pass (the same in every run).
BenchRow spec_row(const BenchArgs& args, const std::vector<TokenId>& prompt, int64_t n, const SpecParams& spec,
                  Session& session, Session* draft) {
    BenchRow row;
    generate_once(session, prompt, std::min<int64_t>(n, 16), spec, draft);  // warm-up
    GenRun last;
    for (int r = 0; r < args.repetitions; ++r) {
        last = generate_once(session, prompt, n, spec, draft);
        row.samples.push_back(last.tokens_per_second);
    }
    const Stat st = stats(row.samples);
    row.mean = st.mean;
    row.stdev = st.stdev;
    row.n_gen = n;  // tokens/s of the decode, as tg (the prompt's prefill is not timed)
    row.test = spec.mode == SpecMode::Off
                   ? cat("gen", n)
                   : cat("gen", n, " spec ", spec_mode_name(spec.mode), " k", spec.auto_length ? "auto" : cat(spec.draft_max), " (",
                         fixed(last.spec.mean_accepted(), 2), " acc/pass, ", last.spec.accepted, "/", last.spec.proposed, ")");
    if (spec.mode != SpecMode::Off) row.accepted_per_pass = last.spec.mean_accepted();
    return row;
}

// What one engine configuration (-t, -ngl, -ctk of the lists) measures.
struct ConfigResult {
    std::vector<BenchRow> rows;
    nlohmann::json cost_model = nlohmann::json::array();
};

// The longest test of the lists: a prompt, or a generation after its one-token prompt, after
// the deepest context.
int64_t longest_test(const BenchArgs& args) {
    int64_t longest = 1;
    for (int64_t n : args.n_prompt) longest = std::max(longest, n);
    for (int64_t n : args.n_gen) longest = std::max(longest, n + 1);
    return longest + *std::max_element(args.n_depth.begin(), args.n_depth.end());
}

// The runtime's options for a configuration whose longest test is `longest` tokens; sets
// engine.n_ctx to the context used.
RuntimeOptions bench_runtime_options(const BenchArgs& args, EngineOptions& engine, int64_t longest) {
    // The context is the longest test unless -c asks for more, as llama-bench sizes it: the KV
    // cache then takes what the test needs, not the default 4096 cells (at 70B and --gpu-mem 6G
    // a 4096-cell f16 cache held 1.25 GiB; the planner left it in RAM, and pp512 then ran its
    // attention on the CPU).
    if (engine.n_ctx < longest) engine.n_ctx = longest;
    RuntimeOptions ro = engine.runtime_options();
    ro.want_estimate = args.fit;
    ro.session.ctx_train_factor = 8;  // llama-bench's -d 8192 on a 4096-context model runs
    // The budgets hold the KV caches and activations of the most sequences a -np row runs.
    ro.session.n_sequences = *std::max_element(args.n_parallel.begin(), args.n_parallel.end());
    // One forward pass per prompt, as llama-bench's default batch does for pp512, unless -b
    // (or -ub) asks for another physical batch.
    if (!args.batch_given && engine.llama.n_ubatch == 0) {
        for (int64_t n : args.n_prompt) ro.session.n_batch = std::max(ro.session.n_batch, n);
    }
    return ro;
}

// The cost model's terms for one gen run, as the JSON output lists them.
nlohmann::json cost_model_entry(const TgRun& r) {
    const CostEstimate& e = *r.estimate;
    return {{"test", r.test}, {"kv_cells", r.params.n_ctx_used}, {"decode_s", e.decode_s_per_token},
            {"gpu_s", e.gpu_s}, {"cpu_s", e.cpu_s}, {"disk_s", e.disk_s},
            {"disk_exposed_s", e.disk_exposed_s}, {"transfer_s", e.transfer_s},
            {"transfers", e.transfers}, {"overhead_s", e.overhead_s}, {"fixed_s", e.fixed_s}};
}

// The cost model's tok/s beside a measured row: a prompt test at its own passes, a decode test
// at its context (kept in tg_runs for --fit and the JSON's cost model).
void predict_row(const Runtime& runtime, const TensorTable& table, bool prompt, int64_t n, int64_t depth,
                 int64_t n_batch, BenchRow& row, std::vector<TgRun>& tg_runs) {
    const Placement& plan = runtime.placement();
    row.predicted = prompt ? plan.predicted.prefill_tok_s : plan.predicted.decode_tok_s;
    if (prompt) {
        const double at_size = predicted_prompt_tok_s(runtime, table, n, n_batch);
        if (at_size > 0) row.predicted = at_size;
        return;
    }
    TgRun run{row.test, params_for_tg(runtime, n, depth), std::nullopt, 1.0 / row.mean};
    run.estimate = estimate_for(runtime, table, run.params);
    if (run.estimate) row.predicted = 1.0 / run.estimate->decode_s_per_token;
    tg_runs.push_back(std::move(run));
}

void check_longest_fits(const Runtime& runtime, const Session& session, int64_t longest) {
    if (longest > session.n_ctx()) {
        throw ArgumentError(cat("bench: a test of ", longest, " tokens does not fit the context of ", session.n_ctx(),
                                " tokens (bench's context reaches 8x the model's training context of ",
                                rope_context(runtime.model().config()), " at most)"));
    }
}

ConfigResult bench_config(const BenchArgs& args, EngineOptions engine) {
    const int64_t longest = longest_test(args);
    const RuntimeOptions ro = bench_runtime_options(args, engine, longest);
    SpecParams spec = resolve_spec(args.spec, engine, "bench");
    const Engines engines = load_engines(engine.model, ro, args.spec, spec);
    const Runtime& runtime = *engines.target;
    apply_cost_prior(spec, runtime);
    std::unique_ptr<Session> session = runtime.new_session();
    check_longest_fits(runtime, *session, longest);
    const double target_sparsity = runtime.sparse() != nullptr ? runtime.sparse()->sparsity() : -1;
    std::mt19937 rng(1234);
    const ResidencyStats& rs = runtime.placed().stats();
    const TensorTable table = runtime.placement_table();
    std::vector<TgRun> tg_runs;
    ConfigResult out;
    // The configuration's columns, then the row is printed and kept.
    const auto emit = [&](BenchRow row) {
        row.model = engine.model;
        row.arch = runtime.model().config().architecture;
        row.type_k = engine.kv_type;
        row.gpu_layers = engine.llama.gpu_layers.empty() ? "auto" : engine.llama.gpu_layers;
        row.threads = runtime.cpu().capabilities().host_threads;
        row.n_batch = ro.session.n_batch;
        row.gpu_bytes = rs.gpu_weight_bytes;
        row.ram_bytes = rs.ram_weight_bytes;
        row.disk_bytes = rs.disk_weight_bytes;
        if (!args.json) print_row(args, row);
        out.rows.push_back(std::move(row));
    };
    auto one = [&](bool prompt, int64_t n, int64_t depth) {
        if (n <= 0) return;
        BenchRow row = measure_test(*session, prompt, n, depth, args.repetitions, rng);
        if (!row.sparsity.is_null()) row.sparsity["target"] = target_sparsity;
        predict_row(runtime, table, prompt, n, depth, ro.session.n_batch, row, tg_runs);
        emit(std::move(row));
    };
    // -np rows: the other sequences' sessions and the step that batches them, made once.
    std::vector<std::unique_ptr<Session>> others;
    std::unique_ptr<BatchStep> step;
    if (ro.session.n_sequences > 1) {
        for (int64_t i = 1; i < ro.session.n_sequences; ++i) others.push_back(runtime.new_session());
        step = std::make_unique<BatchStep>(runtime.placed(), runtime.sparse());
    }
    const auto parallel = [&](int64_t n, int64_t depth) {
        for (int64_t np : args.n_parallel) {
            if (np == 1) {
                one(false, n, depth);
                continue;
            }
            std::vector<Session*> sessions{session.get()};
            for (int64_t i = 1; i < np; ++i) sessions.push_back(others[static_cast<size_t>(i - 1)].get());
            emit(measure_parallel(*step, sessions, n, depth, args.repetitions, rng));
        }
    };
    for (int64_t d : args.n_depth) {  // llama-bench's order: each depth, its pp then its tg tests
        for (int64_t n : args.n_prompt) one(true, n, d);
        for (int64_t n : args.n_gen) {
            if (n > 0) parallel(n, d);
        }
    }
    if (spec.mode != SpecMode::Off) {  // gen N without and with speculation, on one prompt
        const std::vector<TokenId> prompt = bench_prompt(args, runtime.model());
        for (int64_t n : args.n_gen) {
            emit(spec_row(args, prompt, n, SpecParams{}, *session, nullptr));
            emit(spec_row(args, prompt, n, spec, *session, engines.draft_session.get()));
        }
    }
    for (const TgRun& r : tg_runs) {
        if (args.fit && args.format == "md" && !args.json) print_fit(runtime, r);
        if (r.estimate) out.cost_model.push_back(cost_model_entry(r));
    }
    if (args.fit) record_fit(runtime, table, engine.model, tg_runs, args.json || args.format != "md");
    if (engine.verbose) {  // what ran: the placement per run of alike layers, then the memory
        print_plan_table(plan_rows(runtime.placement(), table, nullptr), stderr);
        std::fprintf(stderr, "%s", runtime.accounting(session.get()).c_str());
    }
    return out;
}

// The engine settings of every combination of the -t, -ngl and -ctk lists.
std::vector<EngineOptions> configurations(const BenchArgs& args) {
    std::vector<EngineOptions> out{args.engine};
    const auto expand = [&](auto values, auto set) {
        if (values.empty()) return;
        std::vector<EngineOptions> next;
        for (const EngineOptions& e : out) {
            for (const auto& v : values) {
                next.push_back(e);
                set(next.back(), v);
            }
        }
        out = std::move(next);
    };
    expand(args.threads, [](EngineOptions& e, int t) { e.n_threads = t; });
    expand(args.gpu_layers, [](EngineOptions& e, const std::string& n) { e.llama.gpu_layers = n; });
    expand(args.kv_types, [](EngineOptions& e, const std::string& k) { e.kv_type = k; });
    return out;
}

void bench(const BenchArgs& args) {
    if (args.repetitions < 1) throw ArgumentError(cat("-r must be at least 1, got ", args.repetitions));
    for (const std::string& fa : args.flash_attn) parse_flash_attn(fa);
    for (const std::string& n : args.gpu_layers) parse_gpu_layers(n);
    const std::vector<EngineOptions> configs = configurations(args);
    if (!args.json && args.format == "md") {
        std::printf("| model | gpu | ram | disk | ngl | threads | type_k | test | t/s | predicted t/s |\n");
        std::printf("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |\n");
    } else if (!args.json && args.format == "csv") {
        std::printf("%s\n", kCsvHeader);
    }
    std::vector<BenchRow> rows;
    nlohmann::json cost_model = nlohmann::json::array();
    for (const EngineOptions& engine : configs) {
        ConfigResult r = bench_config(args, engine);
        for (BenchRow& row : r.rows) rows.push_back(std::move(row));
        for (auto& c : r.cost_model) cost_model.push_back(std::move(c));
    }
    if (args.format == "json" && !args.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const BenchRow& r : rows) all.push_back(row_json(r));
        std::printf("%s\n", all.dump(2).c_str());
    }
    if (!args.json) return;
    nlohmann::json results = nlohmann::json::array();
    for (const BenchRow& r : rows) {
        results.push_back({{"test", r.test}, {"tokens_per_second", r.mean}, {"stdev", r.stdev}, {"samples", r.samples},
                           {"predicted", r.predicted}, {"threads", r.threads}, {"n_gpu_layers", r.gpu_layers},
                           {"type_k", r.type_k}});
        if (!r.sparsity.is_null()) results.back()["sparsity"] = r.sparsity;
        if (r.accepted_per_pass >= 0) results.back()["accepted_per_pass"] = r.accepted_per_pass;
    }
    const BenchRow first = rows.empty() ? BenchRow{} : rows.front();
    nlohmann::json out = {{"model", args.engine.model},
                          {"weights", {{"gpu", first.gpu_bytes}, {"ram", first.ram_bytes}, {"disk", first.disk_bytes}}},
                          {"results", results}};
    if (args.fit) out["cost_model"] = cost_model;
    std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "measure prompt and generation speed (llama-bench style)");
    add_engine_options(*cmd, args->engine);
    // llama-bench takes lists of these: bench's own, replacing the single-valued engine flags.
    for (const char* name : {"--threads", "--n-gpu-layers", "--ctk", "--flash-attn"}) cmd->remove_option(cmd->get_option(name));
    cmd->add_option("-p,--n-prompt", args->n_prompt, "prompt lengths to test, e.g. 128,512 (pp; 0 = none)")
        ->capture_default_str()->delimiter(',')->check(int_in(0, kMaxContext));
    cmd->add_option("-n,--n-gen", args->n_gen, "generation lengths to test (tg; 0 = none)")
        ->capture_default_str()->delimiter(',')->check(int_in(0, kMaxContext));
    cmd->add_option("-d,--n-depth", args->n_depth,
                    "tokens already in the context before each test, e.g. 0,8192 (llama-bench's -d; untimed)")
        ->capture_default_str()->delimiter(',')->check(int_in(0, kMaxContext));
    cmd->add_option("-t,--threads", args->threads, "CPU threads, e.g. 4,8 (default: physical cores)")
        ->delimiter(',')->check(int_in(0, kMaxThreadsFlag));
    cmd->add_option("--n-gpu-layers,--gpu-layers", args->gpu_layers, "-ngl: layers on the GPU at most, e.g. 0,99")
        ->delimiter(',');
    cmd->add_option("--ctk,--cache-type,--cache-type-k", args->kv_types, "-ctk: KV cache types, e.g. f16,q8_0")
        ->delimiter(',');
    cmd->add_option("--flash-attn", args->flash_attn, "-fa: 0,1 (accepted; attention is always fused)")->delimiter(',');
    cmd->add_option("--parallel,--n-parallel", args->n_parallel,
                    "-np: sequences decoding at once in the tg rows, e.g. 1,8 (one forward pass per step for all,"
                    " as strata serve batches its slots; the row's t/s is their aggregate)")
        ->capture_default_str()->delimiter(',')->check(int_in(1, 256));
    cmd->add_option("-r,--repetitions", args->repetitions, "runs per test")->capture_default_str()
        ->check(int_in(1, 100000));
    cmd->add_option("-o,--output", args->format, "output format: md, csv, json, jsonl")
        ->capture_default_str()->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
    cmd->add_flag("--json", args->json, "print Strata's JSON summary instead of a table");
    cmd->add_option("--mmap", args->mmap, "-mmp 0|1: 0 is --no-mmap")->check(CLI::IsMember({"0", "1"}));
    cmd->add_flag("--fit", args->fit,
                  "print the cost model's decode terms beside the measured tg time per token, and record the run"
                  " in the calibration file the cost model is fitted to");
    add_spec_options(*cmd, args->spec);
    cmd->add_option("--spec-file", args->spec_file,
                    "prompt of the --spec rows (gen N with and without speculation); default: 64 random tokens said twice");
    CLI::Option* batch = cmd->get_option("--batch-size");
    CLI::Option* ctx = cmd->get_option("--ctx-size");
    cmd->callback([args, batch, ctx] {
        args->batch_given = batch->count() > 0;
        // No -c: bench_config takes the longest test; the speculation rows' prompt (a file's
        // text) is not known before the model loads, so they keep the default context.
        const bool spec_rows = !args->spec.draft_model.empty() || (!args->spec.mode.empty() && args->spec.mode != "off");
        if (ctx->count() == 0 && !spec_rows) args->engine.n_ctx = 1;
        if (args->mmap == "0") args->engine.llama.no_mmap = true;
        bench(*args);
    });
}

}  // namespace strata::cli

// strata bench: llama-bench-style speed table — prompt processing (pp N: N random tokens in
// one prefill from an empty cache) and text generation (tg N: N single-token decode steps) —
// repeated, mean ± stdev of tokens/s, with the plan's prediction beside the measurement; --fit
// adds the cost model's decode terms beside the measured time per token.
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
#include "engine/runtime/calibration.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/runtime.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct BenchArgs {
    EngineOptions engine;
    std::vector<int64_t> n_prompt{512};
    std::vector<int64_t> n_gen{128};
    int repetitions = 5;
    bool json = false;
    bool fit = false;
    bool batch_given = false;  // -b: prompts in batches of that size, not one pass each
};

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Tokens/s of one test: pp (n prompt tokens, one feed) or tg (n decode steps after one token).
double run_once(Session& session, bool prompt, int64_t n, std::mt19937& rng, int64_t n_vocab) {
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(n_vocab - 1));
    session.clear();
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

// Decode steps 1..n after one token attend to 2..n+1 cells: (n + 3) / 2 on average.
CostParams params_for_tg(const Runtime& runtime, int64_t n) {
    CostParams c = runtime.cost_params();
    c.n_ctx_used = std::min(c.n_ctx_used, (n + 3) / 2);
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

void bench(const BenchArgs& args) {
    if (args.repetitions < 1) throw ArgumentError(cat("-r must be at least 1, got ", args.repetitions));
    EngineOptions engine = args.engine;
    int64_t longest = 1;
    for (int64_t n : args.n_prompt) longest = std::max(longest, n);
    for (int64_t n : args.n_gen) longest = std::max(longest, n + 1);
    if (engine.n_ctx > 0 && engine.n_ctx < longest) engine.n_ctx = longest;
    RuntimeOptions ro = engine.runtime_options();
    ro.want_estimate = args.fit;
    // One forward pass per prompt, as llama-bench's default batch does for pp512, unless -b
    // asks for another physical batch.
    if (!args.batch_given) {
        for (int64_t n : args.n_prompt) ro.session.n_batch = std::max(ro.session.n_batch, n);
    }
    const Runtime runtime(engine.model, ro);
    std::unique_ptr<Session> session = runtime.new_session();
    if (longest > session->n_ctx()) {
        throw ArgumentError(cat("bench: a test of ", longest, " tokens does not fit the context of ", session->n_ctx(),
                                " tokens (", engine.n_ctx > 0 ? "-c, at most the model's training context"
                                                              : "the model's training context", ")"));
    }
    const double target_sparsity = runtime.sparse() != nullptr ? runtime.sparse()->sparsity() : -1;
    const int64_t n_vocab = session->program().n_vocab();
    std::mt19937 rng(1234);
    const Placement& plan = runtime.placement();
    const ResidencyStats& rs = runtime.placed().stats();

    nlohmann::json results = nlohmann::json::array();
    const TensorTable table = tensor_table(runtime.model());
    std::vector<TgRun> tg_runs;
    if (!args.json) {
        std::printf("| model | gpu | ram | disk | threads | test | t/s | predicted t/s |\n");
        std::printf("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n");
    }
    auto one = [&](bool prompt, int64_t n) {
        if (n <= 0) return;
        run_once(*session, prompt, std::min<int64_t>(n, 16), rng, n_vocab);  // warm-up
        std::vector<double> rates;
        const std::vector<LayerProgram::SparsityCount> before = session->program().sparsity_counts();
        for (int r = 0; r < args.repetitions; ++r) rates.push_back(run_once(*session, prompt, n, rng, n_vocab));
        const nlohmann::json sparsity = achieved_sparsity(before, session->program().sparsity_counts());
        const Stat s = stats(rates);
        const std::string test = cat(prompt ? "pp" : "tg", n);
        double predicted = prompt ? plan.predicted.prefill_tok_s : plan.predicted.decode_tok_s;
        if (!prompt) {
            TgRun run{test, params_for_tg(runtime, n), std::nullopt, 1.0 / s.mean};
            run.estimate = estimate_for(runtime, table, run.params);
            if (run.estimate) predicted = 1.0 / run.estimate->decode_s_per_token;
            tg_runs.push_back(std::move(run));
        }
        if (args.json) {
            results.push_back({{"test", test}, {"tokens_per_second", s.mean}, {"stdev", s.stdev},
                               {"samples", rates}, {"predicted", predicted}});
            if (!sparsity.is_null()) {
                results.back()["sparsity"] = sparsity;
                results.back()["sparsity"]["target"] = target_sparsity;
            }
            return;
        }
        std::printf("| %s | %s | %s | %s | %d | %s | %.2f ± %.2f | %s |\n",
                    runtime.model().config().architecture.c_str(), format_bytes(rs.gpu_weight_bytes).c_str(),
                    format_bytes(rs.ram_weight_bytes).c_str(), format_bytes(rs.disk_weight_bytes).c_str(),
                    runtime.cpu().capabilities().host_threads,
                    (sparsity.is_null() ? test
                                        : cat(test, " sparsity ", fixed(target_sparsity, 2), " (achieved ",
                                              fixed(sparsity["achieved"].get<double>(), 3), ")")).c_str(),
                    s.mean, s.stdev,
                    predicted > 0 ? cat(predicted).c_str() : "-");
        std::fflush(stdout);
    };
    for (int64_t n : args.n_prompt) one(true, n);
    for (int64_t n : args.n_gen) one(false, n);
    if (args.json) {
        nlohmann::json out = {{"model", engine.model},
                              {"weights", {{"gpu", rs.gpu_weight_bytes}, {"ram", rs.ram_weight_bytes},
                                           {"disk", rs.disk_weight_bytes}}},
                              {"results", results}};
        if (args.fit) {
            nlohmann::json terms = nlohmann::json::array();
            for (const TgRun& r : tg_runs) {
                if (!r.estimate) continue;
                const CostEstimate& e = *r.estimate;
                terms.push_back({{"test", r.test}, {"kv_cells", r.params.n_ctx_used}, {"decode_s", e.decode_s_per_token},
                                 {"gpu_s", e.gpu_s}, {"cpu_s", e.cpu_s}, {"disk_s", e.disk_s},
                                 {"disk_exposed_s", e.disk_exposed_s}, {"transfer_s", e.transfer_s},
                                 {"transfers", e.transfers}, {"overhead_s", e.overhead_s}, {"fixed_s", e.fixed_s}});
            }
            out["cost_model"] = terms;
        }
        std::printf("%s\n", out.dump(2).c_str());
    } else if (args.fit) {
        for (const TgRun& r : tg_runs) print_fit(runtime, r);
    }
    // Each measured tg becomes a calibration run: later runs fit the cost model to them.
    if (args.fit && runtime.hardware_profile()) {
        int recorded = 0;
        for (const TgRun& r : tg_runs) {
            if (!r.estimate) continue;
            const Observation o = observe(runtime.placement(), table, *runtime.hardware_profile(), r.params, r.measured_s);
            const std::string note = append_calibration(default_calibration_path(), runtime.machine_key(), o,
                               cat(engine.model, " ", r.test, " gpu ", format_bytes(rs.gpu_weight_bytes), " ram ",
                                   format_bytes(rs.ram_weight_bytes), " disk ", format_bytes(rs.disk_weight_bytes)));
            if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
            ++recorded;
        }
        if (!args.json) {
            std::printf("recorded %d run(s) in %s (the cost model was fitted to %d earlier run(s))\n", recorded,
                        default_calibration_path().c_str(), runtime.calibration_runs());
        }
    }
    if (engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(session.get()).c_str());
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "measure prompt and generation speed (llama-bench style)");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("-p,--n-prompt", args->n_prompt, "prompt lengths to test (pp; 0 = none)")
        ->capture_default_str()->check(int_in(0, kMaxContext));
    cmd->add_option("-n,--n-gen", args->n_gen, "generation lengths to test (tg; 0 = none)")
        ->capture_default_str()->check(int_in(0, kMaxContext));
    cmd->add_option("-r,--repetitions", args->repetitions, "runs per test")->capture_default_str()
        ->check(int_in(1, 100000));
    cmd->add_flag("--json", args->json, "print JSON instead of a table");
    cmd->add_flag("--fit", args->fit,
                  "print the cost model's decode terms beside the measured tg time per token, and record the run"
                  " in the calibration file the cost model is fitted to");
    CLI::Option* batch = cmd->get_option("--batch-size");
    cmd->callback([args, batch] {
        args->batch_given = batch->count() > 0;
        bench(*args);
    });
}

}  // namespace strata::cli

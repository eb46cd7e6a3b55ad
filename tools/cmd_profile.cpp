// strata profile: the calibration run of activation sparsity. Evaluates a text with the model on
// the CPU and writes the activation statistics (predictor/activation_profile_file.h) that
// --sparsity reads: per layer the magnitude histograms of act(gate·x) and of each matrix's
// input, and each FFN neuron's activity at five thresholds. The model file is never modified.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/ffn_predictors.h"
#include "engine/runtime/model.h"
#include "engine/runtime/profile_run.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/runtime/runtime.h"
#include "predictor/activation_profile_file.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/sampling_options.h"
#include "tools/progress_bar.h"
#include "tools/skew_report.h"
#include "tools/train_predictors.h"

namespace strata::cli {
namespace {

struct ProfileArgs {
    std::string model;
    std::string text_file;
    bool random_tokens = false;  // token ids drawn uniformly, as strata bench's tg feeds them
    std::string output;  // empty: default_stats_path
    int64_t n_tokens = 0;
    int64_t n_ctx = 512;
    int n_threads = 0;
    SkewArgs skew;  // --skew STATS: report, no run
    PredictorTrainFlags predictors;
};

constexpr const char* kRandomTokens = "random tokens";

// n token ids drawn uniformly from the vocabulary with a fixed seed: the input strata bench's tg
// decodes (and llama-bench's), so that a mixture's routing profiled here is the one it measures.
std::vector<TokenId> random_tokens(int64_t n, int64_t n_vocab) {
    std::mt19937 rng(4321);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(n_vocab - 1));
    std::vector<TokenId> ids(static_cast<size_t>(n));
    for (TokenId& t : ids) t = token(rng);
    return ids;
}

// Layer 0's and the last layer's busiest and idlest experts, as shares of the tokens.
void print_routing(const ActivationProfile& profile) {
    const std::vector<std::vector<double>> use = profile.expert_use();
    for (size_t l : {size_t{0}, use.size() - 1}) {
        const auto [lo, hi] = std::minmax_element(use[l].begin(), use[l].end());
        std::printf("  experts of layer %zu: busiest %lld (%.1f%% of tokens), idlest %lld (%.1f%%)\n", l,
                    static_cast<long long>(hi - use[l].begin()), *hi * 100, static_cast<long long>(lo - use[l].begin()), *lo * 100);
    }
}

void run(const ProfileArgs& args, const CLI::App& cmd) {
    if (!args.skew.stats.empty()) {
        print_skew_report(args.skew);
        return;
    }
    if (!args.skew.order_from.empty()) throw ArgumentError("--order-from needs --skew STATS");
    if (args.model.empty() || (args.text_file.empty() != args.random_tokens)) {
        throw ArgumentError("profile needs -m/--model and one of -f/--file and --random-tokens (or --skew STATS to "
                            "report a stats file's skew)");
    }
    if (args.n_tokens < 0) throw ArgumentError(cat("--tokens must be >= 0, got ", args.n_tokens));
    if (args.random_tokens && args.n_tokens == 0) throw ArgumentError("--random-tokens needs --tokens N (N > 0)");
    check_predictor_train_flags(args.predictors, cmd);
    const std::string text =
        args.random_tokens ? std::string() : read_bounded_file(args.text_file, "calibration text", ReadOptions{kMaxTextFileBytes});
    if (!args.random_tokens && text.empty()) throw ArgumentError(cat("text file '", args.text_file, "' is empty"));
    const std::string output = args.output.empty() ? default_stats_path(args.model, true) : args.output;
    check_write_target(output, "activation stats");  // before the long run
    if (args.predictors.train) {
        const std::string& given = args.predictors.output;
        check_write_target(given.empty() ? default_predictor_path(output) : given, "FFN predictors");
    }

    // Every weight on the runtime's CPU backend, read in place (profile_activations): the runtime
    // only opens the model and makes the backend.
    RuntimeOptions ro;
    ro.gpu = "none";
    ro.placer = Placer::Builtin;
    ro.load_weights = false;
    ro.n_threads = cap_threads(args.n_threads);
    ro.session.n_ctx = args.n_ctx;
    ro.session.n_batch = args.n_ctx;
    const Runtime runtime(args.model, ro);
    const Model& model = runtime.model();
    if (args.predictors.train && model.config().is_moe()) {
        throw ArgumentError("--train-predictors is for dense models: a mixture of experts has no FFN neurons of its own");
    }
    Backend& backend = runtime.cpu();
    const std::vector<TokenId> tokens =
        args.random_tokens ? random_tokens(args.n_tokens, model.config().n_vocab) : model.tokenizer().encode(text, /*add_special=*/true);
    ProfileParams pp;
    pp.n_ctx = args.n_ctx;
    pp.n_batch = args.n_ctx;
    pp.max_tokens = args.n_tokens;
    ProgressBar bar("profile", ProgressStyle{"tokens"});
    ActivationProfile profile = profile_activations(model, backend, tokens, pp, [&](int64_t done, int64_t total) {
        bar.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total), "tokens");
    });
    bar.finish();
    profile.text_name = args.random_tokens ? std::string(kRandomTokens) : std::filesystem::path(args.text_file).filename().string();
    write_file_atomic(output, activation_profile_to_json(profile), "activation stats");
    std::printf("profiled %llu tokens of %s: %zu layers; wrote %s\n", static_cast<unsigned long long>(profile.n_tokens),
                args.random_tokens ? kRandomTokens : args.text_file.c_str(), profile.layers.size(), output.c_str());
    if (!profile.expert_counts.empty()) print_routing(profile);
    if (profile.layers.front().n_ff == 0) return;  // a mixture of experts: no FFN neurons of its own
    for (double s : {0.25, 0.5, 0.7}) {
        std::printf("  S = %.2f: |act(gate)| thresholds layer 0 %.4g, layer %zu %.4g\n", s, profile.ffn_threshold(0, s),
                    profile.layers.size() - 1, profile.ffn_threshold(static_cast<int>(profile.layers.size()) - 1, s));
    }
    if (args.predictors.train) {
        train_predictors(model, backend, tokens, pp, profile, args.predictors, output, profile.text_name);
    }
}

}  // namespace

void add_profile_command(CLI::App& app) {
    auto args = std::make_shared<ProfileArgs>();
    CLI::App* cmd = app.add_subcommand("profile", "calibration run: activation statistics for --sparsity");
    cmd->add_option("-m,--model", args->model, "GGUF model file (required for a calibration run)");
    cmd->add_option("-f,--file", args->text_file, "calibration text (e.g. scripts/perplexity-text.sh's; required for a run)");
    cmd->add_flag("--random-tokens", args->random_tokens,
                  "instead of -f: --tokens N token ids drawn uniformly from the vocabulary, the input strata bench's tg "
                  "decodes (a mixture's routing on that workload)");
    cmd->add_option("-o,--output", args->output,
                    "stats file (default: MODEL.stats beside the model, else ~/.cache/strata/MODEL.stats)");
    cmd->add_option("--tokens", args->n_tokens, "evaluate at most this many tokens (0 = the whole text)")
        ->capture_default_str()->check(int_in(0, INT32_MAX));
    cmd->add_option("-c,--ctx-size", args->n_ctx, "window size")->capture_default_str()->check(int_in(8, kMaxContext));
    cmd->add_option("-t,--threads", args->n_threads, "CPU threads (0 = physical cores)")
        ->capture_default_str()->check(int_in(0, kMaxThreadsFlag));
    cmd->add_option("--skew", args->skew.stats,
                    "no run: print the share of activations the top 10/20/50% of each layer's neurons carry in STATS");
    cmd->add_option("--order-from", args->skew.order_from, "with --skew: rank neurons by this stats file's counts");
    cmd->add_flag("--skew-summary", args->skew.summary_only, "with --skew: the mean over layers only");
    add_predictor_train_options(*cmd, args->predictors);
    cmd->callback([args, cmd] { run(*args, *cmd); });
}

}  // namespace strata::cli

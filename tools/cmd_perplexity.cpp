// strata perplexity: llama-perplexity's method on a text file, ending with
// "Final estimate: PPL = X +/- Y". Runs on the same Runtime as `strata run` (--gpu, --ctk,
// --plan, --gpu-mem and the other placement flags apply).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/sparse_ffn.h"
#include "tools/commands.h"
#include "tools/progress_bar.h"
#include "tools/numbers.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct PerplexityArgs {
    EngineOptions engine;  // -c is the window, -b the tokens per forward pass
    std::string text_file;
    int64_t chunks = 0;  // 0: every window of the text
    bool compare_dense = false;
};

void print_summary(const PerplexityResult& r, const SparseFfn* sparse) {
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
    if (sparse != nullptr) {
        std::printf("sparsity: target %.3f, achieved %.4f of FFN neuron evaluations skipped\n", sparse->sparsity(),
                    r.achieved_sparsity);
    }
    if (r.achieved_input_sparsity >= 0) {
        std::printf("input sparsity: target %.3f, achieved %.4f of FFN input values zeroed\n", sparse->input_sparsity(),
                    r.achieved_input_sparsity);
    }
    if (r.gate_rows_read >= 0) {
        std::printf("predictors: gate rows read %.4f of the FFN neurons (their candidates)\n", r.gate_rows_read);
    }
    if (r.top1_agreement >= 0) {
        std::printf("top-1 agreement with dense: %.4f of %lld scored tokens\n", r.top1_agreement,
                    static_cast<long long>(r.n_scored));
    }
}

void run(const PerplexityArgs& args) {
    const std::string text =
        read_bounded_file(args.text_file, "text file", ReadOptions{kMaxTextFileBytes});
    if (text.empty()) throw ArgumentError(cat("text file '", args.text_file, "' is empty"));
    if (args.compare_dense && !args.engine.sparsity.options().enabled()) {
        throw ArgumentError("--compare-dense needs --sparsity S");
    }
    const Runtime runtime(args.engine.model, args.engine.runtime_options());
    const Model& model = runtime.model();
    const int64_t n_train = model.config().n_ctx_train;
    const int64_t n_ctx = args.engine.n_ctx <= 0 ? n_train : std::min(args.engine.n_ctx, n_train);
    const std::vector<TokenId> tokens = model.tokenizer().encode(text, /*add_special=*/true);
    PerplexityParams pp;
    pp.n_ctx = n_ctx;
    pp.n_batch = args.engine.n_batch;
    pp.max_chunks = args.chunks;
    pp.compare_dense = args.compare_dense;
    bool header = false;
    const auto start = std::chrono::steady_clock::now();
    const PerplexityResult r = perplexity(runtime, tokens, pp, [&](int64_t chunk, int64_t n_chunks, double ppl) {
        if (!header) {  // printed once the text is known to be long enough
            std::printf("perplexity: %zu tokens, calculating perplexity over %lld chunks, "
                        "n_ctx=%lld, batch_size=%lld\n", tokens.size(),
                        static_cast<long long>(n_chunks), static_cast<long long>(n_ctx),
                        static_cast<long long>(args.engine.n_batch));
            std::fflush(stdout);
            // llama-perplexity's time estimate, on a terminal only; the chunk values that follow
            // on stdout are the progress.
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (stderr_is_terminal() && n_chunks > 1) {
                std::fprintf(stderr, "perplexity: %.2f seconds per chunk - ETA %s\n", s,
                             ProgressBar::format_duration(s * static_cast<double>(n_chunks - 1)).c_str());
            }
            header = true;
        }
        std::printf("[%lld]%.4f,", static_cast<long long>(chunk + 1), ppl);
        std::fflush(stdout);
    });
    print_summary(r, runtime.sparse());
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(nullptr).c_str());
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    args->engine.n_ctx = 512;
    args->engine.n_batch = 512;
    CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a model on a text file");
    add_runtime_options(*cmd, args->engine);
    cmd->add_option("-f,--file", args->text_file, "text file")->required();
    cmd->add_option("--chunks", args->chunks, "evaluate at most this many windows (default: all)")
        ->check(int_in(1, INT32_MAX));
    cmd->add_flag("--compare-dense", args->compare_dense,
                  "with --sparsity: also run dense and report the greedy (top-1) agreement");
    cmd->callback([args] { run(*args); });
}

}  // namespace strata::cli

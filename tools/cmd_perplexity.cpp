// strata perplexity: llama-perplexity's method on a text file, ending with
// "Final estimate: PPL = X +/- Y".
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/sparse_ffn.h"
#include "kernels_cpu/cpu_backend.h"
#include "tools/commands.h"
#include "tools/progress_bar.h"
#include "tools/numbers.h"
#include "tools/sampling_options.h"
#include "tools/sparsity_options.h"

namespace strata::cli {
namespace {

struct PerplexityArgs {
    std::string model;
    std::string text_file;
    int64_t n_ctx = 512;
    int64_t n_batch = 512;
    int64_t chunks = 0;  // 0: every window of the text
    int n_threads = 0;
    SparsityFlags sparsity;
    bool compare_dense = false;
};

void run(const PerplexityArgs& args) {
    const std::string text =
        read_bounded_file(args.text_file, "text file", ReadOptions{kMaxTextFileBytes});
    if (text.empty()) throw ArgumentError(cat("text file '", args.text_file, "' is empty"));
    const SparsityOptions sparsity = args.sparsity.options();
    if (args.compare_dense && !sparsity.enabled()) throw ArgumentError("--compare-dense needs --sparsity S");

    Model model(args.model);
    cpu::CpuBackend backend(cap_threads(args.n_threads));
    int64_t n_ctx = args.n_ctx;
    const int64_t n_train = model.config().n_ctx_train;
    if (n_ctx > n_train) {
        std::fprintf(stderr, "note: -c %lld is more than the model's training context (%lld); using %lld\n",
                     static_cast<long long>(n_ctx), static_cast<long long>(n_train),
                     static_cast<long long>(n_train));
        n_ctx = n_train;
    }
    const PlacedModel placed(model, backend);
    const std::unique_ptr<SparseFfn> sparse = load_sparse_ffn(placed, args.model, sparsity);
    const std::vector<TokenId> tokens = model.tokenizer().encode(text, /*add_special=*/true);
    PerplexityParams pp;
    pp.n_ctx = n_ctx;
    pp.n_batch = args.n_batch;
    pp.max_chunks = args.chunks;
    pp.sparse = sparse.get();
    pp.compare_dense = args.compare_dense;
    bool header = false;
    const auto start = std::chrono::steady_clock::now();
    const PerplexityResult r = perplexity(placed, tokens, pp,
                                          [&](int64_t chunk, int64_t n_chunks, double ppl) {
        if (!header) {  // printed once the text is known to be long enough
            std::printf("perplexity: %zu tokens, calculating perplexity over %lld chunks, "
                        "n_ctx=%lld, batch_size=%lld\n", tokens.size(),
                        static_cast<long long>(n_chunks), static_cast<long long>(n_ctx),
                        static_cast<long long>(args.n_batch));
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
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
    if (sparse) {
        std::printf("sparsity: target %.3f, achieved %.4f of FFN neuron evaluations skipped\n", sparse->sparsity(),
                    r.achieved_sparsity);
    }
    if (r.top1_agreement >= 0) {
        std::printf("top-1 agreement with dense: %.4f of %lld scored tokens\n", r.top1_agreement,
                    static_cast<long long>(r.n_scored));
    }
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a model on a text file");
    cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
    cmd->add_option("-f,--file", args->text_file, "text file")->required();
    cmd->add_option("-c,--ctx-size", args->n_ctx, "window size (at most the model's training context)")
        ->capture_default_str()->check(int_in(4, kMaxContext));
    cmd->add_option("-b,--batch-size", args->n_batch, "tokens per forward pass")
        ->capture_default_str()->check(int_in(1, kMaxContext));
    cmd->add_option("--chunks", args->chunks, "evaluate at most this many windows (default: all)")
        ->check(int_in(1, INT32_MAX));
    cmd->add_option("-t,--threads", args->n_threads, "CPU threads (0 = physical cores)")
        ->capture_default_str()->check(int_in(0, kMaxThreadsFlag));
    add_sparsity_options(*cmd, args->sparsity);
    cmd->add_flag("--compare-dense", args->compare_dense,
                  "with --sparsity: also run dense and report the greedy (top-1) agreement");
    cmd->callback([args] { run(*args); });
}

}  // namespace strata::cli

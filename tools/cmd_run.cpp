// strata run: one-shot generation. Streams the continuation of a prompt to stdout and reports
// prompt and decode speed on stderr.
#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/prompt.h"
#include "engine/runtime/session.h"
#include "engine/runtime/runtime.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/progress_bar.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct RunArgs {
    EngineOptions engine;
    std::string prompt;
    std::string prompt_file;
    int64_t n_predict = -1;
    bool truncate = false;
    bool special = false;
};

void run(const RunArgs& args) {
    args.engine.sampler.validate();  // bad flags fail before the model loads
    if (args.n_predict < -1) throw ArgumentError(cat("-n must be -1 or >= 0, got ", args.n_predict));
    const std::string text = args.prompt_file.empty() ? args.prompt : read_bounded_file(args.prompt_file, "prompt file", ReadOptions{kMaxTextFileBytes});

    const Runtime runtime(args.engine.model, args.engine.runtime_options());
    const Model& model = runtime.model();
    const std::unique_ptr<Session> owned = runtime.new_session();
    Session& session = *owned;

    PromptOptions po;
    po.n_ctx = session.n_ctx();
    po.n_reserve = args.n_predict < 0 ? 1 : std::max<int64_t>(args.n_predict, 1);
    po.truncate = args.truncate;
    po.parse_special = args.special;
    const std::vector<TokenId> prompt = tokenize_prompt(model.tokenizer(), text, po);

    GenerateParams gp;
    gp.n_predict = args.n_predict;
    gp.sampler = args.engine.sampler;
    ProgressBar prompt_bar("prompt", ProgressStyle{"tokens", 1.0});  // a long prompt's prefill
    gp.on_prompt_progress = [&](int64_t done, int64_t total) {
        prompt_bar.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total), "");
    };
    bool printed = false;
    const GenerateStats stats = generate(session, prompt, gp, [&](std::string_view piece) {
        prompt_bar.clear();  // the text takes the line
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        printed = true;
        return true;
    });
    prompt_bar.clear();
    if (printed) std::printf("\n");
    std::fprintf(stderr,
                 "prompt: %lld tokens in %.2f s (%.1f tok/s) | decode: %lld tokens in %.2f s "
                 "(%.1f tok/s) | stop: %s | seed %u\n",
                 static_cast<long long>(stats.n_prompt), stats.prompt_seconds,
                 stats.prompt_tokens_per_second(), static_cast<long long>(stats.n_generated),
                 stats.decode_seconds, stats.decode_tokens_per_second(),
                 std::string(stop_reason_name(stats.stop)).c_str(), stats.seed);
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(&session).c_str());
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* cmd = app.add_subcommand("run", "generate a continuation of a prompt");
    add_engine_options(*cmd, args->engine);
    auto* p = cmd->add_option("-p,--prompt", args->prompt, "prompt text");
    auto* f = cmd->add_option("-f,--file", args->prompt_file, "read the prompt from a file");
    p->excludes(f);
    cmd->add_option("-n,--n-predict", args->n_predict, "tokens to generate (-1 = until the end)")
        ->capture_default_str()->check(int_in(-1, kMaxContext));
    cmd->add_flag("--truncate", args->truncate, "keep the end of a prompt longer than the context");
    cmd->add_flag("--special", args->special, "parse control tokens spelled in the prompt");
    cmd->callback([args, p, f] {
        if (p->count() == 0 && f->count() == 0) {
            throw CLI::RequiredError("a prompt: -p TEXT or -f FILE");
        }
        run(*args);
    });
}

}  // namespace strata::cli

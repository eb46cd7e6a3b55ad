// strata run: one-shot generation. Streams the continuation of a prompt to stdout (or prints it
// as JSON with --json) and reports prompt and decode speed on stderr. llama-cli's conversation
// flags (-cnv, -st, -sys, -i) turn it into `strata chat` with -p as the first message.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/prompt.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/session.h"
#include "engine/server/stop_matcher.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/chat_command.h"
#include "tools/chat_options.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/prompt_text.h"
#include "tools/progress_bar.h"
#include "tools/sampling_options.h"
#include "tools/spec_options.h"

namespace strata::cli {
namespace {

struct RunArgs {
    EngineOptions engine;
    std::string prompt;
    std::string prompt_file;
    int64_t n_predict = -1;
    bool truncate = false;
    bool no_special = false;  // --no-special: control-token spellings stay text
    bool no_escape = false;   // --no-escape: "\n" in -p stays two characters
    bool json = false;
    bool ignore_eos = false;
    bool verbose_prompt = false;
    std::vector<std::string> stops;
    // Conversation mode (llama-cli): -cnv, -st, -sys, -i.
    bool conversation = false;
    bool no_conversation = false;
    bool single_turn = false;
    bool interactive = false;
    std::string system;
    ChatTemplateOverride chat_template;
    SpecFlags spec;  // --spec, --draft-max, --draft-min, -md, -ngld
};

bool conversation_mode(const RunArgs& a) {
    return !a.no_conversation && (a.conversation || a.single_turn || a.interactive || !a.system.empty());
}

void as_chat(const RunArgs& a, const std::string& text) {
    ChatArgs c;
    c.engine = a.engine;
    c.system = a.system;
    c.chat_template = a.chat_template;
    c.n_predict = a.n_predict;
    c.first_prompt = text;
    c.single_turn = a.single_turn;
    c.stops = a.stops;
    c.spec = a.spec;
    run_chat(c);
}

nlohmann::json stats_json(const GenerateStats& s, const std::string& text) {
    return {{"text", text},
            {"tokens", {{"prompt", s.n_prompt}, {"generated", s.n_generated}}},
            {"timings", {{"prompt_s", s.prompt_seconds}, {"prompt_tokens_per_s", s.prompt_tokens_per_second()},
                         {"decode_s", s.decode_seconds}, {"decode_tokens_per_s", s.decode_tokens_per_second()}}},
            {"stop", std::string(stop_reason_name(s.stop))},
            {"seed", s.seed}};
}

void run(const RunArgs& args) {
    args.engine.sampler.validate();  // bad flags fail before the model loads
    if (args.n_predict < -1) throw ArgumentError(cat("-n must be -1 or >= 0, got ", args.n_predict));
    std::string text = args.prompt_file.empty()
                           ? args.prompt
                           : read_bounded_file(args.prompt_file, "prompt file", ReadOptions{kMaxTextFileBytes});
    if (args.prompt_file.empty() && !args.no_escape) text = process_escapes(text);
    if (conversation_mode(args)) return as_chat(args, text);
    const SpecParams spec = resolve_spec(args.spec, args.engine, "run");  // bad flags fail before the model loads

    const Engines engines = load_engines(args.engine.model, args.engine.runtime_options(), args.spec, spec);
    const Runtime& runtime = *engines.target;
    const Model& model = runtime.model();
    const std::unique_ptr<Session> owned = runtime.new_session();
    Session& session = *owned;

    PromptOptions po;
    po.n_ctx = session.n_ctx();
    po.n_reserve = args.n_predict < 0 ? 1 : std::max<int64_t>(args.n_predict, 1);
    po.truncate = args.truncate;
    po.parse_special = !args.no_special;
    const std::vector<TokenId> prompt = tokenize_prompt(model.tokenizer(), text, po);
    if (args.verbose_prompt) print_prompt_tokens(model.tokenizer(), text, prompt);

    GenerateParams gp;
    gp.n_predict = args.n_predict;
    gp.sampler = args.engine.sampler;
    gp.stop_at_eog = !args.ignore_eos;
    gp.spec = spec;
    apply_cost_prior(gp.spec, runtime);
    gp.draft = engines.draft_session.get();
    ProgressBar prompt_bar("prompt", ProgressStyle{"tokens", 1.0});  // a long prompt's prefill
    gp.on_prompt_progress = [&](int64_t done, int64_t total) {
        prompt_bar.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total), "");
    };
    server::StopMatcher stop(args.stops);
    std::string generated;
    const auto emit = [&](const std::string& out) {
        prompt_bar.clear();  // the text takes the line
        generated += out;
        if (args.json || out.empty()) return;
        std::fwrite(out.data(), 1, out.size(), stdout);
        std::fflush(stdout);
    };
    GenerateStats stats = generate(session, prompt, gp, [&](std::string_view piece) {
        emit(stop.push(piece));
        return !stop.stopped();
    });
    emit(stop.flush());
    prompt_bar.clear();
    const std::string reason = stop.stopped() ? "stop string" : std::string(stop_reason_name(stats.stop));
    if (args.json) {
        nlohmann::json j = stats_json(stats, generated);
        j["stop"] = reason;
        std::printf("%s\n", j.dump(2).c_str());
    } else if (!generated.empty()) {
        std::printf("\n");
    }
    std::fprintf(stderr,
                 "prompt: %lld tokens in %.2f s (%.1f tok/s) | decode: %lld tokens in %.2f s "
                 "(%.1f tok/s) | stop: %s | seed %u\n",
                 static_cast<long long>(stats.n_prompt), stats.prompt_seconds,
                 stats.prompt_tokens_per_second(), static_cast<long long>(stats.n_generated),
                 stats.decode_seconds, stats.decode_tokens_per_second(), reason.c_str(), stats.seed);
    if (args.engine.verbose && gp.spec.mode != SpecMode::Off) {
        std::fprintf(stderr, "%s\n", spec_summary(gp.spec.mode, stats.spec).c_str());
    }
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(&session).c_str());
    if (args.engine.verbose && engines.draft) {
        std::fprintf(stderr, "draft model %s:\n%s", args.spec.draft_model.c_str(),
                     engines.draft->accounting(engines.draft_session.get()).c_str());
    }
}

void add_conversation_options(CLI::App& cmd, RunArgs& a) {
    cmd.add_flag("--conversation", a.conversation, "-cnv: chat with the model's template, -p as the first message");
    cmd.add_flag("--no-conversation", a.no_conversation, "-no-cnv: plain completion (the default)");
    cmd.add_flag("--single-turn", a.single_turn, "-st: one chat answer to -p, then leave");
    cmd.add_flag("-i,--interactive", a.interactive, "chat after the first answer (as -cnv)");
    cmd.add_option("--system-prompt", a.system, "-sys: system message (a conversation)");
    add_chat_template_options(cmd, a.chat_template);  // used in conversation mode
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* cmd = app.add_subcommand("run", "generate a continuation of a prompt");
    add_engine_options(*cmd, args->engine);
    auto* p = cmd->add_option("-p,--prompt", args->prompt, "prompt text (\\n, \\t ... are read as escapes)");
    auto* f = cmd->add_option("-f,--file", args->prompt_file, "read the prompt from a file");
    p->excludes(f);
    cmd->add_option("-n,--n-predict", args->n_predict, "tokens to generate (-1 = until the end)")
        ->capture_default_str()->check(int_in(-1, kMaxContext));
    cmd->add_flag("--truncate", args->truncate, "keep the end of a prompt longer than the context");
    cmd->add_flag("--no-special", args->no_special, "read control-token spellings (<|im_start|>) in the prompt as text");
    cmd->add_flag("--special")->description("accepted: control tokens in the prompt are parsed by default");
    cmd->add_flag("-e,--escape")->description("accepted: escapes in -p are processed by default");
    cmd->add_flag("--no-escape", args->no_escape, "keep backslashes in -p as typed");
    cmd->add_flag("--json", args->json, "print the text, token counts and timings as JSON");
    cmd->add_flag("--ignore-eos", args->ignore_eos, "generate past the end-of-text token (up to -n)");
    cmd->add_flag("--verbose-prompt", args->verbose_prompt, "print the prompt's tokens (id and piece) on stderr");
    cmd->add_flag("--color")->description("accepted (llama-cli's colours; the output here is plain text)");
    add_stop_options(*cmd, args->stops);
    add_conversation_options(*cmd, *args);
    add_spec_options(*cmd, args->spec);
    cmd->callback([args, p, f] {
        check_model_source(args->engine.llama, args->engine.model);
        const bool chat = conversation_mode(*args);
        if (p->count() == 0 && f->count() == 0 && !(chat && !args->single_turn)) {
            throw CLI::RequiredError("a prompt: -p TEXT or -f FILE");
        }
        run(*args);
    });
}

}  // namespace strata::cli

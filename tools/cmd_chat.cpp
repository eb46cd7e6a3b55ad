// strata chat: an interactive conversation with a chat model. On a terminal: libedit line
// editing and history, streamed answers, Ctrl-C stops an answer, Ctrl-D quits, /commands.
// With stdin piped: one user turn per line, each answer on stdout followed by a newline.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

#include "engine/chat/chat_renderer.h"
#include "engine/chat/conversation.h"
#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/core/byte_size.h"
#include "engine/server/stop_matcher.h"
#include "tools/answer_keys.h"
#include "tools/chat_command.h"
#include "tools/chat_input.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/chat_options.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

// Set by SIGINT; checked between tokens so that Ctrl-C ends the answer, not the program.
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

void install_sigint_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, nullptr);
}

std::string history_path() {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return {};
    return std::string(home) + "/.cache/strata/chat_history";
}

std::string format_bytes(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

constexpr const char* kSettings =
    "temp, top-k, top-p, min-p, repeat-penalty, repeat-last-n, presence-penalty, frequency-penalty, seed";

constexpr const char* kHelp =
    "commands:\n"
    "  /help              this text\n"
    "  /clear             forget the conversation (the system text stays)\n"
    "  /system TEXT       set the system text (empty: none)\n"
    "  /stats             context use, the speed of the last answer (sparsity, speculation)\n"
    "  /save FILE         write the conversation as JSON\n"
    "  /load FILE         read a conversation written by /save\n"
    "  /set [NAME VALUE]  show the settings, or set one: temp, top-k, top-p, min-p, repeat-penalty,\n"
    "                     repeat-last-n, presence-penalty, frequency-penalty, seed (-1: random)\n"
    "  /quit              leave (or Ctrl-D)\n"
    "a line ending in \\ continues on the next line; Ctrl-C stops an answer\n";

void set_sampler_value(SamplerParams& s, const std::string& name, const std::string& value) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    SamplerParams next = s;
    const auto real = [&](double lo, double hi) { return static_cast<float>(parse_real(value, name, lo, hi)); };
    if (name == "temp" || name == "temperature") next.temperature = real(-kInf, kInf);
    else if (name == "top-k") next.top_k = static_cast<int32_t>(parse_int(value, name, 0, INT32_MAX));
    else if (name == "top-p") next.top_p = real(0, 1);
    else if (name == "min-p") next.min_p = real(0, 1);
    else if (name == "repeat-penalty") next.repeat_penalty = real(-kInf, kInf);
    else if (name == "repeat-last-n") next.repeat_last_n = static_cast<int32_t>(parse_int(value, name, -1, INT32_MAX));
    else if (name == "presence-penalty") next.presence_penalty = real(-kInf, kInf);
    else if (name == "frequency-penalty") next.frequency_penalty = real(-kInf, kInf);
    else if (name == "seed") next.seed = parse_seed(value, name);
    else throw ArgumentError(cat("unknown setting '", name, "' (", kSettings, ")"));
    next.validate();
    s = next;
}

std::string sampler_values(const SamplerParams& s) {
    const std::string seed = s.seed == SamplerParams::kRandomSeed ? "random" : std::to_string(s.seed);
    return cat("temp = ", s.temperature, "\ntop-k = ", s.top_k, "\ntop-p = ", s.top_p, "\nmin-p = ", s.min_p,
               "\nrepeat-penalty = ", s.repeat_penalty, "\nrepeat-last-n = ", s.repeat_last_n,
               "\npresence-penalty = ", s.presence_penalty, "\nfrequency-penalty = ", s.frequency_penalty,
               "\nseed = ", seed, "\n");
}

class ChatRepl {
public:
    ChatRepl(const ChatArgs& args, Session& session, ChatRenderer renderer, bool interactive, const SpecParams& spec,
             Session* draft)
        : conv_(session, std::move(renderer)), interactive_(interactive) {
        conv_.set_system(args.system);
        params_.n_predict = args.n_predict;
        params_.sampler = args.engine.sampler;
        params_.spec = spec;
        params_.draft = draft;
        stops_ = args.stops;
    }

    // The first message (-p) is answered before any input is read; with single_turn nothing
    // else is.
    void run(const std::string& first, bool single_turn) {
        if (!first.empty()) {
            if (interactive_) std::printf("> %s\n", first.c_str());
            if (!answer(first) || single_turn) return;
        }
        ChatInput input(interactive_, interactive_ ? history_path() : std::string());
        while (true) {
            g_interrupted.store(false);
            std::optional<std::string> line = input.read(interactive_ ? "> " : "");
            if (g_interrupted.exchange(false)) {  // Ctrl-C at the prompt: drop the line
                if (interactive_) std::printf("\n");
                continue;
            }
            if (!line) break;
            if (line->empty()) continue;
            if ((*line)[0] == '/') {
                if (!command(*line)) break;
                continue;
            }
            if (!answer(*line)) break;
        }
        if (interactive_) std::printf("\n");
    }

    int failed_turns() const { return failed_turns_; }

private:
    // Returns false when the chat should end (Ctrl-D typed during the answer).
    bool answer(const std::string& text) {
        AnswerKeys keys(interactive_);
        server::StopMatcher stop(stops_);
        try {
            conv_.reply(text, params_, [&](std::string_view piece) {
                const std::string out = stop.push(piece);
                std::fwrite(out.data(), 1, out.size(), stdout);
                std::fflush(stdout);
                return !stop.stopped() && !g_interrupted.load() && !keys.end_of_input();
            });
            const std::string rest = stop.flush();
            std::fwrite(rest.data(), 1, rest.size(), stdout);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            ++failed_turns_;
            return true;
        }
        std::printf("\n");
        const TurnStats& t = conv_.last_turn();
        if (t.n_dropped > 0) {
            std::fprintf(stderr, "[context full: the %lld oldest message(s) were dropped to make room]\n",
                         static_cast<long long>(t.n_dropped));
        }
        if (interactive_ && t.stop == StopReason::Callback && !stop.stopped()) std::printf("[stopped]\n");
        std::fflush(stdout);
        return !keys.end_of_input();
    }

    // Returns false to quit.
    bool command(const std::string& line) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        std::string rest;
        std::getline(in, rest);
        if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        try {
            if (cmd == "/quit" || cmd == "/exit") return false;
            if (cmd == "/help") {
                std::printf("%s", kHelp);
            } else if (cmd == "/clear") {
                conv_.clear();
                std::printf("conversation cleared\n");
            } else if (cmd == "/system") {
                conv_.set_system(rest);
                std::printf(rest.empty() ? "system text removed\n" : "system text set\n");
            } else if (cmd == "/stats") {
                stats();
            } else if (cmd == "/save") {
                if (rest.empty()) throw ArgumentError("/save needs a file name");
                write_file_atomic(rest, conv_.to_json() + "\n", "chat save");
                std::printf("saved %zu messages to %s\n", conv_.messages().size(), rest.c_str());
            } else if (cmd == "/load") {
                if (rest.empty()) throw ArgumentError("/load needs a file name");
                // Not noted as an input: /save may write the conversation back to it.
                conv_.from_json(read_bounded_file(rest, "chat save", ReadOptions{kMaxJsonFileBytes, false}));
                std::printf("loaded %zu messages from %s\n", conv_.messages().size(), rest.c_str());
            } else if (cmd == "/set") {
                std::istringstream args(rest);
                std::string name, value, extra;
                if (rest.find_first_not_of(' ') == std::string::npos) {
                    std::printf("%s", sampler_values(params_.sampler).c_str());
                } else if (!(args >> name >> value) || (args >> extra)) {
                    throw ArgumentError("usage: /set NAME VALUE (or /set alone to show the settings)");
                } else {
                    set_sampler_value(params_.sampler, name, value);
                    std::printf("%s = %s\n", name.c_str(), value.c_str());
                }
            } else {
                throw ArgumentError(cat("unknown command '", cmd, "' (/help lists them)"));
            }
        } catch (const std::exception& e) {  // a command's failure never ends the chat
            std::fprintf(stderr, "error: %s\n", e.what());
        }
        std::fflush(stdout);
        return true;
    }

    void stats() const {
        const TurnStats& t = conv_.last_turn();
        const Session& s = conv_.session();
        std::printf("context: %zu of %lld tokens | messages: %zu | format: %s\n",
                    s.tokens().size(), static_cast<long long>(s.n_ctx()),
                    conv_.messages().size(), conv_.renderer().describe().c_str());
        std::printf("last turn: prompt %lld new tokens (%lld reused) at %.1f tok/s | "
                    "decode %lld tokens at %.1f tok/s | stop: %s\n",
                    static_cast<long long>(t.n_prompt), static_cast<long long>(t.n_reused),
                    t.prompt_tokens_per_second(), static_cast<long long>(t.n_generated),
                    t.decode_tokens_per_second(), std::string(stop_reason_name(t.stop)).c_str());
        if (params_.spec.mode != SpecMode::Off) std::printf("%s\n", spec_summary(params_.spec.mode, t.spec).c_str());
        if (const SparseFfn* sparse = s.program().sparse()) std::printf("%s", sparsity_report(*sparse, &s.program()).c_str());
    }

    Conversation conv_;
    GenerateParams params_;
    std::vector<std::string> stops_;
    bool interactive_;
    int failed_turns_ = 0;
};

}  // namespace

void add_stop_options(CLI::App& cmd, std::vector<std::string>& stops) {
    cmd.add_option("-r,--reverse-prompt,--stop", stops,
                   "stop the answer before this text (repeatable); the text is not printed")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->check([](const std::string& s) { return s.empty() ? std::string("an empty stop string") : std::string(); });
}

void run_chat(const ChatArgs& args) {
    args.engine.sampler.validate();
    if (args.n_predict < -1) throw ArgumentError(cat("-n must be -1 or >= 0, got ", args.n_predict));
    SpecParams spec = resolve_spec(args.spec, args.engine, "chat");
    const Engines engines = load_engines(args.engine.model, args.engine.runtime_options(), args.spec, spec);
    const Runtime& runtime = *engines.target;
    apply_cost_prior(spec, runtime);
    const Model& model = runtime.model();
    ChatRendererChoice chosen = choose_chat_renderer(model, args.chat_template);
    for (const std::string& w : chosen.warnings) std::fprintf(stderr, "strata chat: warning: %s\n", w.c_str());
    chosen.renderer.set_warning_sink([](const std::string& w) { std::fprintf(stderr, "strata chat: warning: %s\n", w.c_str()); });
    const std::unique_ptr<Session> owned = runtime.new_session();
    Session& session = *owned;

    const bool interactive = isatty(0) != 0;
    std::error_code ec;
    const uint64_t file_bytes = std::filesystem::file_size(args.engine.model, ec);
    std::fprintf(stderr, "strata chat: %s (%s, %s, chat template %s%s)\n",
                 std::filesystem::path(args.engine.model).filename().c_str(),
                 model.config().architecture.c_str(), format_bytes(file_bytes).c_str(),
                 chosen.renderer.describe().c_str(), chosen.origin.empty() ? "" : (", " + chosen.origin).c_str());
    const ResidencyStats& rs = runtime.placed().stats();
    std::fprintf(stderr, "weights: gpu %s (%s) | ram %s | disk %s | context %lld tokens\n",
                 format_bytes(rs.gpu_weight_bytes).c_str(),
                 runtime.gpu() ? std::string(runtime.gpu()->name()).c_str() : "none",
                 format_bytes(rs.ram_weight_bytes).c_str(), format_bytes(rs.disk_weight_bytes).c_str(),
                 static_cast<long long>(session.n_ctx()));
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(&session).c_str());
    if (args.engine.verbose && engines.draft) {
        std::fprintf(stderr, "draft model %s:\n%s", args.spec.draft_model.c_str(),
                     engines.draft->accounting(engines.draft_session.get()).c_str());
    }
    if (interactive) std::fprintf(stderr, "/help for commands, Ctrl-C stops an answer, Ctrl-D quits\n");

    install_sigint_handler();
    ChatRepl repl(args, session, chosen.renderer, interactive, spec, engines.draft_session.get());
    repl.run(args.first_prompt, args.single_turn);
    // Piped input is a script: a turn that could not be answered makes the chat fail.
    if (!interactive && repl.failed_turns() > 0) {
        throw Error(cat(repl.failed_turns(), " turn(s) could not be answered (see the errors above)"));
    }
}

void add_chat_command(CLI::App& app) {
    auto args = std::make_shared<ChatArgs>();
    CLI::App* cmd = app.add_subcommand("chat", "talk with a chat model (interactive or piped)");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("--sys,--system,--system-prompt", args->system, "-sys: system text");
    cmd->add_option("-p,--prompt", args->first_prompt, "the first user message, answered before any input");
    cmd->add_flag("--single-turn", args->single_turn, "-st: answer the first message (-p) and leave");
    cmd->add_flag("--conversation,-i,--interactive")->description("-cnv, -i: accepted (chat is always a conversation)");
    cmd->add_flag("--color")->description("accepted (llama-cli's colours; answers are plain text here)");
    add_stop_options(*cmd, args->stops);
    add_chat_template_options(*cmd, args->chat_template);
    add_spec_options(*cmd, args->spec);
    cmd->add_option("-n,--n-predict", args->n_predict,
                    "most tokens per answer (-1 = until the end of the turn)")
        ->capture_default_str()->check(int_in(-1, kMaxContext));
    cmd->callback([args] {
        if (args->single_turn && args->first_prompt.empty()) throw ArgumentError("-st needs the message: -p TEXT");
        run_chat(*args);
    });
}

}  // namespace strata::cli

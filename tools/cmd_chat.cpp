// strata chat: an interactive conversation with a chat model. On a terminal: libedit line
// editing and history, streamed answers, Ctrl-C stops an answer, Ctrl-D quits, /commands.
// With stdin piped: one user turn per line, each answer on stdout followed by a newline.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/sparse_ffn.h"
#include "offload/tier.h"
#include "tools/chat_input.h"
#include "tools/commands.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct ChatArgs {
    EngineOptions engine;
    std::string system;
    std::string chat_template;
    int64_t n_predict = -1;
};

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

constexpr const char* kHelp =
    "commands:\n"
    "  /help              this text\n"
    "  /clear             forget the conversation (the system text stays)\n"
    "  /system TEXT       set the system text (empty: none)\n"
    "  /stats             context use, the speed of the last answer (and the sparsity achieved)\n"
    "  /save FILE         write the conversation as JSON\n"
    "  /load FILE         read a conversation written by /save\n"
    "  /set NAME VALUE    temp, top-k, top-p, min-p, repeat-penalty, seed\n"
    "  /quit              leave (or Ctrl-D)\n"
    "a line ending in \\ continues on the next line; Ctrl-C stops an answer\n";

void set_sampler_value(SamplerParams& s, const std::string& name, const std::string& value) {
    SamplerParams next = s;
    try {
        if (name == "temp" || name == "temperature") next.temperature = std::stof(value);
        else if (name == "top-k") next.top_k = std::stoi(value);
        else if (name == "top-p") next.top_p = std::stof(value);
        else if (name == "min-p") next.min_p = std::stof(value);
        else if (name == "repeat-penalty") next.repeat_penalty = std::stof(value);
        else if (name == "seed") next.seed = static_cast<uint32_t>(std::stoul(value));
        else {
            throw ArgumentError(cat("unknown setting '", name,
                                    "' (temp, top-k, top-p, min-p, repeat-penalty, seed)"));
        }
    } catch (const std::logic_error&) {  // stof/stoi: not a number
        throw ArgumentError(cat("'", value, "' is not a number for ", name));
    }
    next.validate();
    s = next;
}

class ChatRepl {
public:
    ChatRepl(const ChatArgs& args, Session& session, ChatFormat format, bool interactive)
        : conv_(session, format), interactive_(interactive) {
        conv_.set_system(args.system);
        params_.n_predict = args.n_predict;
        params_.sampler = args.engine.sampler;
    }

    void run() {
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
            answer(*line);
        }
        if (interactive_) std::printf("\n");
    }

private:
    void answer(const std::string& text) {
        try {
            conv_.reply(text, params_, [](std::string_view piece) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
                return !g_interrupted.load();
            });
        } catch (const ArgumentError& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            return;
        }
        std::printf("\n");
        if (interactive_ && conv_.last_turn().stop == StopReason::Callback) {
            std::printf("[stopped]\n");
        }
        std::fflush(stdout);
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
                std::ofstream out(rest, std::ios::binary);
                if (!(out << conv_.to_json() << "\n")) {
                    throw SystemError(cat("cannot write '", rest, "'"));
                }
                std::printf("saved %zu messages to %s\n", conv_.messages().size(), rest.c_str());
            } else if (cmd == "/load") {
                if (rest.empty()) throw ArgumentError("/load needs a file name");
                std::ifstream in_file(rest, std::ios::binary);
                if (!in_file) throw SystemError(cat("cannot read '", rest, "'"));
                conv_.from_json(std::string(std::istreambuf_iterator<char>(in_file), {}));
                std::printf("loaded %zu messages from %s\n", conv_.messages().size(), rest.c_str());
            } else if (cmd == "/set") {
                std::istringstream args(rest);
                std::string name, value;
                if (!(args >> name >> value)) throw ArgumentError("usage: /set NAME VALUE");
                set_sampler_value(params_.sampler, name, value);
                std::printf("%s = %s\n", name.c_str(), value.c_str());
            } else {
                throw ArgumentError(cat("unknown command '", cmd, "' (/help lists them)"));
            }
        } catch (const Error& e) {
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
                    conv_.messages().size(), std::string(chat_format_name(conv_.format())).c_str());
        std::printf("last turn: prompt %lld new tokens (%lld reused) at %.1f tok/s | "
                    "decode %lld tokens at %.1f tok/s | stop: %s\n",
                    static_cast<long long>(t.n_prompt), static_cast<long long>(t.n_reused),
                    t.prompt_tokens_per_second(), static_cast<long long>(t.n_generated),
                    t.decode_tokens_per_second(), std::string(stop_reason_name(t.stop)).c_str());
        if (const SparseFfn* sparse = s.program().sparse()) std::printf("%s", sparsity_report(*sparse, &s.program()).c_str());
    }

    Conversation conv_;
    GenerateParams params_;
    bool interactive_;
};

void chat(const ChatArgs& args) {
    args.engine.sampler.validate();
    if (args.n_predict < -1) throw ArgumentError(cat("-n must be -1 or >= 0, got ", args.n_predict));
    std::optional<ChatFormat> forced;
    if (!args.chat_template.empty()) forced = chat_format_from_name(args.chat_template);

    const Runtime runtime(args.engine.model, args.engine.runtime_options());
    const Model& model = runtime.model();
    const std::string tmpl =
        model.file().find_string("tokenizer.chat_template").value_or(std::string());
    const ChatFormat format =
        forced ? *forced : choose_chat_format(tmpl, model.config().architecture);
    const std::unique_ptr<Session> owned = runtime.new_session();
    Session& session = *owned;

    const bool interactive = isatty(0) != 0;
    std::error_code ec;
    const uint64_t file_bytes = std::filesystem::file_size(args.engine.model, ec);
    std::fprintf(stderr, "strata chat: %s (%s, %s, chat template %s%s)\n",
                 std::filesystem::path(args.engine.model).filename().c_str(),
                 model.config().architecture.c_str(), format_bytes(file_bytes).c_str(),
                 std::string(chat_format_name(format)).c_str(),
                 forced ? ", forced" : (tmpl.empty() ? ", by architecture" : ", from the file"));
    const ResidencyStats& rs = runtime.placed().stats();
    std::fprintf(stderr, "weights: gpu %s (%s) | ram %s | disk %s | context %lld tokens\n",
                 format_bytes(rs.gpu_weight_bytes).c_str(),
                 runtime.gpu() ? std::string(runtime.gpu()->name()).c_str() : "none",
                 format_bytes(rs.ram_weight_bytes).c_str(), format_bytes(rs.disk_weight_bytes).c_str(),
                 static_cast<long long>(session.n_ctx()));
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(&session).c_str());
    if (interactive) std::fprintf(stderr, "/help for commands, Ctrl-C stops an answer, Ctrl-D quits\n");

    install_sigint_handler();
    ChatRepl repl(args, session, format, interactive);
    repl.run();
}

}  // namespace

void add_chat_command(CLI::App& app) {
    auto args = std::make_shared<ChatArgs>();
    CLI::App* cmd = app.add_subcommand("chat", "talk with a chat model (interactive or piped)");
    add_engine_options(*cmd, args->engine);
    cmd->add_option("--sys,--system", args->system, "system text");
    std::string names;
    for (std::string_view n : chat_format_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    cmd->add_option("--chat-template", args->chat_template,
                    "chat format: " + names + " (default: from the file, else by architecture)");
    cmd->add_option("-n,--n-predict", args->n_predict,
                    "most tokens per answer (-1 = until the end of the turn)")
        ->capture_default_str();
    cmd->callback([args] { chat(*args); });
}

}  // namespace strata::cli

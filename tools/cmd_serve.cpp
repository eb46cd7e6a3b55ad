// strata serve: an OpenAI-compatible HTTP server over one model (engine/server/server.h).
// Loads the model once, prints the URL, serves until SIGINT or SIGTERM, then ends every
// request (streams with an error event) and exits 0.
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/chat/chat_renderer.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runtime.h"
#include "engine/server/server.h"
#include "engine/core/byte_size.h"
#include "tools/commands.h"
#include "tools/numbers.h"
#include "tools/chat_options.h"
#include "tools/sampling_options.h"

namespace strata::cli {
namespace {

struct ServeArgs {
    EngineOptions engine;
    server::ServerOptions server;
    ChatTemplateOverride chat_template;
    std::string alias;
    std::string max_body = "4M";
    bool no_batch_decode = false;
    std::string spec_mode = "off";  // --spec
};

// SIGINT and SIGTERM are blocked in every thread and taken by one waiting thread, so no
// handler runs inside the engine or the HTTP threads. Before the server is up a signal ends
// the process at once (nothing to clean); afterwards it wakes main(), which stops the server.
class SignalWaiter {
public:
    SignalWaiter() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGINT);
        sigaddset(&set_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set_, nullptr);
        thread_ = std::thread([this] {
            int sig = 0;
            sigwait(&set_, &sig);
            std::lock_guard lock(mutex_);
            if (quitting_) return;
            if (!serving_) std::_Exit(128 + sig);
            signal_ = sig;
            cv_.notify_all();
        });
    }
    // Ends the waiting thread when no signal came (serve() failed before serving).
    ~SignalWaiter() {
        if (!thread_.joinable()) return;
        {
            std::lock_guard lock(mutex_);
            quitting_ = true;
        }
        pthread_kill(thread_.native_handle(), SIGTERM);
        thread_.join();
    }

    void serving() {
        std::lock_guard lock(mutex_);
        serving_ = true;
    }
    // Blocks until SIGINT or SIGTERM; returns which.
    int wait() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return signal_ != 0; });
        lock.unlock();
        thread_.join();
        return signal_;
    }

private:
    sigset_t set_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool serving_ = false;
    bool quitting_ = false;
    int signal_ = 0;
};

void serve(ServeArgs& args) {
    args.engine.sampler.validate();
    server::ServerOptions& so = args.server;
    if (so.n_parallel < 1) throw ArgumentError(cat("--parallel must be at least 1, got ", so.n_parallel));
    if (so.max_tokens == 0) throw ArgumentError("-n 0 would let no request generate anything (-1: up to the context)");
    try {
        so.max_body_bytes = parse_byte_size(args.max_body);
    } catch (const ArgumentError& e) {
        throw ArgumentError(cat("--max-body: ", e.what()));
    }
    if (so.max_body_bytes < 1024) throw ArgumentError(cat("--max-body ", args.max_body, " is below 1 KiB"));
    SignalWaiter signals;

    RuntimeOptions ro = args.engine.runtime_options();
    ro.session.n_sequences = so.n_parallel;
    const Runtime runtime(args.engine.model, ro);
    const Model& model = runtime.model();
    ChatRendererChoice chosen = choose_chat_renderer(model, args.chat_template);
    for (const std::string& w : chosen.warnings) std::fprintf(stderr, "strata serve: warning: %s\n", w.c_str());
    chosen.renderer.set_warning_sink([](const std::string& w) { std::fprintf(stderr, "strata serve: warning: %s\n", w.c_str()); });
    so.chat_template = chosen.renderer;
    so.model_id = args.alias.empty() ? std::filesystem::path(args.engine.model).stem().string() : args.alias;
    so.sampler = args.engine.sampler;

    server::Server srv(runtime, so);
    std::fprintf(stderr, "strata serve: %s (%s) | %d slots of %lld tokens | chat template %s | placement: %s\n",
                 so.model_id.c_str(), model.config().architecture.c_str(), so.n_parallel,
                 static_cast<long long>(srv.n_ctx()), so.chat_template.describe().c_str(),
                 runtime.placement_source().c_str());
    if (args.engine.verbose) std::fprintf(stderr, "%s", runtime.accounting(nullptr).c_str());
    srv.start();
    signals.serving();
    std::printf("strata serve: listening on %s\n", srv.url().c_str());
    std::fflush(stdout);
    const int sig = signals.wait();
    std::fprintf(stderr, "strata serve: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv.stop();
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat, completions, a chat page)");
    add_engine_options(*cmd, args->engine);
    server::ServerOptions& so = args->server;
    cmd->add_option("--host", so.host, "address to listen on")->capture_default_str();
    cmd->add_option("--port", so.port, "port (0 = any free one)")->capture_default_str()->check(int_in(0, 65535));
    cmd->add_option("--parallel,--n-parallel", so.n_parallel, "requests generated at once (slots); each has its own -c context")
        ->capture_default_str()->check(int_in(1, 1024));
    cmd->add_option("--api-key", so.api_key, "require 'Authorization: Bearer KEY' on /v1/* and /metrics");
    cmd->add_option("-a,--alias", args->alias, "model name /v1/models gives (default: the file name)");
    cmd->add_flag("--cont-batching")->description("-cb: accepted (requests are always batched continuously)");
    cmd->add_flag("--metrics")->description("accepted (/metrics is always served)");
    cmd->add_option("-n,--n-predict", so.max_tokens, "most tokens a request may generate (-1 = the context)")
        ->capture_default_str()->check(int_in(-1, kMaxContext));
    cmd->add_option("--max-queue", so.max_queue, "requests waiting for a slot before 429")
        ->capture_default_str()->check(int_in(0, 4096));
    cmd->add_option("--max-body", args->max_body, "largest request body, e.g. 4M (larger: 413)")->capture_default_str();
    cmd->add_option("--request-timeout", so.request_timeout_s,
                    "seconds a request may take from arrival to its last token, queue included; past it the "
                    "request ends with 504 (0 = no limit)")
        ->capture_default_str()->check(real_in(0.0, 1e6));
    cmd->add_option("--spec", args->spec_mode,
                    "speculative decoding: lookup = prompt lookup for greedy requests served alone (the output "
                    "is the same), off")
        ->capture_default_str();
    cmd->add_option("--draft-max", args->server.spec.draft_max, "most draft tokens a speculative pass checks")
        ->capture_default_str()->check(int_in(1, SpecParams::kMaxDraft));
    cmd->add_flag("--no-batch-decode", args->no_batch_decode,
                  "decode each request in its own forward pass instead of one pass for all (for comparisons)");
    add_chat_template_options(*cmd, args->chat_template);
    cmd->callback([args] {
        args->server.chunk_tokens = args->engine.n_batch;
        args->server.batch_decode = !args->no_batch_decode;
        args->server.spec.mode = parse_spec_mode(args->spec_mode);
        if (drafts_from_session(args->server.spec.mode)) {
            throw ArgumentError(cat("strata serve speculates with --spec lookup only (--spec ",
                                    spec_mode_name(args->server.spec.mode), " needs a draft session per request, "
                                    "which the server does not keep)"));
        }
        if (args->server.spec.mode != SpecMode::Off) args->server.spec.validate(args->engine.n_batch);
        serve(*args);
    });
}

}  // namespace strata::cli

// The HTTP server: routes, API key, limits, OpenAI-shaped errors (server.h).
#include "engine/server/server.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <httplib.h>

#include "engine/runtime/model.h"
#include "engine/runtime/runtime.h"
#include "engine/server/api_error.h"
#include "engine/server/chat_page.h"
#include "engine/server/completion_endpoint.h"
#include "engine/server/response_json.h"
#include "engine/server/sse.h"

namespace strata::server {
namespace {

// Compares in time that depends on the key's length only, not on where a guess goes wrong.
bool same_secret(std::string_view given, std::string_view key) {
    if (key.empty()) return false;
    unsigned char diff = given.size() == key.size() ? 0 : 1;
    for (size_t i = 0; i < key.size(); ++i) {
        diff |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
    }
    return diff == 0;
}

bool needs_key(const std::string& path) {
    return path.starts_with("/v1/") || path == "/metrics" || path == "/completions" ||
           path == "/chat/completions" || path == "/models";
}

void set_error(httplib::Response& res, int status, const std::string& message, const std::string& code = {}) {
    res.status = status;
    res.set_content(error_body(status, message, {}, code), "application/json");
}

std::vector<std::unique_ptr<Session>> make_sessions(const Runtime& runtime, int n) {
    std::vector<std::unique_ptr<Session>> sessions;
    for (int i = 0; i < n; ++i) sessions.push_back(runtime.new_session());
    return sessions;
}

}  // namespace

struct Server::Impl {
    ServerOptions options;
    Metrics metrics;
    std::unique_ptr<Scheduler> scheduler;
    EndpointContext endpoint_context;
    httplib::Server http;
    std::thread listener;
    int port = 0;
    int64_t created = 0;
    bool stopped = false;

    void routes();
    void guards();
};

void Server::Impl::guards() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (options.api_key.empty() || req.method == "OPTIONS" || !needs_key(req.path)) {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        const std::string auth = req.get_header_value("Authorization");
        const std::string_view given = auth.starts_with("Bearer ") ? std::string_view(auth).substr(7) : "";
        if (same_secret(given, options.api_key)) return httplib::Server::HandlerResponse::Unhandled;
        set_error(res, 401, auth.empty() ? "no API key: send the header 'Authorization: Bearer KEY'"
                                         : "invalid API key", "invalid_api_key");
        return httplib::Server::HandlerResponse::Handled;
    });
    // Errors httplib makes itself (unknown route, body over the limit, malformed HTTP) get an
    // OpenAI-shaped body too.
    http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404) {
            set_error(res, 404, cat("no route for ", req.method, " ", req.path), "not_found");
        } else if (res.status == 413) {
            set_error(res, 413, cat("the request body is larger than the server's limit of ", options.max_body_bytes,
                                    " bytes"), "request_too_large");
        } else {
            set_error(res, res.status, cat("the request could not be served (HTTP ", res.status, ")"));
        }
        return httplib::Server::HandlerResponse::Handled;
    }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        set_error(res, 500, "internal error: " + what);
    });
}

void Server::Impl::routes() {
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
    });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        const SchedulerGauges g = scheduler->gauges();
        res.set_content(dump_json({{"status", "ok"},
                                   {"slots_idle", g.n_slots - g.n_active},
                                   {"slots_processing", g.n_active},
                                   {"requests_queued", g.n_queued}}),
                        "application/json");
    });
    auto models = [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(dump_json(model_list(options.model_id, created, scheduler->n_ctx())), "application/json");
    };
    http.Get("/v1/models", models);
    http.Get("/models", models);
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics.prometheus(scheduler->gauges()), "text/plain; version=0.0.4");
    });
    // The body is read here rather than by httplib, which would parse a body sent as
    // application/x-www-form-urlencoded (curl -d, urllib's default) as a form and refuse one
    // over 8 KiB: a JSON body is JSON whatever its content type says.
    auto generation = [this](Endpoint endpoint) {
        return [this, endpoint](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
            std::string body;
            const size_t limit = options.max_body_bytes;
            // Refused from the header alone, before any of the body is read.
            bool too_large = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > limit;
            const bool complete = too_large || reader([&](const char* data, size_t n) {
                too_large = body.size() + n > limit;
                if (!too_large) body.append(data, n);
                return !too_large;
            });
            if (too_large) {
                metrics.count_response(413);
                return set_error(res, 413, cat("the request body is larger than the server's limit of ", limit,
                                               " bytes"), "request_too_large");
            }
            if (!complete) return set_error(res, 400, "the request body could not be read");
            handle_completion(endpoint, endpoint_context, body, req, res);
        };
    };
    const auto chat = generation(Endpoint::Chat);
    const auto completion = generation(Endpoint::Completion);
    http.Post("/v1/chat/completions", chat);
    http.Post("/chat/completions", chat);
    http.Post("/v1/completions", completion);
    http.Post("/completions", completion);
    // CORS preflight: browser pages of other origins may call the API (with the key, if set).
    http.Options(R"(/.*)", [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.status = 204;
    });
}

Server::Server(const Runtime& runtime, const ServerOptions& options) : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    s.options = options;
    if (options.n_parallel < 1) throw ArgumentError(cat("--parallel must be at least 1, got ", options.n_parallel));
    if (options.max_queue < 0) throw ArgumentError(cat("the queue length must be >= 0, got ", options.max_queue));
    SchedulerOptions so;
    so.max_queue = options.max_queue;
    so.chunk_tokens = options.chunk_tokens;
    so.request_timeout_s = options.request_timeout_s;
    so.batch_decode = options.batch_decode;
    so.spec = options.spec;
    s.scheduler = std::make_unique<Scheduler>(make_sessions(runtime, options.n_parallel), so, &s.metrics);
    const Model& model = runtime.model();
    s.endpoint_context.scheduler = s.scheduler.get();
    s.endpoint_context.metrics = &s.metrics;
    s.endpoint_context.prompt = PromptContext{&model.tokenizer(), options.chat_template,
                                      static_cast<int32_t>(model.weights().output.ne[1]), s.scheduler->n_ctx(),
                                      options.max_tokens};
    s.endpoint_context.defaults = options.sampler;
    s.endpoint_context.model_id = options.model_id;
    s.created = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();

    // One HTTP thread per request that may be generating or queued, and a few for the rest
    // (health, metrics, refusals): a full queue is answered with 429, not left waiting.
    const size_t n_threads = static_cast<size_t>(options.n_parallel + options.max_queue + 4);
    s.http.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
    s.http.set_payload_max_length(options.max_body_bytes);
    // SO_REUSEADDR only: httplib's default SO_REUSEPORT would let a second server bind the same
    // port and silently share its connections instead of failing.
    s.http.set_socket_options([](int sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    s.http.set_keep_alive_timeout(2);  // bounds how long stop() waits for idle connections
    s.http.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
    s.guards();
    s.routes();
    if (options.port == 0) {
        s.port = s.http.bind_to_any_port(options.host);
    } else if (s.http.bind_to_port(options.host, options.port)) {
        s.port = options.port;
    } else {
        s.port = -1;
    }
    if (s.port <= 0) {
        s.scheduler->shutdown("the server could not start");
        throw SystemError(cat("cannot listen on ", options.host, ":", options.port,
                              " (in use, or not an address of this machine; --host, --port)"));
    }
}

Server::~Server() { stop(); }

void Server::start() {
    impl_->listener = std::thread([this] { impl_->http.listen_after_bind(); });
}

void Server::stop() {
    Impl& s = *impl_;
    if (s.stopped) return;
    s.stopped = true;
    // Jobs first: their handlers then end (streams with an error event) and the HTTP threads
    // can be joined.
    s.scheduler->shutdown("the server is shutting down");
    s.http.stop();
    if (s.listener.joinable()) s.listener.join();
}

int Server::port() const { return impl_->port; }

std::string Server::url() const {
    const std::string& host = impl_->options.host;
    return cat("http://", host.find(':') != std::string::npos ? "[" + host + "]" : host, ":", impl_->port, "/");
}

int64_t Server::n_ctx() const { return impl_->scheduler->n_ctx(); }

}  // namespace strata::server

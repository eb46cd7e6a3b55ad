// Server: `strata serve` without its command line — an OpenAI-compatible HTTP server
// (cpp-httplib) over one loaded model. POST /v1/chat/completions and /v1/completions (whole or
// streamed as server-sent events), GET /v1/models, /health, /metrics (Prometheus text) and /
// (a chat page compiled into the binary). Requests are parsed and checked on the HTTP threads;
// only valid ones reach the Scheduler's engine thread. Errors are OpenAI-shaped JSON bodies.
// Thread-safety: start() once, then stop() from any thread (a signal-waiting one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/chat/chat_renderer.h"
#include "engine/sampler/sampler_params.h"
#include "engine/runtime/speculate.h"

namespace strata {
class Runtime;
}

namespace strata::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                    // 0: any free port (port() tells which)
    int n_parallel = 4;                 // slots: sequences generated at once
    int64_t max_queue = 16;             // requests waiting for a slot before 429
    int64_t max_tokens = -1;            // most tokens per request; -1: the context only
    uint64_t max_body_bytes = 4 << 20;  // larger bodies get 413
    int64_t chunk_tokens = 256;         // prompt tokens per step of one slot
    std::string api_key;                // empty: none asked
    std::string model_id;               // the name /v1/models gives
    ChatRenderer chat_template = ChatFormat::ChatML;
    SamplerParams sampler;              // defaults of every request
    double request_timeout_s = 0;       // a request running longer ends with 504; 0: no limit
    bool batch_decode = true;           // false: each slot decodes in its own pass (comparisons)
    SpecParams spec;                    // --spec lookup: greedy requests served alone speculate
};

class Server {
public:
    // Makes n_parallel sessions on the runtime (its SessionParams must hold that many:
    // SessionParams::n_sequences) and binds the port. Throws SystemError when it cannot bind,
    // ArgumentError for bad options. The runtime must outlive the server.
    Server(const Runtime& runtime, const ServerOptions& options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Serves on a thread of its own until stop().
    void start();
    // Ends every queued and running request (streams get an error event), stops listening and
    // joins the HTTP threads. Idempotent.
    void stop();

    int port() const;
    std::string url() const;
    int64_t n_ctx() const;  // of each slot

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server

// The two generation endpoints, POST /v1/chat/completions and /v1/completions: parse and
// check the body (400s), queue a Job (429 when the queue is full), then answer — the whole
// JSON object once the job finishes, or server-sent events as its text arrives (an error event
// if it fails mid-stream, then the stream ends). A client that leaves cancels its job: a
// stream notices on its next write, a waiting handler through a ConnectionProbe.
// Runs on the HTTP threads; thread-safe as long as the context's parts are.
#pragma once

#include <string>

#include <httplib.h>

#include "engine/server/job_spec.h"
#include "engine/server/metrics.h"
#include "engine/server/request.h"
#include "engine/server/scheduler.h"

namespace strata::server {

struct EndpointContext {
    Scheduler* scheduler = nullptr;
    Metrics* metrics = nullptr;
    PromptContext prompt;
    SamplerParams defaults;
    RequestLimits limits;
    std::string model_id;
};

// `body`: the request body, read by the caller (within the server's size limit).
void handle_completion(Endpoint endpoint, const EndpointContext& context, const std::string& body,
                       const httplib::Request& request, httplib::Response& response);

}  // namespace strata::server

// Generation requests from HTTP body to response (completion_endpoint.h).
#include "engine/server/completion_endpoint.h"

#include <chrono>
#include <iterator>
#include <memory>
#include <vector>

#include "engine/server/api_error.h"
#include "engine/server/connection_probe.h"
#include "engine/server/response_json.h"
#include "engine/server/sse.h"

namespace strata::server {
namespace {

constexpr std::chrono::milliseconds kPoll{100};

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status();
    res.set_content(error_body(e), "application/json");
}

// Failed jobs keep their status (500 engine error, 503 shutting down).
ApiError job_error(const JobResult& r) { return ApiError(r.status, r.error); }

void count_finished(const EndpointContext& c, const JobResult& r) {
    c.metrics->count_response(r.status);
    c.metrics->add_job(r.n_prompt, r.n_reused, r.n_generated);
}

// The client is gone: the engine drops the job at its next step (or when it leaves the queue);
// nobody waits for it.
void abandon(const EndpointContext& c, Job& job) {
    job.cancel();
    c.metrics->count_cancelled();
}

// The logprobs object of `tokens` in the endpoint's shape; null when none were asked.
nlohmann::json logprobs_of(const ResponseInfo& info, const Job& job, const std::vector<TokenLogprob>& tokens,
                           int64_t text_offset) {
    if (job.spec().logprobs < 0) return nullptr;
    return info.endpoint == Endpoint::Chat ? chat_logprobs_json(tokens) : completion_logprobs_json(tokens, text_offset);
}

// Streams one job as server-sent events; returns false when the client is gone.
bool stream_job(const EndpointContext& c, const std::shared_ptr<Job>& job, const ResponseInfo& info,
                bool include_usage, httplib::DataSink& sink) {
    auto send = [&](const std::string& event) {
        if (sink.write(event.data(), event.size())) return true;
        abandon(c, *job);
        return false;
    };
    // The chat stream opens with the assistant role, as OpenAI's does.
    if (info.endpoint == Endpoint::Chat && !send(sse_event(stream_chunk(info, "", true, nullptr)))) return false;
    int64_t offset = 0;  // generated text bytes so far (completion logprobs' text_offset)
    while (true) {
        Job::Update u = job->take(kPoll);
        if (!u.text.empty() || !u.logprobs.empty()) {
            const nlohmann::json lp = u.logprobs.empty() ? nlohmann::json(nullptr) : logprobs_of(info, *job, u.logprobs, offset);
            for (const TokenLogprob& t : u.logprobs) offset += static_cast<int64_t>(t.piece.size());
            if (!send(sse_event(stream_chunk(info, u.text, false, nullptr, lp)))) return false;
        }
        if (u.finished) {
            count_finished(c, u.result);
            const JobResult& r = u.result;
            if (r.status != 200) {
                send("data: " + error_body(job_error(r)) + "\n\n");
                sink.done();
                return true;
            }
            if (!send(sse_event(stream_chunk(info, "", false, &r.finish)))) return false;
            if (include_usage && !send(sse_event(usage_chunk(info, r)))) return false;
            if (!send(sse_done())) return false;
            sink.done();
            return true;
        }
        if (u.text.empty() && u.logprobs.empty() && !sink.is_writable()) {
            abandon(c, *job);
            return false;
        }
    }
}

// Waits for the whole answer; cancels the job when the client leaves meanwhile.
void answer_whole(const EndpointContext& c, const std::shared_ptr<Job>& job, const ResponseInfo& info,
                  const httplib::Request& req, httplib::Response& res) {
    const ConnectionProbe probe(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    std::string text;
    std::vector<TokenLogprob> logprobs;
    while (true) {
        Job::Update u = job->take(kPoll);
        text += u.text;
        logprobs.insert(logprobs.end(), std::make_move_iterator(u.logprobs.begin()),
                        std::make_move_iterator(u.logprobs.end()));
        if (u.finished) {
            count_finished(c, u.result);
            if (u.result.status != 200) return send_error(res, job_error(u.result));
            res.set_content(dump_json(full_response(info, text, u.result, logprobs_of(info, *job, logprobs, 0))),
                            "application/json");
            return;
        }
        if (probe.peer_closed()) {
            abandon(c, *job);
            res.status = 499;  // nobody reads it
            return;
        }
    }
}

}  // namespace

void handle_completion(Endpoint endpoint, const EndpointContext& c, const std::string& body,
                       const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<Job> job;
    CompletionRequest request;
    try {
        request = parse_request(endpoint, body, c.defaults, c.limits);
        job = std::make_shared<Job>(make_job_spec(request, c.prompt));
        c.scheduler->submit(job);
    } catch (const ApiError& e) {
        c.metrics->count_response(e.status());
        return send_error(res, e);
    }
    const ResponseInfo info = new_response_info(endpoint, c.model_id);
    if (!request.stream) return answer_whole(c, job, info, req, res);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    const bool include_usage = request.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        [c, job, info, include_usage](size_t, httplib::DataSink& sink) {
            return stream_job(c, job, info, include_usage, sink);
        },
        [job](bool) { job->cancel(); });  // a no-op once the job has finished
}

}  // namespace strata::server

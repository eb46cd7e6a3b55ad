// Generation requests from HTTP body to response (completion_endpoint.h).
#include "engine/server/completion_endpoint.h"

#include <chrono>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "engine/server/api_error.h"
#include "engine/server/connection_probe.h"
#include "engine/server/response_json.h"
#include "engine/server/sse.h"
#include "engine/server/tool_calls.h"

namespace strata::server {
namespace {

constexpr std::chrono::milliseconds kPoll{100};

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status();
    res.set_content(error_body(e), "application/json");
}

// Failed jobs keep their status (500 engine error, 503 shutting down).
ApiError job_error(const JobResult& r) { return ApiError(r.status, r.error); }

// The tools a chat answer is read for (null: none offered).
using ToolsPtr = std::shared_ptr<const ToolRequest>;

// One choice of a response (n of them): its job and what its answer holds so far.
struct Choice {
    std::shared_ptr<Job> job;
    std::optional<ToolStreamFilter> filter;  // streamed and read for tools
    std::string text;
    std::vector<TokenLogprob> logprobs;
    int64_t offset = 0;  // generated text bytes streamed (completion logprobs' text_offset)
    bool done = false;
    JobResult result;
};
using Choices = std::vector<Choice>;

// The client is gone (or one choice failed): the engine drops every job at its next step.
void abandon(const EndpointContext& c, Choices& choices, bool count) {
    for (Choice& ch : choices) ch.job->cancel();
    if (count) c.metrics->count_cancelled();
}

// Usage over all choices: the prompt once, the completion tokens summed.
JobResult total_of(const Choices& choices) {
    JobResult total = choices.front().result;
    total.n_generated = 0;
    for (const Choice& ch : choices) total.n_generated += ch.result.n_generated;
    return total;
}

// A failed choice, if any, else null. Its status is the response's.
const JobResult* failure_of(const Choices& choices) {
    for (const Choice& ch : choices) {
        if (ch.done && ch.result.status != 200) return &ch.result;
    }
    return nullptr;
}

void count_finished(const EndpointContext& c, const Choices& choices) {
    const JobResult* failed = failure_of(choices);
    c.metrics->count_response(failed ? failed->status : 200);
    for (const Choice& ch : choices) c.metrics->add_job(ch.result.n_prompt, ch.result.n_reused, ch.result.n_generated);
}

// The logprobs object of `tokens` in the endpoint's shape; null when none were asked.
nlohmann::json logprobs_of(const ResponseInfo& info, const Job& job, const std::vector<TokenLogprob>& tokens,
                           int64_t text_offset) {
    if (job.spec().logprobs < 0) return nullptr;
    return info.endpoint == Endpoint::Chat ? chat_logprobs_json(tokens) : completion_logprobs_json(tokens, text_offset);
}

// The end of one streamed choice read for tools: its held-back content, then its calls (which
// make the finish reason tool_calls). False when the client is gone.
template <typename Send>
bool send_tool_calls(Send& send, const ResponseInfo& info, int index, const ToolOutput& out, FinishReason& finish) {
    if (!out.content.empty() && !send(sse_event(stream_chunk(info, out.content, false, nullptr, nullptr, index)))) {
        return false;
    }
    if (out.calls.empty()) return true;
    finish = FinishReason::ToolCalls;
    return send(sse_event(tool_calls_chunk(info, tool_calls_json(out.calls, /*indexed=*/true), index)));
}

// One poll of one streamed choice: its new text as an event, and its end. False when the
// client is gone.
template <typename Send>
bool stream_step(const ResponseInfo& info, int index, Choice& ch, std::chrono::milliseconds wait, Send& send) {
    Job::Update u = ch.job->take(wait);
    if (ch.filter) u.text = ch.filter->feed(u.text);
    if (!u.text.empty() || !u.logprobs.empty()) {
        const nlohmann::json lp =
            u.logprobs.empty() ? nlohmann::json(nullptr) : logprobs_of(info, *ch.job, u.logprobs, ch.offset);
        for (const TokenLogprob& t : u.logprobs) ch.offset += static_cast<int64_t>(t.piece.size());
        if (!send(sse_event(stream_chunk(info, u.text, false, nullptr, lp, index)))) return false;
    }
    if (!u.finished) return true;
    ch.done = true;
    ch.result = u.result;
    if (ch.result.status != 200) return true;
    FinishReason finish = ch.result.finish;
    if (ch.filter && !send_tool_calls(send, info, index, ch.filter->finish(), finish)) return false;
    return send(sse_event(stream_chunk(info, "", false, &finish, nullptr, index)));
}

// Streams the choices as server-sent events; returns false when the client is gone.
bool stream_choices(const EndpointContext& c, Choices& choices, const ResponseInfo& info, bool include_usage,
                    httplib::DataSink& sink) {
    auto send = [&](const std::string& event) {
        if (sink.write(event.data(), event.size())) return true;
        abandon(c, choices, true);
        return false;
    };
    const int n = static_cast<int>(choices.size());
    // The chat stream opens with the assistant role, as OpenAI's does (once per choice).
    for (int i = 0; info.endpoint == Endpoint::Chat && i < n; ++i) {
        if (!send(sse_event(stream_chunk(info, "", true, nullptr, nullptr, i)))) return false;
    }
    const std::chrono::milliseconds wait = n == 1 ? kPoll : std::chrono::milliseconds(kPoll.count() / n + 1);
    while (true) {
        bool all_done = true;
        for (int i = 0; i < n; ++i) {
            if (choices[i].done) continue;
            if (!stream_step(info, i, choices[i], wait, send)) return false;
            all_done = all_done && choices[i].done;
        }
        if (const JobResult* failed = failure_of(choices)) {
            count_finished(c, choices);
            abandon(c, choices, false);
            send("data: " + error_body(job_error(*failed)) + "\n\n");
            sink.done();
            return true;
        }
        if (all_done) {
            count_finished(c, choices);
            if (include_usage && !send(sse_event(usage_chunk(info, total_of(choices))))) return false;
            if (!send(sse_done())) return false;
            sink.done();
            return true;
        }
        if (!sink.is_writable()) {
            abandon(c, choices, true);
            return false;
        }
    }
}

// One finished choice of a whole answer, read for tools when offered.
nlohmann::json choice_of(const ResponseInfo& info, int index, Choice& ch, const ToolsPtr& tools) {
    nlohmann::json calls = nullptr;
    if (tools) {
        ToolOutput out = parse_tool_output(ch.text, *tools);
        if (!out.calls.empty()) {
            ch.text = std::move(out.content);
            calls = tool_calls_json(out.calls, /*indexed=*/false);
            ch.result.finish = FinishReason::ToolCalls;
        }
    }
    return choice_json(info, index, ch.text, ch.result, logprobs_of(info, *ch.job, ch.logprobs, 0), calls);
}

// Waits for the whole answer; cancels the jobs when the client leaves meanwhile.
void answer_whole(const EndpointContext& c, Choices& choices, const ResponseInfo& info, const ToolsPtr& tools,
                  const httplib::Request& req, httplib::Response& res) {
    const ConnectionProbe probe(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    const auto wait = std::chrono::milliseconds(kPoll.count() / static_cast<int64_t>(choices.size()) + 1);
    while (true) {
        bool all_done = true;
        for (Choice& ch : choices) {
            if (ch.done) continue;
            Job::Update u = ch.job->take(wait);
            ch.text += u.text;
            ch.logprobs.insert(ch.logprobs.end(), std::make_move_iterator(u.logprobs.begin()),
                               std::make_move_iterator(u.logprobs.end()));
            ch.done = u.finished;
            if (u.finished) ch.result = u.result;
            all_done = all_done && ch.done;
        }
        if (const JobResult* failed = failure_of(choices)) {
            count_finished(c, choices);
            abandon(c, choices, false);
            return send_error(res, job_error(*failed));
        }
        if (all_done) {
            count_finished(c, choices);
            nlohmann::json list = nlohmann::json::array();
            for (size_t i = 0; i < choices.size(); ++i) list.push_back(choice_of(info, static_cast<int>(i), choices[i], tools));
            res.set_content(dump_json(full_response(info, std::move(list), total_of(choices))), "application/json");
            return;
        }
        if (probe.peer_closed()) {
            abandon(c, choices, true);
            res.status = 499;  // nobody reads it
            return;
        }
    }
}

// n jobs of one request: a fixed seed gives choice i the seed + i, so sampled choices differ.
Choices submit_choices(const EndpointContext& c, const CompletionRequest& request, const ToolsPtr& tools) {
    if (request.n > c.scheduler->n_slots()) {
        throw ApiError(400, cat("'n' is ", request.n, " but this server generates at most ", c.scheduler->n_slots(),
                                " sequences at once (--parallel)"), "n");
    }
    const JobSpec spec = make_job_spec(request, c.prompt);
    Choices choices(static_cast<size_t>(request.n));
    for (int64_t i = 0; i < request.n; ++i) {
        JobSpec s = spec;
        if (s.sampler.seed != SamplerParams::kRandomSeed) s.sampler.seed += static_cast<uint32_t>(i);
        choices[i].job = std::make_shared<Job>(std::move(s));
        if (tools && request.stream) choices[i].filter.emplace(*tools);
    }
    for (size_t i = 0; i < choices.size(); ++i) {
        try {
            c.scheduler->submit(choices[i].job);
        } catch (const ApiError&) {  // queue full: none of the request runs
            for (size_t k = 0; k < i; ++k) choices[k].job->cancel();
            throw;
        }
    }
    return choices;
}

}  // namespace

void handle_completion(Endpoint endpoint, const EndpointContext& c, const std::string& body,
                       const httplib::Request& req, httplib::Response& res) {
    auto choices = std::make_shared<Choices>();
    CompletionRequest request;
    ToolsPtr tools;
    try {
        request = parse_request(endpoint, body, c.defaults, c.limits);
        if (request.tools.active()) tools = std::make_shared<const ToolRequest>(request.tools);
        *choices = submit_choices(c, request, tools);
    } catch (const ApiError& e) {
        c.metrics->count_response(e.status());
        return send_error(res, e);
    }
    const ResponseInfo info = new_response_info(endpoint, c.model_id);
    if (!request.stream) return answer_whole(c, *choices, info, tools, req, res);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    const bool include_usage = request.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        // `tools` rides along: the choices' stream filters refer to it.
        [c, choices, info, include_usage, tools](size_t, httplib::DataSink& sink) {
            return stream_choices(c, *choices, info, include_usage, sink);
        },
        [choices](bool) {  // a no-op for jobs that have finished
            for (Choice& ch : *choices) ch.job->cancel();
        });
}

}  // namespace strata::server

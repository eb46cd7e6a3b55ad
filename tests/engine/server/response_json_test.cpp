// OpenAI response shapes, SSE framing, error bodies and the Prometheus text, checked by
// parsing what the functions write (field names and values as OpenAI's API reference gives).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/server/api_error.h"
#include "engine/server/metrics.h"
#include "engine/server/response_json.h"
#include "engine/server/sse.h"

namespace strata::server {
namespace {

using nlohmann::json;

JobResult result() {
    JobResult r;
    r.finish = FinishReason::Length;
    r.n_prompt = 11;
    r.n_reused = 4;
    r.n_generated = 5;
    return r;
}

json parse_event(const std::string& event) {
    EXPECT_EQ(event.rfind("data: ", 0), 0u);
    EXPECT_TRUE(event.ends_with("\n\n"));
    EXPECT_EQ(event.find('\n'), event.size() - 2) << "one line per event";
    return json::parse(event.substr(6));
}

TEST(ResponseJson, WholeAnswers) {
    const ResponseInfo chat = new_response_info(Endpoint::Chat, "m");
    EXPECT_EQ(chat.id.rfind("chatcmpl-", 0), 0u);
    EXPECT_NE(chat.id, new_response_info(Endpoint::Chat, "m").id);
    const json c = full_response(chat, json::array({choice_json(chat, 0, "Hi\n\"there\"", result())}), result());
    EXPECT_EQ(c["object"], "chat.completion");
    EXPECT_EQ(c["model"], "m");
    EXPECT_EQ(c["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(c["choices"][0]["message"]["content"], "Hi\n\"there\"");
    EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(c["usage"]["prompt_tokens"], 11);
    EXPECT_EQ(c["usage"]["completion_tokens"], 5);
    EXPECT_EQ(c["usage"]["total_tokens"], 16);
    EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 4);

    const ResponseInfo text = new_response_info(Endpoint::Completion, "m");
    EXPECT_EQ(text.id.rfind("cmpl-", 0), 0u);
    JobResult r = result();
    r.finish = FinishReason::Stop;
    const json t = full_response(text, json::array({choice_json(text, 0, "abc", r)}), r);
    EXPECT_EQ(t["object"], "text_completion");
    EXPECT_EQ(t["choices"][0]["text"], "abc");
    EXPECT_EQ(t["choices"][0]["finish_reason"], "stop");
}

TEST(ResponseJson, ChoicesAndToolCalls) {
    const ResponseInfo chat = new_response_info(Endpoint::Chat, "m");
    JobResult r = result();
    r.finish = FinishReason::ToolCalls;
    const json calls = json::array({json{{"id", "call_1"}, {"type", "function"},
                                         {"function", {{"name", "f"}, {"arguments", "{}"}}}}});
    const json called = choice_json(chat, 2, "", r, nullptr, calls);
    EXPECT_EQ(called["index"], 2);
    EXPECT_EQ(called["finish_reason"], "tool_calls");
    EXPECT_TRUE(called["message"]["content"].is_null());
    EXPECT_EQ(called["message"]["tool_calls"][0]["function"]["name"], "f");
    EXPECT_EQ(choice_json(chat, 0, "see:", r, nullptr, calls)["message"]["content"], "see:");
    EXPECT_FALSE(choice_json(chat, 0, "x", result())["message"].contains("tool_calls"));
    const json chunk = tool_calls_chunk(chat, calls, 1);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["choices"][0]["index"], 1);
    EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["id"], "call_1");
    EXPECT_EQ(stream_chunk(chat, "a", false, nullptr, nullptr, 3)["choices"][0]["index"], 3);
}

TEST(ResponseJson, StreamEvents) {
    const ResponseInfo chat = new_response_info(Endpoint::Chat, "m");
    const json first = parse_event(sse_event(stream_chunk(chat, "", true, nullptr)));
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    const json piece = parse_event(sse_event(stream_chunk(chat, "a\nb", false, nullptr)));
    EXPECT_EQ(piece["choices"][0]["delta"]["content"], "a\nb");
    EXPECT_FALSE(piece["choices"][0]["delta"].contains("role"));
    const FinishReason stop = FinishReason::Stop;
    const json last = parse_event(sse_event(stream_chunk(chat, "", false, &stop)));
    EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
    EXPECT_TRUE(last["choices"][0]["delta"].empty());
    const json usage = parse_event(sse_event(usage_chunk(chat, result())));
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["total_tokens"], 16);
    EXPECT_EQ(sse_done(), "data: [DONE]\n\n");

    const ResponseInfo text = new_response_info(Endpoint::Completion, "m");
    const json t = parse_event(sse_event(stream_chunk(text, "xy", false, nullptr)));
    EXPECT_EQ(t["object"], "text_completion");
    EXPECT_EQ(t["choices"][0]["text"], "xy");
}

TEST(ResponseJson, ErrorBodiesAreOpenAiShapedAndValidJson) {
    const json e = json::parse(error_body(ApiError(400, "bad 'x'", "x", "some_code")));
    EXPECT_EQ(e["error"]["message"], "bad 'x'");
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_EQ(e["error"]["param"], "x");
    EXPECT_EQ(e["error"]["code"], "some_code");
    const json none = json::parse(error_body(429, "busy"));
    EXPECT_EQ(none["error"]["type"], "rate_limit_error");
    EXPECT_TRUE(none["error"]["param"].is_null());
    EXPECT_EQ(error_type(401), "authentication_error");
    EXPECT_EQ(error_type(503), "unavailable_error");
    EXPECT_EQ(error_type(500), "server_error");
    // Invalid UTF-8 in a message (echoed user bytes) still gives valid JSON.
    const std::string body = error_body(400, "bad byte \xff here");
    EXPECT_NO_THROW(json::parse(body)) << body;
}

TEST(ResponseJson, ModelList) {
    const json j = model_list("gemma", 1700000000, 2048);
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["data"][0]["id"], "gemma");
    EXPECT_EQ(j["data"][0]["object"], "model");
    EXPECT_EQ(j["data"][0]["meta"]["n_ctx"], 2048);
}

// The value of an un-labelled sample line "name value" in Prometheus text.
double sample(const std::string& text, const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name;
    return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

TEST(Metrics, PrometheusTextAndWindowRates) {
    Metrics m;
    using Clock = Metrics::Clock;
    const Clock::time_point t0 = Clock::now();
    m.count_response(200);
    m.count_response(200);
    m.count_response(429);
    m.count_cancelled();
    m.add_job(30, 10, 7);
    m.add_step(0.5, 20, 3, t0);
    m.add_step(0.25, 0, 4, t0 + std::chrono::seconds(2));
    SchedulerGauges g{4, 2, 1, 300, 4096};
    g.batched_pass_seconds = 1.5;
    g.batched_token_seconds = 0.125;
    const std::string text = m.prometheus(g, t0 + std::chrono::seconds(3));
    EXPECT_NE(text.find("strata_requests_total{status=\"200\"} 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("strata_requests_total{status=\"429\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("# TYPE strata_requests_total counter\n"), std::string::npos);
    EXPECT_EQ(sample(text, "strata_requests_cancelled_total"), 1);
    EXPECT_EQ(sample(text, "strata_prompt_tokens_total"), 30);
    EXPECT_EQ(sample(text, "strata_prompt_tokens_reused_total"), 10);
    EXPECT_EQ(sample(text, "strata_generated_tokens_total"), 7);
    EXPECT_EQ(sample(text, "strata_decode_tokens_total"), 7);
    EXPECT_EQ(sample(text, "strata_prompt_tokens_evaluated_total"), 20);
    EXPECT_DOUBLE_EQ(sample(text, "strata_engine_busy_seconds_total"), 0.75);
    EXPECT_DOUBLE_EQ(sample(text, "strata_decode_tokens_per_second"), 0.7);  // 7 tokens / 10 s window
    EXPECT_EQ(sample(text, "strata_requests_queued"), 1);
    EXPECT_EQ(sample(text, "strata_requests_processing"), 2);
    EXPECT_EQ(sample(text, "strata_kv_cells_used"), 300);
    EXPECT_EQ(sample(text, "strata_kv_cells_total"), 4096);
    EXPECT_DOUBLE_EQ(sample(text, "strata_batched_pass_seconds_total"), 1.5);
    EXPECT_DOUBLE_EQ(sample(text, "strata_batched_token_seconds_total"), 0.125);
    // Eleven seconds on, the first step has left the window.
    EXPECT_DOUBLE_EQ(m.decode_tokens_per_second(t0 + std::chrono::seconds(11)), 0.4);
    EXPECT_DOUBLE_EQ(m.prompt_tokens_per_second(t0 + std::chrono::seconds(11)), 0.0);
}

}  // namespace
}  // namespace strata::server

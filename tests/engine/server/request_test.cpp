// Request parsing: valid chat and completion bodies come through with the server's defaults
// overridden field by field; every malformed body is an ApiError 400 whose param names the
// field (bad JSON, wrong types, huge numbers, invalid UTF-8, deep nesting, unsupported features).
#include <gtest/gtest.h>

#include <string>

#include "engine/server/api_error.h"
#include "engine/sampler/grammar_matcher.h"
#include "engine/server/request.h"

namespace strata::server {
namespace {

SamplerParams defaults() {
    SamplerParams s;
    s.temperature = 0.25f;
    s.top_k = 7;
    s.seed = 99;
    return s;
}

// The ApiError a body raises (status 0 when it parses).
ApiError refusal(Endpoint endpoint, const std::string& body) {
    try {
        parse_request(endpoint, body, defaults());
    } catch (const ApiError& e) {
        return e;
    }
    return ApiError(0, "parsed");
}

void expect_refused(Endpoint endpoint, const std::string& body, const std::string& param,
                    const std::string& in_message = {}) {
    const ApiError e = refusal(endpoint, body);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param(), param) << body << " -> " << e.what();
    if (!in_message.empty()) {
        EXPECT_NE(std::string(e.what()).find(in_message), std::string::npos) << e.what();
    }
}

TEST(Request, ChatFieldsOverrideDefaults) {
    const CompletionRequest r = parse_request(Endpoint::Chat, R"({
        "model": "anything", "messages": [{"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]},
        {"role": "assistant", "content": null}, {"role": "user", "content": "ok"}],
        "stream": true, "stream_options": {"include_usage": true}, "max_completion_tokens": 17,
        "temperature": 1.5, "top_p": 0.5, "min_p": 0.125, "presence_penalty": -1.5, "frequency_penalty": 2,
        "seed": 4294967294, "stop": ["a", "bc"], "logit_bias": {"5": -100, "17": 3.5}, "n": 1,
        "user": "u", "unknown_field": [1, 2, 3]})", defaults());
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "Hi there");
    EXPECT_EQ(r.messages[2].content, "");
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_EQ(r.max_tokens, 17);
    EXPECT_FLOAT_EQ(r.sampler.temperature, 1.5f);
    EXPECT_FLOAT_EQ(r.sampler.top_p, 0.5f);
    EXPECT_FLOAT_EQ(r.sampler.min_p, 0.125f);
    EXPECT_FLOAT_EQ(r.sampler.presence_penalty, -1.5f);
    EXPECT_FLOAT_EQ(r.sampler.frequency_penalty, 2.0f);
    EXPECT_EQ(r.sampler.top_k, 7);  // not given: the server's default
    EXPECT_EQ(r.sampler.seed, 4294967294u);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
    EXPECT_EQ(r.sampler.logit_bias.size(), 2u);
    EXPECT_FLOAT_EQ(r.sampler.logit_bias.at(17), 3.5f);
}

TEST(Request, CompletionPromptForms) {
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": "abc"})", defaults()).prompt, "abc");
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": ["abc"]})", defaults()).prompt, "abc");
    const CompletionRequest ids = parse_request(Endpoint::Completion, R"({"prompt": [2, 651, 7]})", defaults());
    EXPECT_EQ(ids.prompt_tokens, (std::vector<TokenId>{2, 651, 7}));
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": [[4, 5]]})", defaults()).prompt_tokens.size(), 2u);
    const CompletionRequest d = parse_request(Endpoint::Completion, R"({"prompt": "x", "seed": -1, "stop": "z"})",
                                              defaults());
    EXPECT_EQ(d.sampler.seed, SamplerParams::kRandomSeed);
    EXPECT_FLOAT_EQ(d.sampler.temperature, 0.25f);
    EXPECT_EQ(d.stop, std::vector<std::string>{"z"});
    EXPECT_FALSE(d.max_tokens.has_value());
}

TEST(Request, MalformedBodies) {
    EXPECT_EQ(refusal(Endpoint::Chat, "").status(), 400);
    EXPECT_EQ(refusal(Endpoint::Chat, "{\"messages\": [").status(), 400);
    EXPECT_EQ(refusal(Endpoint::Chat, "[1, 2]").status(), 400);
    EXPECT_EQ(refusal(Endpoint::Chat, "null").status(), 400);
    EXPECT_EQ(refusal(Endpoint::Chat, "{} trailing").status(), 400);
    const ApiError utf8 = refusal(Endpoint::Completion, "{\"prompt\": \"a\xff\xfe b\"}");
    EXPECT_EQ(utf8.status(), 400);
    EXPECT_NE(std::string(utf8.what()).find("UTF-8"), std::string::npos) << utf8.what();
    EXPECT_EQ(refusal(Endpoint::Completion, R"({"prompt": "\ud800"})").status(), 400);  // lone surrogate
    EXPECT_EQ(refusal(Endpoint::Completion, std::string(10000, '[') + std::string(10000, ']')).status(), 400);
    // Brackets inside strings are text, not nesting.
    EXPECT_EQ(parse_request(Endpoint::Completion, "{\"prompt\": \"" + std::string(100, '[') + "\"}", defaults())
                  .prompt.size(), 100u);
}

TEST(Request, WrongTypesAndRangesNameTheField) {
    const Endpoint C = Endpoint::Completion;
    expect_refused(C, R"({"prompt": "x", "max_tokens": "10"})", "max_tokens", "integer");
    expect_refused(C, R"({"prompt": "x", "max_tokens": 1e30})", "max_tokens");
    expect_refused(C, R"({"prompt": "x", "max_tokens": 0})", "max_tokens");
    expect_refused(C, R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens");
    expect_refused(C, R"({"prompt": "x", "max_tokens": 99999999999999999999999})", "max_tokens");
    EXPECT_EQ(refusal(C, R"({"prompt": "x", "max_tokens": 1e400})").status(), 400);  // beyond a double
    EXPECT_EQ(refusal(C, R"({"prompt": "x", "temperature": -1e999})").status(), 400);
    expect_refused(C, R"({"prompt": "x", "temperature": 1e308})", "temperature", "range");
    expect_refused(C, R"({"prompt": "x", "temperature": -0.5})", "temperature");
    expect_refused(C, R"({"prompt": "x", "temperature": true})", "temperature", "number");
    expect_refused(C, R"({"prompt": "x", "top_p": 1.5})", "top_p");
    expect_refused(C, R"({"prompt": "x", "top_k": -1})", "top_k");
    expect_refused(C, R"({"prompt": "x", "min_p": "0.1"})", "min_p");
    expect_refused(C, R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty");
    expect_refused(C, R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty");
    expect_refused(C, R"({"prompt": "x", "seed": 4294967295})", "seed");
    expect_refused(C, R"({"prompt": "x", "seed": -2})", "seed");
    expect_refused(C, R"({"prompt": "x", "stream": "yes"})", "stream", "boolean");
    expect_refused(C, R"({"prompt": "x", "stream_options": 1})", "stream_options");
    expect_refused(C, R"({"prompt": "x", "stream_options": {"include_usage": 1}})", "stream_options.include_usage");
    expect_refused(C, R"({"prompt": "x", "model": 5})", "model");
    expect_refused(C, R"({"prompt": 5})", "prompt");
    expect_refused(C, R"({"prompt": ""})", "prompt");
    expect_refused(C, R"({"prompt": []})", "prompt");
    expect_refused(C, R"({"prompt": ["a", "b"]})", "prompt", "one");
    expect_refused(C, R"({"prompt": [1, -3]})", "prompt[1]");
    expect_refused(C, R"({"prompt": [1, 3000000000]})", "prompt[1]");
    expect_refused(C, R"({"max_tokens": 5})", "prompt", "missing");
    expect_refused(C, R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop");
    expect_refused(C, R"({"prompt": "x", "stop": ["a", ""]})", "stop[1]");
    expect_refused(C, R"({"prompt": "x", "stop": [1]})", "stop[0]");
    expect_refused(C, R"({"prompt": "x", "stop": ")" + std::string(300, 'a') + R"("})", "stop");
    expect_refused(C, R"({"prompt": "x", "logit_bias": {"abc": 1}})", "logit_bias.abc");
    expect_refused(C, R"({"prompt": "x", "logit_bias": {"-4": 1}})", "logit_bias.-4");
    expect_refused(C, R"({"prompt": "x", "logit_bias": {"4": 101}})", "logit_bias.4");
    expect_refused(C, R"({"prompt": "x", "logit_bias": [1]})", "logit_bias");
}

TEST(Request, ChatMessagesAreChecked) {
    const Endpoint C = Endpoint::Chat;
    expect_refused(C, R"({})", "messages", "missing");
    expect_refused(C, R"({"messages": []})", "messages", "empty");
    expect_refused(C, R"({"messages": "hi"})", "messages");
    expect_refused(C, R"({"messages": [1]})", "messages[0]");
    expect_refused(C, R"({"messages": [{"content": "x"}]})", "messages[0].role");
    expect_refused(C, R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id");
    expect_refused(C, R"({"messages": [{"role": "user", "content": "x"}, {"role": "user"}]})", "messages[1].content");
    expect_refused(C, R"({"messages": [{"role": "user", "content": 7}]})", "messages[0].content");
    expect_refused(C, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
                   "messages[0].content[0].type");
    expect_refused(C, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                   "messages[0].content[0].text");
}

TEST(Request, UnsupportedFeaturesAreRefused) {
    const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
    expect_refused(Endpoint::Chat, "{" + m + R"(, "n": 0})", "n");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "n": 17})", "n");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "n": 2.5})", "n");
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "n": "2"})", "n");
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": "x", "n": 3})", defaults()).n, 3);
    expect_refused(Endpoint::Chat, "{" + m + R"(, "tools": [{"type": "function"}]})", "tools[0].function");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "response_format": {"type": "xml"}})", "response_format");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "response_format": {"type": "json_schema", "json_schema": {}}})",
                   "response_format");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "response_format": {"type": "json_schema",
        "json_schema": {"schema": {"type": "date"}}}})", "response_format");
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "echo": true})", "echo");
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "best_of": 3})", "best_of");
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "suffix": "y"})", "suffix");
    // The harmless forms pass.
    EXPECT_NO_THROW(parse_request(Endpoint::Chat, "{" + m + R"(, "n": 1, "logprobs": false, "tools": [],
        "response_format": {"type": "text"}})", defaults()));
    EXPECT_NO_THROW(parse_request(Endpoint::Completion, R"({"prompt": "x", "logprobs": 0, "echo": false})",
                                  defaults()));
}

TEST(Request, LogprobsInBothShapes) {
    const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
    const SamplerParams d = defaults();
    EXPECT_EQ(parse_request(Endpoint::Chat, "{" + m + "}", d).logprobs, -1);
    EXPECT_EQ(parse_request(Endpoint::Chat, "{" + m + R"(, "logprobs": false})", d).logprobs, -1);
    EXPECT_EQ(parse_request(Endpoint::Chat, "{" + m + R"(, "logprobs": true})", d).logprobs, 0);
    EXPECT_EQ(parse_request(Endpoint::Chat, "{" + m + R"(, "logprobs": true, "top_logprobs": 20})", d).logprobs, 20);
    expect_refused(Endpoint::Chat, "{" + m + R"(, "top_logprobs": 3})", "top_logprobs");  // without logprobs
    expect_refused(Endpoint::Chat, "{" + m + R"(, "logprobs": true, "top_logprobs": 21})", "top_logprobs");
    expect_refused(Endpoint::Chat, "{" + m + R"(, "logprobs": 2})", "logprobs");  // chat's is a boolean
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": "x", "logprobs": 3})", d).logprobs, 3);
    EXPECT_EQ(parse_request(Endpoint::Completion, R"({"prompt": "x", "logprobs": null})", d).logprobs, -1);
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "logprobs": 6})", "logprobs");
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "logprobs": true})", "logprobs");
    EXPECT_TRUE(parse_request(Endpoint::Completion, R"({"prompt": "x", "ignore_eos": true})", d).ignore_eos);
    expect_refused(Endpoint::Completion, R"({"prompt": "x", "ignore_eos": 1})", "ignore_eos");
    EXPECT_TRUE(parse_request(Endpoint::Completion, R"({"prompt": "x"})", d).cache_prompt);
    EXPECT_FALSE(parse_request(Endpoint::Completion, R"({"prompt": "x", "cache_prompt": false})", d).cache_prompt);
    expect_refused(Endpoint::Chat, "{" + m + R"(, "cache_prompt": "no"})", "cache_prompt");
}

TEST(Request, JsonResponseFormatsBecomeAGrammar) {
    const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
    EXPECT_EQ(parse_request(Endpoint::Chat, "{" + m + "}", defaults()).sampler.grammar, nullptr);
    const CompletionRequest object =
        parse_request(Endpoint::Chat, "{" + m + R"(, "response_format": {"type": "json_object"}})", defaults());
    ASSERT_NE(object.sampler.grammar, nullptr);
    GrammarMatcher any(object.sampler.grammar);
    for (const char c : std::string(R"({"a": [1, true]})")) ASSERT_TRUE(any.accept(static_cast<char32_t>(c)));
    EXPECT_TRUE(any.is_complete());
    const CompletionRequest schema = parse_request(Endpoint::Chat, "{" + m + R"(, "response_format": {"type":
        "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"k": {"type":
        "integer"}}, "required": ["k"]}}}})", defaults());
    ASSERT_NE(schema.sampler.grammar, nullptr);
    GrammarMatcher strict(schema.sampler.grammar);
    EXPECT_FALSE(strict.accept(static_cast<char32_t>('[')));
    for (const char c : std::string(R"({"k": 12})")) ASSERT_TRUE(strict.accept(static_cast<char32_t>(c)));
    EXPECT_TRUE(strict.is_complete());
}

}  // namespace
}  // namespace strata::server

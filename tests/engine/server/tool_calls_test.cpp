// Tool calling in the server without a model: tools / tool_choice / tool messages checked field
// by field (400 naming the field), the forced-call grammar accepting exactly a call of the
// chosen function with schema-valid arguments, and answers read as calls — whole and streamed
// in pieces (the stream never shows a call's text as content, and ends with the same calls).
#include <gtest/gtest.h>

#include <string>

#include "engine/sampler/grammar_matcher.h"
#include "engine/server/api_error.h"
#include "engine/server/request.h"
#include "engine/server/tool_calls.h"
#include "engine/server/tool_prompt.h"

namespace strata::server {
namespace {

const std::string kMsg = R"("messages": [{"role": "user", "content": "Weather in Paris?"}])";
const std::string kTools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
    "unit": {"enum": ["C", "F"]}}, "required": ["city"]}}}, {"type": "function", "function": {"name": "get_time"}}])";

CompletionRequest parse(const std::string& fields) {
    return parse_request(Endpoint::Chat, "{" + kMsg + ", " + fields + "}", SamplerParams{});
}

void expect_refused(const std::string& fields, const std::string& param) {
    try {
        parse(fields);
        ADD_FAILURE() << "accepted: " << fields;
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400) << fields;
        EXPECT_EQ(e.param(), param) << fields << " -> " << e.what();
    }
}

bool grammar_accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    GrammarMatcher m(g);
    for (const char c : text) {
        if (!m.accept(static_cast<char32_t>(static_cast<unsigned char>(c)))) return false;
    }
    return m.is_complete();
}

TEST(Tools, ParsedWithTheirSchemasInOrder) {
    const CompletionRequest r = parse(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
    ASSERT_TRUE(r.tool_view);
    ASSERT_EQ(r.tools.tools.size(), 2u);
    EXPECT_EQ(r.tools.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools.tools[0].description, "Weather of a city");
    // Declared order kept (the template shows it, the grammar follows it): type before properties.
    EXPECT_EQ(r.tools.tools[0].parameters.begin().key(), "type");
    EXPECT_EQ(r.tools.tools[1].parameters["type"], "object");  // no parameters: an empty object
    EXPECT_EQ(r.tools.choice.mode, ToolChoiceMode::Function);
    EXPECT_TRUE(r.tools.choice.forced());
    EXPECT_EQ(parse(kTools).tools.choice.mode, ToolChoiceMode::Auto);
    EXPECT_FALSE(parse(kTools + R"(, "tool_choice": "none")").tools.active());
    EXPECT_FALSE(parse(R"("tool_choice": "none")").tools.active());
}

TEST(Tools, MalformedToolsNameTheField) {
    expect_refused(R"("tools": {"type": "function"})", "tools");
    expect_refused(R"("tools": [7])", "tools[0]");
    expect_refused(R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])", "tools[0].type");
    expect_refused(R"("tools": [{"type": "function"}])", "tools[0].function");
    expect_refused(R"("tools": [{"type": "function", "function": {"description": "d"}}])", "tools[0].function.name");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": "get weather"}}])", "tools[0].function.name");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": 5}}])", "tools[0].function.name");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}])",
                   "tools[0].function.parameters");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "date"}}}])",
                   "tools[0].function.parameters");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function",
        "function": {"name": "f"}}])", "tools[1].function.name");
    expect_refused(R"("tools": [{"type": "function", "function": {"name": "f", "description": 3}}])",
                   "tools[0].function.description");
}

TEST(Tools, MalformedToolChoiceNamesTheField) {
    expect_refused(kTools + R"(, "tool_choice": "always")", "tool_choice");
    expect_refused(kTools + R"(, "tool_choice": 1)", "tool_choice");
    expect_refused(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}})",
                   "tool_choice.function.name");
    expect_refused(kTools + R"(, "tool_choice": {"type": "function"})", "tool_choice.function");
    expect_refused(kTools + R"(, "tool_choice": {"type": "tool", "function": {"name": "get_time"}})", "tool_choice.type");
    expect_refused(R"("tool_choice": "required")", "tool_choice");
    expect_refused(kTools + R"(, "parallel_tool_calls": "yes")", "parallel_tool_calls");
    expect_refused(kTools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"})",
                   "response_format");
    try {
        parse_request(Endpoint::Completion, R"({"prompt": "x", )" + kTools + "}", SamplerParams{});
        ADD_FAILURE() << "tools accepted on /v1/completions";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.param(), "tools");
    }
}

TEST(Tools, HistoryWithCallsAndResults) {
    const CompletionRequest r = parse_request(Endpoint::Chat, R"({"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]})", SamplerParams{});
    ASSERT_TRUE(r.tool_view);
    ASSERT_EQ(r.chat_json.size(), 3u);
    const auto& call = r.chat_json[1]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"].dump(), R"({"city":"Paris","unit":"C"})");  // parsed, order kept
    EXPECT_EQ(r.chat_json[2]["tool_call_id"], "call_1");
    EXPECT_EQ(r.chat_json[2]["content"], "21 C");

    const std::string user = R"({"role": "user", "content": "x"})";
    auto refused_param = [&](const std::string& messages) {
        try {
            parse_request(Endpoint::Chat, R"({"messages": [)" + user + ", " + messages + "]}", SamplerParams{});
        } catch (const ApiError& e) {
            return e.param();
        }
        return std::string("accepted");
    };
    EXPECT_EQ(refused_param(R"({"role": "tool", "content": "r"})"), "messages[1].tool_call_id");
    EXPECT_EQ(refused_param(R"({"role": "tool", "tool_call_id": "c"})"), "messages[1].content");
    EXPECT_EQ(refused_param(R"({"role": "assistant", "tool_calls": {}})"), "messages[1].tool_calls");
    EXPECT_EQ(refused_param(R"({"role": "assistant", "tool_calls": [{"type": "function"}]})"),
              "messages[1].tool_calls[0].function");
    EXPECT_EQ(refused_param(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]})"),
              "messages[1].tool_calls[0].function.arguments");
    EXPECT_EQ(refused_param(R"({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]})"),
              "messages[1].tool_calls[0].function.arguments");
}

TEST(Tools, ForcedGrammarIsACallOfTheChosenFunction) {
    const CompletionRequest one = parse(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
    const auto g = forced_call_grammar(one.tools);
    EXPECT_TRUE(grammar_accepts(g, R"({"name": "get_weather", "arguments": {"city": "Paris"}})"));
    EXPECT_TRUE(grammar_accepts(g, R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "F"}})"));
    EXPECT_FALSE(grammar_accepts(g, R"({"name": "get_time", "arguments": {}})"));
    EXPECT_FALSE(grammar_accepts(g, R"({"name": "get_weather", "arguments": {}})"));  // city is required
    EXPECT_FALSE(grammar_accepts(g, R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "K"}})"));
    EXPECT_FALSE(grammar_accepts(g, R"({"arguments": {"city": "Paris"}, "name": "get_weather"})"));
    const CompletionRequest any = parse(kTools + R"(, "tool_choice": "required")");
    const auto ga = forced_call_grammar(any.tools);
    EXPECT_TRUE(grammar_accepts(ga, R"({"name": "get_time", "arguments": {}})"));
    EXPECT_TRUE(grammar_accepts(ga, R"({"name": "get_weather", "arguments": {"city": "Rome"}})"));
    EXPECT_FALSE(grammar_accepts(ga, R"({"name": "get_date", "arguments": {}})"));
}

TEST(Tools, AnswersReadAsCalls) {
    const ToolRequest tools = parse(kTools).tools;
    const ToolOutput hermes = parse_tool_output(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"get_time\", \"arguments\": \"{}\"}</tool_call>", tools);
    ASSERT_EQ(hermes.calls.size(), 2u);
    EXPECT_EQ(hermes.content, "Let me check.\n\n");
    EXPECT_EQ(hermes.calls[0].name, "get_weather");
    EXPECT_EQ(hermes.calls[0].arguments, R"({"city":"Paris"})");
    EXPECT_EQ(hermes.calls[1].arguments, "{}");
    EXPECT_TRUE(hermes.calls[0].id.starts_with("call_"));
    EXPECT_NE(hermes.calls[0].id, hermes.calls[1].id);

    const ToolOutput bare = parse_tool_output(R"( {"name": "get_time", "arguments": {}} )", tools);
    ASSERT_EQ(bare.calls.size(), 1u);
    EXPECT_EQ(bare.content, "");

    // Unknown functions, broken JSON and non-object arguments stay text.
    for (const std::string& text : {std::string(R"(<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>)"),
                                    std::string(R"(<tool_call>{"name": "get_time", "arguments": [1]}</tool_call>)"),
                                   std::string(R"(<tool_call>{"name": "get_time")"), std::string("Sunny, 21 C.")}) {
        const ToolOutput out = parse_tool_output(text, tools);
        EXPECT_TRUE(out.calls.empty()) << text;
        EXPECT_EQ(out.content, text);
    }
    ToolRequest single = tools;
    single.parallel_tool_calls = false;
    EXPECT_EQ(parse_tool_output("<tool_call>{\"name\": \"get_time\"}</tool_call><tool_call>{\"name\": \"get_time\"}"
                                "</tool_call>", single).calls.size(), 1u);

    const nlohmann::json j = tool_calls_json(hermes.calls, /*indexed=*/true);
    EXPECT_EQ(j[1]["index"], 1);
    EXPECT_EQ(j[0]["type"], "function");
    EXPECT_EQ(j[0]["function"]["arguments"], R"({"city":"Paris"})");
    EXPECT_FALSE(tool_calls_json(hermes.calls, false)[0].contains("index"));
}

TEST(Tools, StreamHoldsBackCallsAndEndsLikeTheWholeAnswer) {
    const ToolRequest tools = parse(kTools).tools;
    for (const std::string& text : {std::string("Checking <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
                                               "</tool_call> done"),
                                   std::string("A < B and <tool_ca are fine"),
                                   std::string("  {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
                                   std::string("{not a call}")}) {
        for (const size_t piece : {size_t{1}, size_t{3}, size_t{100}}) {
            ToolStreamFilter filter(tools);
            std::string streamed;
            for (size_t i = 0; i < text.size(); i += piece) streamed += filter.feed(text.substr(i, piece));
            EXPECT_EQ(streamed.find("<tool_call"), std::string::npos) << text;
            const ToolOutput end = filter.finish();
            const ToolOutput whole = parse_tool_output(text, tools);
            EXPECT_EQ(streamed + end.content, whole.content) << text << " in pieces of " << piece;
            ASSERT_EQ(end.calls.size(), whole.calls.size()) << text;
            for (size_t c = 0; c < whole.calls.size(); ++c) EXPECT_EQ(end.calls[c].arguments, whole.calls[c].arguments);
        }
    }
}

}  // namespace
}  // namespace strata::server

// libFuzzer target for the Jinja interpreter and the GBNF parser: any bytes as a chat template
// (rendered over a small conversation with tight limits) or as a grammar either work or raise
// TemplateError / GrammarError — never another exception, a crash, a hang or a sanitizer report.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/chat/jinja/jinja_template.h"
#include "engine/sampler/grammar_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace strata::jinja;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const Template t(text);
        Object user;
        user.items = {{"role", Value("user")}, {"content", Value(" Hi {{ x }} ")}};
        Object context;
        context.items = {{"messages", Value(Array{Value(user)})}, {"add_generation_prompt", Value(true)},
                         {"bos_token", Value("<s>")}, {"eos_token", Value("</s>")}};
        RenderLimits limits;
        limits.max_output_bytes = 1 << 16;
        limits.max_steps = 100000;
        limits.now = 0;
        t.render(context, limits);
    } catch (const TemplateError&) {
    }
    try {
        strata::GrammarMatcher m(std::make_shared<const strata::Grammar>(strata::parse_gbnf(text)));
        for (const char c : std::string("{\"a\": 1}")) m.accept(static_cast<char32_t>(c));
    } catch (const strata::GrammarError&) {
    }
    return 0;
}

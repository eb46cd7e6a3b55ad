// The Jinja interpreter's errors and limits: syntax errors name the line and column, runaway
// templates (deep nesting, endless output, recursion, huge loops) end in a TemplateError.
// Rendering itself is checked against Python jinja2 by jinja_oracle.py.
#include <string>

#include <gtest/gtest.h>

#include "engine/chat/jinja/jinja_template.h"

namespace strata::jinja {
namespace {

std::string render(const std::string& text, const RenderLimits& limits = {}) {
    return Template(text).render(Object{}, limits);
}

std::string error_of(const std::string& text, const RenderLimits& limits = {}) {
    try {
        render(text, limits);
    } catch (const TemplateError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Jinja, SyntaxErrorsNameLineAndColumn) {
    EXPECT_NE(error_of("ab\ncd {% if %}").find("line 2, column 10"), std::string::npos) << error_of("ab\ncd {% if %}");
    EXPECT_NE(error_of("{% for x in y %}").find("missing '{% endfor %}'"), std::string::npos);
    EXPECT_NE(error_of("x {{ 'open").find("unclosed string"), std::string::npos);
    EXPECT_NE(error_of("{{ 1 }").find("unclosed '{{'"), std::string::npos);
    EXPECT_NE(error_of("{# never closed").find("unclosed comment"), std::string::npos);
    EXPECT_NE(error_of("{% frobnicate %}").find("unknown statement 'frobnicate'"), std::string::npos);
    EXPECT_NE(error_of("{{ a $ b }}").find("unexpected character '$'"), std::string::npos);
}

TEST(Jinja, RenderErrorsNameWhereAndWhat) {
    const std::string e = error_of("line1\n{{ raise_exception('Roles must alternate') }}");
    EXPECT_NE(e.find("line 2"), std::string::npos) << e;
    EXPECT_NE(e.find("Roles must alternate"), std::string::npos) << e;
    EXPECT_NE(error_of("{{ x.y }}").find("undefined"), std::string::npos);
    EXPECT_NE(error_of("{{ [1]|nosuch }}").find("unknown filter 'nosuch'"), std::string::npos);
    EXPECT_NE(error_of("{{ 1 is nosuch }}").find("unknown test 'nosuch'"), std::string::npos);
    EXPECT_NE(error_of("{% set x = 1 %}{% set x.a = 2 %}").find("only a namespace"), std::string::npos);
    EXPECT_NE(error_of("{{ [1].append(2) }}").find("cannot modify"), std::string::npos);
}

TEST(Jinja, DeepNestingIsRefusedNotACrash) {
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "(";
    EXPECT_NE(error_of("{{ " + deep + "1" + std::string(5000, ')') + " }}").find("nest"), std::string::npos);
    EXPECT_NE(error_of("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}").find("nest"), std::string::npos);
    std::string chain = "{{ 1";
    for (int i = 0; i < 100000; ++i) chain += " + 1";
    EXPECT_NE(error_of(chain + " }}").find("nested deeper"), std::string::npos);
    std::string blocks;
    for (int i = 0; i < 5000; ++i) blocks += "{% if 1 %}";
    EXPECT_NE(error_of(blocks).find("nest"), std::string::npos);
    std::string filters = "{{ 'a'";
    for (int i = 0; i < 50000; ++i) filters += "|trim";
    EXPECT_NE(error_of(filters + " }}").find("nested deeper"), std::string::npos);
}

TEST(Jinja, RunawayTemplatesHitTheLimits) {
    RenderLimits small;
    small.max_output_bytes = 1 << 16;
    small.max_steps = 200000;
    EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", small)
                  .find("limit"), std::string::npos);
    EXPECT_NE(error_of("{% for i in range(1000000000) %}{% endfor %}", small).find("limit"), std::string::npos);
    EXPECT_NE(error_of("{% for i in range(60000) %}{% for j in range(60000) %}{% endfor %}{% endfor %}", small).find("steps"),
              std::string::npos);
    EXPECT_NE(error_of("{{ 'x' * 1000000000 }}", small).find("limit"), std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", small)
                  .find("limit"), std::string::npos);
    EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("deep"), std::string::npos);
    EXPECT_NE(error_of("{{ 'ab'|replace('', 'xxxxxxxx')|replace('', 'xxxxxxxx')|replace('', 'xxxxxxxx')|replace('', 'xxxxxxxx')|replace('', 'xxxxxxxx')|replace('', 'xxxxxxxx') }}", small)
                  .find("limit"), std::string::npos);
}

TEST(Jinja, RendersWithoutErrorsWithinLimits) {
    // Sanity checks that the limits above are not hit by ordinary work.
    EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}"), "012");
    EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}"), "54321");
}

}  // namespace
}  // namespace strata::jinja

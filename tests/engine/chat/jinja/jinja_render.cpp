// jinja_render: renders Jinja templates with Strata's interpreter for jinja_oracle.py, which
// compares the text with Python jinja2's. Reads a JSON list of {"template": text, "context":
// {...}} on stdin, writes a JSON list of {"ok": text} or {"error": message}. The clock of
// strftime_now is fixed by $JINJA_NOW (seconds since the epoch).
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/chat/jinja/jinja_template.h"

int main() {
    using strata::jinja::Template;
    const std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(input);
    strata::jinja::RenderLimits limits;
    if (const char* now = std::getenv("JINJA_NOW")) limits.now = static_cast<std::time_t>(std::stoll(now));
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& c : cases) {
        try {
            const Template t(c.at("template").get<std::string>());
            const strata::jinja::Value ctx = strata::jinja::from_json(c.at("context"));
            out.push_back({{"ok", t.render(ctx.as_object(), limits)}});
        } catch (const strata::jinja::TemplateError& e) {
            out.push_back({{"error", e.what()}});
        }
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return 0;
}

// jinja_render: renders Jinja templates with Strata's interpreter for jinja_oracle.py, which
// compares the text with Python jinja2's. Reads a JSON list of {"template": text, "context":
// {...}} on stdin, writes a JSON list of {"ok": text} or {"error": message}. The clock of
// strftime_now is fixed by $JINJA_NOW (seconds since the epoch).
// jinja_render --model M.gguf: the prompt `strata chat` and `serve` would render for M (the
// renderer choose_chat_renderer picks, failures not hidden by a fallback) for each
// {"messages": [...], "add_generation_prompt": bool} on stdin: a list of {"ok"|"error", "template"}.
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_renderer.h"
#include "engine/chat/jinja/jinja_template.h"
#include "engine/runtime/model.h"

namespace {

int render_for_model(const std::string& path, const nlohmann::ordered_json& cases) {
    const strata::Model model(path);
    const strata::ChatRendererChoice chosen = strata::choose_chat_renderer(model, {});
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& c : cases) {
        std::vector<strata::ChatMessage> messages;
        for (const auto& m : c.at("messages")) messages.push_back({m.at("role"), m.at("content")});
        nlohmann::ordered_json r = {{"template", chosen.renderer.describe()}};
        try {
            r["ok"] = chosen.renderer.render_strict(messages, c.at("add_generation_prompt").get<bool>());
        } catch (const strata::Error& e) {
            r["error"] = e.what();
        }
        out.push_back(r);
    }
    std::cout << out.dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using strata::jinja::Template;
    const std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(input);
    if (argc == 3 && std::string(argv[1]) == "--model") return render_for_model(argv[2], cases);
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

// Chat template options (chat_options.h).
#include "tools/chat_options.h"

#include <memory>
#include <string>

#include "engine/core/bounded_read.h"
#include "engine/sampler/json_schema_grammar.h"

namespace strata::cli {

void add_chat_template_options(CLI::App& cmd, ChatTemplateOverride& out) {
    std::string names;
    for (std::string_view n : chat_format_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    cmd.add_option("--chat-template", out.spec,
                   "a built-in chat format (" + names + "), a Jinja template file or Jinja text "
                   "(default: the model file's Jinja template, else a built-in format by architecture)");
    cmd.add_option("--chat-template-file", out.file, "a Jinja chat template file (as llama.cpp)");
}

void add_grammar_options(CLI::App& cmd, SamplerParams& out) {
    auto set = [&out](const std::string& text, const std::string& what) {
        if (out.grammar) throw ArgumentError(cat(what, ": only one of --grammar, --grammar-file and --json-schema"));
        out.grammar = std::make_shared<const Grammar>(parse_gbnf(text, what));
    };
    cmd.add_option_function<std::string>(
        "--grammar", [set](const std::string& v) { set(v, "--grammar"); },
        "GBNF grammar (llama.cpp's format) the output must follow");
    cmd.add_option_function<std::string>(
        "--grammar-file", [set](const std::string& v) { set(read_bounded_file(v, "--grammar-file"), "--grammar-file " + v); },
        "file with a GBNF grammar");
    cmd.add_option_function<std::string>(
        "-j,--json-schema", [set](const std::string& v) { set(json_schema_to_gbnf(v), "--json-schema"); },
        "JSON schema the output must match (object, array, string, number, integer, boolean, "
        "enum, const; {} = any JSON)");
}

}  // namespace strata::cli

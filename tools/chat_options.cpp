// Chat template options (chat_options.h).
#include "tools/chat_options.h"

#include <string>

namespace strata::cli {

void add_chat_template_options(CLI::App& cmd, ChatTemplateOverride& out) {
    std::string names;
    for (std::string_view n : chat_format_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    cmd.add_option("--chat-template", out.spec,
                   "a built-in chat format (" + names + "), a Jinja template file or Jinja text "
                   "(default: the model file's Jinja template, else a built-in format by architecture)");
    cmd.add_option("--chat-template-file", out.file, "a Jinja chat template file (as llama.cpp)");
}

}  // namespace strata::cli

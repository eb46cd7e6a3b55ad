// Command-line options shared by chat and serve: the chat template override (--chat-template,
// --chat-template-file).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/chat/chat_renderer.h"

namespace strata::cli {

void add_chat_template_options(CLI::App& cmd, ChatTemplateOverride& out);

}  // namespace strata::cli

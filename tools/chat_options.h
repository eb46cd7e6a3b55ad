// Command-line options for chat prompts and constrained output: the chat template override
// (--chat-template, --chat-template-file; chat and serve) and the grammar (--grammar,
// --grammar-file, --json-schema; run, chat and serve), compiled while the flags are read.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/chat/chat_renderer.h"
#include "engine/sampler/sampler_params.h"

namespace strata::cli {

void add_chat_template_options(CLI::App& cmd, ChatTemplateOverride& out);
void add_grammar_options(CLI::App& cmd, SamplerParams& out);

}  // namespace strata::cli

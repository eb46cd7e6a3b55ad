// strata chat's arguments and entry, shared with `strata run -cnv / -st / -sys / -i`, which
// turn a one-shot run into a conversation as llama-cli does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/chat/chat_renderer.h"
#include "tools/sampling_options.h"
#include "tools/spec_options.h"

namespace strata::cli {

struct ChatArgs {
    EngineOptions engine;
    std::string system;
    ChatTemplateOverride chat_template;  // --chat-template, --chat-template-file
    int64_t n_predict = -1;
    std::string first_prompt;        // -p: the first user message, answered before any input
    bool single_turn = false;        // -st: answer the first message and leave
    std::vector<std::string> stops;  // -r / --stop: the answer ends before any of these
    SpecFlags spec;                  // --spec, --draft-max, --draft-min, -md, -ngld
};

void run_chat(const ChatArgs& args);

// -r/--reverse-prompt and --stop (repeatable) on `cmd`, into `stops`.
void add_stop_options(CLI::App& cmd, std::vector<std::string>& stops);

}  // namespace strata::cli

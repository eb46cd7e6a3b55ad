// Line input for `strata chat`: libedit (history, editing) on a terminal, plain getline when
// stdin is piped. A line ending in '\' continues on the next one. Not thread-safe.
#pragma once

#include <optional>
#include <string>

namespace strata::cli {

class ChatInput {
public:
    // interactive: use libedit with `prompt` and the history file (created if missing).
    ChatInput(bool interactive, std::string history_path);
    ~ChatInput();
    ChatInput(const ChatInput&) = delete;
    ChatInput& operator=(const ChatInput&) = delete;

    // One logical line (continuations joined with '\n'); nullopt at end of input (Ctrl-D).
    // An interrupted line (Ctrl-C at the prompt) comes back as an empty string.
    std::optional<std::string> read(const char* prompt);

private:
    std::optional<std::string> read_physical(const char* prompt);

    bool interactive_;
    std::string history_path_;
};

}  // namespace strata::cli

// Terminal and piped line input for strata chat (chat_input.h).
#include "tools/chat_input.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <editline/readline.h>

namespace strata::cli {

ChatInput::ChatInput(bool interactive, std::string history_path)
    : interactive_(interactive), history_path_(std::move(history_path)) {
    if (!interactive_) return;
    using_history();
    if (!history_path_.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(history_path_).parent_path(), ec);
        read_history(history_path_.c_str());
    }
}

ChatInput::~ChatInput() {
    if (interactive_ && !history_path_.empty()) write_history(history_path_.c_str());
}

std::optional<std::string> ChatInput::read_physical(const char* prompt) {
    if (!interactive_) {
        std::string line;
        if (!std::getline(std::cin, line)) return std::nullopt;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
    }
    char* raw = readline(prompt);
    if (!raw) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    return line;
}

std::optional<std::string> ChatInput::read(const char* prompt) {
    std::string text;
    const char* p = prompt;
    while (true) {
        std::optional<std::string> line = read_physical(p);
        if (!line) {
            if (text.empty()) return std::nullopt;
            break;  // end of input after a continuation: use what there is
        }
        if (!line->empty() && line->back() == '\\') {
            line->pop_back();
            text += *line + "\n";
            p = "... ";
            continue;
        }
        text += *line;
        break;
    }
    if (interactive_ && !text.empty()) add_history(text.c_str());
    return text;
}

}  // namespace strata::cli

// Keys typed while a chat answer streams. The terminal stays in canonical mode between answers
// (libedit edits the line); during an answer it is switched to non-canonical input without echo so
// that Ctrl-D is seen at once (it stops the answer and ends the chat, as it does at the prompt)
// instead of being swallowed, and the other keys typed meanwhile are handed to the next prompt.
// Ctrl-C still raises SIGINT (ISIG stays on). Only for an interactive terminal on stdin.
#pragma once

#include <termios.h>

#include <string>

namespace strata::cli {

class AnswerKeys {
  public:
    explicit AnswerKeys(bool interactive);
    // Restores the terminal and gives the typed-ahead keys to the next prompt.
    ~AnswerKeys();
    AnswerKeys(const AnswerKeys&) = delete;
    AnswerKeys& operator=(const AnswerKeys&) = delete;

    // Reads what was typed since the last call, without waiting; true once Ctrl-D was typed.
    bool end_of_input();

  private:
    bool active_ = false;
    bool eof_ = false;
    termios saved_{};
    std::string typed_;
};

}  // namespace strata::cli

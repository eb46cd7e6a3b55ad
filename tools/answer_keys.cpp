// Keys typed during a chat answer (answer_keys.h).
#include "tools/answer_keys.h"

#include <poll.h>
#include <unistd.h>

#include <editline/readline.h>

namespace strata::cli {

AnswerKeys::AnswerKeys(bool interactive) {
    if (!interactive || ::isatty(0) == 0 || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
}

AnswerKeys::~AnswerKeys() {
    if (!active_) return;
    end_of_input();  // the last keys
    ::tcsetattr(0, TCSANOW, &saved_);
    if (!eof_) {
        for (const char c : typed_) {
            if (c != '\n' && c != '\r') rl_stuff_char(static_cast<unsigned char>(c));
        }
    }
}

bool AnswerKeys::end_of_input() {
    if (!active_ || eof_) return eof_;
    pollfd p{0, POLLIN, 0};
    while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0) {
        char buf[64];
        const ssize_t n = ::read(0, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) {
            if (static_cast<unsigned char>(buf[i]) == saved_.c_cc[VEOF]) eof_ = true;
            else typed_ += buf[i];
        }
    }
    return eof_;
}

}  // namespace strata::cli

// StopMatcher: finds OpenAI "stop" strings in text that arrives piece by piece. push() returns
// the text that is safe to send now: everything but a tail that could still grow into a stop
// string. When a stop string appears, the text before it is returned and stopped() is true;
// the stop string itself and anything after it are never returned. Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::server {

class StopMatcher {
public:
    // stops: non-empty strings (valid UTF-8, so the held tail always starts a character).
    explicit StopMatcher(std::vector<std::string> stops);

    std::string push(std::string_view piece);
    // The held tail, at the end of generation (empty once stopped).
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace strata::server

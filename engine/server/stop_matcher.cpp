// Stop-string matching over streamed text (stop_matcher.h).
#include "engine/server/stop_matcher.h"

#include <algorithm>

namespace strata::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view piece) {
    if (stopped_) return {};
    held_ += piece;
    // The earliest stop string wins; the held tail was no stop string's complete match before
    // this piece, so a match may begin anywhere in it.
    size_t first = std::string::npos;
    for (const std::string& s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first);
        held_.clear();
        return out;
    }
    // Keep the longest tail that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
            if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
                keep = k;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

}  // namespace strata::server

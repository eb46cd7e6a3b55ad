// strata bench's parallel rows (bench_parallel.h).
#include "tools/bench_parallel.h"

#include <chrono>

#include "engine/core/error.h"
#include "engine/core/timing.h"

namespace strata::cli {

double parallel_once(BatchStep& step, std::span<Session* const> sessions, int64_t n, int64_t depth, std::mt19937& rng) {
    if (sessions.empty()) throw ArgumentError("a parallel bench row needs at least one sequence");
    const int64_t n_vocab = sessions.front()->program().n_vocab();
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(n_vocab - 1));
    std::vector<TokenId> ids(static_cast<size_t>(depth + 1));
    for (Session* s : sessions) {
        s->clear();
        for (auto& t : ids) t = token(rng);
        s->feed(ids);
    }
    std::vector<TokenId> next(sessions.size());
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) {
        for (auto& t : next) t = token(rng);
        step.decode(sessions, next);
    }
    return static_cast<double>(n * static_cast<int64_t>(sessions.size())) / seconds_since(t0);
}

}  // namespace strata::cli

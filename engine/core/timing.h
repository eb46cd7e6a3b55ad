// Wall-clock helpers for the measurements of the hardware profile (CPU and GPU sides).
#pragma once

#include <algorithm>
#include <chrono>

namespace strata {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best work per second of `fn`, which returns the work it did (its work finished): one
// warm-up, then at least three calls, more while within `budget`.
template <typename Fn>
double best_rate(Fn&& fn, std::chrono::duration<double> budget) {
    fn();
    double best = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < 3 || seconds_since(t0) < budget.count(); ++i) {
        const auto t = Clock::now();
        const double work = fn();
        best = std::max(best, work / seconds_since(t));
    }
    return best;
}

// Best seconds of one call of `fn` (which must return with its work finished).
template <typename Fn>
double best_time(Fn&& fn, std::chrono::duration<double> budget) {
    return 1.0 / best_rate(
                     [&] {
                         fn();
                         return 1.0;
                     },
                     budget);
}

}  // namespace strata

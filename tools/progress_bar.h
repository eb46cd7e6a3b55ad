// A one-line progress bar on stderr for long steps (synth, pull, loading, profiling): percent,
// amount (bytes or a count), rate, time left and the current item, redrawn at most 10 times a
// second. Draws nothing when stderr is not a terminal, and nothing before `delay` has passed (so
// quick steps stay silent). Single-threaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::cli {

struct ProgressStyle {
    std::string unit;       // "" : bytes (1.5 MiB); else a count of this ("chunks", "layers")
    double delay_s = 0.0;   // draw only once the step has run this long
};

// Whether stderr is a terminal (progress is drawn only then).
bool stderr_is_terminal();

class ProgressBar {
  public:
    explicit ProgressBar(std::string label, ProgressStyle style = {});
    ProgressBar(std::string label, bool enabled, ProgressStyle style = {});
    ~ProgressBar();

    void update(uint64_t done, uint64_t total, std::string_view item);
    // Draws the final state and ends the line (when anything was drawn or no delay applies).
    void finish();
    // Erases the bar, leaving the cursor at the start of an empty line (before printing a result
    // line of a table on the same terminal).
    void clear();

    // "1m05s", "42s", "1h02m".
    static std::string format_duration(double seconds);

  private:
    void draw(uint64_t done, uint64_t total, std::string_view item);
    std::string amount(uint64_t n) const;

    std::string label_;
    bool enabled_;
    ProgressStyle style_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_draw_;
    uint64_t done_ = 0;
    uint64_t total_ = 0;
};

}  // namespace strata::cli

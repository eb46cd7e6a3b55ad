// A one-line progress bar on stderr for long steps (synth, loading): percent, bytes, rate and
// the current item, redrawn at most 10 times a second. Draws nothing when stderr is not a
// terminal. Single-threaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::cli {

class ProgressBar {
  public:
    explicit ProgressBar(std::string label);
    ProgressBar(std::string label, bool enabled);
    ~ProgressBar();

    void update(uint64_t done, uint64_t total, std::string_view item);
    // Draws the final state and ends the line.
    void finish();

  private:
    void draw(uint64_t done, uint64_t total, std::string_view item);

    std::string label_;
    bool enabled_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_draw_;
    uint64_t done_ = 0;
    uint64_t total_ = 0;
};

}  // namespace strata::cli

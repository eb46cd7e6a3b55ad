// One-line progress bar on stderr (see progress_bar.h).
#include "tools/progress_bar.h"

#include <unistd.h>

#include <cstdio>

#include "engine/core/byte_size.h"
#include "engine/core/error.h"

namespace strata::cli {

bool stderr_is_terminal() { return isatty(2) != 0; }

ProgressBar::ProgressBar(std::string label, ProgressStyle style)
    : ProgressBar(std::move(label), stderr_is_terminal(), std::move(style)) {}

ProgressBar::ProgressBar(std::string label, bool enabled, ProgressStyle style)
    : label_(std::move(label)), enabled_(enabled), style_(std::move(style)),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
    if (drawn_) std::fputc('\n', stderr);  // never leave the cursor inside the bar
}

void ProgressBar::update(uint64_t done, uint64_t total, std::string_view item) {
    done_ = done;
    total_ = total;
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (!drawn_ && now - start_ < std::chrono::duration<double>(style_.delay_s)) return;
    if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(done, total, item);
}

void ProgressBar::finish() {
    if (!enabled_ || (!drawn_ && style_.delay_s > 0)) return;
    draw(done_, total_, "");
    std::fputc('\n', stderr);
    drawn_ = false;
}

void ProgressBar::clear() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

std::string ProgressBar::format_duration(double seconds) {
    const long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
    if (s >= 3600) return cat(s / 3600, "h", s % 3600 / 60 < 10 ? "0" : "", s % 3600 / 60, "m");
    if (s >= 60) return cat(s / 60, "m", s % 60 < 10 ? "0" : "", s % 60, "s");
    return cat(s, "s");
}

std::string ProgressBar::amount(uint64_t n) const {
    return style_.unit.empty() ? format_bytes(n) : cat(n);
}

void ProgressBar::draw(uint64_t done, uint64_t total, std::string_view item) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string item_text(item.substr(0, 40));
    if (total == 0 && !style_.unit.empty()) {  // a count with no known end: how many, how long
        std::fprintf(stderr, "\r\033[K%s: %s %s, %s  %s", label_.c_str(), amount(done).c_str(), style_.unit.c_str(),
                     format_duration(secs).c_str(), item_text.c_str());
        std::fflush(stderr);
        drawn_ = true;
        return;
    }
    constexpr int kWidth = 30;
    double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    if (frac > 1.0) frac = 1.0;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::string rate;
    if (secs > 0 && style_.unit.empty()) {
        rate = format_bytes(static_cast<uint64_t>(static_cast<double>(done) / secs)) + "/s";
    }
    std::string eta;
    if (done > 0 && total > done && secs > 0.5) {
        eta = "ETA " + format_duration(secs * static_cast<double>(total - done) / static_cast<double>(done));
    }
    const std::string of_total = style_.unit.empty() ? amount(total) : amount(total) + " " + style_.unit;
    // \r + clear-to-end-of-line keeps the bar on one line as items change length.
    std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %s / %s  %s  %s  %s", label_.c_str(), bar.c_str(), 100.0 * frac,
                 amount(done).c_str(), of_total.c_str(), rate.c_str(), eta.c_str(), item_text.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace strata::cli

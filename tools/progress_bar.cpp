// One-line progress bar on stderr (see progress_bar.h).
#include "tools/progress_bar.h"

#include <unistd.h>

#include <cstdio>

#include "engine/core/byte_size.h"

namespace strata::cli {

ProgressBar::ProgressBar(std::string label) : ProgressBar(std::move(label), isatty(2) != 0) {}

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
    if (drawn_) std::fputc('\n', stderr);  // never leave the cursor inside the bar
}

void ProgressBar::update(uint64_t done, uint64_t total, std::string_view item) {
    done_ = done;
    total_ = total;
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(done, total, item);
}

void ProgressBar::finish() {
    if (!enabled_) return;
    draw(done_, total_, "");
    std::fputc('\n', stderr);
    drawn_ = false;
}

void ProgressBar::draw(uint64_t done, uint64_t total, std::string_view item) {
    constexpr int kWidth = 30;
    double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
    std::string item_text(item.substr(0, 40));
    // \r + clear-to-end-of-line keeps the bar on one line as items change length.
    std::fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %s / %s  %s/s  %s", label_.c_str(), bar.c_str(),
                 100.0 * frac, format_bytes(done).c_str(), format_bytes(total).c_str(),
                 format_bytes(static_cast<uint64_t>(rate)).c_str(), item_text.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace strata::cli

// Strict numbers (numbers.h).
#include "tools/numbers.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/core/error.h"

namespace strata::cli {
namespace {

std::string range_text(int64_t min, int64_t max) {
    if (max == INT64_MAX) return cat("an integer >= ", min);
    return cat("an integer from ", min, " to ", max);
}

std::string real_range_text(double min, double max) {
    if (std::isinf(max)) return cat("a number >= ", min);
    return cat("a number from ", min, " to ", max);
}

// "" when `text` is a valid integer in range, else the reason.
std::string int_error(std::string_view text, int64_t min, int64_t max, int64_t* value) {
    const std::string s(text);
    size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    if (i == s.size() || s.find_first_not_of("0123456789", i) != std::string::npos) {
        return cat("'", s, "' is not an integer (expected ", range_text(min, max), ")");
    }
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE || v < min || v > max) {
        return cat(s, " is out of range (expected ", range_text(min, max), ")");
    }
    if (value) *value = v;
    return {};
}

std::string real_error(std::string_view text, double min, double max, double* value) {
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
    const bool hex = s.find_first_of("xX") != std::string::npos;
    if (s.empty() || hex || end != s.c_str() + s.size() || !std::isfinite(v)) {
        return cat("'", s, "' is not a number (expected ", real_range_text(min, max), ")");
    }
    if (v < min || v > max) return cat(s, " is out of range (expected ", real_range_text(min, max), ")");
    if (value) *value = v;
    return {};
}

}  // namespace

int64_t parse_int(std::string_view text, std::string_view name, int64_t min, int64_t max) {
    int64_t v = 0;
    const std::string err = int_error(text, min, max, &v);
    if (!err.empty()) throw ArgumentError(cat(name, ": ", err));
    return v;
}

double parse_real(std::string_view text, std::string_view name, double min, double max) {
    double v = 0;
    const std::string err = real_error(text, min, max, &v);
    if (!err.empty()) throw ArgumentError(cat(name, ": ", err));
    return v;
}

CLI::Validator int_in(int64_t min, int64_t max) {
    return CLI::Validator(
        [min, max](std::string& s) { return int_error(s, min, max, nullptr); }, range_text(min, max));
}

CLI::Validator real_in(double min, double max) {
    return CLI::Validator(
        [min, max](std::string& s) { return real_error(s, min, max, nullptr); },
        real_range_text(min, max));
}

int cap_threads(int requested, std::string_view flag) {
    const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (requested <= cpus) return requested;
    std::fprintf(stderr, "note: %.*s %d is more than this machine's %d CPUs; using %d threads\n",
                 static_cast<int>(flag.size()), flag.data(), requested, cpus, cpus);
    return cpus;
}

}  // namespace strata::cli

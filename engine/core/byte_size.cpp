// Byte sizes as users write and read them (byte_size.h).
#include "engine/core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/core/error.h"

namespace strata {

uint64_t parse_byte_size(std::string_view text) {
    const std::string s(text);
    size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    const std::string number = s.substr(0, i);
    std::string unit;
    for (size_t j = i; j < s.size(); ++j) {
        unit += static_cast<char>(std::toupper(static_cast<unsigned char>(s[j])));
    }
    auto bad = [&](const char* why) {
        return ArgumentError(cat("invalid memory size '", text, "': ", why,
                                 " (examples: 6G, 512M, 1.5GiB, 4096)"));
    };
    if (number.empty() || number == "." || number.find('.') != number.rfind('.')) {
        throw bad("expected a number");
    }
    double scale = 1;
    if (unit.empty() || unit == "B") scale = 1;
    else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
    else throw bad("unknown unit");
    const double value = std::stod(number) * scale;
    if (!std::isfinite(value) || value >= 18446744073709551615.0) throw bad("too large");
    return static_cast<uint64_t>(std::llround(value));
}

std::string format_bytes(uint64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    return buf;
}

}  // namespace strata

// Out-of-line part of error.h.
#include "engine/core/error.h"

#include <cstdio>

namespace strata {

std::string fixed(double x, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return buf;
}

void invariant_failed(const char* invariant, const char* file, int line) {
    throw std::logic_error(cat("internal invariant violated: ", invariant, " (", file, ":", line,
                               "); this is a bug in Strata, please report it"));
}

}  // namespace strata

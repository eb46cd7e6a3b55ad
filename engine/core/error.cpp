// Out-of-line part of error.h.
#include "engine/core/error.h"

namespace strata {

void invariant_failed(const char* invariant, const char* file, int line) {
    throw std::logic_error(cat("internal invariant violated: ", invariant, " (", file, ":", line,
                               "); this is a bug in Strata, please report it"));
}

}  // namespace strata

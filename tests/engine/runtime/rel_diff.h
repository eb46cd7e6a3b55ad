// max |a - b| / max |b| over two logit vectors of one size: the runtime tests' measure of how
// far a placement or a sparse FFN moves the logits from a reference run.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::testing {

inline double rel_max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
        m = std::max(m, std::fabs(static_cast<double>(b[i])));
    }
    return d / m;
}

}  // namespace strata::testing

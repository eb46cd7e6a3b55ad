// Totals over a tensor table (see model_summary.h).
#include "engine/model/model_summary.h"

#include <algorithm>

namespace strata {

ModelSummary summarize_tensors(const std::vector<TensorInfo>& tensors) {
    ModelSummary s;
    for (const TensorInfo& t : tensors) {
        s.n_tensors += 1;
        s.n_params += t.n_elements();
        s.n_bytes += t.n_bytes;
        auto it = std::find_if(s.by_type.begin(), s.by_type.end(),
                               [&](const TypeUsage& u) { return u.type == t.type; });
        if (it == s.by_type.end()) {
            s.by_type.push_back({t.type, 0, 0, 0});
            it = s.by_type.end() - 1;
        }
        it->n_tensors += 1;
        it->n_elements += t.n_elements();
        it->n_bytes += t.n_bytes;
    }
    std::stable_sort(s.by_type.begin(), s.by_type.end(),
                     [](const TypeUsage& a, const TypeUsage& b) { return a.n_bytes > b.n_bytes; });
    return s;
}

}  // namespace strata

// The neuron-major ffn_down copy's rule (sparse_down.h).
#include "offload/sparse_down.h"

#include <algorithm>

#include "quant/input_major.h"

namespace strata {
namespace {

double bytes_per_weight(GgmlType t) {
    const TypeTraits& tr = type_traits(t);
    return static_cast<double>(tr.type_size) / static_cast<double>(tr.block_size);
}

}  // namespace

double row_rate_share(double base, double active) {
    return 1.0 - (1.0 - base) * std::clamp(2.0 * (1.0 - active), 0.0, 1.0);
}

bool neuron_major_copy_pays(double copy_bpw, double source_bpw, double active) {
    return active * copy_bpw / row_rate_share(kAccumulateRateShare, active) < source_bpw;
}

bool keeps_neuron_major_copy(const SparseDownPolicy& policy, GgmlType source, double active) {
    switch (policy.mode) {
        case SparseDownMode::Copy: return true;
        case SparseDownMode::Whole: return false;
        case SparseDownMode::Auto: break;
    }
    return neuron_major_copy_pays(bytes_per_weight(policy.copy_type), bytes_per_weight(source), active);
}

bool keeps_input_major(GgmlType type, int64_t n_in, int64_t n_out) {
    return type == GgmlType::Q4_K && input_major_q4k_fits(n_in, n_out);
}

}  // namespace strata

// Host copies of the i-quant grids (iq_grids.h), expanded from the generated lists.
#include "quant/iq_grids.h"

#include "quant/iq_grid_data.h"

namespace strata {

const uint64_t kIq2xxsGrid[256] = {STRATA_IQ2XXS_GRID};
const uint64_t kIq2xsGrid[512] = {STRATA_IQ2XS_GRID};
const uint64_t kIq2sGrid[1024] = {STRATA_IQ2S_GRID};
const uint32_t kIq3xxsGrid[256] = {STRATA_IQ3XXS_GRID};
const uint32_t kIq3sGrid[512] = {STRATA_IQ3S_GRID};
const uint64_t kIq1sGrid[2048] = {STRATA_IQ1S_GRID};

bool is_iq_lattice(GgmlType type) {
    switch (type) {
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
            return true;
        default:
            return false;
    }
}

}  // namespace strata

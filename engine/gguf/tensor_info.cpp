// TensorInfo helpers.
#include "engine/gguf/tensor_info.h"

namespace strata {

std::string TensorInfo::shape_string() const {
    std::string out = "[";
    for (int i = 0; i < n_dims && i < 4; ++i) {
        if (i > 0) out += ", ";
        out += std::to_string(ne[i]);
    }
    return out + "]";
}

}  // namespace strata

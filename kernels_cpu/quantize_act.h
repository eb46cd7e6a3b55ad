// Internal to kernels_cpu: fast quantizers for matmul activation rows, bit-identical to quant/'s
// reference quantizers (quant/reference.h states the contract: n a multiple of the block size).
#pragma once

#include "quant/ggml_type.h"

namespace strata::cpu {

// The fast twin of type_traits(act_type).quantize on this CPU, or nullptr where there is none
// (then use the reference). Covers Q8_0 and Q8_K on CPUs with AVX2 + FMA + F16C.
QuantizeFn fast_act_quantizer(GgmlType act_type);

}  // namespace strata::cpu

// The AVX-512 F/BW/VL row-op table (row_ops.h): row_ops_x86.h's template for SimdAvx512,
// compiled for those features per function (pragma below).
#include "kernels_cpu/row_ops.h"

// Standard headers first: what they define must stay baseline code (see simd_f32_avx512.h).
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels_cpu/quantize_act.h"
#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

#include "kernels_cpu/simd_f32_avx512.h"
// After the SIMD type it instantiates its templates for.
#include "kernels_cpu/row_ops_x86.h"

const strata::cpu::RowOps* strata::cpu::row_ops_avx512() {
    return row_ops_x86::table<SimdAvx512>();
}

#pragma GCC pop_options

// Built in place of the x86 kernel files (kernels_cpu/CMakeLists.txt) on other processors: each
// x86 variant reports that it has no kernel, so the scalar ones run.
#include "kernels_cpu/iq_decode.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/quantize_act.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {

IqFinishFn iq_finish_avx2() { return nullptr; }
IqIsumFn iq_isum_avx2() { return nullptr; }
QDotFn iq_fused_dot_avx2(GgmlType) { return nullptr; }
QDotDecoded qdot_avx2_iq_decoded(GgmlType) { return {}; }
QDotFn qdot_avx512_iq_decoded() { return nullptr; }
QDotFn qdot_avx2_legacy(GgmlType) { return nullptr; }
QDotFn qdot_avx2_k(GgmlType) { return nullptr; }
QDotFn qdot_avxvnni_k(GgmlType) { return nullptr; }
QDotFn qdot_avx512_legacy(GgmlType) { return nullptr; }
QuantizeFn qdot_avx512_legacy_acts(GgmlType) { return nullptr; }
QDotFn qdot_avx512_k(GgmlType) { return nullptr; }
QuantizeFn qdot_avx512_k_acts(GgmlType) { return nullptr; }
QuantizeFn fast_act_quantizer(GgmlType) { return nullptr; }
const RowOps* row_ops_avx2() { return nullptr; }
const RowOps* row_ops_avx512() { return nullptr; }

}  // namespace strata::cpu

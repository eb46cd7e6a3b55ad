// Dot products of i-quant and ternary weights with Q8_K activations (qdot.h): each weight
// block is decoded once (iq_decode.h) and met with every activation row, so a row's float sum
// is Σ over blocks of dx·(dw·isum) in block order — the same bits for the scalar and the AVX2
// integer sums, for any n_cols and position.
#include "kernels_cpu/iq_decode.h"
#include "kernels_cpu/qdot.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

template <GgmlType T, bool Avx2>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    static const IqGatherFn gather = find_iq_gather(T);
    static const IqFinishFn finish = Avx2 ? iq_finish_avx2() : iq_finish_scalar;
    static const IqIsumFn isum = Avx2 ? iq_isum_avx2() : iq_isum_scalar;
    const size_t block_bytes = type_traits(T).type_size;
    const auto* wb = static_cast<const uint8_t*>(w);
    float sum[kQDotMaxCols] = {};
    IqGathered gathered;
    IqDecoded dec;
    for (int64_t b = 0; b < n_blocks; ++b) {
        gather(wb + static_cast<size_t>(b) * block_bytes, gathered);
        finish(gathered, dec);
        for (int c = 0; c < n_cols; ++c) {
            const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x.row(c))[b];
            sum[c] += xb.d * (dec.dw * static_cast<float>(isum(dec, xb.qs)));
        }
    }
    for (int c = 0; c < n_cols; ++c) out[c] = sum[c];
}

template <bool Avx2>
QDotFn find(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XXS: return dot_rows<GgmlType::IQ2_XXS, Avx2>;
        case GgmlType::IQ2_XS: return dot_rows<GgmlType::IQ2_XS, Avx2>;
        case GgmlType::IQ2_S: return dot_rows<GgmlType::IQ2_S, Avx2>;
        case GgmlType::IQ3_XXS: return dot_rows<GgmlType::IQ3_XXS, Avx2>;
        case GgmlType::IQ3_S: return dot_rows<GgmlType::IQ3_S, Avx2>;
        case GgmlType::IQ1_S: return dot_rows<GgmlType::IQ1_S, Avx2>;
        case GgmlType::IQ1_M: return dot_rows<GgmlType::IQ1_M, Avx2>;
        case GgmlType::TQ1_0: return dot_rows<GgmlType::TQ1_0, Avx2>;
        case GgmlType::TQ2_0: return dot_rows<GgmlType::TQ2_0, Avx2>;
        default: return nullptr;
    }
}

}  // namespace

QDotFn qdot_scalar_iq(GgmlType type) {
    return find<false>(type);
}

QDotFn qdot_avx2_iq(GgmlType type) {
    if (iq_isum_avx2() == nullptr) return nullptr;
    if (const QDotFn fused = iq_fused_dot_avx2(type)) return fused;
    return find<true>(type);
}

}  // namespace strata::cpu

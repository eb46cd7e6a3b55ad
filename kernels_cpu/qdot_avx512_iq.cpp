// The AVX-512BW dot product of decoded i-quant rows (qdot.h: QDotKernel::dot_decoded, the
// Avx512 variant): a block's 256 bytes in four registers, each activation row met 64 bytes at a
// time. AVX-512 has no byte sign instruction, so x is read as x + 128 (an unsigned byte:
// x xor 0x80) and the decoder's bias, 128 · Σ sc·q, is taken off the block's sum: the same
// integer as isum_avx2, added to the row's float sum as the AVX2 kernels add it (the same bits,
// so a prompt pass gives each token what decode gives it).
#include "kernels_cpu/iq_decode.h"
#include "kernels_cpu/qdot.h"
#include "kernels_cpu/simd_x86.h"  // <immintrin.h> without GCC 12's header warnings
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace strata::cpu {
namespace {

// Register j of a block covers elements 64j .. 64j + 63, whose maddubs pairs (32 word lanes)
// take the scales of groups 4j + lane / 8: the word indices that spread a block's 16 scales so.
struct ScaleSpread {
    alignas(64) int16_t idx[4][32];
    constexpr ScaleSpread() : idx{} {
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) idx[j][l] = static_cast<int16_t>(4 * j + l / 8);
    }
};
constexpr ScaleSpread kSpread;

void dot_decoded_avx512(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    float sum[kQDotMaxCols] = {};
    const auto* dec = static_cast<const IqDecoded*>(w);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int64_t b = 0; b < n_blocks; ++b) {
        const IqDecoded& d = dec[b];
        const __m512i scales = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d.sc)));
        __m512i q[4], sc[4];
        for (int j = 0; j < 4; ++j) {
            q[j] = _mm512_loadu_si512(d.q + 64 * j);
            sc[j] = _mm512_permutexvar_epi16(_mm512_load_si512(kSpread.idx[j]), scales);
        }
        for (int c = 0; c < n_cols; ++c) {
            const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x.row(c))[b];
            __m512i acc = _mm512_setzero_si512();
            for (int j = 0; j < 4; ++j) {
                const __m512i xu = _mm512_xor_si512(_mm512_loadu_si512(xb.qs + 64 * j), flip);
                acc = _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(xu, q[j]), sc[j]));
            }
            const int32_t isum = _mm512_reduce_add_epi32(acc) - d.bias;
            sum[c] += xb.d * (d.dw * static_cast<float>(isum));
        }
    }
    for (int c = 0; c < n_cols; ++c) out[c] = sum[c];
}

}  // namespace

QDotFn qdot_avx512_iq_decoded() {
    return dot_decoded_avx512;
}

}  // namespace strata::cpu

#pragma GCC pop_options

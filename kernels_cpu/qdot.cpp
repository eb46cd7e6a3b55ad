// The table of quantized dot-product kernels per (weight type, variant) (qdot.h).
#include "kernels_cpu/qdot.h"

#include <array>
#include <cstring>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/cpu_features.h"
#include "kernels_cpu/quantize_act.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

namespace strata::cpu {
namespace {

constexpr GgmlType kTypes[] = {
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::Q8_0,
    GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,   GgmlType::Q6_K,
    GgmlType::IQ4_NL, GgmlType::IQ4_XS,
    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0,
};
constexpr size_t kNumTypes = sizeof(kTypes) / sizeof(kTypes[0]);
constexpr size_t kNumVariants = 3;  // Scalar, Avx2, Avx512

int variant_index(KernelVariant v) {
    switch (v) {
        case KernelVariant::Scalar: return 0;
        case KernelVariant::Avx2: return 1;
        case KernelVariant::Avx512: return 2;
        default: return -1;
    }
}

QDotFn either(QDotFn a, QDotFn b) {
    return a != nullptr ? a : b;
}

using Table = std::array<std::array<QDotKernel, kNumVariants>, kNumTypes>;

Table build_table() {
    Table table{};
    for (size_t t = 0; t < kNumTypes; ++t) {
        const GgmlType type = kTypes[t];
        const GgmlType act = qdot_partner_type(type);
        const bool k_quant = act == GgmlType::Q8_K;
        // The i-quant kernels have no AVX-512 twin: AVX-512 CPUs run their AVX2 one.
        const QDotFn iq_avx2 = qdot_avx2_iq(type);
        const QDotFn fns[kNumVariants] = {
            k_quant ? either(qdot_scalar_k(type), qdot_scalar_iq(type)) : qdot_scalar_legacy(type),
            k_quant ? either(qdot_avx2_k(type), iq_avx2) : qdot_avx2_legacy(type),
            k_quant ? either(qdot_avx512_k(type), iq_avx2) : qdot_avx512_legacy(type),
        };
        const QuantizeFn reference = act == GgmlType::F32 ? nullptr : type_traits(act).quantize;
        const QuantizeFn fast = fast_act_quantizer(act);
        const size_t block_bytes = act == GgmlType::F32 ? 0 : type_traits(act).type_size;
        for (size_t v = 0; v < kNumVariants; ++v) {
            const QuantizeFn quantize = v > 0 && fast != nullptr ? fast : reference;
            table[t][v] = QDotKernel{act, quantize, fns[v], block_bytes, 1};
        }
        // The AVX-512 kernels of the K-quants and the signed 32-element formats read their
        // activations in an order of their own (act_lanes.h).
        if (const QuantizeFn lanes = qdot_avx512_k_acts(type); lanes != nullptr)
            table[t][2] = QDotKernel{act, lanes, fns[2], sizeof(BlockQ8KLanes), 1};
        if (const QuantizeFn pairs = qdot_avx512_legacy_acts(type); pairs != nullptr)
            table[t][2] = QDotKernel{act, pairs, fns[2], sizeof(BlockQ8_0Pair), kPairBlocks};
        // The lattice i-quants' rows are decoded once per prompt pass (QDotKernel::decode_row);
        // on AVX-512 the decoded rows meet the activations 64 bytes at a time.
        if (const QDotDecoded d = qdot_avx2_iq_decoded(type); d.decode_row != nullptr) {
            const QDotFn wide = qdot_avx512_iq_decoded();
            for (size_t v = 1; v < kNumVariants; ++v) {
                table[t][v].decode_row = d.decode_row;
                table[t][v].dot_decoded = v == 2 && wide != nullptr ? wide : d.dot;
                table[t][v].decoded_block_bytes = d.block_bytes;
            }
        }
        // With AVX-VNNI the AVX2 variant's Q4_K / Q5_K kernels are the AVX-512 ones in 256-bit
        // halves, on the same layout.
        if (const QDotFn vnni = cpu_features().avxvnni ? qdot_avxvnni_k(type) : nullptr; vnni != nullptr)
            table[t][1] = QDotKernel{act, qdot_avx512_k_acts(type), vnni, sizeof(BlockQ8KLanes), 1};
    }
    return table;
}

}  // namespace

GgmlType qdot_partner_type(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL:
            return GgmlType::Q8_0;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
            return GgmlType::Q8_1;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_XS:
            return GgmlType::Q8_K;
        default:
            return is_iq_lattice(type) || is_ternary(type) ? GgmlType::Q8_K : GgmlType::F32;
    }
}

void expand_act_scales(GgmlType act_type, const void* row, int64_t n_blocks, float* d) {
    if (act_type != GgmlType::Q8_0 && act_type != GgmlType::Q8_1) return;
    const size_t block_bytes = type_traits(act_type).type_size;
    const auto* bytes = static_cast<const uint8_t*>(row);
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint16_t h;  // d is the first field of both BlockQ8_0 and BlockQ8_1
        std::memcpy(&h, bytes + static_cast<size_t>(b) * block_bytes, sizeof(h));
        d[b] = fp16_to_fp32(h);
    }
}

size_t act_row_bytes(const QDotKernel& kernel, int64_t k) {
    const int64_t blocks = k / type_traits(kernel.act_type).block_size;
    return static_cast<size_t>((blocks + kernel.act_group - 1) / kernel.act_group) * kernel.act_block_bytes;
}

size_t act_offset(const QDotKernel& kernel, int64_t e0) {
    return static_cast<size_t>(e0 / (type_traits(kernel.act_type).block_size * kernel.act_group)) *
           kernel.act_block_bytes;
}

bool reads_expanded_scales(const QDotKernel& kernel) {
    return (kernel.act_type == GgmlType::Q8_0 || kernel.act_type == GgmlType::Q8_1) &&
           kernel.act_group == 1 && kernel.act_block_bytes == type_traits(kernel.act_type).type_size;
}

bool same_acts(const QDotKernel& a, const QDotKernel& b) {
    return a.act_type == b.act_type && a.act_block_bytes == b.act_block_bytes && a.act_group == b.act_group &&
           a.quantize == b.quantize;
}

std::map<GgmlType, int> qdot_kernel_revisions() {
    std::map<GgmlType, int> r;
    for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                       GgmlType::IQ1_S, GgmlType::IQ1_M})
        r[t] = 3;
    return r;
}

const QDotKernel* find_qdot_kernel(GgmlType type, KernelVariant v) {
    static const Table table = build_table();
    const int vi = variant_index(v);
    if (vi < 0) return nullptr;
    for (size_t t = 0; t < kNumTypes; ++t) {
        if (kTypes[t] != type) continue;
        const QDotKernel& k = table[t][static_cast<size_t>(vi)];
        return k.dot != nullptr ? &k : nullptr;
    }
    return nullptr;
}

}  // namespace strata::cpu

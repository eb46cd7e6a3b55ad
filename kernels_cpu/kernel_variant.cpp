// Kernel variant selection (kernel_variant.h): run-time detection, STRATA_CPU_KERNELS, forcing.
#include "kernels_cpu/kernel_variant.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_features.h"

namespace strata::cpu {
namespace {

constexpr KernelVariant kAll[] = {KernelVariant::Auto, KernelVariant::Dequant,
                                  KernelVariant::Scalar, KernelVariant::Avx2,
                                  KernelVariant::Avx512};

// Features a variant needs, as text for error messages ("" when none).
std::string missing_features(KernelVariant v) {
    const CpuFeatures& f = cpu_features();
    std::string missing;
    auto need = [&missing](bool have, const char* name) {
        if (have) return;
        if (!missing.empty()) missing += ' ';
        missing += name;
    };
    if (v == KernelVariant::Avx2 || v == KernelVariant::Avx512) {
        need(f.avx2, "avx2");
        need(f.fma, "fma");
        need(f.f16c, "f16c");
    }
    if (v == KernelVariant::Avx512) {
        need(f.avx512f, "avx512f");
        need(f.avx512bw, "avx512bw");
        need(f.avx512vl, "avx512vl");
        need(f.avx512vnni, "avx512vnni");
    }
    return missing;
}

KernelVariant best_variant() {
    if (kernel_variant_supported(KernelVariant::Avx512)) return KernelVariant::Avx512;
    if (kernel_variant_supported(KernelVariant::Avx2)) return KernelVariant::Avx2;
    return KernelVariant::Scalar;
}

void require_supported(KernelVariant v) {
    const std::string missing = missing_features(v);
    if (!missing.empty()) {
        throw UnsupportedError(cat("CPU kernels: variant ", kernel_variant_name(v),
                                   " needs CPU features this machine lacks: ", missing,
                                   " (it has: ", cpu_features().to_string(), ")"));
    }
}

KernelVariant resolve(KernelVariant v) {
    return v == KernelVariant::Auto ? best_variant() : v;
}

KernelVariant from_environment() {
    const char* env = std::getenv("STRATA_CPU_KERNELS");
    if (env == nullptr || *env == '\0') return best_variant();
    for (KernelVariant v : kAll) {
        if (kernel_variant_name(v) == env) {
            require_supported(v);
            return resolve(v);
        }
    }
    throw ArgumentError(cat("STRATA_CPU_KERNELS=", env,
                            " is not a kernel variant; use auto, dequant, scalar, avx2 or avx512"));
}

// Auto here means "not decided yet": the environment is read on first use.
std::atomic<KernelVariant> g_active{KernelVariant::Auto};

}  // namespace

std::string_view kernel_variant_name(KernelVariant v) {
    switch (v) {
        case KernelVariant::Auto: return "auto";
        case KernelVariant::Dequant: return "dequant";
        case KernelVariant::Scalar: return "scalar";
        case KernelVariant::Avx2: return "avx2";
        case KernelVariant::Avx512: return "avx512";
    }
    return "unknown";
}

bool kernel_variant_supported(KernelVariant v) {
    return missing_features(v).empty();
}

void set_kernel_variant(KernelVariant v) {
    require_supported(v);
    g_active.store(resolve(v), std::memory_order_relaxed);
}

KernelVariant active_kernel_variant() {
    KernelVariant v = g_active.load(std::memory_order_relaxed);
    if (v != KernelVariant::Auto) return v;
    v = from_environment();
    KernelVariant expected = KernelVariant::Auto;
    // A concurrent set_kernel_variant wins over the environment.
    if (!g_active.compare_exchange_strong(expected, v, std::memory_order_relaxed)) return expected;
    return v;
}

}  // namespace strata::cpu

// Refusal of a cached hardware profile whose rates no measurement gives (hardware_profile.h:
// check_measured_profile): a damaged or hand-edited cache is measured again, not trusted.
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "offload/hardware_profile.h"

namespace strata {

namespace {

// Rates a measurement cannot give: zero (or negative) throughput, or more than any machine has.
void check_rate(std::string_view source, const std::string& key, double value) {
    constexpr double kMaxRate = 1e6;  // GB/s or GFLOP/s: far beyond any machine
    if (!(value > 0) || value > kMaxRate) {
        throw FormatError(cat("hardware profile ", source, " $.", key, ": ", value,
                              " is not a measured rate (expected more than 0 and at most ", kMaxRate,
                              "); delete the file to measure again"));
    }
}

void check_cpu_rates(std::string_view source, const std::string& prefix, const CpuRates& c) {
    check_rate(source, prefix + "host_read_gbs", c.host_read_gbs);
    check_rate(source, prefix + "cpu_prefill_gflops", c.cpu_prefill_gflops);
    check_rate(source, prefix + "cpu_prefill_wide_gflops", c.cpu_prefill_grid.wide);
    check_rate(source, prefix + "cpu_prefill_small_gflops", c.cpu_prefill_grid.small);
    check_rate(source, prefix + "cpu_prefill_small_wide_gflops", c.cpu_prefill_grid.small_wide);
    for (const auto& [type, value] : c.cpu_prefill_grid.by_type) {
        check_rate(source, cat(prefix, "cpu_prefill_type_gflops.", type), value);
    }
    for (const auto& [type, value] : c.cpu_gemv_gbs) check_rate(source, cat(prefix, "cpu_gemv_gbs.", type), value);
}

}  // namespace

void check_measured_profile(const HardwareProfile& p, std::string_view source) {
    check_cpu_rates(source, "", cpu_rates(p));
    for (const auto& [n, rates] : p.cpu_at_threads) check_cpu_rates(source, cat("cpu_at_threads.", n, "."), rates);
    check_rate(source, "disk_read_gbs", p.disk_read_gbs);
    if (p.gpu_name.empty()) return;
    check_rate(source, "gpu_read_gbs", p.gpu_read_gbs);
    check_rate(source, "h2d_gbs", p.h2d_gbs);
    if (p.h2d_staged_gbs != 0) check_rate(source, "h2d_staged_gbs", p.h2d_staged_gbs);  // 0: an older profile
    check_rate(source, "d2h_gbs", p.d2h_gbs);
    check_rate(source, "gpu_prefill_gflops", p.gpu_prefill_gflops);
    for (const auto& [type, value] : p.gpu_gemv_gbs) check_rate(source, cat("gpu_gemv_gbs.", type), value);
}

}  // namespace strata

// The fake device's registry entry (fake_device.h): made inside --gpu-mem, rated from the host.
#include <memory>
#include <string>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "quant/ggml_type.h"

namespace strata {
namespace {

constexpr uint64_t kDefaultBudget = 1ull << 30;
// The fake device runs its ops on host threads: rates derived from the CPU's, faster (so the
// planner uses it as it would a GPU) and with copies at memcpy speed.
constexpr double kSpeedup = 4.0;

DeviceRates host_rates_times(Backend& backend, const DeviceRateOptions& options) {
    const DeviceRates& h = options.host;
    if (options.progress) options.progress("fake gpu (cpu rates x 4)");
    DeviceRates r;
    r.name = backend.capabilities().device_name;
    r.total_bytes = backend.memory().total_bytes;
    r.read_gbs = h.read_gbs * kSpeedup;
    for (const auto& [type, gbs] : h.gemv_gbs) r.gemv_gbs[type] = gbs * kSpeedup;
    r.h2d_gbs = r.d2h_gbs = h.read_gbs / 2;  // memcpy: read and write
    r.h2d_staged_gbs = r.h2d_gbs;             // its copy_in is one memcpy either way
    r.transfer_latency_us = 5;
    r.op_us = h.op_us;
    r.gemv_floor_us = h.gemv_floor_us;
    r.gemv_tiny_floor_us = h.gemv_tiny_floor_us;
    r.graph_node_us = h.op_us;  // no graphs: the same as eager
    r.prefill_gflops = h.prefill_gflops * kSpeedup;
    return r;
}

// A type the host's rates lack (a model's type measured on the CPU first) gets no rate.
double host_gemv_times(Backend&, GgmlType type, const DeviceRateOptions& options) {
    const auto it = options.host.gemv_gbs.find(std::string(type_traits(type).name));
    if (it == options.host.gemv_gbs.end()) {
        throw UnsupportedError(cat("fake gpu: no host rate for ", type_traits(type).name, " to derive its own from"));
    }
    return it->second * kSpeedup;
}

}  // namespace

void register_fake_backend(BackendRegistry& registry) {
    BackendEntry e;
    e.name = "fake";
    e.description = "a test device in host memory that accounts for memory as a GPU does";
    e.is_device = true;
    e.create = [](const BackendConfig& config) -> std::unique_ptr<Backend> {
        FakeDeviceOptions o;
        o.budget_bytes = config.budget_bytes > 0 ? config.budget_bytes : kDefaultBudget;
        o.n_threads = config.n_threads;
        return std::make_unique<FakeDeviceBackend>(o);
    };
    e.measure_rates = host_rates_times;
    e.measure_gemv = host_gemv_times;
    registry.add(std::move(e));
}

}  // namespace strata

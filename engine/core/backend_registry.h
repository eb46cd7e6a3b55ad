// BackendRegistry: the backends a binary has, by name ("cpu", "cuda" when built, "fake"). Each
// backend library registers itself (kernels_cpu/cpu_registration.cpp, ...); backends/ lists
// the ones built into this binary (backends/builtin_backends.h). The runtime, the planner and
// the tools make backends through it and never name a backend class.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/device_rates.h"

namespace strata {

// What a backend is made with.
struct BackendConfig {
    // Device bytes the process may hold (--gpu-mem), context included; 0: the backend's default
    // (CUDA: the free memory less a margin; the fake device: 1 GiB). Host backends ignore it.
    uint64_t budget_bytes = 0;
    int n_threads = 0;  // host threads for ops that run on the CPU; 0: one per physical core
    // A token's results do not depend on the other tokens of a product (batched decoding and
    // speculative checks give the logits plain decoding gives). false lets a device take faster
    // kernels for several tokens whose rounding differs (CUDA: int8 tensor cores from 5 tokens).
    bool batch_invariant = true;
};

struct BackendEntry {
    std::string name;         // as --gpu spells it
    std::string description;  // one line for help and error messages
    bool is_device = false;   // a GPU-like backend (--gpu), not the host
    bool auto_choice = false;  // --gpu auto may pick it (the fake device: no)
    // Why it cannot run on this machine now ("no CUDA device is visible"), "" when it can.
    std::function<std::string()> unavailable;
    // Makes one. Errors: BudgetError (a budget it cannot work in), SystemError.
    std::function<std::unique_ptr<Backend>(const BackendConfig&)> create;
    // Measures a backend it made, for the planner; null: it has no device rates to measure.
    std::function<DeviceRates(Backend&, const DeviceRateOptions&)> measure_rates;
    // The GEMV rate (weight GB/s, one token) of one weight type on a backend it made, for a
    // model whose types measure_rates did not cover; UnsupportedError when it cannot multiply
    // the type. Null: measure_rates covers every type it has.
    std::function<double(Backend&, GgmlType, const DeviceRateOptions&)> measure_gemv;
};

class BackendRegistry {
  public:
    // ArgumentError when the name is taken.
    void add(BackendEntry entry);
    // null when this binary has no backend of that name.
    const BackendEntry* find(std::string_view name) const;
    // The entry, or UnsupportedError naming `flag` and listing the backends this binary has.
    const BackendEntry& get(std::string_view name, std::string_view flag) const;
    // Makes the backend `name`; UnsupportedError (listing the backends) when this binary lacks
    // it, SystemError when it is built but cannot run here (saying why).
    std::unique_ptr<Backend> create(std::string_view name, const BackendConfig& config,
                                    std::string_view flag) const;
    // "cpu, cuda, fake" (device ones only when `devices_only`).
    std::string names(bool devices_only = false) const;
    const std::vector<BackendEntry>& entries() const { return entries_; }

  private:
    std::vector<BackendEntry> entries_;
};

}  // namespace strata

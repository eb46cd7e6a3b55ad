// DeviceRates: the measured speeds of a GPU-like backend that the cost model needs (the GPU half
// of offload's HardwareProfile). A backend's registry entry measures them (backend_registry.h):
// the CUDA device on itself, the fake device from the host's rates. G = 1e9.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace strata {

struct DeviceRates {
    std::string name;  // the device as a profile records it, e.g. "NVIDIA H100 80GB HBM3"
    uint64_t total_bytes = 0;
    double read_gbs = 0;                     // device memory: a large copy, (read + write) bytes / s
    std::map<std::string, double> gemv_gbs;  // ggml type name -> weight bytes/s, 1 token
    double h2d_gbs = 0, d2h_gbs = 0;         // pinned host memory
    double h2d_staged_gbs = 0;               // pageable host memory, through copy_in's staging
    double transfer_latency_us = 0;          // one small copy and its synchronisation
    // Fixed costs, µs: one small kernel in a stream of them, the same recorded as a graph step,
    // and what q4_K GEMVs of 4.7 and 0.6 MB take beyond their bytes at gemv_gbs["q4_K"].
    double op_us = 0;
    double graph_node_us = 0;
    double gemv_floor_us = 0;
    double gemv_tiny_floor_us = 0;
    double prefill_gflops = 0;  // q4_K matmul of a prefill batch, 2 FLOP per weight
};

struct DeviceRateOptions {
    bool quick = false;  // short measurements on small buffers (tests, CI)
    // Called before each step ("gpu read", "gpu gemv q4_K" ...), from this thread.
    std::function<void(std::string_view step)> progress;
    // The host CPU's rates in the same terms (read_gbs, gemv_gbs, op_us, floors, prefill), for
    // a device that runs on the host.
    DeviceRates host;
};

}  // namespace strata

// The CUDA devices this process can see. Free of CUDA headers so any folder may include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int compute_major = 0;
    int compute_minor = 0;
    uint64_t total_bytes = 0;
    uint64_t free_bytes = 0;  // at the time of the query
    int multiprocessors = 0;
};

// Devices visible to the process; empty when there is no driver or no device (never throws
// for that case: a machine without a GPU is normal).
std::vector<DeviceInfo> list_devices();

struct DeviceMemory {
    uint64_t free_bytes = 0;
    uint64_t total_bytes = 0;  // total - free = what every process (this one's context too) holds
};

// cudaMemGetInfo of `device` now (creates this process's context on it if there is none yet).
DeviceMemory device_memory(int device);

}  // namespace strata::cuda

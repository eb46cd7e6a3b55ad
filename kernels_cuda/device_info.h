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

}  // namespace strata::cuda

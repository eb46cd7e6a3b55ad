// CUDA device enumeration (device_info.h).
#include "kernels_cuda/cuda_check.h"
#include "kernels_cuda/device_info.h"

namespace strata::cuda {

std::vector<DeviceInfo> list_devices() {
    std::vector<DeviceInfo> devices;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return devices;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
        DeviceInfo info;
        info.index = i;
        info.name = prop.name;
        info.compute_major = prop.major;
        info.compute_minor = prop.minor;
        info.multiprocessors = prop.multiProcessorCount;
        CUDA_CHECK(cudaSetDevice(i));
        size_t free_b = 0, total_b = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        info.free_bytes = free_b;
        info.total_bytes = total_b;
        devices.push_back(info);
    }
    return devices;
}

DeviceMemory device_memory(int device) {
    CUDA_CHECK(cudaSetDevice(device));
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return DeviceMemory{free_b, total_b};
}

}  // namespace strata::cuda

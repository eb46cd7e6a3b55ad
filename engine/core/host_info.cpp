// The host's CPU name and RAM (host_info.h).
#include "engine/core/host_info.h"

#include <unistd.h>

#include <fstream>

namespace strata {

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) break;
        const size_t begin = line.find_first_not_of(" \t", colon + 1);
        return begin == std::string::npos ? "unknown cpu" : line.substr(begin);
    }
    return "unknown cpu";
}

uint64_t host_ram_total_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

uint64_t host_ram_available_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib * 1024;
    }
    return host_ram_total_bytes();
}

}  // namespace strata

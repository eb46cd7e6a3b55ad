// What the host is: its CPU's model name and its RAM, as the backends' memory() and the hardware
// profile report them. Linux (/proc); values that cannot be read come back as "unknown cpu" or 0.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

std::string cpu_model_name();          // /proc/cpuinfo "model name", or "unknown cpu"
uint64_t host_ram_total_bytes();       // physical pages
uint64_t host_ram_available_bytes();   // /proc/meminfo MemAvailable, else the physical pages

}  // namespace strata

// Busy-machine check from /proc/stat (busy_check.h).
#include "offload/busy_check.h"

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "engine/core/error.h"

namespace strata {
namespace {

struct CpuTimes {
    unsigned long long idle = 0, total = 0;
    bool ok = false;
};

CpuTimes read_cpu_times() {
    std::ifstream in("/proc/stat");
    std::string line;
    CpuTimes t;
    if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return t;
    std::istringstream fields(line.substr(4));
    std::vector<unsigned long long> v;
    for (unsigned long long x = 0; fields >> x;) v.push_back(x);
    if (v.size() < 5) return t;
    for (const unsigned long long x : v) t.total += x;
    t.idle = v[3] + v[4];  // idle + iowait
    t.ok = true;
    return t;
}

}  // namespace

double busy_cpu_share(std::chrono::milliseconds window) {
    const CpuTimes a = read_cpu_times();
    std::this_thread::sleep_for(window);
    const CpuTimes b = read_cpu_times();
    if (!a.ok || !b.ok || b.total <= a.total) return -1;
    const double total = static_cast<double>(b.total - a.total);
    const double idle = static_cast<double>(b.idle - a.idle);
    return std::max(0.0, 1.0 - idle / total);
}

std::string busy_machine_note(double share) {
    if (share < kBusyShare) return {};
    return cat("the machine looked busy while it was measured (other processes used ",
               fixed(share * 100, 0), "% of the CPUs): the predictions may be too slow; run again with",
               " --reprofile when it is idle");
}

}  // namespace strata

// Whether other processes keep this machine's CPUs busy, sampled from /proc/stat over a short
// window while this process waits: a hardware profile measured on a busy machine predicts far too
// slow (9.5 tok/s predicted where 87 were measured), so the profiler repeats its noisy
// measurements and says so rather than trusting them silently.
#pragma once

#include <chrono>
#include <string>

namespace strata {

// The share of CPU time (0..1) other processes used during `window`; -1 when unknown.
double busy_cpu_share(std::chrono::milliseconds window = std::chrono::milliseconds(250));

// Above this share the machine counts as busy for measuring.
constexpr double kBusyShare = 0.3;

// "" when the machine is idle enough, else a note naming the share, for the log.
std::string busy_machine_note(double share);

}  // namespace strata

// CpuOpTimes: wall time per op of the CPU backend, for finding where a token's CPU time goes (the
// CUDA backend has its own, kernels_cuda/op_timer.h). Switched on by the environment variable
// STRATA_CPU_OP_TIMES=1; the table goes to stderr when the process exits. An op's wall time is
// that of all its threads together (the ops are parallel inside, one at a time from outside).
// Rows are labelled by the op and the weight type ("matmul q4_K"); a matmul of more than one
// activation row gets " batch", so decode's products stand apart from prompt passes. The sparse
// FFN also times its phases ("sparse: gather q4_K", "sparse: accumulate q8_0"). Each row also
// gives the median call, which a run's first pass (page faults on a cold mapping, one call per
// layer and op among many) does not move the way it moves the mean.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace strata::cpu {

class CpuOpTimes {
  public:
    // The process's table when STRATA_CPU_OP_TIMES is set to a non-zero value, else null.
    static CpuOpTimes* from_environment();

    void add(const std::string& label, uint64_t ns);
    // Per label: calls, total milliseconds, mean and median microseconds per call and share of
    // the total, the largest total first.
    std::string report() const;

  private:
    static constexpr size_t kMaxSamples = size_t{1} << 20;  // per label: 4 MiB; the median of the first ones
    struct Row {
        uint64_t ns = 0;
        uint64_t calls = 0;
        std::vector<uint32_t> samples;  // ns per call (saturated), the first kMaxSamples calls
    };
    mutable std::mutex mutex_;
    std::map<std::string, Row> rows_;
};

// Times the enclosing scope into `times` under the label op + " " + type + suffix (an empty type:
// op alone); null times: nothing, not even the clock read. The views must outlive the scope.
class CpuOpScope {
  public:
    CpuOpScope(CpuOpTimes* times, std::string_view op, std::string_view type = {}, std::string_view suffix = {});
    ~CpuOpScope();
    CpuOpScope(const CpuOpScope&) = delete;
    CpuOpScope& operator=(const CpuOpScope&) = delete;

  private:
    CpuOpTimes* times_;
    std::string_view op_, type_, suffix_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace strata::cpu

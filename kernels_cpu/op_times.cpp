// Wall time per CPU op (op_times.h).
#include "kernels_cpu/op_times.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/env_switch.h"

namespace strata::cpu {
namespace {

// Prints the table when the process exits.
struct ProcessTimes {
    CpuOpTimes times;
    ~ProcessTimes() { std::fputs(times.report().c_str(), stderr); }
};

}  // namespace

CpuOpTimes* CpuOpTimes::from_environment() {
    static ProcessTimes* const process = [] {
        if (!env_turned_on("STRATA_CPU_OP_TIMES")) return static_cast<ProcessTimes*>(nullptr);
        static ProcessTimes p;
        return &p;
    }();
    return process == nullptr ? nullptr : &process->times;
}

void CpuOpTimes::add(const std::string& label, uint64_t ns) {
    const std::lock_guard<std::mutex> lock(mutex_);
    Row& r = rows_[label];
    r.ns += ns;
    ++r.calls;
    if (r.samples.size() < kMaxSamples)
        r.samples.push_back(static_cast<uint32_t>(std::min<uint64_t>(ns, UINT32_MAX)));
}

std::string CpuOpTimes::report() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, const Row*>> rows;
    for (const auto& [label, r] : rows_) rows.emplace_back(label, &r);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second->ns > b.second->ns; });
    // Phases ("sparse: ...") are inside their op's time too, so shares are of the ops' total.
    uint64_t ops = 0;
    for (const auto& r : rows)
        if (r.first.find(": ") == std::string::npos) ops += r.second->ns;
    std::string out = "CPU op times (STRATA_CPU_OP_TIMES): wall time per op; phases (\"x: y\") are inside their op\n";
    char line[256];
    std::snprintf(line, sizeof(line), "  %-34s %10s %12s %10s %10s %7s\n", "op", "calls", "total ms", "us/call",
                  "median us", "share");
    out += line;
    for (const auto& [label, row] : rows) {
        const Row& r = *row;
        const double ms = static_cast<double>(r.ns) * 1e-6;
        std::vector<uint32_t> s = r.samples;
        std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
        const double median_us = s.empty() ? 0.0 : static_cast<double>(s[s.size() / 2]) * 1e-3;
        std::snprintf(line, sizeof(line), "  %-34s %10llu %12.1f %10.1f %10.1f %6.1f%%\n", label.c_str(),
                      static_cast<unsigned long long>(r.calls), ms, ms * 1e3 / static_cast<double>(r.calls),
                      median_us, ops > 0 ? 100.0 * static_cast<double>(r.ns) / static_cast<double>(ops) : 0.0);
        out += line;
    }
    return out;
}

CpuOpScope::CpuOpScope(CpuOpTimes* times, std::string_view op, std::string_view type, std::string_view suffix)
    : times_(times), op_(op), type_(type), suffix_(suffix) {
    if (times_ != nullptr) start_ = std::chrono::steady_clock::now();
}

CpuOpScope::~CpuOpScope() {
    if (times_ == nullptr) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
    std::string label(op_);
    if (!type_.empty()) (label += ' ') += type_;
    label += suffix_;
    times_->add(label, static_cast<uint64_t>(ns));
}

}  // namespace strata::cpu

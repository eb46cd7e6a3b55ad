// OpTimer (op_timer.h): event pairs per op, read back after the stream drains.
#include "kernels_cuda/op_timer.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/env_switch.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {

OpTimer* OpTimer::from_environment() {
    if (!env_turned_on("STRATA_CUDA_OP_TIMES")) return nullptr;
    return new OpTimer();
}

OpTimer::~OpTimer() {
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    for (const Pair& p : open_) {
        cudaEventDestroy(p.start);
        cudaEventDestroy(p.stop);
    }
    if (pending_start_ != nullptr) cudaEventDestroy(pending_start_);
}

cudaEvent_t OpTimer::take() {
    if (free_.empty()) {
        cudaEvent_t e = nullptr;
        CUDA_CHECK(cudaEventCreate(&e));
        return e;
    }
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
}

// Inside a capture, cudaEventRecordExternal makes the record a node of the graph.
static void record(cudaEvent_t e, cudaStream_t s, bool in_graph) {
    CUDA_CHECK(cudaEventRecordWithFlags(e, s, in_graph ? cudaEventRecordExternal : cudaEventRecordDefault));
}

void OpTimer::begin(cudaStream_t stream, bool in_graph) {
    if (pending_start_ != nullptr) return;  // a nested op (matmul's quantization) keeps the outer start
    pending_start_ = take();
    record(pending_start_, stream, in_graph);
}

void OpTimer::end(cudaStream_t stream, bool in_graph, std::string label) {
    if (pending_start_ == nullptr) return;
    cudaEvent_t stop = take();
    record(stop, stream, in_graph);
    open_.push_back(Pair{pending_start_, stop, std::move(label), in_graph});
    pending_start_ = nullptr;
}

void OpTimer::collect() {
    for (const Pair& p : open_) {
        float ms = 0.0f;
        if (cudaEventElapsedTime(&ms, p.start, p.stop) == cudaSuccess) {
            Row& r = rows_[(p.in_graph ? "graph  " : "eager  ") + p.label];
            r.us += 1000.0 * ms;
            ++r.calls;
        } else {
            cudaGetLastError();  // an unlaunched recording (abort_graph): nothing to read
        }
        free_.push_back(p.start);
        free_.push_back(p.stop);
    }
    open_.clear();
}

void OpTimer::add_host(const std::string& what, double us) {
    Row& r = host_[what];
    r.us += us;
    ++r.calls;
}

std::string OpTimer::report() const {
    std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
    double graph_total = 0.0;
    for (const auto& [label, r] : rows)
        if (label.rfind("graph", 0) == 0) graph_total += r.us;
    const double steps = static_cast<double>(std::max<uint64_t>(steps_, 1));
    std::string out;
    char line[256];
    std::snprintf(line, sizeof(line), "CUDA op times (STRATA_CUDA_OP_TIMES): %llu graph steps, GPU time in graphs %.1f us/step\n",
                  static_cast<unsigned long long>(steps_), graph_total / steps);
    out += line;
    std::snprintf(line, sizeof(line), "%-48s %10s %10s %12s %8s\n", "op", "calls", "us/call", "us/step", "% graph");
    out += line;
    for (const auto& [label, r] : rows) {
        const bool g = label.rfind("graph", 0) == 0;
        std::snprintf(line, sizeof(line), "%-48s %10llu %10.2f %12.1f %8.1f\n", label.c_str(),
                      static_cast<unsigned long long>(r.calls), r.us / static_cast<double>(r.calls), r.us / steps,
                      g && graph_total > 0 ? 100.0 * r.us / graph_total : 0.0);
        out += line;
    }
    for (const auto& [what, r] : host_) {
        std::snprintf(line, sizeof(line), "host   %-41s %10llu %10.2f %12.1f\n", what.c_str(),
                      static_cast<unsigned long long>(r.calls), r.us / static_cast<double>(r.calls), r.us / steps);
        out += line;
    }
    return out;
}

}  // namespace strata::cuda

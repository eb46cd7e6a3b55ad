// OpTimer: GPU time per op of the CUDA backend, for finding where a decode token goes. Switched
// on by the environment variable STRATA_CUDA_OP_TIMES=1; the report goes to stderr when the
// backend is destroyed. Each op is bracketed by two events on the backend's stream (event nodes
// inside a recorded graph, so a replayed decode step is timed kernel by kernel without launch
// gaps); the pairs are read back at the next point where the stream is drained anyway. Host
// costs of graph steps (recording, instantiate/update) are timed on the host clock.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::cuda {

class OpTimer {
  public:
    // A timer when STRATA_CUDA_OP_TIMES is set to a non-zero value, else null.
    static OpTimer* from_environment();
    ~OpTimer();

    // Brackets one op (label groups the report's rows); `in_graph`: the stream is being captured.
    void begin(cudaStream_t stream, bool in_graph);
    void end(cudaStream_t stream, bool in_graph, std::string label);
    // Reads back every closed pair once the stream has drained (call after a synchronize).
    void collect();
    // Host costs of one graph step, microseconds.
    void add_host(const std::string& what, double us);
    void count_step() { ++steps_; }
    // The table: per label calls, total and mean microseconds, and share of the GPU total.
    std::string report() const;

  private:
    struct Pair {
        cudaEvent_t start, stop;
        std::string label;
        bool in_graph;
    };
    struct Row {
        double us = 0.0;
        uint64_t calls = 0;
    };
    cudaEvent_t take();
    std::vector<cudaEvent_t> free_;
    std::vector<Pair> open_;
    cudaEvent_t pending_start_ = nullptr;
    std::map<std::string, Row> rows_;
    std::map<std::string, Row> host_;
    uint64_t steps_ = 0;
};

// Brackets an op of CudaBackend when the timer is on (null: nothing is recorded).
class OpScope {
  public:
    OpScope(OpTimer* timer, cudaStream_t stream, bool in_graph, std::string label)
        : timer_(timer), stream_(stream), in_graph_(in_graph), label_(std::move(label)) {
        if (timer_ != nullptr) timer_->begin(stream_, in_graph_);
    }
    ~OpScope() {
        if (timer_ != nullptr) timer_->end(stream_, in_graph_, std::move(label_));
    }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

  private:
    OpTimer* timer_;
    cudaStream_t stream_;
    bool in_graph_;
    std::string label_;
};

}  // namespace strata::cuda
